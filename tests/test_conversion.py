"""convert, bitcast_convert and reduce_precision: spec examples, every (source, target)
pair of element types against independent references (exact Python integers and
fractions, and the hand-written float-format tables of test_dtypes), bit-exact, plus
one negative test per constraint label."""

import bisect
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import xops as xo
from conftest import SHAPES, assert_tensor, raises_spec
from test_dtypes import (
    FORMATS,
    assert_format_bits,
    holder_bits,
    midpoint_cases,
    positive_table,
    round_to_format,
)
from xops.kernels import conversion as K
from xops.ops.conversion import reduce_precision_reference

DTYPES = xo.all_dtypes()
IDS = [d.name for d in DTYPES]
PAIRS = [(s, d) for s in DTYPES for d in DTYPES]
PAIR_IDS = [f"{s.name}->{d.name}" for s, d in PAIRS]


def quiet():
    return np.errstate(all="ignore")


# ---------------------------------------------------------------------------------------
# Spec examples (004) and the reference interpreter's semantics
# ---------------------------------------------------------------------------------------


def test_convert_spec_example():
    r = xo.convert(xo.tensor([-1, 0, 1], "i64"), "c128")
    assert_tensor(r, np.array([-1 + 0j, 0j, 1 + 0j]), "c128")
    assert not np.signbit(np.asarray(r).imag).any()


def test_convert_interpreter_cases():
    # complex -> bool looks at the real part only: (0, 1) -> false
    r = xo.convert(xo.tensor([-1 + 0j, 1j, 1 + 0j], "c128"), "i1")
    assert r.tolist() == [True, False, True]
    assert xo.convert(xo.tensor([1j, 1 + 0j], "c128"), "ui64").tolist() == [0, 1]
    assert xo.convert(xo.tensor([-1.0, 0.0, 1.0], "f64"), "i1").tolist() == [True, False, True]
    assert xo.convert(xo.tensor([True, False]), "c128").tolist() == [1 + 0j, 0j]
    assert xo.convert(xo.tensor([0, 1], "ui4"), "c128").tolist() == [0j, 1 + 0j]
    assert xo.convert(xo.tensor([-1, 0, 1], "i4"), "c128").tolist() == [-1 + 0j, 0j, 1 + 0j]


def test_bitcast_convert_spec_example():
    x = xo.tensor(np.array(0x0123456789ABCDEF, np.uint64).view(np.float64), "f64")
    r = xo.bitcast_convert(x, "f16")
    assert r.dtype is xo.float16 and r.shape == (4,)
    assert np.asarray(r).view(np.uint16).tolist() == [0xCDEF, 0x89AB, 0x4567, 0x0123]
    assert xo.bitcast_convert(r, "f64").numpy().view(np.uint64) == 0x0123456789ABCDEF


def test_bitcast_convert_i1_is_one_bit():
    """64 i1 <-> one i64, element 0 the least significant bit (reference interpreter)."""
    v = 0x5A0F_3C96_E1D2_B487
    bits_lsb_first = [(v >> i) & 1 == 1 for i in range(64)]
    r = xo.bitcast_convert(xo.tensor(np.array(v, np.uint64).view(np.int64)), "i1")
    assert r.dtype is xo.bool_ and r.tolist() == bits_lsb_first
    back = xo.bitcast_convert(xo.tensor(bits_lsb_first), "i64")
    assert back.shape == () and back.numpy().view(np.uint64) == v
    assert xo.bitcast_convert(xo.tensor([[True, False], [False, True]]), "i2").tolist() == [1, -2]


def test_bitcast_convert_complex_halves():
    """c128 -> 2 x c64: the real f64's bits first, each split low half first."""
    re = np.array(0x0123456789ABCDEF, np.uint64).view(np.float64)
    im = np.array(0x0000000011111111, np.uint64).view(np.float64)
    r = xo.bitcast_convert(xo.tensor(np.array(re + 0j) + np.array(1j * im)), "c64")
    parts = np.asarray(r).view(np.uint32).reshape(2, 2).tolist()
    assert parts == [[0x89ABCDEF, 0x01234567], [0x11111111, 0x00000000]]


def test_reduce_precision_spec_example():
    u = np.array([0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x0000000000000001], np.uint64)
    x = np.concatenate([u.view(np.float64), [0.0, 65519.0, 65520.0]])
    r = xo.reduce_precision(xo.tensor(x, "f64"), 5, 10)
    got = np.asarray(r).view(np.uint64)
    want = np.concatenate([u[:2], np.array([0.0, 0.0, 65504.0, np.inf]).view(np.uint64)])
    assert got.tolist() == want.tolist()  # the NaN keeps its bits


