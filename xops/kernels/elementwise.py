"""Elementwise kernels for the ops whose spec semantics NumPy's ufuncs do not have.

Every loop here is **output-parallel**: iteration ``i`` reads ``x[i]`` (and ``y[i]``)
and writes only ``out[i]``, so results never depend on the thread count.

Integer kernels take the operands' own arrays for 32- and 64-bit types (int32/uint32
for divide_small/remainder_small, int32 or int64 words for the shifts and popcnt) and
int32/uint32 (int64/uint64 for the 64-bit-only kernels) widened from narrower types,
whose results the caller wraps back to the type's width; ``bits`` is the element type's
width, ``signed`` its signedness. bf16/f16 arithmetic runs its span loop in pieces from a prange
loop (``narrow_binary``); the float32 transcendental functions run theirs from a prange
loop through their C entry points (``run_span_entry``); bf16/f16 exp looks its results up
in a table of all 65536 values (``narrow_exp``). From PARALLEL_MAP_THRESHOLD elements the
shifts and the four float arithmetic ops of two full arrays run parallel loops, and a
broadcast row operand from the parallel threshold (``rows_binary``); NumPy's ufuncs with
a 0-d operand run in two pieces on two threads (``split_ufunc``).
"""

import contextvars
import itertools
import math
import os
import threading
import time

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from .config import kernel, renamed, scalar
from . import pool as _buffers
from .transcendental import (
    SPAN,
    call_entry,
    bf16_to_f32,
    bits_f32,
    exp32,
    f16_to_f32,
    f32_bits,
    f32_to_bf16,
    f32_to_f16,
    FUNCTIONS,
    f64_bits,
    span_body,
)


@scalar
def _as_u64(v):
    return np.uint64(np.int64(v)) if v < 0 else np.uint64(v)


@kernel
def int_divide(x, y, out):
    """Output-parallel. Signed (int64) truncating division; x/0 = -1 (all ones) and
    INT_MIN/-1 = INT_MIN (XLA CPU's choices for the spec's implementation-defined cases)."""
    for i in prange(out.size):
        a = x[i]
        b = y[i]
        if b == 0:
            out[i] = -1
        elif b == -1:
            out[i] = -a  # wraps for INT_MIN
        else:
            q = a // b
            if q * b != a and (a < 0) != (b < 0):
                q += 1  # floor -> trunc
            out[i] = q


@kernel
def uint_divide(x, y, out):
    """Output-parallel. Unsigned (uint64) division; x/0 = all ones."""
    for i in prange(out.size):
        b = y[i]
        if b == 0:
            out[i] = -1  # never a conditional expression: uint64/int would unify to float64
        else:
            out[i] = x[i] // b


@kernel
def int_remainder(x, y, out):
    """Output-parallel. Signed (int64) truncating remainder, sign of the dividend;
    x%0 = x; INT_MIN % -1 = 0."""
    for i in prange(out.size):
        a = x[i]
        b = y[i]
        if b == 0:
            out[i] = a
        elif b == -1:
            out[i] = 0
        else:
            q = a // b
            if q * b != a and (a < 0) != (b < 0):
                q += 1
            out[i] = a - q * b


@kernel
def uint_remainder(x, y, out):
    """Output-parallel. Unsigned (uint64) remainder; x%0 = x."""
    for i in prange(out.size):
        b = y[i]
        if b == 0:
            out[i] = x[i]
        else:
            out[i] = x[i] % b


@kernel
def divide_small(x, y, out):
    """Output-parallel. Truncating division of integers of at most 32 bits (int32 or
    uint32 arrays) through float64, where it vectorises: with |x|, |y| < 2^32 the float64
    quotient is within 2^-53 (relative) of x/y while a non-integer x/y is at least 2^-32
    (relative) from an integer, so trunc(fl(x/y)) is the exact quotient. Its low 32 bits
    come from the 1.5 * 2^52 shifter. x/0 = -1 (all ones); x/-1 = -x wraps
    (INT_MIN/-1 = INT_MIN), as int_divide."""
    for i in prange(out.size):
        b = y[i]
        q = np.trunc(np.float64(x[i]) / (1.0 if b == 0 else np.float64(b)))
        w = f64_bits(q + 6755399441055744.0)
        out[i] = -1 if b == 0 else w  # the store keeps the low 32 bits


@kernel
def remainder_small(x, y, out):
    """Output-parallel. Truncating remainder of integers of at most 32 bits, x - y * q
    with divide_small's exact quotient q (in int64, so INT_MIN % -1 = 0); x % 0 = x."""
    for i in prange(out.size):
        a = x[i]
        b = y[i]
        q = np.trunc(np.float64(a) / (1.0 if b == 0 else np.float64(b)))
        r = np.int64(a) - np.int64(b) * (f64_bits(q + 6755399441055744.0) - 0x4338000000000000)
        out[i] = a if b == 0 else r


