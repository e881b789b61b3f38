"""Every example the StableHLO spec gives for the elementwise ops (seed 004), with the
spec's values, plus the semantic details that are easy to get wrong: compare's
directions and TOTALORDER, IEEE maximum/minimum, rounding ties, signed zeros, integer
wraparound, i1 arithmetic and weak Python scalars.

Where the spec's printed result disagrees with its own inputs, the test says so and
checks the value the inputs give (noted in each test's docstring).
"""

import math

import ml_dtypes
import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, bits

NAN, INF = math.nan, math.inf


def f64_from_bits(*patterns):
    return np.array(patterns, np.uint64).view(np.float64)


def t(values, dtype):
    return xo.tensor(values, dtype)


# ---------------------------------------------------------------------------------------
# The spec's examples, one test each
# ---------------------------------------------------------------------------------------


def test_spec_abs():
    assert_tensor(xo.abs(t([-2, 0, 2], "i32")), [2, 0, 2], "i32")


def test_spec_add():
    out = xo.add(t([[1, 2], [3, 4]], "i32"), t([[5, 6], [7, 8]], "i32"))
    assert_tensor(out, [[6, 8], [10, 12]], "i32")


def test_spec_and():
    out = xo.and_(t([[1, 2], [3, 4]], "i32"), t([[5, 6], [7, 8]], "i32"))
    assert_tensor(out, [[1, 2], [3, 0]], "i32")


def test_spec_atan2():
    out = xo.atan2(t([0.0, 1.0, -1.0], "f64"), t([0.0, 0.0, 0.0], "f64"))
    assert_tensor(out, [0.0, math.pi / 2, -math.pi / 2], "f64")


def test_spec_cbrt():
    assert_tensor(xo.cbrt(t([0.0, 1.0, 8.0, 27.0], "f64")), [0.0, 1.0, 2.0, 3.0], "f64")


def test_spec_ceil():
    out = xo.ceil(t([-0.8166, -0.2530, 0.2530, 0.8166, 2.0], "f32"))
    assert_tensor(out, [-0.0, -0.0, 1.0, 1.0, 2.0], "f32")  # signs of zero checked


def test_spec_clamp():
    out = xo.clamp(t([5, 10, 15], "i32"), t([3, 13, 23], "i32"), t([10, 15, 20], "i32"))
    assert_tensor(out, [5, 13, 20], "i32")


def test_spec_compare():
    out = xo.compare(t([1.0, 3.0], "f32"), t([1.1, 2.9], "f32"), "LT", "FLOAT")
    assert_tensor(out, [True, False], "i1")


def test_spec_complex():
    out = xo.complex(t([1.0, 3.0], "f64"), t([2.0, 4.0], "f64"))
    assert_tensor(out, [1 + 2j, 3 + 4j], "c128")


def test_spec_cosine():
    out = xo.cosine(t([[0.0, 1.57079632], [3.14159265, 4.71238898]], "f32"))
    assert_tensor(out, [[1.0, 0.0], [-1.0, 0.0]], "f32", exact=False, atol=1e-6)


def test_spec_count_leading_zeros():
    out = xo.count_leading_zeros(t([[0, 1], [128, -1]], "i64"))
    assert_tensor(out, [[64, 63], [56, 0]], "i64")


def test_spec_divide():
    """The spec prints [5.66666651, ...] = 17/3 for lhs [17.1, -17.1, ...]: the printed
    result belongs to lhs 17.0. Both readings are checked (the conformance suite uses
    17.1 -> 5.7)."""
    rhs = t([3.0, 3.0, -3.0, -3.0], "f32")
    out = xo.divide(t([17.0, -17.0, 17.0, -17.0], "f32"), rhs)
    assert_tensor(out, np.float32([5.66666651, -5.66666651, -5.66666651, 5.66666651]), "f32")
    out = xo.divide(t([17.1, -17.1, 17.1, -17.1], "f32"), rhs)
    assert_tensor(out, np.float32([17.1, -17.1, -17.1, 17.1]) / np.float32(3.0), "f32")


def test_spec_exponential():
    out = xo.exponential(t([[0.0, 1.0], [2.0, 3.0]], "f64"))
    want = [[1.0, 2.7182818284590451], [7.3890560989306504, 20.085536923187668]]
    assert_tensor(out, want, "f64", exact=False, rtol=4e-16)


def test_spec_exponential_minus_one():
    out = xo.exponential_minus_one(t([0.0, 1.0], "f64"))
    assert_tensor(out, [0.0, 1.71828187], "f64", exact=False, rtol=3e-8)  # digits printed
    assert_tensor(out, [0.0, math.e - 1], "f64", exact=False, rtol=2e-16)


def test_spec_floor():
    out = xo.floor(t([-0.8166, -0.2530, 0.2530, 0.8166, 2.0], "f32"))
    assert_tensor(out, [-1.0, -1.0, 0.0, 0.0, 2.0], "f32")


def test_spec_imag():
    assert_tensor(xo.imag(t([1 + 2j, 3 + 4j], "c64")), [2.0, 4.0], "f32")


def test_spec_is_finite():
    x = f64_from_bits(0xFFF0000000000000, 0x7FF0000000000000, 0x7FF8000000000000)
    x = np.concatenate([x, [-10.0, -0.0, 0.0, 10.0]])
    out = xo.is_finite(xo.tensor(x))
    assert_tensor(out, [False, False, False, True, True, True, True], "i1")