def test_reduce_precision_zero_mantissa_nan_becomes_inf():
    for bits in (0x7FFFFFFFFFFFFFFF, 0xFFF8000000000001):
        x = xo.tensor(np.array(bits, np.uint64).view(np.float64), "f64")
        assert np.asarray(xo.reduce_precision(x, 5, 0)).view(np.uint64) == 0x7FF0000000000000
    # ties with no mantissa bits go to the even biased exponent: 3 -> 2, 1.5 -> 2, 6 -> 8
    r = xo.reduce_precision(xo.tensor([np.nan, -np.nan, 3.0, -3.0, 1.5, 6.0], "f32"), 8, 0)
    assert r.tolist() == [np.inf, np.inf, 2.0, -2.0, 2.0, 8.0]


# ---------------------------------------------------------------------------------------
# convert: every pair, against independent references
# ---------------------------------------------------------------------------------------


def _int_values(dt):
    """Interesting integers of ``dt``: extremes, small values, powers of two +-1, and
    rounding traps for every float format (exact ties, and ties +-1 at magnitudes where
    float64 cannot hold the integer)."""
    vals = {
        0,
        1,
        2,
        3,
        5,
        7,
        8,
        15,
        16,
        100,
        127,
        128,
        255,
        256,
        dt.min,
        dt.max,
        dt.min + 1,
        dt.max - 1,
        65504,
        65519,
        65520,
        65536,
        448,
        464,
        465,
        240,
        248,
        256 + 8,
    }
    for k in range(1, 64):
        vals |= {2**k - 1, 2**k, 2**k + 1}
    for p in (1, 2, 3, 4, 5, 8, 11, 24, 53):
        for k in (p + 1, p + 5, 20, 30, 31, 40, 52, 53, 54, 60, 62, 63):
            if k - p - 1 < 0:
                continue
            base, half = 2**k, 2 ** (k - p)
            for v in (base + half // 2, base + 3 * half // 2, base + half):
                vals |= {v - 1, v, v + 1}
    if dt.is_signed:
        vals |= {-v for v in vals}
    return sorted(v for v in vals if dt.min <= v <= dt.max)


F32_TRAPS = None


def _f32_boundaries():
    """float64 values around float32 rounding boundaries (random, subnormal, overflow)."""
    global F32_TRAPS
    if F32_TRAPS is None:
        rng = np.random.default_rng(7)
        f = rng.integers(0, 0x7F800000, 300, dtype=np.uint32).view(np.float32)
        f = np.concatenate(
            [
                f,
                np.float32(
                    [0, 1e-45, 2e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38, 1.0, 2.0**24]
                ),
            ]
        )
        with quiet():
            nxt = np.nextafter(f, np.float32(np.inf))
            mid = (f.astype(np.float64) + nxt.astype(np.float64)) / 2
        mid = mid[np.isfinite(mid)]
        top = float(np.finfo(np.float32).max) + 2.0**103  # the overflow midpoint
        pts = np.concatenate(
            [
                f.astype(np.float64),
                mid,
                np.nextafter(mid, np.inf),
                np.nextafter(mid, 0),
                [top, np.nextafter(top, 0), 1e39, 1e-50],
            ]
        )
        F32_TRAPS = np.concatenate([pts, -pts])
    return F32_TRAPS


GENERAL = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    0.49999997,
    3.0,
    7.0,
    7.5,
    8.0,
    100.25,
    -100.75,
    127.5,
    128.0,
    255.9,
    256.0,
    -128.5,
    -129.0,
    65504.0,
    65520.0,
    1e10,
    -1e10,
    2.0**31,
    2.0**32,
    2.0**63,
    2.0**64,
    -(2.0**63),
    -(2.0**64),
    1e30,
    -1e30,
    3e38,
    1e300,
    1e-300,
    5e-324,
    1e-45,
    np.inf,
    -np.inf,
    np.nan,
    -np.nan,
]


def _int_boundaries(dst):
    """float64 values around dst's range limits and integer boundaries."""
    pts = [dst.min, dst.max, dst.max + 1, dst.min - 1, 0, 1, 2]
    pts = [float(p) + d for p in pts for d in (-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0)]
    lim = [float(dst.max + 1), float(dst.min), float(dst.max)]
    pts += [np.nextafter(v, s) for v in lim for s in (-np.inf, np.inf)]
    return np.array(pts + GENERAL)


