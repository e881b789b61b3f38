"""The float32 transcendental kernels (xops.kernels.transcendental: exp in float32
arithmetic within 1 ulp; expm1, tanh, logistic in float64, rounded once), the bf16/f16
kernels on bit patterns, and the integer kernels without widening copies (32-bit
divide/remainder through float64, shifts in 32-bit lanes, popcnt by words).

References: float64 NumPy/libm rounded once to float32 (correctly rounded but in
astronomically rare double-rounding cases); ml_dtypes/NumPy for bf16/f16; Python
integers for the integer ops.
"""

import numpy as np
import pytest

import xops as xo
from xops.kernels import config
from xops.kernels import elementwise as K
from xops.kernels import transcendental as T
from conftest import bits
from test_elementwise import ordkey

F32 = xo.as_dtype("f32")

REFS = {
    "exponential": np.exp,
    "exponential_minus_one": np.expm1,
    "tanh": np.tanh,
    "logistic": lambda v: 1.0 / (1.0 + np.exp(-v)),
}


def _f32_sweep():
    """Every 4093rd float32 bit pattern (all signs, exponents and NaN/inf classes), every
    31st float32 in [-104, -87] (exp's subnormal results), every 997th in [-2^-10, 2^-10]
    (expm1/tanh's cancellation region), and the special values."""
    sweep = np.arange(0, 1 << 32, 4093, dtype=np.uint64).astype(np.uint32).view(np.float32)
    lo, hi = np.array([-87.0, -104.0], np.float32).view(np.uint32)  # negative: lo < hi
    sub = np.arange(lo, hi, 31, dtype=np.uint32).view(np.float32)
    small = np.arange(0, 0x3A800000, 997, dtype=np.uint32).view(np.float32)
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.72284, -103.97208, -103.97207,
         -87.33655, 1e-45, -1e-45, 1.1754942e-38, 9.010913, -9.010913, 0.5493061],
        np.float32,
    )  # fmt: skip
    return np.concatenate([sweep, sub, -sub, small, -small, special])


def _ulps_vs_f64(got, x, ref):
    """Largest distance in float32 values of ``got`` from ref(float64(x)) rounded to
    float32; NaN exactly where the reference is NaN, signs of zero equal."""
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    return int(np.max(np.abs(ordkey(got[~nan], F32) - ordkey(want[~nan], F32))))


@pytest.mark.parametrize("op", sorted(REFS))
def test_f32_within_one_ulp_of_float64_reference(op):
    x = _f32_sweep()
    got = np.asarray(getattr(xo, op)(xo.tensor(x)))
    assert got.dtype == np.float32
    assert _ulps_vs_f64(got, x, REFS[op]) <= 1


def test_tanh_f32_correctly_rounded_on_random_inputs():
    """On 2^20 random inputs of the useful range tanh (float64 evaluation) agrees with
    the float64 reference rounded once, bit for bit (its float64 error is below 4e-14)."""
    rng = np.random.default_rng(15)
    x = rng.uniform(-100.0, 88.0, 1 << 20).astype(np.float32)
    got = np.asarray(xo.tanh(xo.tensor(x)))
    assert _ulps_vs_f64(got, x, np.tanh) == 0


def _exp_error_ulps(x):
    """exp(x) in float32 against float64's exp: the error in ulps of the correctly
    rounded float32 (real-valued), and whether each result is that float32."""
    got = np.asarray(xo.exponential(xo.tensor(x))).astype(np.float64)
    want = np.exp(x.astype(np.float64))
    nearest = want.astype(np.float32)
    ulp = np.spacing(nearest)  # positive results: the distance to the next float32 up
    return np.abs(got - want) / ulp, got == nearest


def test_exp_f32_error_bound():
    """exp32 is within EXP32_MAX_ULPS (the exhaustive check's maximum over all 2^32
    inputs, in the module docstring) of the true value on every float32 where |r| is
    largest (x in +-[0.25, 0.5), a quarter of them k = +-1), on 2^20 random inputs of the
    whole finite range and across the subnormal results; most results are the correctly
    rounded float32."""
    rng = np.random.default_rng(15)
    ranges = [np.arange(0x3E800000, 0x3F000000, dtype=np.uint32).view(np.float32)]
    ranges.append(-ranges[0])
    ranges.append(rng.uniform(-104.0, 89.0, 1 << 20).astype(np.float32))
    lo, hi = np.array([-87.0, -104.0], np.float32).view(np.uint32)
    ranges.append(np.arange(lo, hi, 7, dtype=np.uint32).view(np.float32))
    for x in ranges:
        with np.errstate(over="ignore"):
            err, exact = _exp_error_ulps(x[x < 88.72])  # (finite results)
        assert err.max() <= T.EXP32_MAX_ULPS
        assert exact.mean() > 0.9
    assert T.EXP32_MAX_ULPS < 1.0