def test_spec_log():
    out = xo.log(t([[1.0, 2.0], [3.0, 4.0]], "f64"))
    want = [[0.0, 0.69314718055994529], [1.0986122886681098, 1.3862943611198906]]
    assert_tensor(out, want, "f64", exact=False, rtol=4e-16)


def test_spec_log_plus_one():
    """The spec prints -6.90776825 for log1p(-0.999) = log(0.001) = -6.90775528: off in
    the 5th digit (an erratum); the other entries match to the printed digits."""
    out = xo.log_plus_one(t([0.0, -0.999, 7.0, 6.38905621, 15.0], "f64"))
    want = [0.0, -6.90776825, 2.07944155, 2.0, 2.77258873]
    assert_tensor(out, want, "f64", exact=False, rtol=2e-6)
    assert_tensor(
        out,
        [0.0, math.log(0.001), math.log(8.0), math.log1p(6.38905621), math.log(16.0)],
        "f64",
        exact=False,
        rtol=1e-9,
    )


def test_spec_logistic():
    out = xo.logistic(t([[0.0, 1.0], [2.0, 3.0]], "f64"))
    want = [[0.5, 0.73105858], [0.88079708, 0.95257413]]
    assert_tensor(out, want, "f64", exact=False, rtol=1e-8)


def test_spec_maximum():
    out = xo.maximum(t([[1, 2], [7, 8]], "i32"), t([[5, 6], [3, 4]], "i32"))
    assert_tensor(out, [[5, 6], [7, 8]], "i32")


def test_spec_minimum():
    out = xo.minimum(t([[1, 2], [7, 8]], "i32"), t([[5, 6], [3, 4]], "i32"))
    assert_tensor(out, [[1, 2], [3, 4]], "i32")


def test_spec_multiply():
    out = xo.multiply(t([[1, 2], [3, 4]], "i32"), t([[5, 6], [7, 8]], "i32"))
    assert_tensor(out, [[5, 12], [21, 32]], "i32")


def test_spec_negate():
    assert_tensor(xo.negate(t([0, -2], "i32")), [0, 2], "i32")
    out = np.asarray(xo.negate(t([2.5 + 0.0j], "c64")))
    assert out.dtype == np.complex64 and out[0].real == -2.5
    assert out[0].imag == 0 and np.signbit(out[0].imag)  # (-2.5, -0.0)


def test_spec_not():
    assert_tensor(xo.not_(t([[1, 2], [3, 4]], "i32")), [[-2, -3], [-4, -5]], "i32")
    assert_tensor(xo.not_(t([True, False], "i1")), [False, True], "i1")


def test_spec_or():
    out = xo.or_(t([[1, 2], [3, 4]], "i32"), t([[5, 6], [7, 8]], "i32"))
    assert_tensor(out, [[5, 6], [7, 12]], "i32")
    out = xo.or_(t([[False, False], [True, True]], "i1"), t([[False, True], [False, True]], "i1"))
    assert_tensor(out, [[False, True], [True, True]], "i1")


def test_spec_popcnt():
    assert_tensor(xo.popcnt(t([0, 1, 2, 127], "i64")), [0, 1, 1, 7], "i64")


def test_spec_power():
    """The spec labels this example f64 but prints float32 results (0.333333343 is
    f32(1/3), and 10000^10 = 1e40 overflows only f32). Checked as printed on f32 and
    with the true values on f64 (the conformance suite's 1e40)."""
    lhs = [-2.0, -0.0, -36.0, 5.0, 3.0, 10000.0]
    rhs = [2.0, 2.0, 1.1, 2.0, -1.0, 10.0]
    out = xo.power(t(lhs, "f32"), t(rhs, "f32"))
    assert_tensor(out, np.float32([4.0, 0.0, NAN, 25.0, 0.333333343, INF]), "f32")
    out = xo.power(t(lhs, "f64"), t(rhs, "f64"))
    assert_tensor(out, [4.0, 0.0, NAN, 25.0, 1 / 3, 1e40], "f64", exact=False, rtol=4e-16)
    assert not np.signbit(np.asarray(out)[1])  # (-0)^2 = +0


def test_spec_real():
    assert_tensor(xo.real(t([1 + 2j, 3 + 4j], "c64")), [1.0, 3.0], "f32")


def test_spec_remainder():
    out = xo.remainder(t([17, -17, 17, -17], "i64"), t([3, 3, -3, -3], "i64"))
    assert_tensor(out, [2, -2, 2, -2], "i64")


def test_spec_round_nearest_afz():
    out = xo.round_nearest_afz(t([-2.5, 0.4, 0.5, 0.6, 2.5], "f64"))
    assert_tensor(out, [-3.0, 0.0, 1.0, 1.0, 3.0], "f64")


def test_spec_round_nearest_even():
    out = xo.round_nearest_even(t([-2.5, 0.4, 0.5, 0.6, 2.5], "f64"))
    assert_tensor(out, [-2.0, 0.0, 0.0, 1.0, 2.0], "f64")


def test_spec_rsqrt():
    """The spec prints 0.33333343 for rsqrt(9) in f32, 3 ulps from f32(1/3) =
    0.333333343...; checked to 4 ulps, and 1/sqrt(9) is exact in f32 here."""
    out = xo.rsqrt(t([[1.0, 4.0], [9.0, 25.0]], "f32"))
    assert_tensor(
        out, np.float32([[1.0, 0.5], [0.33333343, 0.2]]), "f32", exact=False, rtol=4 * 2.0**-23
    )
    assert_tensor(out, np.float32([[1.0, 0.5], [1 / 3, 0.2]]), "f32")