def _float_source(src, dst):
    """(holder array of src, exact float64 values) for a real float source."""
    if src.bits <= 8:
        enc = np.arange(1 << src.bits, dtype=np.uint8)
        h = enc.view(src.np)
    elif src.bits == 16:
        enc = np.arange(1 << 16, dtype=np.uint16)
        if dst.is_int or dst.is_bool:
            enc = np.concatenate([enc[::7], enc[0x7C00:0x7C08], enc[0xFC00:0xFC08]])
        h = enc.view(src.np)
    else:
        if dst.is_float and dst.name in FORMATS:
            x = midpoint_cases(dst.name, f32=src.bits == 32)
        elif dst.np == np.float32 or dst.np == np.complex64:
            x = _f32_boundaries()
        elif dst.is_int:
            x = _int_boundaries(dst)
        else:
            x = np.array(GENERAL)
        with quiet():
            h = np.concatenate([x, GENERAL]).astype(src.np)
    with quiet():
        return h, h.astype(np.float64)


def _source(src, dst):
    """(holder array, exact values) for any source type; exact values are Python ints
    for integer/bool sources, float64 arrays for floats, complex128 for complex."""
    if src.is_bool:
        return np.array([False, True, True, False]), [0, 1, 1, 0]
    if src.is_int:
        vals = _int_values(src)
        h = np.array(vals, np.uint64 if src.is_unsigned else np.int64).astype(src.np)
        return h, vals
    if src.is_complex:
        part = xo.float32 if src.np == np.complex64 else xo.float64
        pdst = dst if not dst.is_complex else (xo.float32 if dst.np == np.complex64 else xo.float64)
        re_h, re = _float_source(part, pdst)
        im = np.roll(re, 3)
        return _complex(re_h, np.roll(re_h, 3), src.np), _complex(re, im, np.complex128)
    return _float_source(src, dst)


def _complex(re, im, dtype):
    """A complex array from its parts, signed zeros kept (``re + 1j * im`` loses them)."""
    out = np.empty(len(re), dtype)
    out.real, out.imag = re, im
    return out


def _wrap_ref(v, dt):
    v %= 1 << dt.bits
    return v - (1 << dt.bits) if dt.is_signed and v > dt.max else v


def _float_to_int_ref(x, dt):
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return dt.max if x > 0 else dt.min
    return min(max(math.trunc(x), dt.min), dt.max)


F32_MAX = float(np.finfo(np.float32).max)


def _f32_ref(v):
    """Correctly rounded float32 of an exact value (Python int, float or Fraction)."""
    fv = Fraction(v)
    if abs(fv) >= Fraction(F32_MAX) + 2**103:  # the overflow midpoint (rounds up)
        return np.float32(math.copysign(np.inf, fv))
    with quiet():
        c = np.float32(float(v))  # within an ulp or two of v
    if np.isinf(c):
        c = np.float32(math.copysign(F32_MAX, fv))
    with quiet():
        cands = [c, np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(-np.inf))]
    cands = [k for k in cands if np.isfinite(k)]
    best = min(
        cands, key=lambda k: (abs(fv - Fraction(float(k))), int(np.array(k).view(np.uint32)) & 1)
    )
    if best == 0 and fv < 0:
        return np.float32(-0.0)
    return best


def _round_ints_to_format(vals, name):
    """Correctly rounded Python ints -> narrow format (encodings, is_nan).

    Exact integer/float comparisons (Python's) place each integer among the format's
    values and midpoints; a float64 stand-in with the same place is then rounded by
    round_to_format."""
    table = positive_table(name)[0].tolist()
    last = len(table) - 1
    proxies = []
    for v in vals:
        a = abs(v)
        i = bisect.bisect_right(table, a) - 1  # table[i] <= a < table[i + 1]
        if a == 0:
            p = 0.0
        elif i < 0:
            p = table[0] / 2
        elif i >= last:
            p = float(a)  # at or beyond the virtual value after the largest: overflow
        else:
            lo, hi = table[i], table[i + 1]
            mid = (lo + hi) / 2
            p = (
                lo
                if a == lo
                else mid
                if a == mid
                else (lo + mid) / 2
                if a < mid
                else (mid + hi) / 2
            )
        proxies.append(-p if v < 0 else p)
    return round_to_format(name, np.array(proxies, np.float64))