def test_f32_special_values_exact():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 100.0, -200.0, 1e-45], np.float32)
    assert (
        bits(xo.exponential(xo.tensor(x))).tolist()
        == bits(np.array([np.nan, np.inf, 0.0, 1.0, 1.0, np.inf, 0.0, 1.0], np.float32)).tolist()
    )
    assert np.asarray(xo.tanh(xo.tensor(x))).tolist()[1:] == [
        1,
        -1,
        0,
        0,
        1,
        -1,
        float(np.float32(1e-45)),
    ]
    assert np.signbit(np.asarray(xo.tanh(xo.tensor(x)))).tolist()[3:5] == [False, True]
    em1 = np.asarray(xo.exponential_minus_one(xo.tensor(x)))
    assert em1[1:5].tolist() == [np.inf, -1.0, 0.0, 0.0] and np.signbit(em1[4])
    assert np.asarray(xo.logistic(xo.tensor(x))).tolist()[1:7] == [1.0, 0.0, 0.5, 0.5, 1.0, 0.0]


def _count_piece_launches(monkeypatch):
    """Record the n of each prange launch over span pieces (run_span_entry)."""
    launches = []
    real = K._entry_pieces
    monkeypatch.setattr(K, "_entry_pieces", lambda n, *a: launches.append(n) or real(n, *a))
    return launches


@pytest.mark.parametrize("name", sorted(T.FUNCTIONS))
def test_f32_same_bits_for_any_thread_count(name, monkeypatch):
    """The pieces run through the span's C entry point from a prange loop: the bits of
    the serial span loop for any thread count and piece size (vector loop and scalar
    remainder at other positions)."""
    import numba

    x = _f32_sweep()[: 3 * T.SPAN + 1234]
    serial = np.empty_like(x)
    span, entry, arg = T.FUNCTIONS[name]
    span(x, serial, *(() if arg is None else (arg,)), np.int64(0), np.int64(x.size))
    launches = _count_piece_launches(monkeypatch)
    monkeypatch.setattr(K, "THREADED_THRESHOLD", 0)
    monkeypatch.setattr(K, "_threads", lambda: 2)
    before, pieces = numba.get_num_threads(), (K.PIECE, T.SPAN // 8 + 3)
    try:
        for threads in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(threads)
            for piece in pieces:
                monkeypatch.setattr(K, "PIECE", piece)
                out = np.full_like(x, np.nan)
                K.unary_f32(name, x, out)
                assert bits(out).tobytes() == bits(serial).tobytes(), (threads, piece)
    finally:
        numba.set_num_threads(before)
    assert launches == [x.size] * numba.config.NUMBA_NUM_THREADS  # x.size <= K.PIECE: one span


def test_f32_small_inputs_run_the_span_alone(monkeypatch):
    """Below THREADED_THRESHOLD (and with one thread) no prange launch: the main job's
    small exps never compile the piece loop or the entry points."""
    launches = _count_piece_launches(monkeypatch)
    for n, threads in ((5000, 2), (K.THREADED_THRESHOLD + 5, 1)):
        monkeypatch.setattr(K, "_threads", lambda t=threads: t)
        x = _f32_sweep()[:n]
        out, want = np.empty_like(x), np.empty_like(x)
        K.unary_f32("exp", x, out)
        T._exp_span(x, want, np.int64(0), np.int64(n))
        assert bits(out).tobytes() == bits(want).tobytes()
    assert launches == []


def test_narrow_types_round_float32_result_once():
    """bf16/f16/f8 exp: float32's exp, then one rounding to the type (as XLA): xops's
    own float32 result rounded, and within one ulp of the type of the true value."""
    for name in ("bf16", "f16", "f8E4M3FN"):
        dt = xo.as_dtype(name)
        x = np.linspace(-20, 10, 3001).astype(dt.np)
        f32 = np.asarray(xo.exponential(xo.tensor(x.astype(np.float32))))
        with np.errstate(all="ignore"):
            want = f32.astype(dt.np)
            nearest = np.exp(x.astype(np.float64)).astype(np.float32).astype(dt.np)
        got = xo.exponential(xo.tensor(x, name))
        assert got.dtype == dt
        np.testing.assert_array_equal(bits(got), bits(want))
        finite = np.isfinite(nearest.astype(np.float32))
        dist = ordkey(np.asarray(got)[finite], dt) - ordkey(nearest[finite], dt)
        assert np.abs(dist).max() <= 1


@pytest.mark.parametrize("name", ["bf16", "f16"])
def test_narrow_exp_every_value(name, monkeypatch):
    """bf16/f16 exp looks its results up in a table of all 65536 values: on every bit
    pattern, serial and threaded, float32's exp rounded once to the type (NaN for NaN)."""
    dt = xo.as_dtype(name)
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dt.np)
    wide = every.astype(np.float32)
    with np.errstate(all="ignore"):
        want = np.asarray(xo.exponential(xo.tensor(wide))).astype(dt.np)
    nan = np.isnan(wide)
    for threshold in (K.THREADED_THRESHOLD, 0):
        monkeypatch.setattr(K, "THREADED_THRESHOLD", threshold)
        got = xo.exponential(xo.tensor(every, name))
        assert got.dtype == dt
        g = np.asarray(got)
        np.testing.assert_array_equal(np.isnan(g.astype(np.float32)), nan)
        np.testing.assert_array_equal(bits(g)[~nan], bits(want)[~nan])