def test_spec_select():
    out = xo.select(
        t([[False, True], [True, False]], "i1"),
        t([[1, 2], [3, 4]], "i32"),
        t([[5, 6], [7, 8]], "i32"),
    )
    assert_tensor(out, [[5, 2], [3, 8]], "i32")


def test_spec_shift_left():
    out = xo.shift_left(t([-1, 0, 1], "i64"), t([1, 2, 3], "i64"))
    assert_tensor(out, [-2, 0, 8], "i64")


def test_spec_shift_right_arithmetic():
    out = xo.shift_right_arithmetic(t([-1, 0, 8], "i64"), t([1, 2, 3], "i64"))
    assert_tensor(out, [-1, 0, 1], "i64")


def test_spec_shift_right_logical():
    out = xo.shift_right_logical(t([-1, 0, 8], "i64"), t([1, 2, 3], "i64"))
    assert_tensor(out, [9223372036854775807, 0, 1], "i64")


def test_spec_sign():
    x = np.concatenate([f64_from_bits(0x7FFFFFFFFFFFFFFF), [-1.0, -0.0, 0.0, 1.0]])
    out = xo.sign(xo.tensor(x))
    assert_tensor(out, [NAN, -1.0, -0.0, 0.0, 1.0], "f64")


def test_spec_sine():
    out = xo.sine(t([[0.0, 1.57079632], [3.14159265, 4.71238898]], "f32"))
    assert_tensor(out, [[0.0, 1.0], [0.0, -1.0]], "f32", exact=False, atol=1e-6)


def test_spec_sqrt():
    out = xo.sqrt(t([[0.0, 1.0], [4.0, 9.0]], "f32"))
    assert_tensor(out, [[0.0, 1.0], [2.0, 3.0]], "f32")


def test_spec_subtract():
    out = xo.subtract(t([[6, 8], [10, 12]], "f32"), t([[5, 6], [7, 8]], "f32"))
    assert_tensor(out, [[1, 2], [3, 4]], "f32")


def test_spec_tanh():
    out = xo.tanh(t([-1.0, 0.0, 1.0], "f32"))
    assert_tensor(
        out, np.float32([-0.76159416, 0.0, 0.76159416]), "f32", exact=False, rtol=2 * 2.0**-23
    )


def test_spec_xor():
    out = xo.xor(t([[1, 2], [3, 4]], "i32"), t([[5, 6], [7, 8]], "i32"))
    assert_tensor(out, [[4, 4], [4, 12]], "i32")
    out = xo.xor(t([[False, False], [True, True]], "i1"), t([[False, True], [False, True]], "i1"))
    assert_tensor(out, [[False, True], [True, False]], "i1")


# XLA-only ops (seed 002 gives definitions, no examples): known values


def test_xla_erf():
    out = xo.erf(t([0.0, -0.0, 0.5, 1.0, -2.0, INF, -INF, NAN], "f64"))
    want = [0.0, -0.0, 0.5204998778130465, 0.8427007929497149, -0.9953222650189527, 1.0, -1.0, NAN]
    assert_tensor(out, want, "f64", exact=False, rtol=4e-16)
    assert np.signbit(np.asarray(out)[1])


def test_xla_tan():
    out = xo.tan(t([0.0, -0.0, math.pi / 4, -1.0, INF, NAN], "f64"))
    assert_tensor(
        out, [0.0, -0.0, 1.0, -1.5574077246549023, NAN, NAN], "f64", exact=False, rtol=4e-16
    )
    assert np.signbit(np.asarray(out)[1])
    out = xo.tan(t([1 + 1j], "c128"))
    np.testing.assert_allclose(
        np.asarray(out), [0.2717525853195117 + 1.0839233273386946j], rtol=1e-15
    )


# ---------------------------------------------------------------------------------------
# compare: directions, compare types, TOTALORDER
# ---------------------------------------------------------------------------------------


def _ordered(dtype):
    """-NaN, -inf (or -max), -1, -0, +0, 1, +inf (or max), +NaN in the type."""
    dt = xo.as_dtype(dtype)
    fi = ml_dtypes.finfo(dt.np)
    big = INF if dt.name in ("f32", "f64", "f16", "bf16", "f8E5M2") else float(fi.max)
    vals = np.array([NAN, -big, -1.0, -0.0, 0.0, 1.0, big, NAN], np.float64)
    arr = vals.astype(np.float32).astype(dt.np)
    u = arr.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[arr.itemsize]).copy()
    u[0] |= u.dtype.type(1 << (dt.bits - 1))  # -NaN: sign bit set
    u[-1] &= u.dtype.type((1 << (dt.bits - 1)) - 1)  # +NaN: sign bit clear
    return u.view(dt.np)