def _expected(src, dst, vals):
    """Reference result as (kind, payload) for comparison."""
    if src.is_complex and not dst.is_complex:
        vals = np.real(vals)
    if dst.is_bool:
        return [bool(v != 0) for v in vals]
    if dst.is_int:
        if src.is_bool or src.is_int:
            return [_wrap_ref(int(v), dst) for v in vals]
        return [_float_to_int_ref(float(v), dst) for v in vals]
    if dst.is_complex:
        part = xo.float32 if dst.np == np.complex64 else xo.float64
        re = _expected(
            src if not src.is_complex else part, part, np.real(vals) if src.is_complex else vals
        )
        im = (
            _expected(part, part, np.imag(vals)) if src.is_complex else np.zeros(len(vals), part.np)
        )
        return _complex(re, im, dst.np)
    if dst.name in FORMATS:
        if src.is_int or src.is_bool:
            return _round_ints_to_format([int(v) for v in vals], dst.name)
        return round_to_format(dst.name, np.asarray(vals, np.float64))
    if dst.np == np.float32:
        if src.is_int or src.is_bool:
            return np.array([_f32_ref(int(v)) for v in vals], np.float32)
        x = np.asarray(vals, np.float64)
        with quiet():
            out = x.astype(np.float32)  # kept only where it is exact (checked)
        for i in np.flatnonzero((out.astype(np.float64) != x) & ~np.isnan(x)).tolist():
            out[i] = _f32_ref(float(x[i]))
        return out
    # float64: Python's int -> float is correctly rounded; floats widen exactly
    if src.is_int or src.is_bool:
        return np.array([float(int(v)) for v in vals])
    return np.asarray(vals, np.float64)


def _assert_float_bits(got, want, what):
    got = np.asarray(got).reshape(-1)
    want = np.asarray(want, got.dtype).reshape(-1)
    gn, wn = np.isnan(got), np.isnan(want)
    bad = (gn != wn) | (~wn & (holder_bits(got, 64) != holder_bits(want, 64)))
    if bad.any():
        k = np.flatnonzero(bad)[:5]
        raise AssertionError(f"{what}: {bad.sum()} mismatches, e.g. got {got[k]} want {want[k]}")


@pytest.mark.parametrize("src,dst", PAIRS, ids=PAIR_IDS)
def test_convert_every_pair(src, dst):
    h, vals = _source(src, dst)
    t = xo.tensor(h, src)
    r = xo.convert(t, dst)
    assert r.dtype is dst and r.shape == h.shape
    got = np.asarray(r)
    assert got.dtype == dst.np and not got.flags.writeable
    want = _expected(src, dst, vals)
    what = f"{src.name}->{dst.name}"
    if dst.is_bool or dst.is_int:
        with quiet():
            assert got.astype(np.int64 if not dst.is_unsigned else np.uint64).tolist() == want, what
    elif dst.is_complex:
        _assert_float_bits(got.real, want.real, what + " (real)")
        _assert_float_bits(got.imag, want.imag, what + " (imag)")
    elif dst.name in FORMATS:
        assert_format_bits(got, *want, dst.name, f" from {src.name}")
    else:
        _assert_float_bits(got, want, what)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_convert_shapes(shape):
    """(C1) shape(result) = shape(operand): the result type is built from the operand."""
    rng = np.random.default_rng(0)
    x = xo.tensor(rng.standard_normal(shape) * 100, "f64")
    for d in ("i4", "bf16", "c64", "i1", "ui64", "f8E4M3FN"):
        r = xo.convert(x, d)
        assert r.shape == tuple(shape) and r.dtype == d


def test_convert_dtype_spellings_and_scalars():
    x = xo.tensor([1.5, -2.5], "f32")
    for d in ("bf16", xo.bfloat16, ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16)):
        assert xo.convert(x, d).dtype is xo.bfloat16
    assert xo.convert(x, np.int32).tolist() == [1, -2]
    assert xo.convert(x, "i32").dtype is xo.int32
    assert xo.convert(3.7, "i8").tolist() == 3  # a Python scalar is a 0-d f32 tensor
    assert xo.convert(x, "f32").tolist() == [1.5, -2.5]
    assert xo.convert(np.array([300], np.int64), "ui8").tolist() == [44]


def test_convert_saturation_and_nan():
    x = xo.tensor(
        [np.nan, np.inf, -np.inf, 2.0**63, -(2.0**63), -(2.0**63) - 2048, 1e300, -0.9, 0.9, -0.0],
        "f64",
    )
    assert xo.convert(x, "i64").tolist() == [
        0,
        2**63 - 1,
        -(2**63),
        2**63 - 1,
        -(2**63),
        -(2**63),
        2**63 - 1,
        0,
        0,
        0,
    ]
    assert xo.convert(x, "ui64").tolist() == [0, 2**64 - 1, 0, 2**63, 0, 0, 2**64 - 1, 0, 0, 0]
    assert xo.convert(x, "i4").tolist() == [0, 7, -8, 7, -8, -8, 7, 0, 0, 0]
    assert xo.convert(x, "ui2").tolist() == [0, 3, 0, 3, 0, 0, 3, 0, 0, 0]
    assert xo.convert(xo.tensor([7.9, -8.9, 8.0, -9.0], "bf16"), "i4").tolist() == [7, -8, 7, -8]