@kernel
def int_power(x, y, out, signed):
    """Output-parallel. Square-and-multiply with wraparound; a negative exponent gives
    0 unless |base| = 1 (then +-1 by parity); x**0 = 1."""
    for i in prange(out.size):
        a = x[i]
        b = y[i]
        if signed and b < 0:
            if a == 1:
                out[i] = 1
            elif a == -1:
                out[i] = 1 if b % 2 == 0 else -1
            else:
                out[i] = 0
            continue
        e = _as_u64(b)
        r = np.uint64(1)
        base = _as_u64(a)
        while e != 0:
            if e & np.uint64(1):
                r = r * base
            base = base * base
            e = e >> np.uint64(1)
        out[i] = r


@scalar
def _logical_shift(v, amount, bits, right):
    """``v`` shifted left (or, if ``right``, logically right) in its ``bits``-wide
    pattern; ``amount`` is read as unsigned and amounts >= bits give 0."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    s = _as_u64(amount) & mask
    if s >= np.uint64(bits):
        return np.uint64(0)
    if right:
        return (_as_u64(v) & mask) >> s
    return _as_u64(v) << s


@kernel
def shift_left(x, y, out, bits):
    """Output-parallel. The shift amount is read as unsigned: amounts >= bits give 0."""
    for i in prange(out.size):
        out[i] = _logical_shift(x[i], y[i], bits, False)


@kernel
def shift_right_logical(x, y, out, bits):
    """Output-parallel. Unsigned shift of the ``bits``-wide pattern; amounts >= bits give 0."""
    for i in prange(out.size):
        out[i] = _logical_shift(x[i], y[i], bits, True)


@kernel
def shift_right_arithmetic(x, y, out, bits):
    """Output-parallel. Sign bit is bit ``bits-1``; amounts >= bits give all sign bits."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    up = np.uint64(64 - bits)
    for i in prange(out.size):
        s = _as_u64(y[i]) & mask
        v = np.int64(_as_u64(x[i]) << up) >> np.int64(up)  # sign-extend from bit bits-1
        if s >= np.uint64(bits):
            s = np.uint64(bits - 1)
        out[i] = v >> np.int64(s)


