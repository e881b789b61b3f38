"""The dtype layer: names, holders, xo.tensor, and the holder <-> compute conversions.

The float formats are checked against an independent reference written from the format
definitions (exponent/mantissa widths, bias, which encodings are inf/NaN): every
encoding is decoded by hand, and correctly rounded conversion picks the nearest
representable value with ties to even (ties away for the one-bit significand of
f8E8M0FNU), by exact comparison against midpoints. ``test_conversion`` imports it.
"""

import functools
import math
import pickle
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import xops as xo
from xops import dtypes as D

DTYPES = xo.all_dtypes()
IDS = [d.name for d in DTYPES]

# ---------------------------------------------------------------------------------------
# Independent float-format reference
# ---------------------------------------------------------------------------------------

# name: (exponent bits, mantissa bits, bias, special values)
#   ieee:   exponent all ones is inf (mantissa 0) or NaN
#   fn:     no inf; only S.1111.111 is NaN
#   fnuz:   no inf, no -0; 0x80 is the only NaN
#   finite: neither inf nor NaN (OCP FP4/FP6)
#   e8m0:   unsigned powers of two 2**-127..2**127, 0xFF is NaN, no zero
FORMATS = {
    "f4E2M1FN": (2, 1, 1, "finite"),
    "f6E2M3FN": (2, 3, 1, "finite"),
    "f6E3M2FN": (3, 2, 3, "finite"),
    "f8E3M4": (3, 4, 3, "ieee"),
    "f8E4M3": (4, 3, 7, "ieee"),
    "f8E4M3FN": (4, 3, 7, "fn"),
    "f8E4M3FNUZ": (4, 3, 8, "fnuz"),
    "f8E4M3B11FNUZ": (4, 3, 11, "fnuz"),
    "f8E5M2": (5, 2, 15, "ieee"),
    "f8E5M2FNUZ": (5, 2, 16, "fnuz"),
    "f8E8M0FNU": (8, 0, 127, "e8m0"),
    "bf16": (8, 7, 127, "ieee"),
    "f16": (5, 10, 15, "ieee"),
}
NARROW = list(FORMATS)


def _nbits(name):
    e, m, _, style = FORMATS[name]
    return e + m + (style != "e8m0")


def decode(name, enc):
    """The value of encoding ``enc`` (a Python float; NaN for NaN encodings)."""
    e, m, bias, style = FORMATS[name]
    if style == "e8m0":
        return math.nan if enc == 0xFF else 2.0 ** (enc - bias)
    sign = -1.0 if enc >> (e + m) & 1 else 1.0
    ex, man = enc >> m & ((1 << e) - 1), enc & ((1 << m) - 1)
    if style == "fnuz" and enc == 1 << (e + m):
        return math.nan
    if style == "ieee" and ex == (1 << e) - 1:
        return sign * math.inf if man == 0 else math.nan
    if style == "fn" and ex == (1 << e) - 1 and man == (1 << m) - 1:
        return math.nan
    if ex == 0:
        return sign * man * 2.0 ** (1 - bias - m)
    return sign * (1 + man / 2**m) * 2.0 ** (ex - bias)


@functools.cache
def positive_table(name):
    """Sorted non-negative finite values, their encodings, plus one virtual value after
    the largest (the next value the format would have with a wider exponent)."""
    e, m, _, style = FORMATS[name]
    pairs = []
    for enc in range(1 << _nbits(name)):
        v = decode(name, enc)
        if math.isfinite(v) and math.copysign(1.0, v) > 0:
            pairs.append((v, enc))
    pairs.sort()
    vals = np.array([p[0] for p in pairs])
    encs = np.array([p[1] for p in pairs], np.int64)
    top = vals[-1]
    ulp = 2.0 ** (math.floor(math.log2(top)) - m)
    return np.append(vals, top + ulp), np.append(encs, encs[-1] + 1)


