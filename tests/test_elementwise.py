"""Elementwise ops against independent references, driven by one record per op.

Each record names the op, the element-type kinds the spec accepts and a reference per
kind, written from the spec text and independent of xops' implementation:

* booleans and integers: plain Python ints, element by element, then wrapped to the
  type's own width (i2/i4/ui2/ui4 included);
* floats: float64 from the exact values of the operands (every narrow value is exact
  in float64), rounded once to the result type by ``round_to`` (float64 -> float32
  rounding *to odd*, then ml_dtypes' float32 -> narrow rounding). Ops the spec defines
  exactly (+ - * / sqrt fmod, max/min, floor/ceil/round, negate/abs/sign, compare) must
  match bit for bit, signed zeros and NaN positions included. Transcendentals use long
  double references and must be within 1 ulp for the formats of <= 16 bits (computed
  in float32, rounded once), 2 ulps for f64 and 2-3 ulps for f32 (NumPy's float32
  functions);
* complex: long-double (or closed-form) references, compared norm-wise.

The drivers: every accepted element type on one shape, the shape zoo (``SHAPES``) on
one representative type per kind, and exhaustive sweeps over every value (pair) of the
narrow float formats and of the 1/2/4-bit integers.
"""

import math
import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import scipy.special

import xops as xo
from conftest import SHAPES, assert_tensor

DT = {d.name: d for d in xo.all_dtypes()}
B, SI, UI, F, C = "bool", "si", "ui", "float", "complex"
INT = {SI, UI}
ANY = {B, SI, UI, F, C}


def rng_for(*key):
    """A generator seeded by the test's identity: reproducible, different per test."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def part_dtype(dt):
    return DT["f32"] if dt.name == "c64" else DT["f64"] if dt.name == "c128" else dt


# ---------------------------------------------------------------------------------------
# Rounding and comparison helpers (independent of xops.dtypes)
# ---------------------------------------------------------------------------------------


def f64_to_f32_odd(x):
    """float64 -> float32 rounding to odd: the float32 toward zero, made odd if inexact.
    Rounding the result once more to a format of <= 22 significand bits gives the
    correctly rounded float64 -> that format."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        fin = np.isfinite(x)
        toward0 = np.where(
            fin & (np.abs(f.astype(np.float64)) > np.abs(x)), np.nextafter(f, np.float32(0)), f
        )
        inexact = fin & (toward0.astype(np.float64) != x)
        even = (toward0.view(np.uint32) & 1) == 0
        away = np.nextafter(toward0, np.copysign(np.float32(np.inf), toward0))
    return np.where(inexact & even, away, toward0).astype(np.float32)


def round_to(x, dt):
    """float64 values rounded once to float element type ``dt`` (holder array)."""
    x = np.asarray(x, np.float64)
    if dt.name == "f64":
        return x.copy()
    if dt.name == "f8E8M0FNU":
        return round_to_e8m0(x)
    with np.errstate(over="ignore", invalid="ignore"):
        if dt.name == "f32":
            return x.astype(np.float32)
        return f64_to_f32_odd(x).astype(dt.np)


def round_to_e8m0(x):
    """f8E8M0FNU holds 2^-127 .. 2^127 and NaN (pattern k + 127 for 2^k): round to the
    nearest power of two, ties (1.5 * 2^k) away from zero, as the one-bit significand
    leaves no even neighbour; below 2^-127 the least value (there is no zero); 0,
    negatives, infinities and overflow are NaN."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        m, e = np.frexp(x)  # x = m * 2^e, 0.5 <= m < 1
        k = np.where(m >= 0.75, e, e - 1)
        ok = (x > 0) & np.isfinite(x) & (k <= 127)
    pattern = np.where(ok, np.clip(k, -127, 127) + 127, 255).astype(np.uint8)
    return pattern.view(ml_dtypes.float8_e8m0fnu)


def exact_f64(a):
    """A float holder array as exact float64 values (quietly: ml_dtypes signals
    'invalid' when it widens a signalling NaN)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(a).astype(np.float64)


def ordkey(a, dt):
    """int64 keys ordered like the float values of holder array ``a`` (+0 and -0 share
    key 0); the difference of two keys counts the representable values between them."""
    a = np.ascontiguousarray(a)
    u = a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])
    u = u.astype(np.uint64)
    if dt.name == "f8E8M0FNU":  # no sign bit
        return u.astype(np.int64)
    mag = (u & np.uint64((1 << (dt.bits - 1)) - 1)).astype(np.int64)
    return np.where((u >> np.uint64(dt.bits - 1)) & np.uint64(1), -mag, mag)


def _isnan(a, dt):
    return np.isnan(np.asarray(a).astype(dt.compute))


def assert_ulps(t, want, dt, ulps, inputs=()):
    """Float tensor ``t`` within ``ulps`` representable values of holder array ``want``;
    NaN exactly where ``want`` is NaN."""
    assert t.dtype == dt, f"dtype {t.dtype} != {dt}"
    got = np.asarray(t)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    gn, wn = _isnan(got, dt), _isnan(want, dt)
    where = np.flatnonzero((gn != wn).reshape(-1))
    assert where.size == 0, _culprit("NaN mismatch", where[0], got, want, dt, inputs)
    m = ~wn
    d = np.abs(ordkey(got[m], dt) - ordkey(want[m], dt))
    if d.size and d.max() > ulps:
        i = np.flatnonzero(m.reshape(-1))[np.argmax(d)]
        raise AssertionError(_culprit(f"{d.max()} ulps > {ulps}", i, got, want, dt, inputs))


def _culprit(what, i, got, want, dt, inputs):
    show = lambda a: (
        np.asarray(a).reshape(-1)[i].astype(dt.compute)
        if dt.kind == F
        else np.asarray(a).reshape(-1)[i]
    )
    ins = ", ".join(repr(np.asarray(x).reshape(-1)[i]) for x in inputs)
    return f"{what} at flat index {i}: inputs ({ins}) got {show(got)!r} want {show(want)!r}"