def _i32_shift(name):
    """An intrinsic: the LLVM shift ``name`` of two integers' low 32 bits, as int32
    (Numba widens int32 arithmetic to 64 bits, where AVX2 has no arithmetic right shift
    and half the lanes). The amount must be in [0, 32)."""

    @intrinsic
    def shift(typingctx, a, s):
        if not (isinstance(a, types.Integer) and isinstance(s, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            i32 = ir.IntType(32)
            v, n = (builder.trunc(w, i32) if w.type.width > 32 else w for w in args)
            return getattr(builder, name)(v, n)

        return types.int32(a, s), codegen

    return shift


_shl32, _lshr32, _ashr32 = _i32_shift("shl"), _i32_shift("lshr"), _i32_shift("ashr")


@kernel
def shift_logical32(x, y, out, right):
    """Output-parallel. shift_left (or, if ``right``, shift_right_logical) on int32 words
    (32-bit types), in 32-bit lanes: the amount is read as unsigned (any bit above the
    low 5 set: amount >= 32, result 0)."""
    for i in prange(out.size):
        b = y[i]
        r = _lshr32(x[i], b & 31) if right else _shl32(x[i], b & 31)
        out[i] = 0 if b & -32 else r


@kernel
def shift_right_arithmetic32(x, y, out):
    """Output-parallel. shift_right_arithmetic on int32 words; amounts >= 32 shift by 31
    (all sign bits)."""
    for i in prange(out.size):
        b = y[i]
        out[i] = _ashr32(x[i], 31 if b & -32 else b & 31)


@intrinsic
def _ctpop(typingctx, a):
    """The number of set bits of an integer's own width (llvm.ctpop: vectorised)."""
    if not isinstance(a, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])

    return a(a), codegen


@kernel
def popcnt_words(x, out):
    """Output-parallel. Set bits of each int32 or int64 word (the bit patterns of 32- and
    64-bit types), written in the word's own type."""
    for i in prange(out.size):
        out[i] = _ctpop(x[i])


@kernel
def count_leading_zeros(x, out, bits):
    """Output-parallel. Leading zeros of the ``bits``-wide two's-complement pattern."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    for i in prange(out.size):
        u = _as_u64(x[i]) & mask
        n = 64
        while u != 0:
            u = u >> np.uint64(1)
            n -= 1
        out[i] = n - (64 - bits)


@scalar
def ieee_maximum(a, b):
    """IEEE 754-2019 maximum (as xo.maximum): NaN if either is NaN (a + b, a quiet NaN),
    and +0 > -0; plain max for integers."""
    if a != a or b != b:
        return a + b
    if a == b:
        return b if math.copysign(1.0, a) < 0.0 else a
    return a if a > b else b


@scalar
def ieee_minimum(a, b):
    """IEEE 754-2019 minimum (as xo.minimum): NaN if either is NaN (a + b), and -0 < +0;
    plain min for integers."""
    if a != a or b != b:
        return a + b
    if a == b:
        return a if math.copysign(1.0, a) < 0.0 else b
    return a if a < b else b


@kernel
def float_maximum(x, y, out):
    """Output-parallel. IEEE 754-2019 maximum: NaN if either is NaN, and +0 > -0."""
    for i in prange(out.size):
        out[i] = ieee_maximum(x[i], y[i])


@kernel
def float_minimum(x, y, out):
    """Output-parallel. IEEE 754-2019 minimum: NaN if either is NaN, and -0 < +0."""
    for i in prange(out.size):
        out[i] = ieee_minimum(x[i], y[i])


@kernel
def float_maximum_scalar(x, s, out, s_first):
    """Output-parallel. float_maximum of ``x`` and the scalar ``s`` (the left operand
    when ``s_first``: the order decides only which NaN a NaN pair gives), with no array
    of ``s`` (the 0.0 of a relu written xo.maximum(h, 0.0))."""
    for i in prange(out.size):
        out[i] = ieee_maximum(s, x[i]) if s_first else ieee_maximum(x[i], s)


@kernel
def float_minimum_scalar(x, s, out, s_first):
    """Output-parallel. float_minimum of ``x`` and the scalar ``s`` (the left operand
    when ``s_first``)."""
    for i in prange(out.size):
        out[i] = ieee_minimum(s, x[i]) if s_first else ieee_minimum(x[i], s)


@kernel
def extremum_grad(g, a, b, res, half, out):
    """Output-parallel. The cotangent of operand ``a`` of maximum/minimum (result
    ``res``, other operand ``b``): g where ``a`` equals the result and ``b`` does not,
    g * half (0.5, ``g``'s type) where both do (a tie, -0 vs +0 included), 0 elsewhere
    (a NaN result equals neither). Selects, not branches: the loop vectorises (random
    signs under a relu mispredict a branch half the time: 3.3 ms against 0.13 ms for
    1.6M f32 on one core)."""
    for i in prange(out.size):
        v = res[i]
        t = g[i] * half if b[i] == v else g[i]
        out[i] = t if a[i] == v else 0.0


@kernel
def extremum_grad_weak(g, a, s, half, is_max, out):
    """Output-parallel. extremum_grad of the full operand ``a`` of maximum (``is_max``)
    or minimum with a weak scalar ``s``, from ``g`` and ``a`` alone (one array less to
    read than from the result): g where ``a`` wins (a > s; a < s for minimum), g * half
    on a tie (a == s, -0 vs +0 included), 0 elsewhere (a or s NaN: the result is NaN).
    The same values as extremum_grad with an array of ``s``: the result equals ``a``
    exactly when ``a`` wins or ties, and equals ``s`` on a tie."""
    for i in prange(out.size):
        x = a[i]
        wins = x > s if is_max else x < s
        t = g[i] * half if x == s else g[i]
        out[i] = t if wins or x == s else 0.0


@kernel
def round_nearest_afz(x, out):
    """Output-parallel. Round half away from zero, keeping the sign of zero."""
    for i in prange(out.size):
        a = x[i]
        t = np.trunc(a)
        if abs(a - t) >= 0.5:
            t += np.copysign(1.0, a)
        out[i] = t


@kernel
def select_bits(pred, on_true, on_false, out):
    """Output-parallel. ``out[i] = on_true[i] if pred[i] else on_false[i]`` on raw bit
    patterns (unsigned words of the element's width, so NaN payloads and signed zeros
    are copied as they are). A branch of one element is a broadcast scalar. Both
    branches are read unconditionally, so the loops compile to blends and vectorise."""
    n = out.size
    if on_true.size == n and on_false.size == n:
        for i in prange(n):
            a = on_true[i]
            b = on_false[i]
            out[i] = a if pred[i] else b
    elif on_false.size == n:
        a = on_true[0]
        for i in prange(n):
            b = on_false[i]
            out[i] = a if pred[i] else b
    else:
        b = on_false[0]
        for i in prange(n):
            a = on_true[i]
            out[i] = a if pred[i] else b


# ---------------------------------------------------------------------------------------
# NumPy's transcendental ufuncs on both cores
# ---------------------------------------------------------------------------------------
# NumPy's SIMD loops (exp, log, tanh, sin, cos on f32; libm for f64 on AVX2) are faster
# per core than a Numba loop over libm, but single-threaded. Large contiguous inputs are
# cut into blocks, one per thread. Each element's result depends only on that element:
# every block but the last is a whole number of _BLOCK elements (a multiple of any SIMD
# width and unroll), so the vector/tail split of the last block is the whole array's own,
# and results are bit-identical for any thread count (tests/test_dispatch_fast.py). The
# block starts keep the array's own alignment (multiples of 4096 elements apart).

# rows_binary's loop (a full operand and a broadcast row one: a bias) runs on Numba's
# threads from config.PARALLEL_THRESHOLD elements, as the other output-parallel kernels
# do. Until session 21 it ran on one core below 4M elements (two pieces through the split
# helper from 1M), from session 15's measurements of the split helper's hand-off; with
# Numba's threads spinning between a step's kernels a prange region costs little: the
# loop on 401k f32 (a (32, 16, 28, 28) map) 39-40 -> 27-28 us, on 263k 25 -> 18 us
# (2-core AVX-512 EPYC; calls back to back or 0.2 ms apart). An isolated call after
# milliseconds of idling pays for waking the threads (65k elements 22 -> 82 us at 2 ms
# apart), as every threaded kernel here does.


THREADED_UFUNCS = frozenset((np.exp, np.expm1, np.log, np.log1p, np.tanh, np.sin, np.cos))
THREADED_THRESHOLD = 1 << 18  # below this a thread hand-off (~20-50 us) is not repaid
_BLOCK = 1 << 12
_pool = None  # (pid, executor): a forked child makes its own (the parent's threads are gone)
_pool_lock = threading.Lock()


def _threads():
    import numba

    return numba.get_num_threads()


def _get_pool(workers):
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid() or _pool[1]._max_workers < workers:
            from concurrent.futures import ThreadPoolExecutor

            _pool = (
                os.getpid(),
                ThreadPoolExecutor(max_workers=workers, thread_name_prefix="xops-ufunc"),
            )
        return _pool[1]


# From SPLIT_THRESHOLD elements, while a core is spare (split_now), such a map is cut in
# two pieces (split_ufunc through split_in_two): the caller computes the first
# CALLER_SHARE of it at once while a helper thread wakes up (20-50 us later) for the
# rest. Issue 15, 1M f32 add and 1M i32 shift_left on the 2-core AVX-512 EPYC,
# interleaved, blocks with no other process on the CPU: add 154 -> 100 us (caller share
# 0.6; halves 136 us, the late helper holding the caller; prange over the same loop 130
# us), shift 158 -> 118 us; at 512K the hand-off cost more than it saved (add 66 us on
# one core, 74-97 us split).
SPLIT_THRESHOLD = 1 << 20
CALLER_SHARE = 0.6


def split_in_two(piece, n):
    """``piece(lo, hi)`` over [0, n) in two pieces, for a caller that :func:`split_now`
    said yes to: the caller runs ``piece(0, h)`` (h: CALLER_SHARE of n, a whole number of
    _BLOCK elements, so the second piece starts at the array's own alignment) while the
    split helper thread runs ``piece(h, n)`` in a copy of the caller's context (its
    NumPy error state). A piece the helper has not taken when the caller is done is run
    by the caller. Each element is computed by the same code whichever piece holds it
    (the second piece's vector/tail split is the whole array's), so the results are
    those of ``piece(0, n)``, bit for bit, for any thread count. A helper that never
    started, or kept the caller waiting more than LATE of the caller's own piece time,
    is a sign that the other core is not spare (:func:`_note_spare`)."""
    h = int(n * CALLER_SHARE) // _BLOCK * _BLOCK
    task = _Task(contextvars.copy_context(), piece, h, n)
    _helper_queue().put(task)
    t0 = _clock()
    try:
        piece(0, h)
    finally:
        t1 = _clock()
        mine = task.take()
        if not mine:
            task.done.acquire()  # (the helper's piece writes into the caller's arrays)
    if mine:
        task.piece = task.context = None  # (queued still: the caller's arrays go with it)
        piece(h, n)
        _note_spare(False, t1)
        return
    if task.errors:
        raise task.errors[0]
    if _clock() - t1 > LATE * (t1 - t0):
        _note_spare(False, t1)


class _Task:
    """One helper piece: whoever of the caller and the helper takes it first (``take``,
    atomic: list.pop) runs it; the helper releases ``done`` after running it."""

    __slots__ = ("context", "piece", "lo", "hi", "claim", "done", "errors")

    def __init__(self, context, piece, lo, hi):
        self.context, self.piece, self.lo, self.hi = context, piece, lo, hi
        self.claim = [True]
        self.done = threading.Lock()
        self.done.acquire()
        self.errors = []

    def take(self):
        try:
            return self.claim.pop()
        except IndexError:
            return False


# The split helper: one daemon thread per process that runs the second pieces of
# split_in_two from a queue. A SimpleQueue and a lock per task instead of
# ThreadPoolExecutor's future (its Condition, work item and idle semaphore): a split of
# no-op pieces 8.8 against 17 us a call, 1M multiply split on both cores 119-120 against
# 128-132 us (issue 15, the shared 2-core EPYC, run at real-time priority so that other
# jobs' tasks did not interleave).
_helper = None  # (pid, queue): a forked child starts its own (the parent's thread is gone)
_helper_lock = threading.Lock()


def _helper_queue():
    helper = _helper
    if helper is not None and helper[0] == os.getpid():
        return helper[1]
    return _start_helper()


def _start_helper():
    global _helper
    import queue

    with _helper_lock:
        if _helper is None or _helper[0] != os.getpid():
            tasks = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(tasks,), name="xops-split", daemon=True).start()
            _helper = (os.getpid(), tasks)
        return _helper[1]


def _serve(tasks):
    """The split helper's loop: run each task it takes, note an error for its caller.
    It holds no task between two (a task's piece keeps the caller's arrays: a pooled
    result held here would not go back to the pool for the caller's next call)."""
    while True:
        task = tasks.get()
        if not task.take():
            task = None  # (its caller was done first and ran it)
            continue
        run, piece, lo, hi, done = task.context.run, task.piece, task.lo, task.hi, task.done
        errors, task = task.errors, None
        try:
            run(piece, lo, hi)
        except BaseException as e:  # (raised in the caller's thread)
            errors.append(e)
        finally:
            run = piece = None
            done.release()


def split_now(n):
    """Whether a map of ``n`` elements is to be cut in two now (:func:`split_in_two`;
    else it runs as one piece). Callers with a cheaper one-piece form ask first: the
    answer costs ~0.1 us while no core is spare (the common case on a loaded machine),
    ~1 us otherwise (Numba's thread count)."""
    return n >= SPLIT_THRESHOLD and _spare_core() and _threads() >= 2


# Whether a core is spare: /proc/loadavg's count of runnable tasks, read at most every
# SPARE_FOR seconds. A count is a snapshot, and some show one task too many that is gone
# a moment later: this process's own split helper on its way back to sleep after the
# previous call's piece (issue 15, 1M multiply split every call, the harness's process
# with PyTorch loaded: the helper was runnable at 3% of the call starts on the idle
# machine, 5-10% under load), a kernel thread (kdamond, a kworker). Such a reading held
# for SPARE_FOR ran the next ~15 calls on one core. So a first sign of a busy CPU (a
# count, or a helper that started late) holds only for BUSY_RECHECK (the next call runs
# in one piece and reads the count again); a second sign in a row holds for SPARE_FOR,
# as a spare answer does.
_LOADAVG = None  # (fd of /proc/loadavg or -1, CPUs this process may use); a fork keeps both
# [time.perf_counter until which the answer holds, the answer, when the last busy sign
# came (-inf: the last sign was a spare CPU)]
_SPARE = [0.0, True, -math.inf]
SPARE_FOR = 0.002  # seconds a spare answer, or a confirmed busy one, is reused
BUSY_RECHECK = 0.0001  # seconds a first busy sign is reused (the next 1M call reads again)
LATE = 0.5  # a helper that keeps the caller waiting this share of its own piece's time


def _spare_core():
    """Whether a CPU is free for a helper thread now: fewer runnable tasks system-wide
    (the 4th field of Linux's /proc/loadavg, the calling thread included) than CPUs
    this process may run on. A helper on a busy CPU makes the caller wait for it: on the
    shared 2-core machine with other jobs running, a split 1M f32 add took 320-500 us
    against 220-330 us in one piece. Reading the file costs 2-4 us, so an answer is
    kept (see _note_spare). True where the file cannot be read."""
    global _LOADAVG
    now = _clock()
    if now < _SPARE[0]:
        return _SPARE[1]
    if _LOADAVG is None:
        try:
            fd = os.open("/proc/loadavg", os.O_RDONLY)
        except OSError:
            fd = -1
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
        _LOADAVG = (fd, cpus)
    fd, cpus = _LOADAVG
    try:
        spare = fd < 0 or int(os.pread(fd, 128, 0).split()[3].split(b"/")[0]) < cpus
    except (OSError, ValueError, IndexError):
        spare = True
    return _note_spare(spare, now)


def _note_spare(spare, now):
    """Record a sign, taken at ``now``, of whether a CPU is spare, and return it: a spare
    one, and a busy one that follows another busy one (no spare sign between, within
    2 SPARE_FOR: steady load), are kept for SPARE_FOR seconds, a first busy one for
    BUSY_RECHECK."""
    if spare:
        _SPARE[:] = now + SPARE_FOR, True, -math.inf
    else:
        again = now - _SPARE[2] <= 2 * SPARE_FOR
        _SPARE[:] = now + (SPARE_FOR if again else BUSY_RECHECK), False, now
    return spare


_clock = time.perf_counter


def split_ufunc(ufunc, a, b, out):
    """``ufunc(a, b, out=out)`` in split_in_two's pieces, for a C-contiguous ``out`` and
    operands each either C-contiguous of its shape or 0-d (a weak scalar), once
    :func:`split_now` has said yes (the caller asks first: it has a one-piece form)."""
    fa, fb, fo = (v.reshape(-1) if v.ndim else v for v in (a, b, out))

    def piece(lo, hi):
        ufunc(fa[lo:hi] if fa.ndim else fa, fb[lo:hi] if fb.ndim else fb, out=fo[lo:hi])

    split_in_two(piece, fo.size)
    return out


# run_memory_bound's loops (the shifts) and narrow_binary (bf16 / f16 add, subtract,
# multiply) run on Numba's threads from this many elements. With Numba's threads
# spinning ~0.3 ms after a region (xops/__init__.py, session 15) a region no longer waits
# for a sleeping thread: 1M i32 shift_left / shift_right_logical / shift_right_arithmetic
# 213-226 / 209-222 / 222-248 us with the split helper -> 81-99 / 96-101 / 94-98 us
# (NumPy's left_shift 173-213), bf16 add 211 -> 135 us, f16 multiply 146 -> 92 us (pieces
# in a prange; through a Python pool of threads bf16 add lost: 305 us; 2-core AVX-512
# EPYC, idle).
PARALLEL_MAP_THRESHOLD = 1 << 20


def run_memory_bound(kern, n, *args):
    """``kern(n, *args)`` for a :func:`kernel` loop that does little work per byte: its
    serial variant below PARALLEL_MAP_THRESHOLD elements, else the usual choice (the
    parallel variant). The same bits either way (output-parallel, integer words)."""
    if n >= PARALLEL_MAP_THRESHOLD:
        return kern(n, *args)
    return kern.serial(*args)


PIECE = 4 * SPAN  # a prange piece of the span loops: 64K elements (exp: ~0.1 ms, one core)


def share_pieces(body, count, threads=None):
    """``body(indices)`` on the calling thread and up to ``threads`` - 1 (default:
    numba.get_num_threads() - 1) pool threads: every index below ``count`` is taken by
    exactly one of them, in turn, from a shared counter (next() is atomic under the
    GIL), so ``body`` must release the GIL for its work and write each index's results
    to that index's own place. The caller starts at once: a pool thread that wakes late
    takes fewer indices or none, and one that never started is cancelled. Pool threads
    run in a copy of the caller's context (NumPy's error state is a context variable).
    With fewer than two threads or indices: ``body(range(count))`` alone."""
    threads = min(_threads() if threads is None else threads, count)
    if threads < 2:
        body(range(count))
        return
    counter = itertools.count()

    def taken():
        for i in counter:
            if i >= count:
                return
            yield i

    pool = _get_pool(threads - 1)
    jobs = [pool.submit(contextvars.copy_context().run, body, taken()) for _ in range(threads - 1)]
    try:
        body(taken())
    finally:
        for job in jobs:
            if not job.cancel():  # a helper that never started has nothing left to do
                job.result()


@kernel
def _entry_pieces(entry, x, out, arg, n, piece):
    """Output-parallel. Piece p calls the span entry point at address ``entry`` on
    elements [p * piece, min(p * piece + piece, n)) of the arrays at addresses ``x`` and
    ``out``: it writes only its own elements."""
    for p in prange((n + piece - 1) // piece):
        lo = p * piece
        call_entry(entry, x, out, arg, lo, min(lo + piece, n))


def run_span_entry(span, entry, n, x, out, arg=None):
    """``span(x, out[, arg], lo, hi)`` over [0, n) for contiguous 1-D ``x`` and ``out``:
    one call below THREADED_THRESHOLD elements (or with one thread), else pieces of PIECE
    elements shared by Numba's threads (prange), each run through ``entry``, the
    span's C entry point (a SpanEntry). Numba's threading layer hands pieces out faster
    than a Python pool of threads (``share_pieces``), and the span loop called through the pointer
    keeps its own optimisation (issue 15, exp f32 on 2 threads, min of many rounds on
    the shared 2-core machine: 1M 0.69-0.90 ms against the pool's 1.45-1.55 ms and one
    thread's 1.37 ms; 256K 0.24 against 0.38 ms). The price: the parallel region ends
    when both threads have, so on an oversubscribed machine a descheduled thread can
    hold a call for a time slice (several ms), where the pool's caller went on alone.
    Each element is computed by the same scalar formula whichever piece and thread
    computes it: the bits do not depend on the thread count."""
    threads = _threads() if n >= THREADED_THRESHOLD else 1
    if threads < 2 or n <= PIECE:
        span(x, out, *(() if arg is None else (arg,)), np.int64(0), np.int64(n))
        return
    addresses = (x.ctypes.data, out.ctypes.data, np.int64(0 if arg is None else arg))
    _entry_pieces(n, entry.address, *addresses, np.int64(n), np.int64(PIECE))


def threaded_unary(ufunc, a):
    """``ufunc(a)`` for one of THREADED_UFUNCS on a real float array, computed in blocks
    on up to numba.get_num_threads() threads (the caller's NumPy error state applies in
    each); the same bits as ``ufunc(a)``."""
    n = a.size
    threads = _threads() if n >= THREADED_THRESHOLD else 1
    if (
        threads < 2
        or ufunc not in THREADED_UFUNCS
        or a.dtype.kind != "f"
        or not a.flags.c_contiguous
    ):
        return ufunc(a)
    flat = a.reshape(-1)
    out = np.empty_like(flat)
    step = -(-n // threads // _BLOCK) * _BLOCK  # a whole number of blocks per thread
    bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    pool = _get_pool(len(bounds) - 1)
    jobs = [
        pool.submit(contextvars.copy_context().run, ufunc, flat[lo:hi], out=out[lo:hi])
        for lo, hi in bounds[1:]
    ]
    ufunc(flat[: bounds[0][1]], out=out[: bounds[0][1]])
    for job in jobs:
        job.result()
    return out.reshape(a.shape)


# ---------------------------------------------------------------------------------------
# bf16 and f16 arithmetic on their bit patterns
# ---------------------------------------------------------------------------------------
# bf16 is the top half of a float32; f16 converts exactly to float32 (F16C's vcvtph2ps).
# One op in float32 followed by one rounding to the narrow format is the correctly
# rounded narrow result for add, subtract and multiply (float32's 24 bits are at least
# 2p + 2 for p = 8 and p = 11, so the double rounding is innocuous): the same bits as
# ml_dtypes'/NumPy's own ufuncs and as converting to float32, computing and converting
# back, without the two conversion passes.

BF16, F16 = 0, 1  # ``fmt`` codes
ADD, SUBTRACT, MULTIPLY = 0, 1, 2  # ``op`` codes


@scalar
def narrow_to_f32(h, fmt):
    """bf16 (fmt 0) or f16 (fmt 1) bits, as uint16 -> float32, exactly."""
    if fmt == BF16:
        return bf16_to_f32(h)
    return f16_to_f32(h)


@scalar
def f32_to_narrow(v, fmt):
    """float32 -> bf16 (fmt 0) or f16 (fmt 1) bits, rounded to nearest even. bf16: a
    NaN becomes the quiet NaN 0x7fc0 with its sign (as ml_dtypes); f16: F16C's
    conversion (NumPy's bits for every NaN an arithmetic op can produce)."""
    if fmt == BF16:
        return f32_to_bf16(v)
    return f32_to_f16(v)


@scalar
def _arith(a, b, op):
    """a <op> b in float32. A NaN result is a's NaN (quieted) if a is one, else b's
    (quieted), else the operation's own (inf - inf, 0 * inf): the bits do not depend on
    which operand order the compiler picked for a commutative op in each of a loop's
    vector and scalar versions, so they are the same at every position and SIMD width.
    Only a NaN ``a`` needs a select: with one NaN operand IEEE 754 hardware (x86 SSE/AVX,
    Arm without default-NaN mode) returns that operand quieted in either order. (Two
    selects, one per operand, cost bf16 add 1M 333 us against 266 us on one core.)"""
    if op == ADD:
        v = a + b
    elif op == SUBTRACT:
        v = a - b
    else:
        v = a * b
    return bits_f32(f32_bits(a) | np.uint32(0x00400000)) if a != a else v


@span_body
def _narrow_binary_span(x, y, out, op, fmt, lo, hi):
    for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no negative-index wrap
        v = _arith(narrow_to_f32(x[i], fmt), narrow_to_f32(y[i], fmt), op)
        out[i] = f32_to_narrow(v, fmt)


@span_body
def _narrow_exp_span(x, out, fmt, lo, hi):
    for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no negative-index wrap
        out[i] = f32_to_narrow(exp32(narrow_to_f32(x[i], fmt)), fmt)


@kernel
def _narrow_binary_pieces(x, y, out, op, fmt, piece):
    """Output-parallel. Piece p runs ``_narrow_binary_span`` over elements [p * piece,
    min(p * piece + piece, n)): it writes only its own elements."""
    n = out.size
    for p in prange((n + piece - 1) // piece):
        lo = p * piece
        _narrow_binary_span(x, y, out, op, fmt, lo, min(lo + piece, n))


def narrow_binary(x, y, out, op, fmt):
    """out = x <op> y on contiguous 1-D uint16 bit patterns of bf16 or f16 (one shape):
    on one core below PARALLEL_MAP_THRESHOLD elements, else in pieces of PIECE elements
    shared by Numba's threads (session 15: 1M bf16 add 211 -> 135 us; through a Python
    pool of threads it measured slower, 305 us). Each element is computed
    by the same code whichever piece holds it: the same bits."""
    args = (x, y, out, np.int64(op), np.int64(fmt))
    if out.size < PARALLEL_MAP_THRESHOLD or _threads() < 2:
        _narrow_binary_span(*args, np.int64(0), np.int64(out.size))
    else:
        _narrow_binary_pieces(out.size, *args, np.int64(PIECE))


@kernel
def lookup16(x, out, table):
    """Output-parallel. out[i] = table[x[i]] for uint16 bit patterns and a 65536-entry
    uint16 table."""
    for i in prange(out.size):
        out[i] = table[x[i]]


_EXP_TABLES = {}  # fmt -> _narrow_exp_span over all 65536 bit patterns


def narrow_exp(x, out, fmt):
    """out = e^x on contiguous 1-D uint16 bit patterns of bf16 or f16: float32's exp
    (xops.kernels.transcendental.exp32), rounded once to the narrow format. A 16-bit
    type has 65536 values: the span computes them all once per process (about 60 us),
    and every call looks its results up (issue 15: bf16 exp 1M on one core 0.57 ms
    against the span's 0.97 ms and float32 exp's 0.66 ms; the same bits)."""
    table = _EXP_TABLES.get(fmt)
    if table is None:
        every = np.arange(1 << 16, dtype=np.uint16)
        table = np.empty(1 << 16, np.uint16)
        _narrow_exp_span(every, table, np.int64(fmt), np.int64(0), np.int64(every.size))
        _EXP_TABLES[fmt] = table
    if out.size < THREADED_THRESHOLD:
        lookup16.serial(x, out, table)
    else:
        lookup16(out.size, x, out, table)


def unary_f32(name, x, out):
    """out = name(x) for contiguous 1-D float32 ``x`` and ``out``; ``name`` is a key of
    xops.kernels.transcendental.FUNCTIONS (exp, expm1, tanh, logistic)."""
    span, entry, arg = FUNCTIONS[name]
    run_span_entry(span, entry, out.size, x, out, arg)


# ---------------------------------------------------------------------------------------
# A full operand with one broadcast along its trailing dims: x (+ - * /) s[row]
# ---------------------------------------------------------------------------------------

DIVIDE = 3
ROW_OP = ADD  # replaced by each variant's own constant (ROWS_BINARY)
ROWS_MIN = 32  # rows_binary takes rows of at least this many elements


@scalar
def _row_arith(a, b, op):
    """a <op> b (add, subtract, multiply, divide) in a's float type, as NumPy's ufunc
    gives it: a NaN result is a's NaN (quieted) if a is one, else b's as it is (quieted),
    else the operation's own, whichever operand order or form the compiler picked (see
    _arith; with b the same for a whole row, LLVM turns x - b into x + (-b), which
    flips the sign of b's NaN: the select for b keeps it)."""
    if op == ADD:
        v = a + b
    elif op == SUBTRACT:
        v = a - b
    elif op == MULTIPLY:
        v = a * b
    else:
        v = a / b
    if b != b:
        v = b + b
    return a + a if a != a else v


def _rows_binary(x, s, out, r0, r1, s_first):
    """Output-parallel. out[r, k] = x[r, k] <ROW_OP> s[r] (s[r] <ROW_OP> x[r, k] when
    ``s_first``) for rows r0 <= r < r1 of the 2-D C-contiguous x and out: iteration r
    writes only row r."""
    for r in prange(r0, r1):
        v = s[r]
        xr = x[r]
        o = out[r]
        if s_first:
            for k in range(xr.shape[0]):
                o[k] = _row_arith(v, xr[k], ROW_OP)
        else:
            for k in range(xr.shape[0]):
                o[k] = _row_arith(xr[k], v, ROW_OP)


_ARITH = ((np.add, ADD), (np.subtract, SUBTRACT), (np.multiply, MULTIPLY), (np.divide, DIVIDE))
ROWS_BINARY = {
    ufunc: kernel(renamed(_rows_binary, f"rows_binary_{ufunc.__name__}", {"ROW_OP": code}))
    for ufunc, code in _ARITH
}


def _full_binary(x, y, out):
    """Output-parallel. out[i] = x[i] <ROW_OP> y[i] for 1-D arrays of one float type,
    NumPy's ufunc's bits (NaNs as ``_row_arith`` picks them): iteration i writes only
    out[i]."""
    for i in prange(out.size):
        out[i] = _row_arith(x[i], y[i], ROW_OP)


# add, subtract, multiply and divide of two float32/float64 arrays of one shape from
# PARALLEL_MAP_THRESHOLD elements (ops/_core.binary_map): NumPy's loop is one core's,
# and the split helper waited for a thread: 1M f32 add 180-230 us -> a prange loop
# 70-85 us (PyTorch 74; session 15, with Numba's threads spinning after a region).
FULL_BINARY = {
    ufunc: kernel(renamed(_full_binary, f"full_binary_{ufunc.__name__}", {"ROW_OP": code}))
    for ufunc, code in _ARITH
}


def rows_binary(ufunc, a, b):
    """``ufunc(a, b)`` (add, subtract, multiply or divide of one float32/float64 type,
    operands of one shape) where one operand is C-contiguous and the other a broadcast
    that is constant along the trailing dims (a bias or a per-channel scale of NCHW:
    strides (0, 4, 0, 0)), computed row by row from one value per row; None for any
    other call. NumPy takes such a call as a scalar-broadcast inner loop per row, about
    2x the time of two full arrays (issue 15: (64, 16, 28, 28) f32 + a channel bias 164
    us, the same add of two full arrays 75 us, this loop on one core 68 us). The same
    bits as the ufunc: every element is the same IEEE operation, NaNs as NumPy's.
    On Numba's threads from config.PARALLEL_THRESHOLD elements (rows split among them:
    each row is its own, so the bits do not depend on the thread count)."""
    kern = ROWS_BINARY.get(ufunc)
    if kern is None or a.dtype != b.dtype or a.dtype.kind != "f" or a.dtype.itemsize < 4:
        return None
    if a.shape != b.shape or a.dtype.itemsize > 8:
        return None
    for full, v, s_first in ((a, b, False), (b, a, True)):
        if full.flags.c_contiguous:
            return _rows(kern, full, v, s_first)
    for full, v, s_first in ((a, b, False), (b, a, True)):
        perm = memory_order([full])  # (a transposed result: read it in its own order)
        if perm is not None:
            out = _rows(kern, full.transpose(perm), v.transpose(perm), s_first)
            return None if out is None else out.transpose(np.argsort(perm))
    return None


def memory_order(arrays):
    """A permutation of the dims in which every array of the list is C-contiguous (all
    share one memory layout, e.g. all transposed alike: a transposed array's memory
    order), or None (layouts that differ, a broadcast, a slice with gaps)."""
    perm = np.argsort([-abs(s) for s in arrays[0].strides], kind="stable")
    for a in arrays:
        if not np.transpose(a, perm).flags.c_contiguous:
            return None
    return perm


def _rows(kern, full, v, s_first):
    """rows_binary for a C-contiguous ``full``."""
    d, k = v.ndim, 1
    while d and (v.strides[d - 1] == 0 or v.shape[d - 1] == 1):
        d -= 1
        k *= v.shape[d]
    if k < ROWS_MIN or d == v.ndim:
        return None
    n = full.size
    s = np.ascontiguousarray(v[(Ellipsis,) + (0,) * (v.ndim - d)]).reshape(-1)
    rows = s.size
    x = full.reshape(rows, k)
    out = _buffers.empty((rows, k), full.dtype)
    kern(n, x, s, out, np.int64(0), np.int64(rows), s_first)
    return out.reshape(full.shape)