def round_to_format(name, x):
    """Correctly rounded float64 ``x`` -> format ``name``: (encodings, is_nan)."""
    e, m, _, style = FORMATS[name]
    x = np.asarray(x, np.float64).reshape(-1)
    vals, encs = positive_table(name)
    last = len(vals) - 1  # index of the virtual value
    nan = np.isnan(x)
    a = np.where(nan, 0.0, np.abs(x))
    below_min = a < vals[0]  # only f8E8M0FNU, whose smallest value is 2**-127
    i = np.clip(np.searchsorted(vals, a, side="right") - 1, 0, last - 1)
    lo, hi = vals[i], vals[i + 1]
    mid = (lo + hi) / 2  # exact: at most 13 significant bits
    tie_up = np.ones_like(i, bool) if m == 0 else encs[i + 1] % 2 == 0
    up = (a > mid) | ((a == mid) & tie_up)
    enc = np.where(up, encs[i + 1], encs[i])
    enc = np.where(below_min, encs[0], enc)
    over = (up & (i + 1 == last)) | (a >= vals[last])
    neg = np.signbit(x)
    sign = 1 << (e + m)
    out_nan = nan.copy()
    if style == "ieee":
        enc = np.where(over, ((1 << e) - 1) << m, enc)
    elif style in ("fn", "fnuz"):
        out_nan |= over
    elif style == "finite":
        enc = np.where(over, encs[last - 1], enc)
        enc = np.where(nan, 0, enc)
        neg = np.where(nan, ~neg, neg)  # no NaN to give: ml_dtypes / XLA CPU make +NaN -0
        out_nan[:] = False
    else:  # e8m0
        out_nan |= over | neg | (x == 0)
        neg = np.zeros_like(neg)
    if style == "fnuz":
        neg = neg & (enc != 0)  # no -0: values that round to zero are +0
    enc = np.where(neg, enc | sign, enc)
    nan_enc = {
        "ieee": ((1 << e) - 1) << m | 1 << (m - 1) if m else 0,
        "fn": (1 << (e + m)) - 1,
        "fnuz": sign,
        "finite": 0,
        "e8m0": 0xFF,
    }[style]
    enc = np.where(out_nan, nan_enc, enc)
    return enc.astype(np.uint64), out_nan


def holder_bits(arr, nbits):
    """Raw encodings of a holder array (sub-byte values masked to their width)."""
    arr = np.ascontiguousarray(arr)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[arr.dtype.itemsize]
    raw = arr.reshape(-1).view(width).astype(np.uint64)
    return raw & np.uint64((1 << nbits) - 1) if nbits < 64 else raw


def assert_format_bits(got, want_enc, want_nan, name, context=""):
    """Holder array ``got`` of format ``name`` equals the reference bit for bit (NaNs: any
    NaN encoding of the format)."""
    dt = xo.as_dtype(name)
    got = np.asarray(got)
    assert got.dtype == dt.np
    g = holder_bits(got, _nbits(name))
    with np.errstate(invalid="ignore"):
        isnan = np.isnan(got.astype(np.float32)).reshape(-1)
    bad = (isnan != want_nan) | (~want_nan & (g != want_enc))
    if bad.any():
        k = np.flatnonzero(bad)[:5]
        raise AssertionError(
            f"{name}{context}: {bad.sum()} mismatches, e.g. at {k}: "
            f"got {[hex(int(v)) for v in g[k]]} want "
            f"{[hex(int(v)) for v in want_enc[k]]} (nan {want_nan[k]})"
        )


def midpoint_cases(name, f32=False):
    """Values around every rounding boundary of format ``name`` (both signs), plus
    specials. Exact midpoints, their float64 (or float32) neighbours, and points just
    off them by less than a float32 ulp: the float64 double-rounding traps."""
    vals, _ = positive_table(name)
    mids = (vals[:-1] + vals[1:]) / 2
    if f32:
        with np.errstate(over="ignore"):  # the virtual value after bf16's max is 2**128
            m32 = mids.astype(np.float32)
            pts = [
                vals.astype(np.float32),
                m32,
                np.nextafter(m32, np.float32(np.inf)),
                np.nextafter(m32, np.float32(0)),
            ]
    else:
        pts = [
            vals,
            mids,
            np.nextafter(mids, np.inf),
            np.nextafter(mids, 0),
            mids * (1 + 2.0**-40),
            mids * (1 - 2.0**-40),
            mids * (1 + 2.0**-26),
            mids * (1 - 2.0**-26),
        ]
    dt = np.float32 if f32 else np.float64
    specials = np.array(
        [
            0.0,
            np.inf,
            np.nan,
            1e-45,
            3e-39,
            1e-300,
            5e-324,
            1e30,
            3e38,
            1e300,
            2.0**-127,
            1.4 * 2.0**-127,
            1.5 * 2.0**-127,
            2.0**-128,
            1.6 * 2.0**-128,
        ],
        np.float64,
    )
    with np.errstate(over="ignore"):
        allp = np.concatenate([p.astype(dt) for p in pts] + [specials.astype(dt)])
    return np.concatenate([allp, -allp])


