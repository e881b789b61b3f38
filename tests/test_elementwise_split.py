"""Large memory-bound elementwise maps in two pieces on two threads (issue 15):
``K.split_now`` / ``K.split_in_two`` under the binary ufunc fast path (add, subtract,
multiply, divide) and the 32-bit shift kernels. The results must be NumPy's (or the
reference's) bit for bit, whichever way a call went (split, helper cancelled, no spare
core, one thread)."""

import contextvars
import os
import threading
import time
import warnings

import numba
import numpy as np
import pytest

import xops as xo
from xops.kernels import elementwise as K

N = K.SPLIT_THRESHOLD
_SPARE_CORE = K._spare_core  # (the fixture below stands in for it)
SIZES = [N - 1, N, N + 4099, 3 * N + 7]


@pytest.fixture(autouse=True)
def _spare(monkeypatch):
    """Each call may split, whatever else runs on the machine (the test of
    ``_spare_core`` itself is below)."""
    monkeypatch.setattr(K, "_spare_core", lambda: True)


def _bits(v):
    return np.ascontiguousarray(v).reshape(-1).view(np.uint8)


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(_bits(got), _bits(want))


def _data(n, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-(2**31), 2**31 - 1, n, dtype=dtype)
    with np.errstate(all="ignore"):  # (a few overflow to inf: products and sums do too)
        v = rng.standard_normal(n).astype(dtype) * dtype(1e38 if dtype != np.float64 else 1e300)
    v[1::97] = np.nan  # NaN operands in vector and tail positions
    v[5::89] = -np.inf
    v[-1] = np.nan
    return v


def _numpy(ufunc, a, b):
    with np.errstate(all="ignore"):
        return ufunc(a, b)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
def test_fast_path_bits(n, dtype):
    a, b = _data(n, dtype, 0), _data(n, dtype, 1)
    x, y = xo.tensor(a), xo.tensor(b)
    ops = [(xo.add, np.add), (xo.subtract, np.subtract), (xo.multiply, np.multiply)]
    if np.dtype(dtype).kind == "f":
        ops.append((xo.divide, np.divide))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow/invalid warning, helper thread included
        for op, ufunc in ops:
            _same(op(x, y)._value, _numpy(ufunc, a, b))
            _same(op(x, 3)._value, _numpy(ufunc, a, np.array(3, dtype)))
            _same(op(2, y)._value, _numpy(ufunc, np.array(2, dtype), b))


def test_result_is_read_only_and_records():
    a = _data(N, np.float32, 2)
    t = xo.tensor(a)
    r = xo.add(t, t)
    assert not r._value.flags.writeable and r._node is None
    t.requires_grad = True
    r = xo.multiply(t, t)  # the full path (a gradient): the same split, the same bits
    assert r._node is not None
    _same(r._value, _numpy(np.multiply, a, a))


def test_shapes_and_layouts():
    a = _data(2 * N, np.float32, 3).reshape(1024, -1)
    b = _data(2 * N, np.float32, 4).reshape(1024, -1)
    _same(xo.add(xo.tensor(a), xo.tensor(b))._value, _numpy(np.add, a, b))
    # non-contiguous operands take the plain ufunc
    _same(xo.add(xo.tensor(a.T), xo.tensor(b.T))._value, _numpy(np.add, a.T, b.T))
    # size 0, size 1 and 0-d take the plain ufunc
    for shape in [(0,), (1,), ()]:
        z = np.full(shape, 1.5, np.float32)
        _same(xo.add(xo.tensor(z), xo.tensor(z))._value, z + z)


def test_one_thread_and_no_spare_core(monkeypatch):
    a, b = _data(N, np.float32, 5), _data(N, np.float32, 6)
    want = _numpy(np.add, a, b)
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        _same(xo.add(xo.tensor(a), xo.tensor(b))._value, want)
    finally:
        numba.set_num_threads(old)
    monkeypatch.setattr(K, "_spare_core", lambda: False)  # every CPU busy: one piece
    _same(xo.add(xo.tensor(a), xo.tensor(b))._value, want)
    assert not K.split_now(N)  # (no spare core: the map runs as one piece)