def assert_bitexact(t, want, dt, inputs=()):
    """Exact equality, NaN where NaN, signed zeros (floats and complex parts)."""
    assert t.dtype == dt, f"dtype {t.dtype} != {dt}"
    got = np.asarray(t)
    assert got.shape == np.shape(want), f"shape {got.shape} != {np.shape(want)}"
    if dt.kind == C:
        want = np.asarray(want, dt.np)
        for part in ("real", "imag"):
            g, w = getattr(got, part), getattr(want, part)
            same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
            bad = np.flatnonzero(~same.reshape(-1))
            assert bad.size == 0, _culprit(f"{part} part mismatch", bad[0], got, want, dt, inputs)
        return
    if dt.kind != F:
        bad = np.flatnonzero((got != want).reshape(-1))
        assert bad.size == 0, _culprit("mismatch", bad[0], got, want, dt, inputs)
        return
    g, w = got.astype(dt.compute), np.asarray(want).astype(dt.compute)
    same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    bad = np.flatnonzero(~same.reshape(-1))
    assert bad.size == 0, _culprit("mismatch", bad[0], got, want, dt, inputs)


def assert_complex_close(t, want, dt, rtol, inputs=()):
    """Norm-wise: |got - want| <= rtol * |want| (+ a few subnormals), NaN/inf alike."""
    assert t.dtype == dt, f"dtype {t.dtype} != {dt}"
    got = np.asarray(t).astype(np.complex128)
    want = np.asarray(want).astype(np.complex128)
    assert got.shape == want.shape
    fin = np.isfinite(want)
    bad = np.flatnonzero((np.isfinite(got) != fin).reshape(-1))
    assert bad.size == 0, _culprit("finiteness mismatch", bad[0], got, want, dt, inputs)
    tiny = np.finfo(part_dtype(dt).np).smallest_normal
    err = np.abs(got[fin] - want[fin])
    tol = rtol * np.abs(want[fin]) + tiny
    if err.size and (err > tol).any():
        i = np.flatnonzero(fin.reshape(-1))[np.argmax(err / tol)]
        raise AssertionError(
            _culprit(f"relative error {np.max(err / tol) * rtol:.3g}", i, got, want, dt, inputs)
        )


# ---------------------------------------------------------------------------------------
# Input generators (holder arrays)
# ---------------------------------------------------------------------------------------