@pytest.mark.parametrize(
    "dtype", ["f32", "f64", "bf16", "f16", "f8E4M3FN", "f8E5M2", "f8E4M3", "f8E3M4"]
)
def test_compare_totalorder_order(dtype):
    """-NaN < -inf < -1 < -0 < +0 < 1 < inf < +NaN; NaN == NaN (same bits); -0 != +0."""
    v = _ordered(dtype)
    n = len(v)
    a = xo.tensor(np.repeat(v, n), dtype)
    b = xo.tensor(np.tile(v, n), dtype)
    i, j = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    for direction, fn in [
        ("LT", np.less),
        ("LE", np.less_equal),
        ("GT", np.greater),
        ("GE", np.greater_equal),
        ("EQ", np.equal),
        ("NE", np.not_equal),
    ]:
        out = xo.compare(a, b, direction, "TOTALORDER")
        assert_tensor(out, fn(i, j), "i1")


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16", "f8E4M3FN", "f8E5M2"])
def test_compare_float_is_ieee_quiet(dtype):
    """FLOAT: NaN is unordered (only NE is true) and -0 == +0."""
    v = _ordered(dtype)
    n = len(v)
    av, bv = np.repeat(v, n), np.tile(v, n)
    a, b = xo.tensor(av, dtype), xo.tensor(bv, dtype)
    x, y = av.astype(np.float64), bv.astype(np.float64)
    with np.errstate(invalid="ignore"):
        for direction, fn in [
            ("LT", np.less),
            ("LE", np.less_equal),
            ("GT", np.greater),
            ("GE", np.greater_equal),
            ("EQ", np.equal),
            ("NE", np.not_equal),
        ]:
            assert_tensor(xo.compare(a, b, direction, "FLOAT"), fn(x, y), "i1")
            assert_tensor(xo.compare(a, b, direction), fn(x, y), "i1")  # FLOAT is the default
    z = xo.compare(xo.tensor([-0.0], dtype), xo.tensor([0.0], dtype), "EQ")
    assert_tensor(z, [True], "i1")


def test_compare_totalorder_nan_payloads_and_fnuz():
    """totalOrder orders NaNs by payload; the FNUZ formats' one NaN (0x80) sits between
    the negatives and +0, as XLA's sign-flip key puts it."""
    x = f64_from_bits(
        0x7FF0000000000001, 0x7FF8000000000000, 0xFFF8000000000000, 0xFFF0000000000001
    )
    a, b = xo.tensor(x), xo.tensor(x[::-1].copy())
    assert_tensor(xo.compare(a, b, "LT", "TOTALORDER"), [False, False, True, True], "i1")
    assert_tensor(xo.compare(a, a, "EQ", "TOTALORDER"), [True] * 4, "i1")
    assert_tensor(xo.compare(a, a, "EQ", "FLOAT"), [False] * 4, "i1")
    fnuz = np.array([0x80, 0x81, 0x00, 0x01], np.uint8).view(xo.float8_e4m3fnuz.np)
    nan = xo.tensor(fnuz[[0, 0, 0]], "f8E4M3FNUZ")
    other = xo.tensor(fnuz[1:], "f8E4M3FNUZ")  # -min subnormal, +0, +min subnormal
    assert_tensor(xo.compare(nan, other, "GT", "TOTALORDER"), [True, False, False], "i1")


@pytest.mark.parametrize(
    "dtype, ctype",
    [
        ("i32", "SIGNED"),
        ("i4", "SIGNED"),
        ("ui32", "UNSIGNED"),
        ("ui4", "UNSIGNED"),
        ("i1", "UNSIGNED"),
    ],
)
def test_compare_integers_every_direction(dtype, ctype):
    dt = xo.as_dtype(dtype)
    vals = [dt.min, dt.min + 1, 0, 1, dt.max - 1, dt.max] if dt.kind != "bool" else [0, 1]
    vals = sorted(set(vals))
    a = np.repeat(vals, len(vals))
    b = np.tile(vals, len(vals))
    for direction, fn in [
        ("LT", np.less),
        ("LE", np.less_equal),
        ("GT", np.greater),
        ("GE", np.greater_equal),
        ("EQ", np.equal),
        ("NE", np.not_equal),
    ]:
        out = xo.compare(xo.tensor(a, dtype), xo.tensor(b, dtype), direction, ctype)
        assert_tensor(out, fn(a, b), "i1")
        assert_tensor(
            xo.compare(xo.tensor(a, dtype), xo.tensor(b, dtype), direction), fn(a, b), "i1"
        )


def test_compare_complex_lexicographic():
    a = t([1 + 5j, 1 + 2j, 2 + 0j, 1 + 2j, complex(NAN, 0)], "c64")
    b = t([2 + 0j, 1 + 3j, 1 + 9j, 1 + 2j, complex(NAN, 0)], "c64")
    assert_tensor(xo.compare(a, b, "LT"), [True, True, False, False, False], "i1")
    assert_tensor(xo.compare(a, b, "GE"), [False, False, True, True, False], "i1")
    assert_tensor(xo.compare(a, b, "EQ", "FLOAT"), [False, False, False, True, False], "i1")
    assert_tensor(xo.compare(a, b, "NE"), [True, True, True, False, True], "i1")


def test_compare_direction_is_case_insensitive_and_result_is_i1():
    out = xo.compare(t([1, 2], "ui8"), t([2, 2], "ui8"), "le")
    assert_tensor(out, [True, True], "i1")


# ---------------------------------------------------------------------------------------
# maximum / minimum, rounding, signs, integer wraparound
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16", "f8E4M3FN"])
def test_maximum_minimum_nan_and_signed_zeros(dtype):
    a = t([NAN, 1.0, NAN, -0.0, 0.0, -0.0, 0.0, -INF if dtype != "f8E4M3FN" else -448.0], dtype)
    b = t([1.0, NAN, NAN, 0.0, -0.0, -0.0, 0.0, 2.0], dtype)
    mx, mn = xo.maximum(a, b), xo.minimum(a, b)
    lo = -INF if dtype != "f8E4M3FN" else -448.0
    assert_tensor(mx, [NAN, NAN, NAN, 0.0, 0.0, -0.0, 0.0, 2.0], dtype)
    assert_tensor(mn, [NAN, NAN, NAN, -0.0, -0.0, -0.0, 0.0, lo], dtype)