def test_convert_overflow_per_format():
    x = xo.tensor([1e6, -1e6, np.inf, np.nan], "f32")
    assert np.isnan(xo.convert(x, "f8E4M3FN").tolist()).all()
    assert np.isnan(xo.convert(x, "f8E4M3FNUZ").tolist()).all()
    assert xo.convert(x, "f8E5M2").tolist()[:3] == [np.inf, -np.inf, np.inf]
    assert xo.convert(x, "f4E2M1FN").tolist()[:3] == [6.0, -6.0, 6.0]
    assert xo.convert(xo.tensor([464.0, 465.0], "f32"), "f8E4M3FN").tolist()[0] == 448.0
    assert np.isnan(xo.convert(xo.tensor([465.0]), "f8E4M3FN").tolist()[0])
    e8 = xo.convert(xo.tensor([0.0, -1.0, 3.0, 1.5, 1.4]), "f8E8M0FNU").tolist()
    assert np.isnan(e8[:2]).all() and e8[2:] == [4.0, 2.0, 1.0]


def test_convert_int64_no_double_rounding():
    """2**62 + 2**38 + 1 is just above a float32 tie; float64 would round it onto the
    tie first."""
    v = 2**62 + 2**38 + 1
    assert xo.convert(xo.tensor([v, -v], "i64"), "f32").tolist() == [
        2.0**62 + 2**39,
        -(2.0**62 + 2**39),
    ]
    w = 2**62 + 2**54 + 1  # just above a bfloat16 tie
    assert xo.convert(xo.tensor([w], "ui64"), "bf16").tolist() == [2.0**62 + 2**55]
    assert xo.convert(xo.tensor([2**64 - 1], "ui64"), "f32").tolist() == [2.0**64]


def test_convert_negative():
    with pytest.raises(xo.SpecError, match=r"^convert \(I2\): result element type"):
        xo.convert(xo.tensor([1.0]), "f33")
    with pytest.raises(xo.SpecError, match=r"^convert \(I1\): operand must be"):
        xo.convert("abc", "f32")


# ---------------------------------------------------------------------------------------
# bitcast_convert
# ---------------------------------------------------------------------------------------


def _width(dt):
    return 1 if dt.is_bool else dt.bits


def _patterns(dt, n, seed=0):
    """n random bit patterns of dt's width, as Python ints, and the holder array."""
    rng = np.random.default_rng(seed)
    w = _width(dt)
    pats = [int.from_bytes(rng.bytes(16), "little") & ((1 << w) - 1) for _ in range(n)]
    return pats, _holder_from_patterns(pats, dt)


def _holder_from_patterns(pats, dt):
    w = _width(dt)
    if dt.is_bool:
        return np.array(pats, np.uint8).astype(np.bool_)
    if w < 8:
        return np.array(pats, np.uint8).view(dt.np)
    if w == 128:
        raw = np.array([[p & (2**64 - 1), p >> 64] for p in pats], np.uint64)
        return raw.reshape(-1).view(dt.np)
    return (
        np.array(pats, np.uint64)
        .astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w])
        .view(dt.np)
    )


def _patterns_of(arr, dt):
    """Bit patterns of a holder array as Python ints."""
    arr = np.ascontiguousarray(arr).reshape(-1)
    if _width(dt) == 128:
        u = arr.view(np.uint64).reshape(-1, 2)
        return [int(lo) | int(hi) << 64 for lo, hi in u.tolist()]
    if dt.is_bool:
        return arr.astype(np.uint64).tolist()
    return [int(v) for v in holder_bits(arr, _width(dt)).tolist()]


SAME_WIDTH = [
    (a, b)
    for a in DTYPES
    for b in DTYPES
    if _width(a) == _width(b) and a.is_complex == b.is_complex
]


@pytest.mark.parametrize("src,dst", SAME_WIDTH, ids=[f"{a.name}->{b.name}" for a, b in SAME_WIDTH])
def test_bitcast_same_width_round_trip(src, dst):
    pats, h = _patterns(src, 24)
    h = h.reshape(2, 3, 4)
    r = xo.bitcast_convert(xo.tensor(h, src), dst)
    assert r.dtype is dst and r.shape == (2, 3, 4)
    assert not np.asarray(r).flags.writeable
    assert _patterns_of(np.asarray(r), dst) == pats  # every bit kept, NaN payloads too
    back = xo.bitcast_convert(r, src)
    assert _patterns_of(np.asarray(back), src) == pats