def int_pool(dt, rng, n=48, small=False):
    lo, hi = dt.min, dt.max
    edges = [lo, lo + 1, -2, -1, 0, 1, 2, 3, hi - 1, hi, hi // 2, lo // 2]
    vals = [v for v in edges if lo <= v <= hi]
    wide = np.uint64 if dt.kind == UI else np.int64
    vals += rng.integers(max(lo, -9), min(hi, 9), n // 2, endpoint=True, dtype=wide).tolist()
    if not small:
        vals += rng.integers(lo, hi, n // 2, endpoint=True, dtype=wide).tolist()
    return vals


def to_holder_ints(vals, dt):
    if dt.kind == B:
        return np.array([bool(v) for v in vals], np.bool_)
    wide = np.uint64 if dt.kind == UI else np.int64
    return np.array(vals, wide).astype(dt.np)


def float_specials(dt):
    fi = ml_dtypes.finfo(dt.np)
    return [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        -2.5,
        3.0,
        math.inf,
        -math.inf,
        math.nan,
        float(fi.max),
        -float(fi.max),
        float(fi.smallest_normal),
        -float(fi.smallest_normal),
        float(fi.smallest_subnormal),
        -float(fi.smallest_subnormal),
    ]


def float_pool(dt, rng, n=48, domain=None):
    """Specials plus random values: every bit pattern for formats of <= 16 bits, wide
    log-uniform magnitudes (subnormals included) for f32/f64; ``domain`` = (lo, hi)
    restricts the random part (transcendentals)."""
    vals = [
        v
        for v in float_specials(dt)
        if domain is None or not math.isfinite(v) or domain[0] <= v <= domain[1] or v == 0
    ]
    pool = round_to(vals, dt)
    if domain is not None:
        lo, hi = domain
        x = np.concatenate(
            [
                rng.uniform(lo, hi, n // 2),
                np.clip(
                    rng.choice([-1.0, 1.0], n // 2) * 10.0 ** rng.uniform(-6, 0, n // 2), lo, hi
                ),
            ]
        )
        rand = round_to(x, dt)
    elif dt.bits <= 16:
        holder = {1: np.uint8, 2: np.uint16}[dt.itemsize]
        rand = rng.integers(0, 1 << dt.bits, n).astype(holder).view(dt.np)
    else:
        emax = 38 if dt.name == "f32" else 300
        x = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-emax - 6, emax, n)
        rand = round_to(x, dt)
    return np.concatenate([pool, rand])


def complex_pool(dt, rng, n=40, domain=(-5.0, 5.0)):
    pd = part_dtype(dt)
    re = round_to(rng.uniform(*domain, n), pd)
    im = round_to(rng.uniform(*domain, n), pd)
    small = round_to(10.0 ** rng.uniform(-6, -1, 8) * rng.choice([-1, 1], 8), pd)
    re = np.concatenate([re, small, [1.0, 0.0, -1.0]]).astype(pd.np)
    im = np.concatenate([im, small[::-1], [0.0, 1.0, 0.0]]).astype(pd.np)
    out = np.empty(re.shape, dt.np)
    out.real, out.imag = re, im
    return out


# ---------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------


def _mask(bits):
    return (1 << bits) - 1


def as_signed(v, bits):
    v &= _mask(bits)
    return v - (1 << bits) if v >> (bits - 1) else v


def wrap(v, dt):
    return as_signed(v, dt.bits) if dt.kind == SI else v & _mask(dt.bits)


def tdiv(a, b):
    """Division truncating toward zero (C, the spec), not Python's floor division."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def ipow(a, b, dt):
    if b < 0:  # only signed types get here
        return 1 if a == 1 else (1 if b % 2 == 0 else -1) if a == -1 else 0
    return pow(a, b, 1 << dt.bits)


def shift_amount(b, dt):
    return b & _mask(dt.bits)  # the amount is read as an unsigned value of the type


def ieee_max(a, b):
    """IEEE 754-2019 maximum on float64 arrays: NaN if either is NaN, +0 > -0."""
    both0 = (a == 0) & (b == 0)
    r = np.where(a > b, a, b)
    r = np.where(both0, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), r)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, r)


def ieee_min(a, b):
    both0 = (a == 0) & (b == 0)
    r = np.where(a < b, a, b)
    r = np.where(both0, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0), r)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, r)


def float_sign(x):
    """The spec's pseudo-code for floats: NaN, -0.0, +0.0, -1.0, 1.0."""
    return np.where(np.isnan(x), np.nan, np.where(x == 0, x, np.where(x < 0, -1.0, 1.0)))


def round_afz(x):
    """Ties away from zero: rint unless |x| is exactly k + 1/2."""
    with np.errstate(invalid="ignore"):
        tie = np.fmod(np.abs(x), 1.0) == 0.5
    return np.where(tie, np.trunc(x) + np.sign(x), np.rint(x))


def round_afz_exact(v):
    """The same, one Python float at a time through exact rationals."""
    if not math.isfinite(v):
        return v
    n = math.floor(abs(Fraction(v)) + Fraction(1, 2))
    return math.copysign(float(n), v)


L = np.clongdouble


def c_expm1(z):
    z = z.astype(L)
    series = z + z * z / 2 + z**3 / 6 + z**4 / 24 + z**5 / 120
    return np.where(np.abs(z) < 1e-3, series, np.exp(z) - 1)


def c_log1p(z):
    z = z.astype(L)
    series = z - z * z / 2 + z**3 / 3 - z**4 / 4 + z**5 / 5
    return np.where(np.abs(z) < 1e-3, series, np.log(1 + z))


def c_sign(z):
    nan = np.isnan(z.real) | np.isnan(z.imag)
    with np.errstate(all="ignore"):
        s = np.where(z == 0, 0, z / np.abs(z))
    return np.where(nan, complex(np.nan, np.nan), s)


def c_cbrt(z):
    """Principal cube root in polar form: |z|^(1/3) e^(i arg(z)/3)."""
    z = z.astype(L)
    return np.cbrt(np.abs(z)) * np.exp(1j * np.angle(z) / 3)


def c_atan2(y, x):
    """The spec's complex atan2: -i log((x + iy) / sqrt(x^2 + y^2))."""
    y, x = y.astype(L), x.astype(L)
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def c_lexmax(a, b, take_max):
    a_gt = (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag))
    return np.where(a_gt == take_max, a, b)


def c_logistic(z):
    return 1 / (1 + np.exp(-z.astype(L)))


class Rec:
    """One op: its xops name, spec name, arity, accepted kinds and references.

    ref_bool / ref_int: per element on Python bools / ints (result wrapped to the type);
    ref_float: on float64 arrays of the exact operand values; ulps: 0 = bit-exact, else
    the float32 tolerance (float64: 2, formats of <= 16 bits: 1, as they round once);
    ref_complex: on complex arrays, rtol = norm-wise tolerance (None: exact).
    """

    def __init__(
        self,
        name,
        arity,
        kinds,
        *,
        spec=None,
        ref_bool=None,
        ref_int=None,
        ref_float=None,
        ulps=0,
        ref_complex=None,
        rtol=None,
        domain=None,
        domain2=None,
        cdomain=(-5.0, 5.0),
        result=None,
        small_rhs=False,
        long=None,
    ):
        self.name, self.arity, self.kinds = name, arity, kinds
        self.spec = spec or name.rstrip("_")
        self.fn = getattr(xo, name)
        self.ref_bool, self.ref_int, self.ref_float = ref_bool, ref_int, ref_float
        self.ulps, self.ref_complex, self.rtol = ulps, ref_complex, rtol
        self.domain, self.domain2, self.cdomain = domain, domain2 or domain, cdomain
        self.result = result or (lambda dt: dt)
        self.small_rhs = small_rhs
        # transcendental references run in long double (64-bit significand on x86): a
        # check of float64 results against float64 NumPy would only compare NumPy with
        # itself (and scipy's expit flushes float64 subnormal results to 0)
        self.long = bool(ulps) and name != "erf" if long is None else long

    def __repr__(self):
        return self.name


def _part(dt):
    return part_dtype(dt)


TRIG = (-1e4, 1e4)
U = 1  # unary

RECORDS = [
    # -- unary -------------------------------------------------------------------------
    Rec(
        "abs",
        U,
        {SI, F, C},
        ref_int=lambda a, dt: abs(a),
        ref_float=np.abs,
        ref_complex=np.abs,
        rtol=2e-7,
        result=_part,
    ),
    Rec(
        "negate",
        U,
        INT | {F, C},
        ref_int=lambda a, dt: -a,
        ref_float=np.negative,
        ref_complex=np.negative,
    ),
    Rec(
        "sign",
        U,
        {SI, F, C},
        ref_int=lambda a, dt: (a > 0) - (a < 0),
        ref_float=float_sign,
        ref_complex=c_sign,
        rtol=4e-7,
    ),
    Rec(
        "exponential",
        U,
        {F, C},
        ref_float=np.exp,
        ulps=2,
        domain=(-100, 100),
        ref_complex=np.exp,
        rtol=8e-7,
    ),
    Rec(
        "exponential_minus_one",
        U,
        {F, C},
        ref_float=np.expm1,
        ulps=2,
        domain=(-100, 100),
        ref_complex=c_expm1,
        rtol=8e-7,
    ),
    Rec("log", U, {F, C}, ref_float=np.log, ulps=2, ref_complex=np.log, rtol=8e-7),
    Rec("log_plus_one", U, {F, C}, ref_float=np.log1p, ulps=2, ref_complex=c_log1p, rtol=8e-7),
    Rec(
        "logistic",
        U,
        {F, C},
        ref_float=lambda x: 1 / (1 + np.exp(-x)),
        ulps=3,
        ref_complex=c_logistic,
        rtol=3e-6,
    ),  # 1 + e^-z cancels near the poles z = i*pi*k
    Rec("sqrt", U, {F, C}, ref_float=np.sqrt, ref_complex=np.sqrt, rtol=4e-7),
    Rec(
        "rsqrt",
        U,
        {F, C},
        ref_float=lambda x: 1 / np.sqrt(x),
        ulps=2,
        ref_complex=lambda z: 1 / np.sqrt(z.astype(L)),
        rtol=8e-7,
    ),
    Rec("cbrt", U, {F, C}, ref_float=np.cbrt, ulps=2, ref_complex=c_cbrt, rtol=8e-7),
    Rec("sine", U, {F, C}, ref_float=np.sin, ulps=2, domain=TRIG, ref_complex=np.sin, rtol=8e-7),
    Rec("cosine", U, {F, C}, ref_float=np.cos, ulps=2, domain=TRIG, ref_complex=np.cos, rtol=8e-7),
    Rec("tan", U, {F, C}, ref_float=np.tan, ulps=3, domain=TRIG, ref_complex=np.tan, rtol=8e-7),
    Rec("tanh", U, {F, C}, ref_float=np.tanh, ulps=2, ref_complex=np.tanh, rtol=8e-7),
    Rec("erf", U, {F}, ref_float=scipy.special.erf, ulps=2),
    Rec("floor", U, {F}, ref_float=np.floor),
    Rec("ceil", U, {F}, ref_float=np.ceil),
    Rec("round_nearest_afz", U, {F}, ref_float=round_afz),
    Rec("round_nearest_even", U, {F}, ref_float=np.rint),
    Rec("is_finite", U, {F}, ref_float=np.isfinite, result=lambda dt: DT["i1"]),
    Rec("not_", U, {B} | INT, ref_bool=lambda a: not a, ref_int=lambda a, dt: ~a),
    Rec("popcnt", U, INT, ref_int=lambda a, dt: bin(a & _mask(dt.bits)).count("1")),
    Rec(
        "count_leading_zeros",
        U,
        INT,
        ref_int=lambda a, dt: dt.bits - (a & _mask(dt.bits)).bit_length(),
    ),
    Rec("real", U, {F, C}, ref_float=lambda x: x, ref_complex=np.real, result=_part),
    Rec("imag", U, {F, C}, ref_float=np.zeros_like, ref_complex=np.imag, result=_part),
    # -- binary ------------------------------------------------------------------------
    Rec(
        "add",
        2,
        ANY,
        ref_bool=lambda a, b: a or b,
        ref_int=lambda a, b, dt: a + b,
        ref_float=np.add,
        ref_complex=np.add,
    ),
    Rec(
        "subtract",
        2,
        INT | {F, C},
        ref_int=lambda a, b, dt: a - b,
        ref_float=np.subtract,
        ref_complex=np.subtract,
    ),
    Rec(
        "multiply",
        2,
        ANY,
        ref_bool=lambda a, b: a and b,
        ref_int=lambda a, b, dt: a * b,
        ref_float=np.multiply,
        ref_complex=lambda a, b: a.astype(L) * b,
        rtol=4e-7,
    ),
    Rec(
        "divide",
        2,
        INT | {F, C},
        ref_int=lambda a, b, dt: -1 if b == 0 else tdiv(a, b),
        ref_float=np.divide,
        ref_complex=lambda a, b: a.astype(L) / b,
        rtol=8e-7,
    ),
    Rec(
        "remainder",
        2,
        INT | {F},
        ref_int=lambda a, b, dt: a if b == 0 else a - b * tdiv(a, b),
        ref_float=np.fmod,
    ),
    Rec(
        "power",
        2,
        INT | {F, C},
        ref_int=lambda a, b, dt: ipow(a, b, dt),
        ref_float=np.power,
        ulps=2,
        domain=(-10, 10),
        ref_complex=lambda a, b: a.astype(L) ** b,
        rtol=4e-6,
        cdomain=(0.1, 3.0),
        small_rhs=True,
    ),
    Rec(
        "maximum",
        2,
        ANY,
        ref_bool=lambda a, b: a or b,
        ref_int=lambda a, b, dt: max(a, b),
        ref_float=ieee_max,
        ref_complex=lambda a, b: c_lexmax(a, b, True),
    ),
    Rec(
        "minimum",
        2,
        ANY,
        ref_bool=lambda a, b: a and b,
        ref_int=lambda a, b, dt: min(a, b),
        ref_float=ieee_min,
        ref_complex=lambda a, b: c_lexmax(a, b, False),
    ),
    Rec("atan2", 2, {F, C}, ref_float=np.arctan2, ulps=2, ref_complex=c_atan2, rtol=8e-7),
    Rec("and_", 2, {B} | INT, ref_bool=lambda a, b: a and b, ref_int=lambda a, b, dt: a & b),
    Rec("or_", 2, {B} | INT, ref_bool=lambda a, b: a or b, ref_int=lambda a, b, dt: a | b),
    Rec("xor", 2, {B} | INT, ref_bool=lambda a, b: a != b, ref_int=lambda a, b, dt: a ^ b),
    Rec(
        "shift_left",
        2,
        INT,
        small_rhs=True,
        ref_int=lambda a, b, dt: 0 if shift_amount(b, dt) >= dt.bits else a << shift_amount(b, dt),
    ),
    Rec(
        "shift_right_logical",
        2,
        INT,
        small_rhs=True,
        ref_int=lambda a, b, dt: (
            0 if shift_amount(b, dt) >= dt.bits else (a & _mask(dt.bits)) >> shift_amount(b, dt)
        ),
    ),
    Rec(
        "shift_right_arithmetic",
        2,
        INT,
        small_rhs=True,
        ref_int=lambda a, b, dt: as_signed(a, dt.bits) >> min(shift_amount(b, dt), dt.bits - 1),
    ),
]
BY_NAME = {r.name: r for r in RECORDS}


def accepted(rec):
    return [d for d in xo.all_dtypes() if d.kind in rec.kinds]


# ---------------------------------------------------------------------------------------
# Running a record
# ---------------------------------------------------------------------------------------


def make_operands(rec, dt, rng, shape=None):
    """Holder arrays for the operands. shape=None: all the pools' values (binary ops:
    every pair of the pool's first values plus random pairs)."""

    def pool(i):
        if dt.kind == B:
            return to_holder_ints([0, 1] * 8 + rng.integers(0, 2, 16).tolist(), dt)
        if dt.kind in INT:
            return to_holder_ints(int_pool(dt, rng, small=(i == 1 and rec.small_rhs)), dt)
        if dt.kind == F:
            return float_pool(dt, rng, domain=rec.domain if i == 0 else rec.domain2)
        return complex_pool(dt, rng, domain=rec.cdomain)

    if rec.arity == 1:
        a = pool(0)
        if shape is None:
            return [a]
        return [rng.choice(a, math.prod(shape)).reshape(shape)]
    a, b = pool(0), pool(1)
    if dt.kind in INT and rec.small_rhs:  # shift amounts up to and past the width
        extra = [dt.bits - 1, dt.bits, dt.bits + 1, 2 * dt.bits]
        b = np.concatenate([b, to_holder_ints([v for v in extra if v <= dt.max], dt)])
    if shape is None:
        k = min(len(a), len(b), 24)
        aa = np.concatenate([np.repeat(a[:k], k), rng.permutation(a)])
        bb = np.concatenate([np.tile(b[:k], k), rng.permutation(b)[: len(a)]])
        n = min(len(aa), len(bb))
        return [aa[:n], bb[:n]]
    n = math.prod(shape)
    return [rng.choice(a, n).reshape(shape), rng.choice(b, n).reshape(shape)]


def reference(rec, dt, args):
    """Expected holder array of the result type."""
    rdt = rec.result(dt)
    shape = np.shape(args[0])
    if dt.kind == B:
        flat = [np.asarray(a).reshape(-1).tolist() for a in args]
        return np.array([bool(rec.ref_bool(*v)) for v in zip(*flat)], np.bool_).reshape(shape)
    if dt.kind in INT:
        wide = np.uint64 if dt.kind == UI else np.int64
        flat = [np.asarray(a).astype(wide).reshape(-1).tolist() for a in args]
        vals = [wrap(int(rec.ref_int(*v, dt)), rdt) for v in zip(*flat)]
        return to_holder_ints(vals, rdt).reshape(shape)
    with np.errstate(all="ignore"):
        if dt.kind == F:
            xs = [exact_f64(a) for a in args]
            out = np.asarray(
                rec.ref_float(*[x.astype(np.longdouble) if rec.long else x for x in xs])
            ).astype(np.float64)
            if rdt.kind == B:
                return out.astype(np.bool_)
            return round_to(out, rdt).reshape(shape)
        zs = [np.asarray(a).astype(np.complex128) for a in args]
        out = np.asarray(rec.ref_complex(*[z.astype(L) if rec.rtol else z for z in zs]))
        if rdt.kind == F:
            return round_to(out.astype(np.float64), rdt).reshape(shape)
        return out.astype(np.complex128).astype(rdt.np).reshape(shape)


def check(rec, dt, args):
    tensors = [xo.tensor(a, dt) for a in args]
    out = rec.fn(*tensors)
    want = reference(rec, dt, args)
    rdt = rec.result(dt)
    if dt.kind == C and rec.rtol is not None:
        if rdt.kind == F:
            return assert_ulps(out, want, rdt, 2, args)
        return assert_complex_close(
            out, want, rdt, rec.rtol * (1e-9 if dt.name == "c128" else 1), args
        )
    if dt.kind == F and rec.ulps:  # float32's own functions: rec.ulps; else round once
        ulps = 1 if dt.bits <= 16 else 2 if dt.name == "f64" else rec.ulps
        return assert_ulps(out, want, rdt, ulps, args)
    assert_bitexact(out, want, rdt, args)


def _cases_every_dtype():
    return [pytest.param(r, d, id=f"{r.name}-{d.name}") for r in RECORDS for d in accepted(r)]


@pytest.mark.parametrize("rec, dt", _cases_every_dtype())
def test_every_accepted_dtype(rec, dt):
    """Each op on each element type it accepts, specials and edge values included."""
    check(rec, dt, make_operands(rec, dt, rng_for(rec.name, dt.name)))


REPRESENTATIVE = ["i1", "i32", "ui16", "f32", "bf16", "c64"]


def _cases_shapes():
    out = []
    for r in RECORDS:
        for name in REPRESENTATIVE:
            if DT[name].kind in r.kinds:
                out += [pytest.param(r, DT[name], s, id=f"{r.name}-{name}-{s}") for s in SHAPES]
    return out


@pytest.mark.parametrize("rec, dt, shape", _cases_shapes())
def test_shape_zoo(rec, dt, shape):
    """Scalars, size-1 and size-0 dims on one representative type per kind."""
    args = make_operands(rec, dt, rng_for(rec.name, dt.name, shape), shape)
    check(rec, dt, args)
    out = rec.fn(*[xo.tensor(a, dt) for a in args])
    assert out.shape == shape and isinstance(np.asarray(out), np.ndarray)


# ---------------------------------------------------------------------------------------
# Exhaustive sweeps over the narrow float formats
# ---------------------------------------------------------------------------------------

NARROW = [d for d in xo.all_dtypes() if d.kind == F and d.bits <= 16]
TINY = [d for d in NARROW if d.bits <= 8]


def all_values(dt):
    holder = {1: np.uint8, 2: np.uint16}[dt.itemsize]
    return np.arange(1 << dt.bits, dtype=np.uint32).astype(holder).view(dt.np)


FLOAT_UNARY = [r for r in RECORDS if r.arity == 1 and F in r.kinds]


@pytest.mark.parametrize("dt", NARROW, ids=str)
@pytest.mark.parametrize("rec", FLOAT_UNARY, ids=repr)
def test_unary_every_narrow_value(rec, dt):
    """Every value of every <= 16-bit float format: exact ops bit for bit (computed in
    float32 and rounded once must equal float64 rounded once), transcendentals within
    one ulp."""
    check(rec, dt, [all_values(dt)])


EXACT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum"]


@pytest.mark.parametrize("dt", TINY, ids=str)
@pytest.mark.parametrize("name", EXACT_BINARY)
def test_binary_every_pair_of_tiny_floats(name, dt):
    """Every pair of values of the f4/f6/f8 formats, bit for bit."""
    v = all_values(dt)
    check(BY_NAME[name], dt, [np.repeat(v, v.size), np.tile(v, v.size)])


def _int_cases():
    out = []
    for r in RECORDS:
        for name in ["i1", "i2", "ui2", "i4", "ui4"]:
            if DT[name].kind in r.kinds:
                out.append(pytest.param(r, DT[name], id=f"{r.name}-{name}"))
        if r.name in (
            "divide",
            "remainder",
            "power",
            "shift_left",
            "shift_right_logical",
            "shift_right_arithmetic",
            "multiply",
        ):
            out += [pytest.param(r, DT[n], id=f"{r.name}-{n}") for n in ("i8", "ui8")]
    return out


@pytest.mark.parametrize("rec, dt", _int_cases())
def test_integer_every_value_pair(rec, dt):
    """Every value (pair) of the 1/2/4-bit types, and of i8/ui8 for the ops with
    special cases (x/0, INT_MIN/-1, negative exponents, shifts past the width)."""
    v = np.arange(dt.min, dt.max + 1).tolist()
    if rec.arity == 1:
        return check(rec, dt, [to_holder_ints(v, dt)])
    check(
        rec,
        dt,
        [
            to_holder_ints(np.repeat(v, len(v)).tolist(), dt),
            to_holder_ints(np.tile(v, len(v)).tolist(), dt),
        ],
    )


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("name", EXACT_BINARY)
def test_binary_bf16_f16_random_pairs(name, dt):
    """Random pairs of bit patterns, half of them near the subnormal range (where bf16
    shares float32's exponent range and double rounding could bite)."""
    dt = DT[dt]
    rng = rng_for(name, dt.name, "pairs")
    a = rng.integers(0, 1 << 16, 20000).astype(np.uint16)
    b = rng.integers(0, 1 << 16, 20000).astype(np.uint16)
    b[::2] = (b[::2] & 0x80FF) | 0x3F00  # divisors/factors near 1, so results stay tiny
    a[::2] &= 0x80FF if dt.name == "bf16" else 0x83FF  # subnormal and small normal operands
    check(BY_NAME[name], dt, [a.view(dt.np), b.view(dt.np)])


@pytest.mark.parametrize("name", EXACT_BINARY[:4] + ["maximum", "minimum"])
def test_f32_exact_ops_against_float64(name):
    """f32 +,-,*,/ and max/min equal float64 results rounded once to f32."""
    rng = rng_for(name, "f32-f64")
    a = round_to(rng.standard_normal(5000) * 10.0 ** rng.integers(-40, 39, 5000), DT["f32"])
    b = round_to(rng.standard_normal(5000) * 10.0 ** rng.integers(-40, 39, 5000), DT["f32"])
    check(BY_NAME[name], DT["f32"], [a, b])


def test_reference_rounding_is_round_to_nearest_even():
    """Self-check of ``round_to``: for IEEE-like formats it equals rounding to the
    nearest of the enumerated finite values, ties to the even bit pattern."""
    rng = rng_for("round_to")
    for name in ["bf16", "f16", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f6E3M2FN", "f4E2M1FN"]:
        dt = DT[name]
        v = all_values(dt)
        x = exact_f64(v)
        ok = np.isfinite(x) & ~((x == 0) & np.signbit(x))
        grid, pats = x[ok], np.arange(1 << dt.bits)[ok]
        order = np.argsort(grid)
        grid, pats = grid[order], pats[order]
        q = rng.uniform(grid[0], grid[-1], 4000)
        mids = (grid[:-1] + grid[1:]) / 2
        q = np.concatenate([q, mids[rng.integers(0, mids.size, 200)]])
        i = np.clip(np.searchsorted(grid, q), 1, grid.size - 1)
        lo, hi = grid[i - 1], grid[i]
        pick_hi = (q - lo > hi - q) | ((q - lo == hi - q) & (pats[i] % 2 == 0))
        want = np.where(pick_hi, hi, lo)
        got = round_to(q, dt).astype(np.float64)
        nz = want != 0  # the sign of a rounded-to-zero result is checked elsewhere
        np.testing.assert_array_equal(got[nz], want[nz], err_msg=name)


# ---------------------------------------------------------------------------------------
# compare, select, clamp over every element type
# ---------------------------------------------------------------------------------------

DIRECTIONS = ["EQ", "NE", "GE", "GT", "LE", "LT"]
_NPCMP = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "GE": np.greater_equal,
    "GT": np.greater,
    "LE": np.less_equal,
    "LT": np.less,
}
_PYCMP = {
    "EQ": lambda a, b: a == b,
    "NE": lambda a, b: a != b,
    "GE": lambda a, b: a >= b,
    "GT": lambda a, b: a > b,
    "LE": lambda a, b: a <= b,
    "LT": lambda a, b: a < b,
}


def total_order_rank(v, pattern, dt):
    """IEEE totalOrder as a sortable tuple: -NaN < -inf < ... < -0 < +0 < ... < +NaN.
    For the FNUZ formats the one NaN (pattern 0x80, "negative zero") sits where -0
    would be, as XLA's sign-flip key puts it; f8E8M0FNU has no sign (NaN is last)."""
    payload = pattern & _mask(dt.bits - 1)
    if math.isnan(v):
        if dt.name == "f8E8M0FNU":
            return (2, payload)
        if "FNUZ" in dt.name:
            return (1, 0.0, 0)
        return (0, -payload) if pattern >> (dt.bits - 1) else (2, payload)
    return (1, v, 0 if math.copysign(1.0, v) < 0 else 1)


def compare_reference(a, b, dt, direction, ctype):
    if dt.kind == C:  # lexicographic on (real, imag), IEEE comparisons of the parts
        out = []
        for x, y in zip(a.astype(np.complex128).tolist(), b.astype(np.complex128).tolist()):
            gt = (x.real > y.real) or (x.real == y.real and x.imag > y.imag)
            lt = (x.real < y.real) or (x.real == y.real and x.imag < y.imag)
            eq = x.real == y.real and x.imag == y.imag
            out.append(
                {"EQ": eq, "NE": not eq, "GT": gt, "LT": lt, "GE": gt or eq, "LE": lt or eq}[
                    direction
                ]
            )
        return np.array(out, np.bool_)
    if dt.kind == F:
        if ctype == "TOTALORDER":  # rank every distinct bit pattern once, then compare ranks
            u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]
            pa, pb = (np.ascontiguousarray(x).view(u) for x in (a, b))
            uniq, inv = np.unique(np.concatenate([pa, pb]), return_inverse=True)
            ranks = [
                total_order_rank(v, p, dt)
                for v, p in zip(exact_f64(uniq.view(dt.np)).tolist(), uniq.tolist())
            ]
            order = sorted(range(len(ranks)), key=ranks.__getitem__)
            key = np.empty(len(ranks), np.int64)
            key[order] = np.arange(len(ranks))
            ka, kb = key[inv[: pa.size]], key[inv[pa.size :]]
            return _NPCMP[direction](ka, kb)
        with np.errstate(invalid="ignore"):
            return _NPCMP[direction](exact_f64(a), exact_f64(b))
    wide = np.uint64 if dt.kind == UI else np.int64
    ia, ib = np.asarray(a).astype(wide).tolist(), np.asarray(b).astype(wide).tolist()
    return np.array([_PYCMP[direction](x, y) for x, y in zip(ia, ib)], np.bool_)


def _compare_cases():
    out = []
    for d in xo.all_dtypes():
        types = {
            B: ["UNSIGNED"],
            SI: ["SIGNED"],
            UI: ["UNSIGNED"],
            F: ["FLOAT", "TOTALORDER"],
            C: ["FLOAT"],
        }[d.kind]
        out += [pytest.param(d, t, id=f"{d.name}-{t}") for t in types]
    return out


@pytest.mark.parametrize("dt, ctype", _compare_cases())
def test_compare_every_dtype(dt, ctype):
    """Every direction, every compare type the element type allows, specials paired."""
    rng = rng_for("compare", dt.name, ctype)
    if dt.kind == F and dt.bits <= 8:  # every pair
        v = all_values(dt)
        a, b = np.repeat(v, v.size), np.tile(v, v.size)
    else:
        a, b = make_operands(BY_NAME["add"] if dt.kind != C else BY_NAME["maximum"], dt, rng)
        a = np.concatenate([a, b[:20]])  # equal pairs too
        b = np.concatenate([b, b[:20]])
    for direction in DIRECTIONS:
        out = xo.compare(xo.tensor(a, dt), xo.tensor(b, dt), direction, ctype)
        want = compare_reference(a, b, dt, direction, ctype)
        assert_bitexact(out, want, DT["i1"], (a, b))
        default = xo.compare(xo.tensor(a, dt), xo.tensor(b, dt), direction)
        if ctype != "TOTALORDER":
            assert_bitexact(default, want, DT["i1"], (a, b))


@pytest.mark.parametrize("dt", xo.all_dtypes(), ids=str)
def test_select_every_dtype(dt):
    rng = rng_for("select", dt.name)
    a, b = make_operands(BY_NAME["add"] if dt.kind != C else BY_NAME["maximum"], dt, rng)
    pred = rng.integers(0, 2, a.shape).astype(bool)
    out = xo.select(xo.tensor(pred), xo.tensor(a, dt), xo.tensor(b, dt))
    assert_bitexact(out, np.where(pred, a, b), dt)
    for p in (True, False):  # 0-d pred
        out = xo.select(xo.tensor(p), xo.tensor(a, dt), xo.tensor(b, dt))
        assert_bitexact(out, a if p else b, dt)


@pytest.mark.parametrize("n", [2048, 8192, 1 << 17])
def test_select_with_a_broadcast_predicate_takes_one_branch(n):
    # a predicate with every stride 0 (broadcast from a 0-d or one-element tensor, a
    # scalar condition of xnp.where) on the kernel path (>= 2048 elements): one whole
    # branch, bits kept (the kernel read pred[i] for every i past a one-element array)
    import xops.numpy as xnp

    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    a[::7] = np.float32(np.nan)
    b = rng.standard_normal(n).astype(np.float32)
    ta, tb = xo.tensor(a), xo.tensor(b)
    for value in (True, False):
        want = a if value else b
        for pred in (
            xo.broadcast_in_dim(xo.tensor(value), [], [n]),
            xo.broadcast_in_dim(xo.tensor([value]), [0], [n]),
        ):
            assert_bitexact(xo.select(pred, ta, tb), want, DT["f32"])
            assert_bitexact(xo.select(pred, ta, 0.5), a if value else np.full(n, 0.5), DT["f32"])
        assert_bitexact(xnp.where(value, ta, tb), want, DT["f32"])
        pred2 = xo.broadcast_in_dim(xo.tensor([value]), [1], [8, n // 8])
        got = xo.select(pred2, xo.reshape(ta, [8, n // 8]), xo.reshape(tb, [8, n // 8]))
        assert_bitexact(got, want.reshape(8, n // 8), DT["f32"])
    p = xo.broadcast_in_dim(xo.tensor(True), [], [n])  # the gradient: on_true's cotangent
    _, pullback = xo.vjp(lambda x, y: xo.select(p, x, y), ta, tb)
    gx, gy = pullback(xo.tensor(np.ones(n, np.float32)))
    np.testing.assert_array_equal(gx.numpy(), np.ones(n, np.float32))
    np.testing.assert_array_equal(gy.numpy(), np.zeros(n, np.float32))


def clamp_reference(lo, x, hi, dt):
    if dt.kind == F:
        r = ieee_min(ieee_max(exact_f64(x), exact_f64(lo)), exact_f64(hi))
        return round_to(r, dt)
    if dt.kind == C:
        x, lo, hi = (np.broadcast_to(v, np.shape(x)).astype(np.complex128) for v in (x, lo, hi))
        return c_lexmax(c_lexmax(x, lo, True), hi, False).astype(dt.np)
    wide = np.uint64 if dt.kind == UI else np.int64
    x, lo, hi = (np.broadcast_to(v, np.shape(x)).astype(wide).tolist() for v in (x, lo, hi))
    return to_holder_ints([min(max(a, m), n) for a, m, n in zip(x, lo, hi)], dt)


@pytest.mark.parametrize("dt", xo.all_dtypes(), ids=str)
def test_clamp_every_dtype(dt):
    """min and max as full tensors and as 0-d tensors; min > max gives max."""
    rng = rng_for("clamp", dt.name)
    rec = BY_NAME["add"] if dt.kind != C else BY_NAME["maximum"]
    x, lo = make_operands(rec, dt, rng)
    hi = rng.permutation(x)
    got = xo.clamp(xo.tensor(lo, dt), xo.tensor(x, dt), xo.tensor(hi, dt))
    assert_bitexact(got, clamp_reference(lo, x, hi, dt), dt, (lo, x, hi))
    for i in range(3):
        lo0, hi0 = lo[i : i + 1].reshape(()), hi[i : i + 1].reshape(())
        got = xo.clamp(xo.tensor(lo0, dt), xo.tensor(x, dt), xo.tensor(hi0, dt))
        assert_bitexact(got, clamp_reference(lo0, x, hi0, dt), dt)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dt", ["i1", "i32", "f32", "bf16", "c64"])
def test_compare_select_clamp_shape_zoo(dt, shape):
    dt = DT[dt]
    rng = rng_for("csc", dt.name, shape)
    rec = BY_NAME["add"] if dt.kind != C else BY_NAME["maximum"]
    a, b = make_operands(rec, dt, rng, shape)
    out = xo.compare(xo.tensor(a, dt), xo.tensor(b, dt), "LT")
    assert_tensor(
        out, compare_reference(a.reshape(-1), b.reshape(-1), dt, "LT", "FLOAT").reshape(shape), "i1"
    )
    pred = rng.integers(0, 2, shape).astype(bool)
    assert_bitexact(
        xo.select(xo.tensor(pred), xo.tensor(a, dt), xo.tensor(b, dt)), np.where(pred, a, b), dt
    )
    c = rng.permutation(b.reshape(-1)).reshape(shape)
    got = xo.clamp(xo.tensor(a, dt), xo.tensor(b, dt), xo.tensor(c, dt))
    assert_bitexact(
        got, clamp_reference(a.reshape(-1), b.reshape(-1), c.reshape(-1), dt).reshape(shape), dt
    )


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_complex_op_every_shape(dt, shape):
    dt = DT[dt]
    rng = rng_for("complex", dt.name, shape)
    a, b = make_operands(BY_NAME["add"], dt, rng, shape)
    want = np.empty(shape, np.complex64 if dt.name == "f32" else np.complex128)
    want.real, want.imag = a, b
    assert_bitexact(
        xo.complex(xo.tensor(a, dt), xo.tensor(b, dt)),
        want,
        DT["c64" if dt.name == "f32" else "c128"],
    )


# ---------------------------------------------------------------------------------------
# Accuracy of the complex expm1 / log1p near 0 (the reason these ops exist)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ["c64", "c128"])
def test_complex_expm1_log1p_tiny_inputs_componentwise(dt):
    """For tiny z the series z + z^2/2 (expm1) and z - z^2/2 (log1p) are exact to the
    last bit of each part; exp(z) - 1 would return 0 or lose every digit."""
    dt = DT[dt]
    eps = np.finfo(part_dtype(dt).np).eps
    zs = [1e-20 + 1e-20j, -3e-12 + 2e-12j, 1e-9j, 1e-9 + 0j, -2e-25 - 5e-30j]
    z = np.array(zs, dt.np)
    zl = z.astype(L)
    for fn, series in [
        (xo.exponential_minus_one, zl + zl * zl / 2 + zl**3 / 6),
        (xo.log_plus_one, zl - zl * zl / 2 + zl**3 / 3),
    ]:
        got = np.asarray(fn(xo.tensor(z))).astype(L)
        for part in ("real", "imag"):
            g, w = getattr(got, part), getattr(series, part)
            assert np.all(np.abs(g - w) <= 2 * eps * np.abs(w)), (fn.__name__, part, g, w)


def test_complex_expm1_pure_imaginary_real_part():
    """expm1(iy) = (cos y - 1) + i sin y: the real part ~ -y^2/2 must not cancel to 0."""
    y = np.array([1e-10, 1e-5, 1e-3], np.float64)
    got = np.asarray(xo.exponential_minus_one(xo.tensor(1j * y, "c128")))
    np.testing.assert_allclose(got.real, -2 * np.sin(y / 2) ** 2, rtol=4e-16)
    np.testing.assert_allclose(got.imag, np.sin(y), rtol=4e-16)


def test_complex_log1p_and_expm1_large_and_infinite_inputs():
    """No overflow in intermediate squares; infinities give the C99 results."""
    got = xo.log_plus_one(xo.tensor([1e20 + 0j, 1e30 + 1e30j, -1 + 0j], "c64"))
    want = np.log(np.array([1e20 + 1, 1e30 + 1e30j]).astype(L))
    g = np.asarray(got)
    np.testing.assert_allclose(g[:2].real, want.real.astype(float), rtol=1e-6)
    np.testing.assert_allclose(g[:2].imag, want.imag.astype(float), rtol=1e-6)
    assert g[2].real == -np.inf and g[2].imag == 0
    got = xo.log_plus_one(xo.tensor([1e300 + 1e300j], "c128"))
    np.testing.assert_allclose(
        np.asarray(got).real, np.log(np.sqrt(2.0)) + 300 * np.log(10), rtol=1e-15
    )
    e = np.asarray(
        xo.exponential_minus_one(
            xo.tensor([complex(np.inf, 0), complex(-np.inf, 0), complex(1000, 1)], "c128")
        )
    )
    assert e[0] == complex(np.inf, 0) and not np.signbit(e[0].imag)
    assert e[1] == complex(-1, 0)
    assert e[2].real == np.inf and e[2].imag == np.inf


def test_complex_logistic_large_negative_real_part():
    """logistic(z) -> 0 as Re z -> -inf: the form e^z/(1+e^z) avoids 1/(inf - inf*i)."""
    got = np.asarray(xo.logistic(xo.tensor([-1000 + 1j, 1000 + 1j, -50 + 2j], "c128")))
    assert got[0] == 0 and got[1] == 1
    np.testing.assert_allclose(got[2], np.exp(-50 + 2j) / (1 + np.exp(-50 + 2j)), rtol=1e-14)


def test_round_nearest_afz_matches_exact_rationals():
    """The vectorised reference itself against exact rational arithmetic."""
    rng = rng_for("afz-exact")
    x = np.concatenate(
        [
            rng.integers(-8, 8, 200) / 2,
            rng.standard_normal(200) * 10,
            [
                0.49999999999999994,
                -0.49999999999999994,
                2.0**52 + 0.5 - 0.5,
                4503599627370495.5,
                -4503599627370495.5,
                -0.3,
                -0.0,
                0.0,
            ],
        ]
    )
    want = np.array([round_afz_exact(v) for v in x.tolist()])
    assert_bitexact(xo.round_nearest_afz(xo.tensor(x, "f64")), want, DT["f64"])
    np.testing.assert_array_equal(round_afz(x), want)