def test_maximum_minimum_i1_and_complex():
    a, b = t([False, False, True, True], "i1"), t([False, True, False, True], "i1")
    assert_tensor(xo.maximum(a, b), [False, True, True, True], "i1")
    assert_tensor(xo.minimum(a, b), [False, False, False, True], "i1")
    a = t([1.5 + 2.5j, 1.5 + 7.5j, 0 + 1.5j], "c128")
    b = t([7.5 + 1.5j, 1.5 + 2.5j, -0.0 + 2.5j], "c128")
    assert_tensor(xo.maximum(a, b), [7.5 + 1.5j, 1.5 + 7.5j, -0.0 + 2.5j], "c128")
    assert_tensor(xo.minimum(a, b), [1.5 + 2.5j, 1.5 + 2.5j, 0 + 1.5j], "c128")


def test_clamp_nan_and_inverted_bounds():
    out = xo.clamp(t(2.0, "f32"), t([-1.0, 1.5, NAN, 5.0], "f32"), t(1.0, "f32"))
    assert_tensor(out, [1.0, 1.0, NAN, 1.0], "f32")  # min > max gives max
    out = xo.clamp(
        t([NAN, 0.0, -0.0], "f32"), t([1.0, -0.0, 0.0], "f32"), t([2.0, 1.0, -0.0], "f32")
    )
    assert_tensor(out, [NAN, 0.0, -0.0], "f32")


def test_round_nearest_afz_hard_cases():
    x = [
        0.49999999999999994,
        -0.49999999999999994,
        -2.5,
        2.5,
        -0.3,
        0.3,
        -0.5,
        0.5,
        4503599627370495.5,
        -4503599627370497.0,
        -0.0,
        INF,
        -INF,
        NAN,
    ]
    want = [
        0.0,
        -0.0,
        -3.0,
        3.0,
        -0.0,
        0.0,
        -1.0,
        1.0,
        4503599627370496.0,
        -4503599627370497.0,
        -0.0,
        INF,
        -INF,
        NAN,
    ]
    assert_tensor(xo.round_nearest_afz(t(x, "f64")), want, "f64")
    assert_tensor(
        xo.round_nearest_afz(t([0.49999997, -2.5, 2.5, -0.3], "f32")), [0.0, -3.0, 3.0, -0.0], "f32"
    )
    assert_tensor(
        xo.round_nearest_afz(t([-2.5, 0.5, -0.3, 1.5], "bf16")), [-3.0, 1.0, -0.0, 2.0], "bf16"
    )


def test_round_nearest_even_and_floor_ceil_keep_zero_signs():
    x = t([-0.5, 0.5, 1.5, 2.5, -0.0, -0.3, 0.3, -2.5], "f32")
    assert_tensor(xo.round_nearest_even(x), [-0.0, 0.0, 2.0, 2.0, -0.0, -0.0, 0.0, -2.0], "f32")
    assert_tensor(xo.floor(x), [-1.0, 0.0, 1.0, 2.0, -0.0, -1.0, 0.0, -3.0], "f32")
    assert_tensor(xo.ceil(x), [-0.0, 1.0, 2.0, 3.0, -0.0, -0.0, 1.0, -2.0], "f32")


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16", "f16", "f8E5M2"])
def test_sign_of_signed_zero_and_nan(dtype):
    out = xo.sign(t([-0.0, 0.0, NAN, -3.0, 0.25, -INF, INF], dtype))
    assert_tensor(out, [-0.0, 0.0, NAN, -1.0, 1.0, -1.0, 1.0], dtype)


def test_sign_integers_and_complex():
    assert_tensor(xo.sign(t([-128, -1, 0, 1, 127], "i8")), [-1, -1, 0, 1, 1], "i8")
    assert_tensor(xo.sign(t([-2, -1, 0, 1], "i2")), [-1, -1, 0, 1], "i2")
    z = np.array([complex(NAN, 0), complex(0, NAN), 0j, 1j, 3 + 4j])
    out = np.asarray(xo.sign(xo.tensor(z, "c128")))
    assert np.isnan(out[:2].real).all() and np.isnan(out[:2].imag).all()  # (NaN, NaN)
    np.testing.assert_allclose(out[2:], [0j, 1j, 0.6 + 0.8j], rtol=4e-16)


def test_sqrt_rsqrt_signed_zero_and_negative():
    assert_tensor(xo.sqrt(t([-0.0, 0.0, -1.0, INF], "f32")), [-0.0, 0.0, NAN, INF], "f32")
    assert_tensor(
        xo.rsqrt(t([0.0, -0.0, -1.0, INF, 4.0], "f32")), [INF, -INF, NAN, 0.0, 0.5], "f32"
    )


def test_cbrt_negative_and_complex_principal_root():
    assert_tensor(xo.cbrt(t([-8.0, -27.0, -0.0], "f64")), [-2.0, -3.0, -0.0], "f64")
    out = xo.cbrt(t([3 + 4j, -8 + 0j], "c128"))
    np.testing.assert_allclose(
        np.asarray(out),
        [1.6289371459221759 + 0.5201745023045458j, 1 + math.sqrt(3) * 1j],
        rtol=1e-15,
    )