# ---------------------------------------------------------------------------------------
# bf16 and f16 on their bit patterns
# ---------------------------------------------------------------------------------------

_NARROW = {"bf16": K.BF16, "f16": K.F16}


def _all_classes(rng, n):
    """Random 16-bit patterns (NaNs, infs, subnormals, zeros included) and the 256 x 256
    grid of every (sign, exponent, top mantissa) corner."""
    a = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    b = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    grid = (np.arange(256, dtype=np.uint16) * 257).astype(np.uint16)
    a[: 256 * 256] = np.repeat(grid, 256)
    b[: 256 * 256] = np.tile(grid, 256)
    return a, b


@pytest.mark.parametrize("name", sorted(_NARROW))
@pytest.mark.parametrize("op", ["add", "subtract", "multiply"])
def test_narrow_binary_bit_exact(name, op):
    dt = xo.as_dtype(name)
    rng = np.random.default_rng(5)
    a, b = _all_classes(rng, 1 << 18)
    ufunc = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}[op]
    with np.errstate(all="ignore"):
        want = ufunc(a.view(dt.np).astype(np.float32), b.view(dt.np).astype(np.float32))
        want = want.astype(dt.np)
        direct = ufunc(a.view(dt.np), b.view(dt.np))  # ml_dtypes' / NumPy's own ufunc
    got = getattr(xo, op)(xo.tensor(a.view(dt.np), name), xo.tensor(b.view(dt.np), name))
    assert got.dtype == dt
    g, nan = bits(got), np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(np.asarray(got).astype(np.float32)), nan)
    np.testing.assert_array_equal(g[~nan], bits(want)[~nan])
    np.testing.assert_array_equal(g[~nan], bits(direct)[~nan])
    # a NaN result is a's NaN if a is one, else b's (quieted): the same at every position
    a_nan = np.isnan(a.view(dt.np).astype(np.float32))
    pick = np.where(a_nan, a, b)[nan & (a_nan | np.isnan(b.view(dt.np).astype(np.float32)))]
    picked = g[nan & (a_nan | np.isnan(b.view(dt.np).astype(np.float32)))]
    np.testing.assert_array_equal(picked >> 15, pick >> 15)  # the sign travels
    if name == "bf16":  # ml_dtypes' float32 -> bf16: the quiet NaN 0x7fc0 with its sign
        assert set((picked & 0x7FFF).tolist()) <= {0x7FC0}


@pytest.mark.parametrize("name", sorted(_NARROW))
def test_narrow_kernels_same_bits_for_any_thread_count(name, monkeypatch):
    dt = xo.as_dtype(name)
    a, b = _all_classes(np.random.default_rng(6), 5 * T.SPAN + 77)
    x, y = xo.tensor(a.view(dt.np), name), xo.tensor(b.view(dt.np), name)
    serial = [bits(xo.add(x, y)), bits(xo.multiply(x, y)), bits(xo.exponential(x))]
    monkeypatch.setattr(K, "THREADED_THRESHOLD", 0)
    monkeypatch.setattr(K, "_threads", lambda: 3)
    parallel = [bits(xo.add(x, y)), bits(xo.multiply(x, y)), bits(xo.exponential(x))]
    for s, p in zip(serial, parallel):
        np.testing.assert_array_equal(s, p)
    # small pieces (vector loop + scalar remainder at other positions) agree too
    np.testing.assert_array_equal(bits(xo.add(x[5:40], y[5:40])), serial[0][5:40])