def _loadavg(tmp_path, running):
    path = tmp_path / f"loadavg{running}"
    path.write_text(f"0.50 0.40 0.30 {running}/123 4567\n")
    return os.open(path, os.O_RDONLY)


def test_spare_core_reads_the_run_queue(monkeypatch, tmp_path):
    assert _SPARE_CORE() in (True, False)  # this machine's /proc/loadavg, or True
    for running, cpus, spare in [(1, 2, True), (2, 2, False), (3, 2, False), (3, 4, True)]:
        fd = _loadavg(tmp_path, running)
        try:
            monkeypatch.setattr(K, "_LOADAVG", (fd, cpus))
            monkeypatch.setattr(K, "_SPARE", [0.0, None, -np.inf])
            assert _SPARE_CORE() is spare
        finally:
            os.close(fd)
    monkeypatch.setattr(K, "_LOADAVG", (-1, 2))  # no such file: split as before
    monkeypatch.setattr(K, "_SPARE", [0.0, None, -np.inf])
    assert _SPARE_CORE() is True


def test_spare_core_holds_a_busy_reading_once_confirmed(monkeypatch, tmp_path):
    """A spare reading holds for SPARE_FOR; a first busy one (a blip: a thread on its
    way to sleep) only for BUSY_RECHECK; a second busy one in a row for SPARE_FOR."""
    now = [100.0]
    monkeypatch.setattr(K, "_clock", lambda: now[0])
    monkeypatch.setattr(K, "_SPARE", [0.0, None, -np.inf])
    idle, busy = _loadavg(tmp_path, 1), _loadavg(tmp_path, 2)
    try:

        def read(fd, dt):
            monkeypatch.setattr(K, "_LOADAVG", (fd, 2))
            now[0] += dt
            return _SPARE_CORE()

        assert read(idle, 0) is True
        assert read(busy, K.SPARE_FOR / 2) is True  # (held)
        assert read(busy, K.SPARE_FOR) is False  # a first busy reading...
        assert read(idle, K.BUSY_RECHECK / 2) is False  # ...held for BUSY_RECHECK
        assert read(idle, K.BUSY_RECHECK) is True  # gone: spare again
        assert read(busy, K.SPARE_FOR) is False
        assert read(busy, K.BUSY_RECHECK) is False  # confirmed...
        assert read(idle, K.SPARE_FOR / 2) is False  # ...held for SPARE_FOR
        assert read(idle, K.SPARE_FOR) is True
        assert read(busy, K.SPARE_FOR) is False
        assert read(busy, 10.0) is False  # long after the last one (no calls): a first sign
        assert read(idle, K.BUSY_RECHECK) is True
    finally:
        os.close(idle)
        os.close(busy)


def test_late_helper_is_a_busy_sign(monkeypatch):
    """split_in_two notes a busy CPU when its helper never started or kept the caller
    waiting; the pieces cover [0, n) once either way."""
    if numba.get_num_threads() < 2:
        pytest.skip("one Numba thread")
    signs = []
    monkeypatch.setattr(K, "_note_spare", lambda spare, now: signs.append(spare))
    for late in (False, True):
        signs.clear()
        seen = np.zeros(N, np.int64)

        def piece(lo, hi):
            if lo == 0:
                time.sleep(0.05)  # the helper surely starts meanwhile
            elif late:
                time.sleep(0.1)  # and keeps the caller waiting 50 ms (LATE of 50 ms: 25)
            seen[lo:hi] += 1

        K.split_in_two(piece, N)
        assert (seen == 1).all()
        assert signs == ([False] if late else [])
    # a helper held up (busy with another task) until the caller is done: the caller
    # runs both pieces
    signs.clear()
    gate = threading.Event()
    blocker = K._Task(contextvars.copy_context(), lambda lo, hi: gate.wait(), 0, 0)
    K._helper_queue().put(blocker)
    seen = np.zeros(N, np.int64)
    threads = set()

    def piece(lo, hi):
        threads.add(threading.get_ident())
        seen[lo:hi] += 1

    try:
        K.split_in_two(piece, N)
    finally:
        gate.set()
        blocker.done.acquire()
    assert (seen == 1).all() and signs == [False] and threads == {threading.get_ident()}