def test_complex_atan2_examples():
    out = xo.atan2(t([1 + 0j, -1 + 0j], "c128"), t([0j, 0j], "c128"))
    np.testing.assert_allclose(np.asarray(out).real, [math.pi / 2, -math.pi / 2], rtol=1e-15)
    np.testing.assert_allclose(np.asarray(out).imag, [0.0, 0.0], atol=1e-15)


def test_atan2_signed_zeros_and_operand_order():
    y = t([0.0, -0.0, 0.0, -0.0, 1.0, 1.0], "f64")
    x = t([-0.0, -0.0, 0.0, 0.0, 0.0, -1.0], "f64")
    assert_tensor(
        xo.atan2(y, x), [math.pi, -math.pi, 0.0, -0.0, math.pi / 2, 3 * math.pi / 4], "f64"
    )


def test_transcendental_special_values():
    x = t([-INF, INF, NAN, 0.0, -0.0], "f32")
    assert_tensor(xo.exponential(x), [0.0, INF, NAN, 1.0, 1.0], "f32")
    assert_tensor(xo.exponential_minus_one(x), [-1.0, INF, NAN, 0.0, -0.0], "f32")
    assert_tensor(xo.log(x), [NAN, INF, NAN, -INF, -INF], "f32")
    assert_tensor(xo.log_plus_one(t([-1.0, -2.0, -0.0], "f32")), [-INF, NAN, -0.0], "f32")
    assert_tensor(xo.tanh(x), [-1.0, 1.0, NAN, 0.0, -0.0], "f32")
    assert_tensor(xo.logistic(x), [0.0, 1.0, NAN, 0.5, 0.5], "f32")
    assert_tensor(
        xo.logistic(t([-200.0, 200.0], "f64")),
        [np.exp(-200.0), 1.0],
        "f64",
        exact=False,
        rtol=1e-15,
    )
    assert_tensor(xo.erf(x), [-1.0, 1.0, NAN, 0.0, -0.0], "f32")
    assert_tensor(xo.sine(x), [NAN, NAN, NAN, 0.0, -0.0], "f32")


def test_exponential_minus_one_and_log_plus_one_tiny_real():
    x = t([1e-20, -1e-30, 1e-300], "f64")
    assert_tensor(xo.exponential_minus_one(x), [1e-20, -1e-30, 1e-300], "f64")
    assert_tensor(xo.log_plus_one(x), [1e-20, -1e-30, 1e-300], "f64")


def test_power_special_cases():
    out = xo.power(
        t([NAN, 1.0, -1.0, 0.0, -0.0, 0.0, -8.0], "f64"),
        t([0.0, NAN, INF, -1.0, -1.0, 0.0, 1 / 3], "f64"),
    )
    assert_tensor(out, [1.0, 1.0, 1.0, INF, -INF, 1.0, NAN], "f64")


def test_integer_power_rules():
    lhs = [-1, -1, -3, 1, -3, 0, 2, -2, 0, 5, 3]
    rhs = [1, 0, -3, -3, 3, 2, -1, 63, -1, 0, 41]
    want = [-1, 1, 0, 1, -27, 0, 0, -(1 << 63), 0, 1, 3**41 % (1 << 64) - (1 << 64)]
    assert_tensor(xo.power(t(lhs, "i64"), t(rhs, "i64")), want, "i64")
    out = xo.power(t([0, 0, 1, 1, 5, 3], "ui64"), t([0, 1, 0, 2, 5, 41], "ui64"))
    assert_tensor(out, np.array([1, 0, 1, 1, 3125, 3**41 % (1 << 64)], np.uint64), "ui64")
    assert_tensor(xo.power(t([2, -2, 3], "i4"), t([3, 3, 2], "i4")), [-8, -8, -7], "i4")


def test_integer_divide_remainder_edge_cases():
    imin = -(1 << 31)
    lhs = t([imin, imin, 7, -7, 7, -7, 0, 5], "i32")
    rhs = t([-1, 1, 0, 0, -2, 2, 0, -5], "i32")
    assert_tensor(xo.divide(lhs, rhs), [imin, imin, -1, -1, -3, -3, -1, -1], "i32")
    assert_tensor(xo.remainder(lhs, rhs), [0, 0, 7, -7, 1, -1, 0, 0], "i32")
    u = xo.divide(t([7, 0, 255], "ui8"), t([0, 0, 2], "ui8"))
    assert_tensor(u, [255, 255, 127], "ui8")
    assert_tensor(xo.remainder(t([7, 0, 255], "ui8"), t([0, 0, 2], "ui8")), [7, 0, 1], "ui8")
    assert_tensor(xo.divide(t([-8, -8], "i4"), t([-1, 0], "i4")), [-8, -1], "i4")
    assert_tensor(xo.remainder(t([-8, -8], "i4"), t([-1, 0], "i4")), [0, -8], "i4")


def test_float_remainder_is_fmod():
    out = xo.remainder(
        t([17.1, -17.1, 17.1, -17.1, 5.0, -0.0, INF, 3.0], "f64"),
        t([3.0, 3.0, -3.0, -3.0, 0.0, 2.0, 2.0, INF], "f64"),
    )
    want = [
        2.1000000000000014,
        -2.1000000000000014,
        2.1000000000000014,
        -2.1000000000000014,
        NAN,
        -0.0,
        NAN,
        3.0,
    ]
    assert_tensor(out, want, "f64")