WIDTH_PAIRS = [
    (a, b)
    for a in DTYPES
    for b in DTYPES
    if _width(a) != _width(b)
    and a.is_complex == b.is_complex
    and max(_width(a), _width(b)) % min(_width(a), _width(b)) == 0
]


@pytest.mark.parametrize(
    "src,dst", WIDTH_PAIRS, ids=[f"{a.name}->{b.name}" for a, b in WIDTH_PAIRS]
)
def test_bitcast_width_change(src, dst):
    w, w2 = _width(src), _width(dst)
    if w > w2:
        r_ = w // w2
        pats, h = _patterns(src, 6)
        r = xo.bitcast_convert(xo.tensor(h.reshape(2, 3), src), dst)
        assert r.shape == (2, 3, r_)
        want = [(p >> (j * w2)) & ((1 << w2) - 1) for p in pats for j in range(r_)]
    else:
        r_ = w2 // w
        pats, h = _patterns(src, 6 * r_)
        r = xo.bitcast_convert(xo.tensor(h.reshape(2, 3, r_), src), dst)
        assert r.shape == (2, 3)
        want = [sum(pats[i * r_ + k] << (k * w) for k in range(r_)) for i in range(6)]
    assert r.dtype is dst
    assert _patterns_of(np.asarray(r), dst) == want
    back = xo.bitcast_convert(r, src)
    assert _patterns_of(np.asarray(back), src) == pats


def test_bitcast_sub_byte_examples():
    assert xo.bitcast_convert(xo.tensor([-1, 2], "i4"), "i8").tolist() == 0x2F
    assert xo.bitcast_convert(xo.tensor([1, 2, 3, 0], "ui2"), "ui8").tolist() == 0b00111001
    assert xo.bitcast_convert(xo.tensor(-1, "i8"), "ui4").tolist() == [15, 15]
    assert xo.bitcast_convert(xo.tensor(0x81, "ui8"), "i4").tolist() == [1, -8]
    # f6 <-> i2: three 2-bit fields; -7.5 in f6E2M3FN is 0b111111
    r = xo.bitcast_convert(xo.tensor([-7.5, 0.125], "f6E2M3FN"), "ui2")
    assert r.shape == (2, 3) and r.tolist() == [[3, 3, 3], [1, 0, 0]]
    assert xo.bitcast_convert(r, "f6E2M3FN").tolist() == [-7.5, 0.125]
    assert xo.bitcast_convert(xo.tensor(1.0, "f4E2M1FN"), "i1").tolist() == [
        False,
        True,
        False,
        False,
    ]  # 1.0 = 0b0010


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bitcast_shapes(shape):
    x = xo.tensor(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape))
    r = xo.bitcast_convert(x, "i8")
    assert r.shape == tuple(shape) + (4,)
    assert xo.bitcast_convert(r, "i32").tolist() == x.tolist()
    assert xo.bitcast_convert(x, "f32").shape == tuple(shape)
    b = xo.bitcast_convert(x, "i1")
    assert b.shape == tuple(shape) + (32,)
    assert xo.bitcast_convert(b, "i32").tolist() == x.tolist()


def test_bitcast_negative():
    with raises_spec("bitcast_convert", "C1"):  # last dim must be the ratio
        xo.bitcast_convert(xo.tensor(np.zeros((3, 5), np.int8)), "i16")
    with raises_spec("bitcast_convert", "C1"):  # a 0-d operand has no dim to remove
        xo.bitcast_convert(xo.tensor(np.int8(1)), "i16")
    with raises_spec("bitcast_convert", "C1"):  # 6 and 8 bits: no integer ratio
        xo.bitcast_convert(xo.tensor([1.0], "f6E2M3FN"), "i8")
    with raises_spec("bitcast_convert", "C1"):
        xo.bitcast_convert(xo.tensor(np.zeros((2, 4), np.int8)), "f6E3M2FN")
    with raises_spec("bitcast_convert", "C2"):
        xo.bitcast_convert(xo.tensor([1 + 1j], "c64"), "i64")
    with raises_spec("bitcast_convert", "C2"):
        xo.bitcast_convert(xo.tensor([[1.0, 2.0]], "f32"), "c64")
    with pytest.raises(xo.SpecError, match=r"^bitcast_convert \(I2\): result element type"):
        xo.bitcast_convert(xo.tensor([1.0]), "x")
    msg = "bitcast_convert (C1): operand's last dim must be 2 to make i16 from i8, got i8[3,5]"
    with pytest.raises(xo.SpecError) as e:
        xo.bitcast_convert(xo.tensor(np.zeros((3, 5), np.int8)), "i16")
    assert str(e.value) == msg