# ---------------------------------------------------------------------------------------
# The reference itself agrees with the holders' decoding
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NARROW)
def test_decoder_matches_holder(name):
    dt = xo.as_dtype(name)
    n = _nbits(name)
    encs = np.arange(1 << n, dtype=np.uint16 if n > 8 else np.uint8)
    holder = encs.view(dt.np) if n >= 8 else encs.astype(np.uint8).view(dt.np)
    with np.errstate(invalid="ignore"):  # signalling NaN encodings
        got = holder.astype(np.float64)
        c = D.to_compute(holder, dt)
        back = D.from_compute(c, dt)
    want = np.array([decode(name, int(c)) for c in encs])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))
    # to_compute is exact, and from_compute(to_compute(x)) gives x back
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c[ok].astype(np.float64), want[ok])
    assert_format_bits(back, holder_bits(holder, n), np.isnan(want), name, " round trip")


def test_format_table_extremes():
    assert positive_table("f8E4M3FN")[0][-2] == 448.0
    assert positive_table("f8E4M3FNUZ")[0][-2] == 240.0
    assert positive_table("f8E5M2FNUZ")[0][-2] == 57344.0
    assert positive_table("f4E2M1FN")[0][-2] == 6.0
    assert positive_table("f6E2M3FN")[0][-2] == 7.5
    assert positive_table("f6E3M2FN")[0][-2] == 28.0
    assert positive_table("f8E8M0FNU")[0][0] == 2.0**-127
    for name in NARROW:
        assert positive_table(name)[0][-2] == xo.as_dtype(name).max


# ---------------------------------------------------------------------------------------
# from_compute: correctly rounded float32 / float64 -> narrow floats
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NARROW)
def test_from_compute_f32_correctly_rounded(name):
    x = midpoint_cases(name, f32=True)
    with np.errstate(all="ignore"):
        got = D.from_compute(x, xo.as_dtype(name))
    enc, nan = round_to_format(name, x.astype(np.float64))
    assert_format_bits(got, enc, nan, name, " from f32")


@pytest.mark.parametrize("name", NARROW)
def test_from_compute_f64_correctly_rounded(name):
    """float64 -> narrow must not double-round through float32 (ml_dtypes does)."""
    x = midpoint_cases(name)
    with np.errstate(all="ignore"):
        got = D.from_compute(x, xo.as_dtype(name))
    enc, nan = round_to_format(name, x)
    assert_format_bits(got, enc, nan, name, " from f64")


def test_ml_dtypes_double_rounds_f64():
    """Why from_compute exists: ml_dtypes goes float64 -> float32 -> bfloat16."""
    x = np.array([1 + 2.0**-8 + 2.0**-40])  # just above a bf16 midpoint
    assert float(x.astype(ml_dtypes.bfloat16)[0]) == 1.0  # wrong (tie-to-even of 1+2**-8)
    assert float(D.from_compute(x, xo.bfloat16)[0]) == 1 + 2.0**-7


def test_from_compute_e8m0_f32_subnormals():
    """(2**-127, 2**-126) are float32 subnormals; ml_dtypes rounds them all up."""
    x = np.array(
        [
            2.0**-127,
            1.2 * 2.0**-127,
            1.49 * 2.0**-127,
            1.5 * 2.0**-127,
            1.9 * 2.0**-127,
            2.0**-126,
            1e-45,
            0.0,
        ],
        np.float32,
    )
    got = D.from_compute(x, xo.float8_e8m0fnu).view(np.uint8)
    np.testing.assert_array_equal(got, [0, 0, 0, 1, 1, 1, 0, 0xFF])
    got0 = D.from_compute(np.array(1.2 * 2.0**-127, np.float32), xo.float8_e8m0fnu)
    assert got0.shape == () and got0.view(np.uint8) == 0