def test_abs_negate_int_min_and_unsigned_negate():
    for dtype in ["i2", "i4", "i8", "i16", "i32", "i64"]:
        dt = xo.as_dtype(dtype)
        x = t([dt.min, dt.min + 1, 0], dtype)
        assert_tensor(xo.abs(x), [dt.min, dt.max, 0], dtype)
        assert_tensor(xo.negate(x), [dt.min, dt.max, 0], dtype)
    assert_tensor(xo.negate(t([0, 8, 15], "ui4")), [0, 8, 1], "ui4")
    assert_tensor(xo.negate(t([0, 1, 3], "ui2")), [0, 3, 1], "ui2")
    assert_tensor(xo.negate(t([0, 16, 255], "ui8")), [0, 240, 1], "ui8")
    assert_tensor(xo.negate(t([0.0, -0.0], "f32")), [-0.0, 0.0], "f32")
    assert_tensor(xo.abs(t([-0.0, -INF, NAN], "f32")), [0.0, INF, NAN], "f32")
    out = xo.abs(t([3 + 4j, -5j], "c64"))
    assert_tensor(out, [5.0, 5.0], "f32")


def test_not_popcnt_clz_narrow_widths():
    assert_tensor(xo.not_(t([7, -8, 0], "i4")), [-8, 7, -1], "i4")
    assert_tensor(xo.not_(t([0, 7, 15], "ui4")), [15, 8, 0], "ui4")
    assert_tensor(xo.not_(t([-2, 1], "i2")), [1, -2], "i2")
    assert_tensor(xo.popcnt(t([-1, -8, 7, 0], "i4")), [4, 1, 3, 0], "i4")
    # i2 cannot hold a count of 2: the result type is the operand type, so the count's
    # 2-bit pattern 0b10 reads as -2
    assert_tensor(xo.popcnt(t([-1, -2, 1], "i2")), [-2, 1, 1], "i2")
    assert_tensor(xo.count_leading_zeros(t([0, 1, -1], "i2")), [-2, 1, 0], "i2")
    assert_tensor(xo.popcnt(t([-1], "i64")), [64], "i64")
    assert_tensor(xo.count_leading_zeros(t([0, 1, -1, 7], "i4")), [4, 3, 0, 1], "i4")
    assert_tensor(xo.count_leading_zeros(t([0, 1, 3], "ui2")), [2, 1, 0], "ui2")
    assert_tensor(
        xo.count_leading_zeros(t([0, 1, 1 << 63], "ui64")), np.array([64, 63, 0], np.uint64), "ui64"
    )


def test_shifts_by_width_or_more_and_negative_amounts():
    x = t([1, -1, 1, -1, -8, 5], "i8")
    s = t([8, 8, -1, -1, 100, 7], "i8")
    assert_tensor(xo.shift_left(x, s), [0, 0, 0, 0, 0, -128], "i8")
    assert_tensor(xo.shift_right_logical(x, s), [0, 0, 0, 0, 0, 0], "i8")
    assert_tensor(xo.shift_right_arithmetic(x, s), [0, -1, 0, -1, -1, 0], "i8")
    assert_tensor(xo.shift_right_logical(t([-1, -8], "i4"), t([1, 2], "i4")), [7, 2], "i4")
    assert_tensor(
        xo.shift_right_arithmetic(t([255, 128], "ui8"), t([1, 9], "ui8")), [255, 255], "ui8"
    )
    assert_tensor(
        xo.shift_left(t([1 << 63, 1], "ui64"), t([1, 64], "ui64")),
        np.array([0, 0], np.uint64),
        "ui64",
    )


def test_integer_add_subtract_multiply_wrap():
    assert_tensor(xo.add(t([1, 0, -1, -2], "i2"), t([-1, 1, 1, 1], "i2")), [0, 1, 0, -1], "i2")
    assert_tensor(xo.add(t([0, 2], "ui2"), t([1, 3], "ui2")), [1, 1], "ui2")
    assert_tensor(
        xo.add(t([0, 1, 2, -3, 7], "i4"), t([-8, -1, 2, -3, 7], "i4")), [-8, 0, 4, -6, -2], "i4"
    )
    assert_tensor(xo.subtract(t([0, 2], "ui4"), t([15, 3], "ui4")), [1, 15], "ui4")
    assert_tensor(xo.multiply(t([16, 16], "ui8"), t([16, 17], "ui8")), [0, 16], "ui8")
    imax = (1 << 63) - 1
    assert_tensor(xo.add(t([imax], "i64"), t([1], "i64")), [-(1 << 63)], "i64")
    assert_tensor(xo.multiply(t([-(1 << 63)], "i64"), t([-1], "i64")), [-(1 << 63)], "i64")


def test_i1_arithmetic_is_logic():
    a, b = t([False, False, True, True], "i1"), t([False, True, False, True], "i1")
    assert_tensor(xo.add(a, b), [False, True, True, True], "i1")  # OR, not XOR
    assert_tensor(xo.multiply(a, b), [False, False, False, True], "i1")  # AND
    assert_tensor(xo.and_(a, b), [False, False, False, True], "i1")
    assert_tensor(xo.or_(a, b), [False, True, True, True], "i1")
    assert_tensor(xo.xor(a, b), [False, True, True, False], "i1")
    out = np.asarray(xo.not_(a))
    assert out.dtype == np.bool_ and bits(out).tolist() == [1, 1, 0, 0]  # 0/1, never 254