# ---------------------------------------------------------------------------------------
# reduce_precision
# ---------------------------------------------------------------------------------------

# (holder width, mantissa width) of the formats whose own bits the spec's algorithm
# describes exactly: IEEE-754 layouts
IEEE = {
    "f32": (32, 23),
    "f64": (64, 52),
    "f16": (16, 10),
    "bf16": (16, 7),
    "f8E5M2": (8, 2),
    "f8E4M3": (8, 3),
    "f8E3M4": (8, 4),
}
GRID = [
    (e, m)
    for e in (1, 2, 3, 4, 5, 6, 8, 10, 11, 12)
    for m in (0, 1, 2, 3, 4, 7, 10, 22, 23, 51, 52, 60)
]


def _all_or_random_bits(name):
    w = IEEE[name][0]
    if w <= 16:
        return np.arange(1 << w, dtype=np.uint64)
    mw = IEEE[name][1]
    rng = np.random.default_rng(3)
    u = rng.integers(0, 2**63, 6000, dtype=np.uint64) >> np.uint64(64 - w)
    # exact ties (and ties with the last kept bit set) for every mantissa width
    ex = rng.integers(0, 1 << (w - 1 - mw), 40, dtype=np.uint64) << np.uint64(mw)
    ties = [
        ex | np.uint64(1 << (mw - m - 1)) | np.uint64(b << (mw - m))
        for m in range(mw)
        for b in (0, 1)
        if b == 0 or m < mw
    ]
    u = np.concatenate([u] + ties)
    u = np.concatenate([u, u | np.uint64(1 << (w - 1))])
    small = np.arange(0, 300, dtype=np.uint64)  # subnormals
    return np.concatenate([u, small, small | np.uint64(1 << (w - 1))])


def _holder_of_bits(u, dt):
    w = IEEE[dt.name][0]
    return u.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]).view(dt.np)


@pytest.mark.parametrize("name", list(IEEE))
def test_reduce_precision_matches_spec_bit_algorithm(name):
    """On IEEE layouts the kernel equals the spec's bit algorithm on the type's own bits
    (NaN: same bits for f32/f64; NaN-ness for the narrow types, whose NaNs pass through
    float32)."""
    dt = xo.as_dtype(name)
    w, mw = IEEE[name]
    u = _all_or_random_bits(name)
    x = xo.tensor(_holder_of_bits(u, dt), dt)
    for e, m in GRID:
        got = np.asarray(xo.reduce_precision(x, e, m))
        want = _holder_of_bits(reduce_precision_reference(u, w, mw, e, m), dt)
        with quiet():
            gn = np.isnan(got.astype(np.float64))
            wn = np.isnan(want.astype(np.float64))
        g = holder_bits(got, w)
        wb = holder_bits(want, w)
        exact_nan = dt.np in (np.float32, np.float64)
        bad = (gn != wn) | ((~wn | exact_nan) & (g != wb))
        assert not bad.any(), (
            f"{name} e={e} m={m}: {bad.sum()} mismatches, e.g. "
            f"{[hex(int(v)) for v in u[bad][:4]]} -> "
            f"{[hex(int(v)) for v in g[bad][:4]]} want "
            f"{[hex(int(v)) for v in wb[bad][:4]]}"
        )


def _f32_sample():
    rng = np.random.default_rng(11)
    u = rng.integers(0, 2**32, 200000, dtype=np.uint64).astype(np.uint32)
    x = u.view(np.float32)
    return x[~np.isnan(x)]


@pytest.mark.parametrize(
    "e,m,holder,min_normal",
    [
        (8, 7, ml_dtypes.bfloat16, 0.0),  # same exponent range: subnormals agree too
        (5, 10, np.float16, 2.0**-14),
        (5, 2, ml_dtypes.float8_e5m2, 2.0**-14),
        (4, 3, ml_dtypes.float8_e4m3, 2.0**-6),
        (3, 4, ml_dtypes.float8_e3m4, 2.0**-2),
    ],
)
def test_reduce_precision_vs_ml_dtypes_casts(e, m, holder, min_normal):
    """reduce_precision(x, e, m) on f32 is the cast to the IEEE-like (e, m) type and back,
    except that the type's subnormals are flushed to zero."""
    x = _f32_sample()
    got = xo.reduce_precision(xo.tensor(x, "f32"), e, m).numpy()
    with quiet():
        cast = x.astype(holder).astype(np.float32)
    big = np.abs(x) >= min_normal
    np.testing.assert_array_equal(got[big].view(np.uint32), cast[big].view(np.uint32))
    tiny = np.abs(x) < min_normal * (1 - 2.0 ** -(m + 1))  # cannot round up to min_normal
    assert (got[tiny] == 0).all()
    np.testing.assert_array_equal(np.signbit(got[tiny]), np.signbit(x[tiny]))