def test_helper_error_reaches_the_caller():
    """An exception in the helper's piece is raised in the caller, after both pieces;
    one in the caller's piece after the helper's is done."""
    if numba.get_num_threads() < 2:
        pytest.skip("one Numba thread")
    started = threading.Event()

    def piece(lo, hi):
        if lo == 0:
            started.wait(5)  # (the helper takes its piece)
        else:
            started.set()
            raise FloatingPointError("helper")

    with pytest.raises(FloatingPointError, match="helper"):
        K.split_in_two(piece, N)
    started.clear()
    done = []

    def caller_fails(lo, hi):
        if lo == 0:
            started.wait(5)
            raise ValueError("caller")
        started.set()
        time.sleep(0.05)
        done.append(hi)

    with pytest.raises(ValueError, match="caller"):
        K.split_in_two(caller_fails, N)
    assert done == [N]  # (the helper was waited for)


@pytest.mark.parametrize("n", [5, N - 1, N, N + 4097])
def test_split_in_two_covers_once(n):
    seen = np.zeros(n, np.int64)
    calls = []

    def piece(lo, hi):
        calls.append((lo, hi))
        seen[lo:hi] += 1

    K.split_in_two(piece, n)
    assert (seen == 1).all()
    assert all(lo % K._BLOCK == 0 for lo, _ in calls)  # pieces keep the alignment
    if n < N:
        assert not K.split_now(n)  # (below the threshold a map runs as one piece)


def _shift_reference(a, s, kind):
    u = a.view(np.uint32).astype(np.uint64)
    s = s.view(np.uint32).astype(np.uint64)
    if kind == "shift_left":
        return np.where(s < 32, (u << np.minimum(s, 31)) & 0xFFFFFFFF, 0).astype(np.uint32)
    if kind == "shift_right_logical":
        return np.where(s < 32, u >> np.minimum(s, 31), 0).astype(np.uint32)
    v = a.view(np.int32).astype(np.int64)
    return (v >> np.minimum(s, 31).astype(np.int64)).astype(np.int32).view(np.uint32)