def test_real_imag_of_floats():
    x = t([1.5, -0.0, NAN], "bf16")
    assert xo.real(x).dtype == xo.bfloat16
    assert_tensor(xo.real(x), [1.5, -0.0, NAN], "bf16")
    assert_tensor(xo.imag(x), [0.0, 0.0, 0.0], "bf16")
    z = t([complex(1, -0.0), complex(NAN, INF)], "c128")
    assert_tensor(xo.real(z), [1.0, NAN], "f64")
    assert_tensor(xo.imag(z), [-0.0, INF], "f64")


def test_narrow_floats_round_once_per_op():
    """bf16 (1 + 2^-8) + 2^-8: rounded after each add (XLA) it stays 1 (ties to even
    twice); kept in float32 across ops it would be 1 + 2^-7."""
    one, tiny = t([1.0], "bf16"), t([2.0**-8], "bf16")
    assert_tensor(xo.add(xo.add(one, tiny), tiny), [1.0], "bf16")
    assert_tensor(xo.add(one, xo.add(tiny, tiny)), [1.0 + 2.0**-7], "bf16")
    # f16 overflow: 65504 + 8 rounds back to 65504; 65504 + 16 = 65520 is the tie
    # between 65504 and 2^16, which rounds to even: inf
    assert_tensor(
        xo.add(t([65504.0, 65504.0], "f16"), t([8.0, 16.0], "f16")), [65504.0, INF], "f16"
    )


def test_f8_without_infinity_overflows_to_nan():
    assert_tensor(xo.multiply(t([448.0], "f8E4M3FN"), t([2.0], "f8E4M3FN")), [NAN], "f8E4M3FN")
    assert_tensor(xo.add(t([57344.0], "f8E5M2"), t([57344.0], "f8E5M2")), [INF], "f8E5M2")


def test_e8m0_products_below_float32_range_round_to_smallest_value():
    tiny = 2.0**-127
    out = xo.multiply(t([tiny], "f8E8M0FNU"), t([tiny], "f8E8M0FNU"))
    assert_tensor(out, [tiny], "f8E8M0FNU")  # 2^-254 rounds to the least value, not NaN
    out = xo.divide(t([tiny], "f8E8M0FNU"), t([2.0**127], "f8E8M0FNU"))
    assert_tensor(out, [tiny], "f8E8M0FNU")


# ---------------------------------------------------------------------------------------
# Weak Python scalars
# ---------------------------------------------------------------------------------------


def test_weak_scalars_take_the_tensor_type():
    out = xo.add(t([1.5, 2.0], "bf16"), 1)
    assert_tensor(out, [2.5, 3.0], "bf16")
    assert_tensor(xo.add(1, t([1.5, 2.0], "bf16")), [2.5, 3.0], "bf16")
    assert_tensor(xo.multiply(t([1, 2], "i8"), 3), [3, 6], "i8")
    assert_tensor(xo.subtract(10, t([1, 2], "ui8")), [9, 8], "ui8")
    assert_tensor(xo.add(t([1.0], "f16"), 0.1), np.float16([1.0]) + np.float16(0.1), "f16")
    assert_tensor(xo.maximum(t([-1.0, NAN], "f64"), 0.0), [0.0, NAN], "f64")
    assert_tensor(xo.add(t([True, False], "i1"), True), [True, True], "i1")
    assert_tensor(xo.multiply(t([1 + 1j], "c64"), 2), [2 + 2j], "c64")
    assert_tensor(xo.compare(t([1, 5], "i32"), 3, "LT"), [True, False], "i1")
    assert_tensor(xo.select(t([True, False], "i1"), t([1.0, 2.0], "f32"), 0.0), [1.0, 0.0], "f32")
    assert_tensor(xo.select(t([True, False], "i1"), -1, t([1, 2], "i16")), [-1, 2], "i16")
    assert_tensor(xo.clamp(0, t([-3, 3, 9], "i8"), 5), [0, 3, 5], "i8")
    assert_tensor(xo.complex(t([1.0], "f64"), 0.0), [1 + 0j], "c128")


def test_weak_scalar_errors():
    with pytest.raises(xo.SpecError, match=r"^add \(I2\): Python int 300 .* out of range for i8"):
        xo.add(t([1], "i8"), 300)
    with pytest.raises(xo.SpecError, match=r"^add \(I2\): .*ui8"):
        xo.add(t([1], "ui8"), -1)
    with pytest.raises(xo.SpecError, match=r"^add \(I2\): Python float 1\.5 .*xo\.convert"):
        xo.add(t([1], "i32"), 1.5)
    with pytest.raises(xo.SpecError, match=r"xo\.convert"):
        xo.add(t([1.0], "f32"), 1j)
    with pytest.raises(xo.SpecError, match=r"xo\.convert"):
        xo.add(t([True], "i1"), 2)


def test_numpy_scalars_are_not_weak():
    """NumPy scalars keep their own type and shape like 0-d arrays (np.float64 is a
    Python float subclass, but does not broadcast or adapt)."""
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):
        xo.add(t([1.0, 2.0], "f32"), np.float64(1.0))
    with pytest.raises(xo.SpecError, match=r"^add \(C1\).*shape"):
        xo.add(t([1.0, 2.0], "f64"), np.float64(1.0))
    assert_tensor(xo.add(t(1.0, "f64"), np.float64(1.0)), 2.0, "f64")
    with pytest.raises(xo.SpecError, match=r"^select \(I1\)"):
        xo.select(np.float64(1.0), t([1.0], "f32"), t([2.0], "f32"))
