"""Elementwise kernels for the ops whose spec semantics NumPy's ufuncs do not have.

Every loop here is **output-parallel**: iteration ``i`` reads ``x[i]`` (and ``y[i]``)
and writes only ``out[i]``, so results never depend on the thread count.

Integer kernels take int64 or uint64 arrays (the caller widens narrower types and
wraps the result back to the type's width), so each kernel has two specialisations
instead of eight; ``bits`` is the element type's width, ``signed`` its signedness.
"""

import contextvars
import math
import os
import threading

import numpy as np
from numba import prange

from .config import kernel, scalar


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