def test_reduce_precision_no_op_bits():
    """Bits beyond the operand's own are a no-op: every f32 bit pattern comes back,
    subnormals and NaN payloads included; f16 subnormals survive (5, 10)."""
    rng = np.random.default_rng(5)
    u = rng.integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32)
    u = np.concatenate(
        [u, np.arange(100, dtype=np.uint32), np.array([0x7F800001, 0xFFC00123], np.uint32)]
    )
    x = xo.tensor(u.view(np.float32), "f32")
    for e, m in ((8, 23), (9, 30), (100, 100)):
        assert np.array_equal(xo.reduce_precision(x, e, m).numpy().view(np.uint32), u)
    h = np.arange(1 << 16, dtype=np.uint16)
    h = h[(h & 0x7C00) != 0x7C00]  # no inf/NaN
    r = xo.reduce_precision(xo.tensor(h.view(np.float16), "f16"), 5, 10).numpy()
    assert np.array_equal(r.view(np.uint16), h)


def test_reduce_precision_non_ieee_types():
    """Types without inf: overflow becomes what convert makes of inf; no-zero f8E8M0FNU
    turns a flush into NaN."""
    r = xo.reduce_precision(xo.tensor([448.0, 3.3, -0.0, 0.25], "f8E4M3FN"), 3, 1).tolist()
    assert np.isnan(r[0]) and r[1:] == [3.0, 0.0, 0.25] and np.signbit(r[2])
    assert xo.reduce_precision(xo.tensor([448.0, 3.3], "f8E4M3FN"), 4, 3).tolist() == [
        448.0,
        3.25,
    ]  # no-op: 4 exponent bits are the type's own
    r = xo.reduce_precision(xo.tensor([6.0, 0.5, -3.0], "f4E2M1FN"), 1, 1).tolist()
    assert r == [6.0, 0.0, -6.0]  # e=1 has no normal numbers: 0 or +-inf (saturated here)
    r = xo.reduce_precision(xo.tensor([4.0, 2.0**-10, 2.0**10], "f8E8M0FNU"), 4, 0).tolist()
    assert r[0] == 4.0 and np.isnan(r[1:]).all()
    r = xo.reduce_precision(xo.tensor([-240.0, 200.0, 2.0**-9], "f8E4M3FNUZ"), 3, 2)
    assert np.isnan(r.tolist()[:2]).all() and r.tolist()[2] == 0.0


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reduce_precision_shapes(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32) * 1000
    r = xo.reduce_precision(xo.tensor(x), 8, 7)
    assert r.shape == tuple(shape) and r.dtype is xo.float32
    assert np.array_equal(r.numpy(), x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_reduce_precision_kernel_variants_agree():
    """Serial and prange variants give the same bits (output-parallel loop)."""
    rng = np.random.default_rng(9)
    for dt, w in ((np.float32, np.uint32), (np.float64, np.uint64)):
        x = rng.integers(0, np.iinfo(w).max, 1 << 17, dtype=w).view(dt)
        args = (5, True, -14, True, 2.0**-14, 2.0**16)
        a, b = np.empty_like(x), np.empty_like(x)
        K.reduce_precision.serial(x, a, *args)
        K.reduce_precision.parallel(x, b, *args)
        assert np.array_equal(a.view(w), b.view(w))


def test_reduce_precision_negative():
    op = "reduce_precision"
    with raises_spec(op, "I1"):
        xo.reduce_precision(xo.tensor([1 + 1j]), 5, 10)
    with raises_spec(op, "I1"):
        xo.reduce_precision(xo.tensor([1], "i32"), 5, 10)
    with raises_spec(op, "I2"):
        xo.reduce_precision(xo.tensor([1.0]), 5.0, 10)
    with raises_spec(op, "I2"):
        xo.reduce_precision(xo.tensor([1.0]), 2**31, 10)
    with raises_spec(op, "I3"):
        xo.reduce_precision(xo.tensor([1.0]), 5, "10")
    with raises_spec(op, "C2"):
        xo.reduce_precision(xo.tensor([1.0]), 0, 10)
    with raises_spec(op, "C3"):
        xo.reduce_precision(xo.tensor([1.0]), 5, -1)
    assert xo.reduce_precision(xo.tensor([1.0]), np.int32(5), xo.tensor(10, "i32")).tolist() == [
        1.0
    ]