@pytest.mark.parametrize("n", [N, N + 4099])
@pytest.mark.parametrize("kind", ["shift_left", "shift_right_logical", "shift_right_arithmetic"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_shifts(n, kind, dtype):
    rng = np.random.default_rng(7)
    a = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32).view(dtype)
    s = rng.integers(-40, 40, n, dtype=np.int32).view(dtype)  # amounts >= 32 and "negative"
    want = _shift_reference(a, s, kind)
    got = getattr(xo, kind)(xo.tensor(a), xo.tensor(s))._value
    assert got.dtype == dtype
    assert np.array_equal(got.view(np.uint32), want)
    # 2-D (the fast path's reshaped words) and non-contiguous (the full path's copy)
    m = n // 4 * 4
    got2 = getattr(xo, kind)(xo.tensor(a[:m].reshape(4, -1)), xo.tensor(s[:m].reshape(4, -1)))
    assert np.array_equal(got2._value.reshape(-1).view(np.uint32), want[:m])
    got3 = getattr(xo, kind)(xo.tensor(a[::2]), xo.tensor(s[::2]))._value
    assert np.array_equal(got3.view(np.uint32), want[::2])


def test_split_in_two_uses_the_helper():
    """A caller piece slow enough that the helper surely starts: two threads, two pieces,
    the helper's in the caller's NumPy error state."""
    threads = {}
    states = {}

    def piece(lo, hi):
        if lo == 0:
            time.sleep(0.05)
        threads[lo] = threading.get_ident()
        states[lo] = np.geterr()["over"]

    if numba.get_num_threads() < 2:
        pytest.skip("one Numba thread")
    with np.errstate(over="ignore"):
        K.split_in_two(piece, N)
    assert len(threads) == 2 and len(set(threads.values())) == 2
    assert set(states.values()) == {"ignore"}
    _same(xo.add(xo.tensor(np.ones(N, np.float32)), 1.0)._value, np.full(N, 2, np.float32))


# A full operand and a broadcast one constant along its trailing dims (a bias), row by row


def _nan_payloads(v, seed):
    """Quiet NaNs of several payloads and both signs: which operand's NaN a result
    takes shows in its bits."""
    rng = np.random.default_rng(seed)
    word = np.uint32 if v.dtype == np.float32 else np.uint64
    quiet = word(0x7FC00000) if word is np.uint32 else word(0x7FF8000000000000)
    picks = rng.choice(v.size, max(1, v.size // 50), replace=False)
    flat = v.reshape(-1).view(word)
    flat[picks] = quiet | rng.integers(1, 1 << 20, picks.size).astype(word)
    flat[picks[::2]] |= word(1) << word(8 * v.itemsize - 1)
    return v


ROW_CASES = [
    # (full shape, the broadcast operand's shape, its dims in the full shape)
    ((64, 16, 28, 28), (16,), [1]),  # a conv bias, NCHW
    ((6, 3, 40), (6, 3), [0, 1]),  # constant along the last dim
    ((5, 7, 2, 33), (7,), [1]),  # the trailing block (2, 33)
    ((3, 1, 4, 50), (3, 1), [0, 1]),  # size-1 dims
    ((2, 300), (), []),  # a scalar broadcast: one row
]


@pytest.mark.parametrize("full, small, dims", ROW_CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", [xo.add, xo.subtract, xo.multiply, xo.divide])
def test_broadcast_rows_bits(full, small, dims, dtype, op):
    rng = np.random.default_rng(11)
    a = _nan_payloads(_data(int(np.prod(full)), dtype, 2).reshape(full), 3)
    s = _nan_payloads(rng.standard_normal(small).astype(dtype), 4)
    if s.size > 2:
        s.reshape(-1)[:2] = [0.0, -0.0]
    x, b = xo.tensor(a), xo.broadcast_in_dim(xo.tensor(s), dims, list(full))
    ufunc = {xo.add: np.add, xo.subtract: np.subtract, xo.multiply: np.multiply}.get(op, np.divide)
    bv = np.asarray(b)
    for got, want in ((op(x, b), _numpy(ufunc, a, bv)), (op(b, x), _numpy(ufunc, bv, a))):
        _same(np.asarray(got), want)
    assert K.rows_binary(ufunc, a, bv) is not None  # (the row path took it)


def test_broadcast_rows_serial_and_threads(monkeypatch):
    """The serial loop (below config.PARALLEL_THRESHOLD) and the parallel variant give
    the same bits as the ufunc, in both operand orders."""
    a = _nan_payloads(_data(3 * 7 * 1000, np.float32, 5).reshape(3, 7, 1000), 6)
    s = np.random.default_rng(7).standard_normal(7).astype(np.float32)
    bv = np.broadcast_to(s.reshape(1, 7, 1), a.shape)
    kern = K.ROWS_BINARY[np.subtract]
    calls = []
    real = type(kern).parallel.fget(kern)
    monkeypatch.setattr(kern, "_parallel", lambda *v: calls.append(1) or real(*v))
    for threshold, threaded in ((a.size + 1, 0), (1000, 2)):
        monkeypatch.setattr(xo.kernels.config, "PARALLEL_THRESHOLD", threshold)
        _same(K.rows_binary(np.subtract, a, bv), _numpy(np.subtract, a, bv))
        _same(K.rows_binary(np.subtract, bv, a), _numpy(np.subtract, bv, a))
        assert len(calls) == threaded


def test_broadcast_rows_leave_other_layouts_to_numpy():
    a = np.ones((8, 100), np.float32)
    lead = np.broadcast_to(np.arange(100, dtype=np.float32), a.shape)  # constant down columns
    assert K.rows_binary(np.add, a, lead) is None
    short = np.broadcast_to(np.ones((8, 1), np.float32), (8, 4))  # rows below ROWS_MIN
    assert K.rows_binary(np.add, np.ones((8, 4), np.float32), short) is None
    assert K.rows_binary(np.power, a, np.broadcast_to(np.ones((8, 1), np.float32), a.shape)) is None
    both = np.broadcast_to(np.ones((8, 1), np.float32), a.shape)
    assert K.rows_binary(np.add, both, both) is None
    assert K.rows_binary(np.add, a.astype(np.float16), both.astype(np.float16)) is None


@pytest.mark.parametrize("op", [np.add, np.subtract, np.multiply, np.divide])
def test_broadcast_rows_of_a_transposed_operand(op):
    """A full operand in another memory order (a convolution's (O, N, P) result viewed as
    NCHW) is read in that order, the result in that layout: NumPy's bits."""
    a = _nan_payloads(_data(5 * 7 * 66, np.float32, 8).reshape(7, 5, 66), 9).swapaxes(0, 1)
    s = _nan_payloads(np.random.default_rng(10).standard_normal(7).astype(np.float32), 11)
    bv = np.broadcast_to(s.reshape(1, 7, 1), a.shape)
    for args in ((a, bv), (bv, a)):
        got = K.rows_binary(op, *args)
        assert got is not None and got.shape == a.shape and got.strides == a.strides
        _same(got, _numpy(op, *args))
    sliced = a[:, :, ::2]  # (gaps: not one memory order)
    assert K.rows_binary(op, sliced, bv[:, :, ::2]) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", [np.add, np.subtract, np.multiply, np.divide])
def test_full_binary_kernels_give_numpys_bits(monkeypatch, dtype, op):
    """From K.PARALLEL_MAP_THRESHOLD elements, two float arrays of one shape take the
    parallel FULL_BINARY loop: NumPy's bits, NaN payloads (a's, else b's, quieted),
    inf - inf, signed zeros and a non-multiple of the vector width included, serial and
    parallel alike."""
    from xops.kernels import config

    n = 70003  # (past _core._MAPPED: binary_map)
    a = _nan_payloads(_data(n, dtype, 11), 12)
    b = _nan_payloads(_data(n, dtype, 13), 14)
    a[:6] = [np.inf, -np.inf, 0.0, -0.0, np.inf, 1.0]
    b[:6] = [-np.inf, np.inf, -0.0, 0.0, 0.0, -0.0]
    a2, b2 = a.reshape(1, -1), b.reshape(1, -1)  # (any shape: flat loops)
    want = _numpy(op, a2, b2)
    xop = {np.add: xo.add, np.subtract: xo.subtract, np.multiply: xo.multiply}.get(op, xo.divide)
    kern = K.FULL_BINARY[op]
    calls = []
    real = K.FULL_BINARY[op]
    monkeypatch.setitem(K.FULL_BINARY, op, lambda *v: calls.append(v[0]) or real(*v))
    monkeypatch.setattr(K, "PARALLEL_MAP_THRESHOLD", 1000)
    for threshold in (1 << 40, 0):  # serial, then the parallel variant
        monkeypatch.setattr(config, "PARALLEL_THRESHOLD", threshold)
        _same(np.asarray(xop(xo.tensor(a2), xo.tensor(b2))), want)
    assert calls == [n, n] and kern._parallel is not None
    monkeypatch.setattr(K, "PARALLEL_MAP_THRESHOLD", n + 1)  # below it: NumPy's ufunc
    _same(np.asarray(xop(xo.tensor(a2), xo.tensor(b2))), want)
    assert calls == [n, n]