def test_from_compute_int_wraps_and_rejects_float():
    got = D.from_compute(np.array([7, 8, -9, 300], np.int64), xo.int4)
    np.testing.assert_array_equal(got.astype(np.int8), [7, -8, 7, -4])
    with pytest.raises(AssertionError):
        D.from_compute(np.array([1.5]), xo.int32)


def test_round_to_odd():
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            rng.standard_normal(2000) * 10.0 ** rng.integers(-45, 39, 2000),
            [
                0.0,
                -0.0,
                np.inf,
                -np.inf,
                np.nan,
                1e39,
                -1e39,
                1e-46,
                -1e-46,
                1.0,
                3.4028234663852886e38,
                1.401298464324817e-45,
            ],
            np.float32([1.5, 2.5]).astype(np.float64),
        ]
    )
    got = D._f64_to_f32_round_to_odd(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    for xi, gi in zip(x.tolist(), got.tolist()):
        if math.isnan(xi):
            assert math.isnan(gi)
            continue
        if math.isinf(xi):
            assert gi == xi
            continue
        g = np.float32(gi)
        if float(g) == xi:
            continue  # exact
        if abs(xi) >= 2.0**128:  # beyond every float32 interval: the (odd) largest
            assert gi == math.copysign(float(np.finfo(np.float32).max), xi)
            continue
        # inexact: of the two float32 neighbours of x (finite ones, the largest being
        # followed by 2**128 here), the one with an odd significand
        assert int(np.array(g).view(np.uint32)) & 1 == 1, (xi, gi)
        assert math.copysign(1, gi) == math.copysign(1, xi)
        toward = np.float32(np.inf if Fraction(xi) > Fraction(gi) else -np.inf)
        with np.errstate(over="ignore"):
            other = np.nextafter(g, toward)
        other = math.copysign(2.0**128, xi) if np.isinf(other) else float(other)
        lo, hi = sorted([Fraction(gi), Fraction(other)])
        assert lo < Fraction(xi) < hi, (xi, gi)
    assert D._f64_to_f32_round_to_odd(np.float64(1 + 2.0**-30)).shape == ()


# ---------------------------------------------------------------------------------------
# wrap_int / to_compute for integers
# ---------------------------------------------------------------------------------------


def _wrap_ref(v, dt):
    v %= 1 << dt.bits
    return v - (1 << dt.bits) if dt.kind == "si" and v > dt.max else v


@pytest.mark.parametrize("dt", [d for d in DTYPES if d.is_int], ids=lambda d: d.name)
def test_wrap_int(dt):
    vals = list(range(-300, 300)) + [2**31, -(2**31) - 1, 2**62, -(2**63), 2**63 - 1]
    got = D.wrap_int(np.array(vals, np.int64), dt)
    assert got.dtype == dt.compute
    assert got.tolist() == [_wrap_ref(v, dt) for v in vals]
    uvals = [0, 1, 2**63, 2**64 - 1, 2**64 - 7, 12345678901234567890]
    got = D.wrap_int(np.array(uvals, np.uint64), dt)
    assert got.tolist() == [_wrap_ref(v, dt) for v in uvals]


@pytest.mark.parametrize("dt", [d for d in DTYPES if d.is_int and d.bits < 8], ids=lambda d: d.name)
def test_sub_byte_ints_hold_low_bits(dt):
    vals = list(range(dt.min, dt.max + 1))
    h = np.array(vals, np.int64).astype(dt.np)
    assert D.to_compute(h, dt).tolist() == vals
    assert D.to_compute(h, dt).dtype == dt.compute
    assert (h.view(np.uint8) >> dt.bits == 0).all()  # low bits, not sign-extended


# ---------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------

SPEC_NAMES = [
    "i1",
    "i2",
    "i4",
    "i8",
    "i16",
    "i32",
    "i64",
    "ui2",
    "ui4",
    "ui8",
    "ui16",
    "ui32",
    "ui64",
    "f4E2M1FN",
    "f6E2M3FN",
    "f6E3M2FN",
    "f8E3M4",
    "f8E4M3",
    "f8E4M3FN",
    "f8E4M3FNUZ",
    "f8E4M3B11FNUZ",
    "f8E5M2",
    "f8E5M2FNUZ",
    "f8E8M0FNU",
    "bf16",
    "f16",
    "f32",
    "f64",
    "c64",
    "c128",
]
HOLDERS = [
    np.bool_,
    ml_dtypes.int2,
    ml_dtypes.int4,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    ml_dtypes.uint2,
    ml_dtypes.uint4,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    ml_dtypes.float4_e2m1fn,
    ml_dtypes.float6_e2m3fn,
    ml_dtypes.float6_e3m2fn,
    ml_dtypes.float8_e3m4,
    ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e4m3b11fnuz,
    ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e5m2fnuz,
    ml_dtypes.float8_e8m0fnu,
    ml_dtypes.bfloat16,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
]
BITS = [
    1,
    2,
    4,
    8,
    16,
    32,
    64,
    2,
    4,
    8,
    16,
    32,
    64,
    4,
    6,
    6,
    8,
    8,
    8,
    8,
    8,
    8,
    8,
    8,
    16,
    16,
    32,
    64,
    64,
    128,
]
ALIASES = {
    "pred": "i1",
    "PRED": "i1",
    "bool": "i1",
    "si4": "i4",
    "s4": "i4",
    "si8": "i8",
    "s32": "i32",
    "si64": "i64",
    "u2": "ui2",
    "u4": "ui4",
    "u64": "ui64",
    "BF16": "bf16",
    "half": "f16",
    "F16": "f16",
    "float": "f32",
    "F32": "f32",
    "double": "f64",
    "F64": "f64",
    "complex<f32>": "c64",
    "complex<f64>": "c128",
    "C64": "c64",
    "C128": "c128",
    "float8_e4m3fn": "f8E4M3FN",
    "bfloat16": "bf16",
    "int4": "i4",
    "uint2": "ui2",
    "bool_": "i1",
    "complex64": "c64",
    "float32": "f32",
}


def test_all_dtypes_order_and_widths():
    assert [d.name for d in DTYPES] == SPEC_NAMES
    assert [d.bits for d in DTYPES] == BITS
    for d, h in zip(DTYPES, HOLDERS):
        assert d.np == np.dtype(h)


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_as_dtype_every_spelling(name):
    d = xo.as_dtype(name)
    assert d.name == name and str(d) == name
    h = HOLDERS[SPEC_NAMES.index(name)]
    assert xo.as_dtype(h) is d  # scalar type
    assert xo.as_dtype(np.dtype(h)) is d  # NumPy dtype
    assert xo.as_dtype(d) is d
    assert xo.as_dtype(d.pyname) is d and getattr(xo, d.pyname) is d
    assert xo.as_dtype(d.spec_name) is d
    assert d == name and d == np.dtype(h) and d != "nonsense"
    assert hash(d) == hash(name)
    assert pickle.loads(pickle.dumps(d)) is d
    assert repr(d) == f"xo.{d.pyname}"


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_as_dtype_aliases(alias):
    assert xo.as_dtype(alias) is xo.as_dtype(ALIASES[alias])


def test_as_dtype_python_types_and_errors():
    assert xo.as_dtype(bool) is xo.bool_
    assert xo.as_dtype(int) is xo.int64
    assert xo.as_dtype(float) is xo.float32
    assert xo.as_dtype(complex) is xo.complex64
    assert xo.as_dtype(np.dtype("int8")) is xo.int8  # NumPy's "i1" is int8 ...
    assert xo.as_dtype("i1") is xo.bool_  # ... but the spec's i1 is the boolean
    assert xo.complex64.spec_name == "complex<f32>"
    for bad in [
        "f33",
        "nonsense",
        np.float128 if hasattr(np, "float128") else "x",
        object,
        np.dtype("U3"),
        ml_dtypes.int1,
    ]:
        with pytest.raises(TypeError):
            xo.as_dtype(bad)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_classification_and_range(dt):
    kinds = [dt.is_bool, dt.is_int, dt.is_float, dt.is_complex]
    assert sum(kinds) == 1
    assert dt.is_inexact == (dt.is_float or dt.is_complex)
    assert dt.is_signed == (dt.kind == "si") and dt.is_unsigned == (dt.kind == "ui")
    assert dt.itemsize == dt.np.itemsize
    if dt.kind == "si":
        assert (dt.min, dt.max) == (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1)
    elif dt.kind == "ui":
        assert (dt.min, dt.max) == (0, 2**dt.bits - 1)
    elif dt.is_float:
        assert (
            dt.max == float(ml_dtypes.finfo(dt.np).max)
            and dt.min == -dt.max
            or dt.name == "f8E8M0FNU"
        )
    assert dt.is_narrow == (dt.compute != dt.np)
    assert dt.compute in (np.bool_, np.int8, np.uint8, np.float32) or dt.compute == dt.np


# ---------------------------------------------------------------------------------------
# xo.tensor for every element type
# ---------------------------------------------------------------------------------------


def _values_for(dt):
    """Python values every type holds exactly (f8E8M0FNU: powers of two only)."""
    if dt.is_bool:
        return [[True, False, True], [False, False, True]]
    if dt.name == "f8E8M0FNU":
        return [[1.0, 2.0, 0.5], [4.0, 2.0**-127, 2.0**127]]
    if dt.is_unsigned:
        return [[0, 1, 2], [3, 1, 0]]
    if dt.is_signed:
        return [[0, 1, -2], [1, -1, 0]]
    if dt.is_complex:
        return [[1 + 2j, -0.5j, 3], [0, 1.5 - 1j, -2]]
    return [[0.0, 1.0, -2.0], [0.5, -1.5, 4.0]]


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_tensor_every_dtype(dt):
    data = _values_for(dt)
    t = xo.tensor(data, dt)
    assert t.dtype is dt and t.shape == (2, 3) and t.ndim == 2 and t.size == 6
    assert t.type == f"{dt.name}[2,3]"
    v = np.asarray(t)
    assert v.dtype == dt.np and not v.flags.writeable
    assert t.tolist() == data
    w = xo.tensor(data, dt)
    view = np.asarray(w)
    w[0, 0] = 1  # rebinds w to a new buffer (copy-on-write): the earlier view is unchanged
    assert w.tolist()[0] == [1] + data[0][1:] and w.tolist()[1] == data[1]
    assert np.array_equal(view.view(np.uint8), v.view(np.uint8))
    # a NumPy source is copied, never aliased
    src = np.array(data).astype(dt.np)
    t2 = xo.tensor(src, dt)
    assert not np.shares_memory(np.asarray(t2), src)
    keep = t2.tolist()
    src[...] = src[0, 0]
    assert t2.tolist() == keep
    # .numpy() is a writable copy
    n = t2.numpy()
    assert n.flags.writeable and not np.shares_memory(n, np.asarray(t2))
    # scalars and size-0 shapes
    s = xo.tensor(data[0][1], dt)
    assert s.shape == () and s.item() == data[0][1]
    e = xo.tensor(np.zeros((3, 0), dt.np), dt)
    assert e.shape == (3, 0) and e.dtype is dt
    # from a Tensor of the same type: same value
    assert xo.tensor(t, dt).tolist() == data


def test_tensor_default_dtypes():
    assert xo.tensor(1.5).dtype is xo.float32
    assert xo.tensor(1).dtype is xo.int64
    assert xo.tensor(True).dtype is xo.bool_
    assert xo.tensor(1j).dtype is xo.complex64
    assert xo.tensor(np.float16([1])).dtype is xo.float16
    assert xo.tensor(np.zeros(2, ml_dtypes.int4)).dtype is xo.int4


def test_tensor_f64_data_rounds_once():
    """Python floats for a narrow type go through from_compute (correct rounding)."""
    x = 1 + 2.0**-8 + 2.0**-40
    assert xo.tensor([x], "bf16").tolist() == [1 + 2.0**-7]
    assert xo.tensor([x], "f32").tolist() == [float(np.float32(x))]