def test_narrow_binary_broadcasts_weak_scalars_and_shapes():
    x = xo.tensor(np.array([[1.5, -2.0, 3.25]], np.float16), "f16")
    assert np.asarray(x + 1.0).tolist() == [[2.5, -1.0, 4.25]]
    assert np.asarray(xo.multiply(x, 2.0)).tolist() == [[3.0, -4.0, 6.5]]
    bf16 = xo.as_dtype("bf16").np
    y = xo.tensor(np.array([[1.0], [2.0]], bf16), "bf16")
    z = y * xo.tensor(np.array([[1.0, 3.0, 0.5]], bf16), "bf16")
    assert z.shape == (2, 3) and z.dtype == xo.as_dtype("bf16")
    assert np.asarray(z).astype(np.float32).tolist() == [[1, 3, 0.5], [2, 6, 1]]


# ---------------------------------------------------------------------------------------
# integers: no widening copies
# ---------------------------------------------------------------------------------------


def _trunc_div(a, b, bits, signed):
    if b == 0:
        return -1 % (1 << bits)
    q = abs(a) // abs(b)
    return (-q if (a < 0) != (b < 0) else q) % (1 << bits)


def _trunc_rem(a, b, bits):
    if b == 0:
        return a % (1 << bits)
    q = abs(a) // abs(b)
    q = -q if (a < 0) != (b < 0) else q
    return (a - b * q) % (1 << bits)


def _int_operands(name, n=6000, seed=0):
    dt = xo.as_dtype(name)
    rng = np.random.default_rng(seed)
    a = rng.integers(dt.min, dt.max, n, endpoint=True, dtype=np.int64 if dt.min else np.uint64)
    b = rng.integers(dt.min, dt.max, n, endpoint=True, dtype=a.dtype)
    b[:2000] = rng.integers(max(dt.min, -3), 4, 2000)  # 0, -1 and small divisors
    a[:20], a[20:40] = dt.min, dt.max
    b[:10] = -1 if dt.min else 1
    return a.astype(dt.np), b.astype(dt.np)


@pytest.mark.parametrize("name", ["i32", "ui32", "i16", "ui8"])
def test_small_int_divide_remainder_exact(name, monkeypatch):
    dt = xo.as_dtype(name)
    a, b = _int_operands(name)
    mod = lambda vals: np.array(vals, np.uint64).astype(dt.np.str.replace("i", "u")).view(dt.np)
    want_q = mod([_trunc_div(int(p), int(q), dt.bits, dt.min < 0) for p, q in zip(a, b)])
    want_r = mod([_trunc_rem(int(p), int(q), dt.bits) for p, q in zip(a, b)])
    for threshold in (config.PARALLEL_THRESHOLD, 0):
        monkeypatch.setattr(config, "PARALLEL_THRESHOLD", threshold)
        q = xo.divide(xo.tensor(a, name), xo.tensor(b, name))
        r = xo.remainder(xo.tensor(a, name), xo.tensor(b, name))
        assert q.dtype == dt and r.dtype == dt
        np.testing.assert_array_equal(np.asarray(q), want_q)
        np.testing.assert_array_equal(np.asarray(r), want_r)


@pytest.mark.parametrize("name", ["i32", "ui32"])
@pytest.mark.parametrize("op", ["shift_left", "shift_right_logical", "shift_right_arithmetic"])
def test_shifts_in_32_bit_lanes(name, op, monkeypatch):
    dt = xo.as_dtype(name)
    a, _ = _int_operands(name, seed=1)
    rng = np.random.default_rng(2)
    s = rng.integers(-3, 40, a.size).astype(dt.np)
    s[:4] = np.array([dt.max, dt.min, 32, 31]).astype(dt.np)

    def one(v, k):
        u, k = int(v) % 2**32, int(k) % 2**32
        if op == "shift_left":
            return (u << k) % 2**32 if k < 32 else 0
        if op == "shift_right_logical":
            return u >> k if k < 32 else 0
        return ((u - (u >> 31 << 32)) >> min(k, 31)) % 2**32

    want = np.array([one(v, k) for v, k in zip(a, s)], np.uint64).astype(np.uint32).view(dt.np)
    for threshold in (config.PARALLEL_THRESHOLD, 0):
        monkeypatch.setattr(config, "PARALLEL_THRESHOLD", threshold)
        got = getattr(xo, op)(xo.tensor(a, name), xo.tensor(s, name))
        assert got.dtype == dt
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("name", ["i32", "ui32", "i64", "ui64"])
def test_popcnt_words(name, monkeypatch):
    a, _ = _int_operands(name, seed=3)
    u = a.view(a.dtype.str.replace("i", "u"))
    want = np.bitwise_count(u).astype(a.dtype)
    monkeypatch.setattr(config, "PARALLEL_THRESHOLD", 0)
    got = xo.popcnt(xo.tensor(a.reshape(60, -1), name))
    assert got.dtype == xo.as_dtype(name)
    np.testing.assert_array_equal(np.asarray(got).reshape(-1), want)
