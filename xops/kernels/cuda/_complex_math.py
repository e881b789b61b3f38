"""Device functions of the complex elementwise ops (c64, c128), one thread one element.

A complex device array holds NumPy's complex64 / complex128 (numba.cuda types them in
kernels: ``.real``, ``.imag``, ``complex(re, im)``, + - *). Each function is built per
type by :func:`functions` and computes what the CPU computes: NumPy's formulas, and
glibc's complex functions behind them, special values included (C99 Annex G as glibc
gives them).

* divide: NumPy's scaled (Smith) division, the larger part of the divisor first, no
  special cases (a zero divisor divides the parts by +0: inf / NaN);
* exp, log, sqrt: glibc's cexp, clog and csqrt: for infinite and NaN parts the Annex G
  values (exp(-inf + i NaN) = +-0 +- 0i, sqrt(x + i inf) = inf + i inf, log(-0 + 0i) =
  -inf + i pi, ...), for finite ones their formulas with their scaling (no overflow in
  e^x cos y, |z| or the root's parts where the result is finite; subnormal parts scaled
  up) and clog's log1p(|z|^2 - 1) / 2 near |z| = 1 (|z|^2 - 1 exact where glibc's is);
  abs: ``hypot(re, im)``;
* tanh, tan, sine, cosine: glibc's ctanh, ctan (-i ctanh(iz)), csin and ccos
  (ccosh(-y + ix)), special values and scaling alike; power and cbrt: NumPy's npy_cpow,
  whose general path is glibc's cpow, cexp(b clog a) with C's complex product
  (infinities recovered, C99 G.5.1); rsqrt: 1 / csqrt in NumPy's division; logistic,
  exponential_minus_one, log_plus_one, sign and atan2: the CPU's own formulas over these;
* c128 power and atan2: more accurate than the CPU's, within a few ulp of the exact value
  whatever the last ulp of libm's functions (:func:`_cpow_exact`: glibc's e^w with the
  float64 rounding error of w = b log a put back, which e^w would amplify by |w|;
  :func:`_catan2_128`: the CPU evaluates -i log((x + iy) / sqrt(x^2 + y^2)) in long
  double, where x + iy and x^2 + y^2 cancel), both in double-double arithmetic with their
  own log and atan series (no libm), their special values and signed zeros the CPU's.

Where the result of an infinite or NaN part is a signed zero or infinity whose sign is a
NaN's (exp(-inf - i NaN) = 0 - 0i, tanh(inf - i NaN) = 1 - 0i), the NaN is read on the
operand's own part type, as the CPU reads it: those branches are built per type with their
constants in the part type. Every other value is computed in float64 for both types, as
the CPU computes c64 (in c128, rounded once; the map kernel's store rounds here), but for
c64 divide, exp, log and sqrt, which run their float32 formulas where nothing inside can
overflow or underflow (parts 0 or of magnitude 2^-30 .. 2^30; exp: |re| <= 80) and the
float64 ones elsewhere. In the float64 code, products that a sum takes are rounded
(``_dmul``: NVVM would contract them into an fma, which the CPU's code does not).

Checked against the CPU on every pair of the parts +-0, +-the smallest subnormal, +-1,
+-1e300 (c64: 3e38), +-inf and NaN of both signs (tests/test_cuda_complex_specials.py):
NaN in the same parts, infinities and zeros bit for bit, other values within a few ulp
of |cpu| (libdevice's functions and glibc's differ by an ulp or two; under the
simulator, whose libm here is NumPy's, the float64 results agree bit for bit, c128
power and atan2 within the CPU's own error of it).

multiply is NumPy's complex loop on FMA CPUs (the machines xops runs on: AVX2 and AVX-512
x86): re = fma(ar, br, -(ai bi)), im = fma(ar, bi, ai br), each inner product rounded
first, bit for bit as the CPU, special values included (1e300 * (1e300 + i inf) = -inf + i
inf, where the unfused formula gives NaN + i inf).

The simulator runs these functions in Python, whose ``math`` raises where libdevice gives
IEEE values (cos(inf), exp(1000), log(0)); :func:`_libm` gives it NumPy's functions there.
"""

import math
from decimal import Decimal

import numpy as np
from numba import cuda

from . import _rounded
from ._storage import simulated

__all__ = ["functions"]

_built = {}


def functions(np_dtype):
    """``{name: device function}`` (plain Python functions, jitted by the caller) of the
    complex type ``np_dtype`` (complex64 or complex128)."""
    key = np.dtype(np_dtype)
    fns = _built.get(key)
    if fns is None:
        fns = _built[key] = _build(np.float32 if key == np.complex64 else np.float64)
    return fns


# -- libm as the device computes it --------------------------------------------------------


def _libm():
    """(exp, log, sqrt, sin, cos, sinh, cosh, expm1, log1p): ``math``'s functions, which are
    libdevice's on a GPU, with IEEE results for every input (cos(inf) = NaN, exp(1000) =
    inf, log(0) = -inf). The simulator runs Python's ``math``, which raises on those inputs;
    there, NumPy's functions of the operand's type, quietly: the same IEEE values."""
    names = ("exp", "log", "sqrt", "sin", "cos", "sinh", "cosh", "expm1", "log1p")
    if not simulated():
        return tuple(getattr(math, n) for n in names)
    return tuple(_quiet(getattr(np, n)) for n in names)


def _quiet(ufunc):
    def call(v):
        with np.errstate(all="ignore"):
            return ufunc(v)

    return call


_exp, _log, _sqrt, _sin, _cos, _sinh, _cosh, _expm1, _log1p = _libm()
_hypot, _atan2, _copysign = math.hypot, math.atan2, math.copysign  # (IEEE in Python too)


# -- float64 arithmetic ------------------------------------------------------------------
# Constants are NumPy float64 scalars: in the simulator a Python float divided by zero
# would raise. Products that a sum or difference takes go through ``_dmul`` (libdevice's
# dmul_rn on a GPU, :mod:`._rounded`): NVVM would contract them into an fma, one rounding
# fewer than the CPU's (and another sign for a zero that underflows).

_W1 = np.float64(1.0)
_NAN = np.float64(np.nan)
_INF = np.float64(np.inf)
_EPS = np.float64(np.finfo(np.float64).eps)
_DMIN = np.float64(np.finfo(np.float64).tiny)  # DBL_MIN, the smallest normal float64
_DMAX = np.float64(np.finfo(np.float64).max)
_LN2 = np.float64(math.log(2.0))
_LN2_53 = np.float64(53.0) * _LN2  # (clog's scale for parts below DBL_MIN: 2^53)
_T = np.float64(709.0)  # glibc's t for cexp, csin, ccosh: (int) (1023 ln 2)
_E_T = np.float64(math.exp(709.0))  # e^t (glibc's value)
_E_T_HALF = _E_T / 2.0
_T2 = np.float64(354.0)  # ctanh's t: (int) (1023 ln 2 / 2)
_E_2T2 = np.float64(math.exp(708.0))  # e^(2t)
_dmul = _rounded.ops(np.float64)[0]


@cuda.jit(device=True)
def _cdiv(ar, ai, br, bi):
    """(ar + i ai) / (br + i bi) as NumPy divides: Smith's scaled division, the larger part
    of the divisor first; a zero divisor divides the parts by +0. No special cases:
    infinite and NaN parts give what the formula gives, as on the CPU."""
    abs_r, abs_i = abs(br), abs(bi)
    if abs_r >= abs_i:
        if abs_r == 0.0 and abs_i == 0.0:
            return ar / abs_r, ai / abs_r
        rat = bi / br
        scl = 1.0 / (br + _dmul(bi, rat))
        return (ar + _dmul(ai, rat)) * scl, (ai - _dmul(ar, rat)) * scl
    rat = br / bi
    scl = 1.0 / (bi + _dmul(br, rat))
    return (_dmul(ar, rat) + ai) * scl, (_dmul(ai, rat) - ar) * scl


@cuda.jit(device=True)
def _cmul(ar, ai, br, bi):
    """(ar + i ai)(br + i bi), the plain formula (NumPy's npy_cpow multiplies so)."""
    return _dmul(ar, br) - _dmul(ai, bi), _dmul(ar, bi) + _dmul(ai, br)


@cuda.jit(device=True)
def _cmul_c99(a, b, c, d):
    """(a + ib)(c + id) as C multiplies complex numbers (GCC's __muldc3; glibc's cpow takes
    b log a so): the plain formula, and where both parts come out NaN, the infinities
    recovered (C99 G.5.1): an infinite factor's parts boxed to +-1 / +-0 with the other
    factor's NaN parts made +-0, or after an overflow every NaN part made +-0, then each
    part inf times the formula."""
    ac, bd, ad, bc = _dmul(a, c), _dmul(b, d), _dmul(a, d), _dmul(b, c)
    x, y = ac - bd, ad + bc
    if x == x or y == y:
        return x, y
    zero, recalc = 0.0 * _W1, False
    if abs(a) > _DMAX or abs(b) > _DMAX:
        a = _copysign(_W1 if abs(a) > _DMAX else zero, a)
        b = _copysign(_W1 if abs(b) > _DMAX else zero, b)
        c = _copysign(zero, c) if c != c else c
        d = _copysign(zero, d) if d != d else d
        recalc = True
    if abs(c) > _DMAX or abs(d) > _DMAX:
        c = _copysign(_W1 if abs(c) > _DMAX else zero, c)
        d = _copysign(_W1 if abs(d) > _DMAX else zero, d)
        a = _copysign(zero, a) if a != a else a
        b = _copysign(zero, b) if b != b else b
        recalc = True
    overflow = abs(ac) > _DMAX or abs(bd) > _DMAX or abs(ad) > _DMAX or abs(bc) > _DMAX
    if not recalc and overflow:
        a = _copysign(zero, a) if a != a else a
        b = _copysign(zero, b) if b != b else b
        c = _copysign(zero, c) if c != c else c
        d = _copysign(zero, d) if d != d else d
        recalc = True
    if recalc:
        x = _INF * (_dmul(a, c) - _dmul(b, d))
        y = _INF * (_dmul(a, d) + _dmul(b, c))
    return x, y


# -- double-double arithmetic (c128 atan2 and power) ---------------------------------------
# A value hi + lo, |lo| <= ulp(hi) / 2. Error-free sum (Knuth) and product (fma: libdevice's
# fma_rn on a GPU, an exact rational fma under the simulator); products that a sum takes
# rounded (``_dmul``). Scaling by 2^k through frexp / ldexp (exact but for an underflow
# of a part below 2^-1074 of the other).

_fma = _rounded.fma(np.float64)


def _dd_const(digits):
    v = Decimal(digits)
    hi = float(v)
    return np.float64(hi), np.float64(float(v - Decimal(hi)))


_PI_H, _PI_L = _dd_const("3.14159265358979323846264338327950288419716939937511")
_LN2_H, _LN2_L = _dd_const("0.69314718055994530941723212145817656807550013436026")
_PI2_H, _PI2_L = _PI_H / 2.0, _PI_L / 2.0
_PI4_H, _PI4_L = _PI_H / 4.0, _PI_L / 4.0
_TAN_PI_8 = np.float64(math.sqrt(2.0) - 1.0)
_SQRT_HALF = np.float64(math.sqrt(0.5))


@cuda.jit(device=True)
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@cuda.jit(device=True)
def _fast_sum(a, b):  # (|a| >= |b| or a = 0)
    s = a + b
    return s, b - (s - a)


@cuda.jit(device=True)
def _two_prod(a, b):
    p = _dmul(a, b)
    return p, _fma(a, b, -p)


@cuda.jit(device=True)
def _dd_add(ah, al, bh, bl):
    s, e = _two_sum(ah, bh)
    t, f = _two_sum(al, bl)
    s, e = _fast_sum(s, e + t)
    return _fast_sum(s, e + f)


@cuda.jit(device=True)
def _dd_mul(ah, al, bh, bl):
    p, e = _two_prod(ah, bh)
    return _fast_sum(p, e + (_dmul(ah, bl) + _dmul(al, bh)))


@cuda.jit(device=True)
def _dd_div(ah, al, bh, bl):
    q = ah / bh
    p, e = _two_prod(q, bh)
    r = (((ah - p) - e) + al) - _dmul(q, bl)
    return _fast_sum(q, r / bh)


if simulated():  # (Python's ldexp takes a Python int; libdevice's an int32)

    @cuda.jit(device=True)
    def _scale(v, k):  # v 2^k (k an int)
        return _W1 * math.ldexp(v, int(k))

else:

    @cuda.jit(device=True)
    def _scale(v, k):  # v 2^k (k an int)
        return math.ldexp(v, np.int32(k))


@cuda.jit(device=True)
def _series(th, tl, sign, n, k_dd):
    """sum_{k=0..n} sign^k t^k / (2k + 1) of a dd t (|t| <= 0.18), Horner: the terms from
    k_dd on in float64, the first k_dd in dd (each reciprocal a dd: 1/m + fma(-1/m, m, 1)/m)."""
    p = 0.0 * _W1
    for k in range(n, k_dd - 1, -1):
        c = _W1 / (2.0 * k + 1.0)
        p = _dmul(p, th) + (c if (k % 2 == 0 or sign > 0.0) else -c)
    ph, pl = p, 0.0 * _W1
    for k in range(k_dd - 1, -1, -1):
        m = 2.0 * k + 1.0
        ch = _W1 / m
        cl = _fma(-ch, m, _W1) / m
        if k % 2 == 1 and sign < 0.0:
            ch, cl = -ch, -cl
        ph, pl = _dd_mul(ph, pl, th, tl)
        ph, pl = _dd_add(ph, pl, ch, cl)
    return ph, pl


@cuda.jit(device=True)
def _log_dd(mh, ml):
    """log(mh + ml) as a dd, mh > 0 normal: m = f 2^j, f in [sqrt(1/2), sqrt 2), log f =
    2 atanh((f - 1) / (f + 1)) (:func:`_atanh2`), plus j ln 2."""
    f, j = math.frexp(mh)
    if f < _SQRT_HALF:
        j = j - 1
    mh, ml = _scale(mh, -j), _scale(ml, -j)
    nh, nl = _two_sum(mh - 1.0, ml)  # (mh - 1 exact: mh in [0.7, 1.42))
    dh, dl = _two_sum(mh, _W1)
    dh, dl = _fast_sum(dh, dl + ml)
    sh, sl = _dd_div(nh, nl, dh, dl)
    ph, pl = _atanh2(sh, sl)
    jh, jl = _two_prod(_W1 * j, _LN2_H)
    jl = jl + _dmul(_W1 * j, _LN2_L)
    return _dd_add(ph, pl, jh, jl)


@cuda.jit(device=True)
def _atanh2(sh, sl):
    """2 atanh s = log((1 + s) / (1 - s)) = 2 s sum s^2k / (2k + 1) of a dd s, |s| <= 0.172
    (17 terms, relative error below 2^-80)."""
    th, tl = _dd_mul(sh, sl, sh, sl)
    ph, pl = _series(th, tl, 1.0, 16, 6)
    ph, pl = _dd_mul(sh, sl, ph, pl)
    return 2.0 * ph, 2.0 * pl


@cuda.jit(device=True)
def _log1p_dd(dh, dl):
    """log(1 + d) of a dd d, |d| <= 1/4: 2 atanh(d / (2 + d)) (to d's last digit however
    small)."""
    eh, el = _two_sum(2.0 * _W1, dh)
    eh, el = _fast_sum(eh, el + dl)
    sh, sl = _dd_div(dh, dl, eh, el)
    return _atanh2(sh, sl)


@cuda.jit(device=True)
def _arg_dd(xh, xl, yh, yl):
    """atan2(y, x) as a dd of dd parts (not both zero, |x|, |y| <= 1), glibc's branches
    (a y of sign bit set gives -pi .. 0): octants folded exactly, the angle above pi / 8
    rotated by -pi / 4 ((x + y) + i (y - x), exact in dd), atan t = t sum (-t^2)^k /
    (2k + 1) of t = y / x (|t| <= 0.415: 33 terms, relative error below 2^-80)."""
    neg = _copysign(_W1, yh) < 0.0
    left = xh < 0.0
    if left:
        xh, xl = -xh, -xl
    if neg:
        yh, yl = -yh, -yl
    swap = yh > xh
    if swap:
        xh, xl, yh, yl = yh, yl, xh, xl
    bh, bl = 0.0 * _W1, 0.0 * _W1
    if yh > _TAN_PI_8 * xh:
        ah, al = _dd_add(xh, xl, yh, yl)
        yh, yl = _dd_add(yh, yl, -xh, -xl)
        xh, xl = ah, al
        bh, bl = _PI4_H, _PI4_L
    th, tl = _dd_div(yh, yl, xh, xl)
    sh, sl = _dd_mul(th, tl, th, tl)
    ph, pl = _series(sh, sl, -1.0, 32, 11)
    ph, pl = _dd_mul(th, tl, ph, pl)
    ah, al = _dd_add(bh, bl, ph, pl)
    if swap:
        ah, al = _dd_add(_PI2_H, _PI2_L, -ah, -al)
    if left:
        ah, al = _dd_add(_PI_H, _PI_L, -ah, -al)
    if neg:
        ah, al = -ah, -al
    return ah, al


@cuda.jit(device=True)
def _add_split(a, b):  # (glibc's add_split: Dekker's sum of |a| >= |b|)
    hi = a + b
    return hi, (a - hi) + b


@cuda.jit(device=True)
def _ordered(a, b):  # (a, b) by magnitude, a first where equal
    if abs(a) > abs(b):
        return b, a
    return a, b


@cuda.jit(device=True)
def _x2y2m1(x, y):
    """x^2 + y^2 - 1 as glibc's __x2y2m1: the squares split exactly (hi + lo, fma), the
    five terms sorted by magnitude, each from the smallest up added to the next (Dekker:
    sum and error) and the rest sorted again, then summed from the largest."""
    h1, l1 = _two_prod(x, x)
    h2, l2 = _two_prod(y, y)
    v0, v1, v2, v3, v4 = l1, h1, l2, h2, -_W1
    v0, v1 = _ordered(v0, v1)
    v1, v2 = _ordered(v1, v2)
    v2, v3 = _ordered(v2, v3)
    v3, v4 = _ordered(v3, v4)
    v0, v1 = _ordered(v0, v1)
    v1, v2 = _ordered(v1, v2)
    v2, v3 = _ordered(v2, v3)
    v0, v1 = _ordered(v0, v1)
    v1, v2 = _ordered(v1, v2)
    v0, v1 = _ordered(v0, v1)
    v1, v0 = _add_split(v1, v0)
    v1, v2 = _ordered(v1, v2)
    v2, v3 = _ordered(v2, v3)
    v3, v4 = _ordered(v3, v4)
    v2, v1 = _add_split(v2, v1)
    v2, v3 = _ordered(v2, v3)
    v3, v4 = _ordered(v3, v4)
    v3, v2 = _add_split(v3, v2)
    v3, v4 = _ordered(v3, v4)
    v4, v3 = _add_split(v4, v3)
    return (((v4 + v3) + v2) + v1) + v0


# -- glibc's complex functions on finite float64 parts -------------------------------------
# (the finite path of c128, and of c64 where its float32 formulas would overflow or
# underflow; glibc's scaling keeps parts finite wherever the result is)


@cuda.jit(device=True)
def _sincos(v):
    """(sin v, cos v); (v, 1) for |v| <= DBL_MIN, as glibc (no underflow)."""
    if abs(v) > _DMIN:
        return _W1 * _sin(v), _W1 * _cos(v)
    return v, _W1


@cuda.jit(device=True)
def _scaled_exp(v, a, b, h):
    """e^v (a, b) for v <= t; above, (a, b) h e^(v - t), h e^t (cexp) or e^t / 2 (csin,
    ccosh): a and b are scaled by h first and by e^t again above 2t, so that the parts stay
    finite where they are; past 3t they are DBL_MAX times the scaled ones (+-inf, or a zero
    for a zero)."""
    if v > _T:
        v, a, b = v - _T, a * h, b * h
        if v > _T:
            v, a, b = v - _T, a * _E_T, b * _E_T
        if v > _T:
            return _DMAX * a, _DMAX * b
    e = _W1 * _exp(v)
    return e * a, e * b


@cuda.jit(device=True)
def _cexp_finite(x, y):
    """cexp: e^x (cos y + i sin y), scaled above x = t (:func:`_scaled_exp`)."""
    s, c = _sincos(y)
    return _scaled_exp(x, c, s, _E_T)


@cuda.jit(device=True)
def _clog_finite(x, y):
    """clog of parts neither NaN nor both zero (infinite allowed): log|z| + i atan2(y, x),
    |z| the hypot of the parts halved above DBL_MAX / 2 (+ ln 2) or times 2^53 when both
    are below DBL_MIN (- 53 ln 2); near |z| = 1 log1p(|z|^2 - 1) / 2 with |z|^2 - 1 from
    (x - 1)(x + 1) + y^2 (x the larger part: x = 1; 1 < x < 2, y < 1; 0.5 <= x < 1,
    y < eps / 2) or, for 0.5 <= x < 1 and x^2 + y^2 >= 0.5, exactly (:func:`_x2y2m1`),
    as glibc."""
    ax, ay = abs(x), abs(y)
    if ax < ay:
        ax, ay = ay, ax
    if ax > _DMAX * 0.5:
        ay = ay * 0.5 if ay >= _DMIN * 2.0 else 0.0 * _W1
        re = _log(_hypot(ax * 0.5, ay)) + _LN2
    elif ax < _DMIN:
        re = _log(_hypot(ax * 2.0**53, ay * 2.0**53)) - _LN2_53
    elif ax == 1.0:
        re = _log1p(_dmul(ay, ay)) / 2.0
    elif ax > 1.0 and ax < 2.0 and ay < 1.0:
        d2m1 = _dmul(ax - 1.0, ax + 1.0)
        if ay >= _EPS:
            d2m1 = d2m1 + _dmul(ay, ay)
        re = _log1p(d2m1) / 2.0
    elif ax < 1.0 and ax >= 0.5 and ay < _EPS / 2.0:
        re = _log1p((ax - 1.0) * (ax + 1.0)) / 2.0
    elif ax < 1.0 and ax >= 0.5 and _dmul(ax, ax) + _dmul(ay, ay) >= 0.5:
        re = _log1p(_x2y2m1(ax, ay)) / 2.0
    else:
        re = _log(_hypot(ax, ay))
    return _W1 * re, _atan2(y, x)


@cuda.jit(device=True)
def _csqrt_finite(x, y):
    """csqrt: the root with a real part >= 0 and y's sign on its imaginary part. y = 0:
    (sqrt x, y) or (0, sqrt(-x) with y's sign); x = 0: (r, +-r), r = sqrt(|y| / 2); else
    d = |z|, the part on x's side sqrt((d + |x|) / 2), the other y / 2 that, the parts
    scaled by 1/4 above DBL_MAX / 4 and by 2^54 when both are below 2 DBL_MIN (the root
    scaled back by 2, 2^-27)."""
    if y == 0.0:
        if x < 0.0:
            return 0.0 * _W1, _copysign(_W1 * _sqrt(-x), y)
        return abs(_W1 * _sqrt(x)), _copysign(0.0 * _W1, y)
    ay = abs(y)
    if x == 0.0:
        r = _W1 * _sqrt(0.5 * ay) if ay >= _DMIN * 2.0 else 0.5 * _sqrt(2.0 * ay)
        return r, _copysign(r, y)
    ax, xs, ys, sc = abs(x), x, y, _W1
    if ax > _DMAX * 0.25 or ay > _DMAX * 0.25:
        xs, ys, sc = x * 0.25, y * 0.25, 2.0 * _W1
    elif ax < _DMIN * 2.0 and ay < _DMIN * 2.0:
        xs, ys, sc = x * 2.0**54, y * 2.0**54, _W1 * 2.0**-27
    d = _hypot(xs, ys)
    if x > 0.0:
        r = _sqrt(0.5 * (d + xs)) * sc
        return r, _copysign(0.5 * (y / r), y)
    s = _sqrt(0.5 * (d - xs)) * sc
    return abs(0.5 * (y / s)), _copysign(s, y)


@cuda.jit(device=True)
def _ctanh_finite(x, y):
    """ctanh: (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y) (sinh^2 x dropped
    below cos^2 y eps); above |x| = t (354) +-1 + i 4 sin y cos y / e^(2|x|), the
    exponential divided out in two steps (no overflow)."""
    s, c = _sincos(y)
    if abs(x) > _T2:
        ax = abs(x) - _T2
        im = 4.0 * s * c / _E_2T2
        if ax > _T2:
            im = im / _E_2T2
        else:
            im = im / _exp(2.0 * ax)
        return _copysign(_W1, x), im
    if abs(x) > _DMIN:
        sh, ch = _W1 * _sinh(x), _W1 * _cosh(x)
    else:
        sh, ch = x, _W1
    den = c * c
    if abs(sh) > abs(c) * _EPS:
        den = _dmul(sh, sh) + _dmul(c, c)
    return sh * ch / den, s * c / den


@cuda.jit(device=True)
def _csin_finite(x, y):
    """csin: cosh y sin x + i sinh y cos x; above |y| = t e^|y| / 2 (sin x + i cos x with
    y's sign), scaled (:func:`_scaled_exp`)."""
    s, c = _sincos(abs(x))
    if _copysign(_W1, x) < 0.0:
        s = -s
    if abs(y) > _T:
        if _copysign(_W1, y) < 0.0:
            c = -c
        return _scaled_exp(abs(y), s, c, _E_T_HALF)
    return _W1 * _cosh(y) * s, _W1 * _sinh(y) * c


@cuda.jit(device=True)
def _ccosh_finite(x, y):
    """ccosh (cos z = ccosh(-y + ix)): cosh x cos y + i sinh x sin y; above |x| = t
    e^|x| / 2 (cos y + i sin y with x's sign), scaled (:func:`_scaled_exp`)."""
    s, c = _sincos(y)
    if abs(x) > _T:
        if _copysign(_W1, x) < 0.0:
            s = -s
        return _scaled_exp(abs(x), c, s, _E_T_HALF)
    return _W1 * _cosh(x) * c, _W1 * _sinh(x) * s


# -- the special values: C99 Annex G as glibc gives them -----------------------------------


def _specials(part):
    """``{name: device function}`` of parts (x, y) of type ``part``, one of them infinite or
    NaN, for glibc's cexp, csqrt, ctanh, csin and ccosh (C99 G.6), constants in the part
    type: where a NaN's sign decides a zero's or an infinity's sign, it is read from the
    operand's own part, as the CPU reads it."""
    zero, one = part(0.0), part(1.0)
    inf, nan, big = part(np.inf), part(np.nan), part(np.finfo(part).max)

    @cuda.jit(device=True)
    def sincos_signs(v):  # (sin v, cos v) for their signs (v, 1 at +-0)
        if v == zero:
            return v, one
        return _sin(v), _cos(v)

    @cuda.jit(device=True)
    def exp(x, y):
        if x != x:  # NaN + i0 keeps the zero; NaN + iy: NaN + i NaN
            return nan, (y if y == zero else nan)
        if abs(x) <= big:  # finite x, infinite or NaN y
            return nan, nan
        if abs(y) <= big:  # +-inf + iy, y finite: inf cis y (0 cis y for -inf), y = 0 kept
            v = inf if x > zero else zero
            if y == zero:
                return v, y
            s, c = sincos_signs(y)
            return _copysign(v, c), _copysign(v, s)
        if x > zero:  # inf + i inf / NaN: inf + i NaN; -inf + i inf / NaN: 0 +- 0i
            return inf, nan
        return zero, _copysign(zero, y)

    @cuda.jit(device=True)
    def sqrt(x, y):
        if abs(y) > big:  # x + i inf (x NaN too): inf + i inf with y's sign
            return inf, y
        if abs(x) > big:  # -inf + iy: 0 + i inf (NaN + i inf for a NaN y); inf + iy: inf + 0i
            if x < zero:
                return (nan if y != y else zero), _copysign(inf, y)
            return x, (nan if y != y else _copysign(zero, y))
        return nan, nan

    @cuda.jit(device=True)
    def tanh(x, y):
        if abs(x) > big:  # +-1 + 0i, the zero's sign sin y cos y's (|y| > 1) or y's
            if abs(y) <= big and abs(y) > one:
                s, c = sincos_signs(y)
                return _copysign(one, x), _copysign(zero, s * c)
            return _copysign(one, x), _copysign(zero, y)
        if y == zero:  # NaN + i0: itself
            return x, y
        return (x if x == zero else nan), nan  # (a zero x kept)

    @cuda.jit(device=True)
    def sin(x, y):
        if abs(y) <= big:  # x infinite or NaN: NaN + iy for y = 0, else NaN + i NaN
            return nan, (y if y == zero else nan)
        if y != y:  # y NaN: a zero x kept
            return (x if x == zero else nan), nan
        if x == zero:  # y infinite: +-0 + iy
            return x, y
        if abs(x) <= big:  # inf (sin x + i cos x), y's sign on the imaginary part
            s, c = sincos_signs(abs(x))
            re, im = _copysign(inf, s), _copysign(inf, c)
            return (-re if x < zero else re), (-im if y < zero else im)
        return nan, inf

    @cuda.jit(device=True)
    def cosh(x, y):
        if abs(x) <= big:  # y infinite or NaN: NaN + i0 (x = 0) or NaN + i NaN
            return nan, (zero if x == zero else nan)
        if x != x:  # x NaN: NaN + iy for y = 0, else NaN + i NaN
            return nan, (y if y == zero else nan)
        sx = _copysign(one, x)  # x infinite
        if y == zero:
            return inf, y * sx
        if abs(y) <= big:  # inf (cos y + i sin y times x's sign)
            s, c = sincos_signs(y)
            return _copysign(inf, c), _copysign(inf, s) * sx
        return inf, nan

    return {"exp": exp, "sqrt": sqrt, "tanh": tanh, "sin": sin, "cosh": cosh}


_SPECIALS64 = _specials(np.float64)
_exp_specials64, _sqrt_specials64 = _SPECIALS64["exp"], _SPECIALS64["sqrt"]


@cuda.jit(device=True)
def _cexp(x, y):
    """glibc's cexp of float64 parts, every value (the float64 ops' exponential)."""
    if abs(x) <= _DMAX and abs(y) <= _DMAX:
        return _cexp_finite(x, y)
    return _exp_specials64(x, y)


@cuda.jit(device=True)
def _csqrt(x, y):
    """glibc's csqrt of float64 parts, every value (the float64 ops' square root)."""
    if abs(x) <= _DMAX and abs(y) <= _DMAX:
        return _csqrt_finite(x, y)
    return _sqrt_specials64(x, y)


@cuda.jit(device=True)
def _clog(x, y):
    """glibc's clog of float64 parts, every value: log 0 = -inf + i arg (0 or +-pi by the
    zeros' signs); a NaN part: inf + i NaN where the other part is infinite, else NaN +
    i NaN."""
    if x == 0.0 and y == 0.0:
        return -_INF, _atan2(y, x)
    if x != x or y != y:
        return (_INF if abs(x) > _DMAX or abs(y) > _DMAX else _NAN), _NAN
    return _clog_finite(x, y)


# -- the ops of each type ------------------------------------------------------------------


def _build(part):
    half, zero, one = part(0.5), part(0.0), part(1.0)
    big = part(np.finfo(part).max)  # (abs(v) <= big: v finite; False for NaN)
    sp = _SPECIALS64 if part is np.float64 else _specials(part)
    exp_sp, sqrt_sp, tanh_sp, sin_sp, cosh_sp = (
        sp[n] for n in ("exp", "sqrt", "tanh", "sin", "cosh")
    )
    # c64: divide, exp, log and sqrt run their float32 formulas where nothing in them
    # overflows or underflows (parts 0 or of magnitude 2^-30 .. 2^30; exp: |x| <= 80), and
    # the float64 functions elsewhere, as the CPU computes c64 (in c128, rounded once: the
    # map kernel's store rounds here); c128: the float64 functions
    fast = part is np.float32
    lo, hi, exp_hi = part(2.0**-30), part(2.0**30), part(80.0)

    @cuda.jit(device=True)
    def fits(v):  # (a part the float32 formulas take as it is)
        u = abs(v)
        return u == zero or (u >= lo and u <= hi)

    def divide(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if fast and fits(ar) and fits(ai) and fits(br) and fits(bi):
            abs_r, abs_i = abs(br), abs(bi)
            if abs_r >= abs_i:
                if abs_r == zero and abs_i == zero:
                    return complex(ar / abs_r, ai / abs_r)
                rat = bi / br
                scl = one / (br + bi * rat)
                return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
            rat = br / bi
            scl = one / (bi + br * rat)
            return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)
        r, i = _cdiv(ar * _W1, ai * _W1, br * _W1, bi * _W1)
        return complex(r, i)

    fused, times = _rounded.fma(part), _rounded.ops(part)[0]

    def multiply(a, b):  # NumPy's loop on FMA CPUs: each part one fma of a rounded product
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return complex(fused(ar, br, -times(ai, bi)), fused(ar, bi, times(ai, br)))

    def absolute(a):
        return math.hypot(a.real, a.imag)

    def exp(a):
        x, y = a.real, a.imag
        if not (abs(x) <= big and abs(y) <= big):
            r, i = exp_sp(x, y)
            return complex(r, i)
        if fast and abs(x) <= exp_hi:
            r = _exp(x)
            if y == zero:
                return complex(r, y)
            return complex(r * _cos(y), r * _sin(y))
        r, i = _cexp_finite(x * _W1, y * _W1)
        return complex(r, i)

    def log(a):
        x, y = a.real, a.imag
        if fast and fits(x) and fits(y):  # (0: log 0 = -inf, atan2 of the signed zeros)
            return complex(_log(_hypot(x, y)), _atan2(y, x))
        r, i = _clog(x * _W1, y * _W1)
        return complex(r, i)

    def sqrt(a):
        x, y = a.real, a.imag
        if not (abs(x) <= big and abs(y) <= big):
            r, i = sqrt_sp(x, y)
            return complex(r, i)
        if fast and fits(x) and fits(y):
            if x == zero and y == zero:
                return complex(zero, y)
            t = _sqrt((abs(x) + _hypot(x, y)) * half)
            if x >= zero:
                return complex(t, y / (t + t))
            return complex(abs(y) / (t + t), _copysign(t, y))
        r, i = _csqrt_finite(x * _W1, y * _W1)
        return complex(r, i)

    # tanh, tan, sine, cosine: in float64 for both types (as the CPU computes c64)
    @cuda.jit(device=True)
    def tanh_parts(x, y):
        if abs(x) <= big and abs(y) <= big:
            return _ctanh_finite(x * _W1, y * _W1)
        return tanh_sp(x, y)

    def tanh(a):
        r, i = tanh_parts(a.real, a.imag)
        return complex(r, i)

    def tan(a):  # tan z = -i tanh(iz) (glibc's ctan: the same values)
        r, i = tanh_parts(-a.imag, a.real)
        return complex(i, -r)

    def sine(a):
        x, y = a.real, a.imag
        if abs(x) <= big and abs(y) <= big:
            r, i = _csin_finite(x * _W1, y * _W1)
        else:
            r, i = sin_sp(x, y)
        return complex(r, i)

    def cosine(a):  # cos z = ccosh(-y + ix) (glibc's ccos)
        x, y = -a.imag, a.real
        if abs(x) <= big and abs(y) <= big:
            r, i = _ccosh_finite(x * _W1, y * _W1)
        else:
            r, i = cosh_sp(x, y)
        return complex(r, i)

    def real(a):
        return a.real

    def imag(a):
        return a.imag

    def make(a, b):
        return complex(a, b)

    # maximum / minimum: NumPy's complex order, as the CPU computes them (np.maximum /
    # np.minimum): a if a has a NaN part or a >= b (a <= b) lexicographically on (real,
    # imag), where a NaN imaginary part only takes part in the tie of the real parts
    def maximum(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if ar != ar or ai != ai:
            return a
        if (ar > br and bi == bi) or (ar == br and ai >= bi):
            return a
        return b

    def minimum(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if ar != ar or ai != ai:
            return a
        if (ar < br and bi == bi) or (ar == br and ai <= bi):
            return a
        return b

    return {
        "maximum": maximum,
        "minimum": minimum,
        "multiply": multiply,
        "divide": divide,
        "abs": absolute,
        "exponential": exp,
        "log": log,
        "sqrt": sqrt,
        "tanh": tanh,
        "tan": tan,
        "sine": sine,
        "cosine": cosine,
        "real": real,
        "imag": imag,
        "complex": make,
        **_WIDE,
        **(_WIDE128 if part is np.float64 else {}),
    }


# -- ops computed in float64 for both types ------------------------------------------------
# The CPU evaluates these on complex64 operands in complex128 and rounds once (``_same``);
# here too: each widens the parts to float64 (``* _W1``: exact), computes, and returns a
# complex128 the map kernel's store rounds once per part to the output type.


def _csign(a):  # NaN parts: (NaN, NaN); a zero: itself (signed zeros kept); else a / |a|
    re, im = a.real * _W1, a.imag * _W1
    if re != re or im != im:
        return complex(_NAN, _NAN)
    if re == 0.0 and im == 0.0:
        return complex(re, im)
    r, i = _cdiv(re, im, _W1 * _hypot(re, im), 0.0 * _W1)
    return complex(r, i)


def _power(general):
    """NumPy's npy_cpow with ``general`` (ar, ai, br, bi) -> parts as its general path: a^0
    = 1; 0^b = 0 (Re b > 0) or NaN; an integer exponent |n| < 100 (Im b = 0) by repeated
    squaring (1, 2, 3 unrolled; a negative one divides 1 by the power); else e^(b log a)."""

    def power(a, b):
        ar, ai, br, bi = a.real * _W1, a.imag * _W1, b.real * _W1, b.imag * _W1
        if br == 0.0 and bi == 0.0:
            return complex(_W1, 0.0 * _W1)
        if ar == 0.0 and ai == 0.0:
            if br > 0.0:
                return complex(0.0 * _W1, 0.0 * _W1)
            return complex(_NAN, _NAN)
        if bi == 0.0 and abs(br) < 100.0 and br == math.floor(br):
            n = int(br)
            if n == 1:
                return complex(ar, ai)
            if n == 2:
                r, i = _cmul(ar, ai, ar, ai)
                return complex(r, i)
            if n == 3:
                r, i = _cmul(ar, ai, ar, ai)
                r, i = _cmul(ar, ai, r, i)
                return complex(r, i)
            n = abs(n)
            r, i, pr, pi, mask = _W1, 0.0 * _W1, ar, ai, 1
            while True:
                if n & mask:
                    r, i = _cmul(r, i, pr, pi)
                mask <<= 1
                if n < mask:
                    break
                pr, pi = _cmul(pr, pi, pr, pi)
            if br < 0.0:
                r, i = _cdiv(_W1, 0.0 * _W1, r, i)
            return complex(r, i)
        r, i = general(ar, ai, br, bi)
        return complex(r, i)

    return power


@cuda.jit(device=True)
def _cpow_log(ar, ai, br, bi):
    """glibc's cpow (npy_cpow's general path): cexp(b clog a), b clog a multiplied as C
    multiplies complex numbers (infinities recovered)."""
    lr, li = _clog(ar, ai)
    r, i = _cmul_c99(br, bi, lr, li)
    return _cexp(r, i)


_LD_EPS = np.float64(2.0**-64)  # (long double's rounding: below it, the CPU's q is on a cut)
_W_BIG = np.float64(2.0**20)  # (|w| past which c128 power keeps the CPU's w as it is)
_D_BIG = np.float64(2.0**-30)  # (the largest correction of w applied: e^d = 1 + d past 2^-60)


@cuda.jit(device=True)
def _exponent(a, b):  # frexp's exponent of the larger of |a|, |b|: in [2^(e-1), 2^e)
    return math.frexp(abs(a) if abs(a) >= abs(b) else abs(b))[1]


@cuda.jit(device=True)
def _cpow_exact(ar, ai, br, bi):
    """c128 power's general path: glibc's w = b clog a (:func:`_cpow_log`) and e^w with w's
    rounding error d = b log a - w put back, e^(w + d) = e^w (1 + d_re) cis(w_im) (1 + i
    d_im) (the CPU's error, e^w amplifying an error of w by |w|, is not kept): log a in dd,
    log|a| = log(|a'|^2) / 2 + e ln 2 (a = a' 2^e; :func:`_log_dd`) and arg a
    (:func:`_arg_dd`), b log a as a dd, none of it from libm. Only where w is finite, |w|
    <= 2^20 and |d| <= 2^-30; elsewhere (infinite or NaN parts, a huge b, w's parts
    cancelling past that) glibc's cexp(w), the CPU's value; a part 0 or infinite with
    and without the correction keeps the CPU's (the sign there is w's rounding's)."""
    lr, li = _clog(ar, ai)
    wr, wi = _cmul_c99(br, bi, lr, li)
    if not (abs(wr) <= _W_BIG and abs(wi) <= _W_BIG):
        return _cexp(wr, wi)
    e = _exponent(ar, ai)
    xr, xi = _scale(ar, -e), _scale(ai, -e)
    h1, l1 = _two_prod(xr, xr)
    h2, l2 = _two_prod(xi, xi)
    mh, ml = _dd_add(h1, l1, h2, l2)
    gh, gl = _log_dd(mh, ml)
    eh, el = _two_prod(_W1 * e, _LN2_H)
    gh, gl = _dd_add(0.5 * gh, 0.5 * gl, eh, el + _dmul(_W1 * e, _LN2_L))
    zero = 0.0 * _W1
    ah, al = _arg_dd(xr, zero, xi, zero)
    ph, pl = _dd_mul(br, zero, gh, gl)
    qh, ql = _dd_mul(bi, zero, ah, al)
    rh, rl = _dd_add(ph, pl, -qh, -ql)
    dr = _dd_add(rh, rl, -wr, zero)[0]
    ph, pl = _dd_mul(br, zero, ah, al)
    qh, ql = _dd_mul(bi, zero, gh, gl)
    rh, rl = _dd_add(ph, pl, qh, ql)
    di = _dd_add(rh, rl, -wi, zero)[0]
    s, c = _sincos(wi)
    r0, i0 = _scaled_exp(wr, c, s, _E_T)
    if not (abs(dr) <= _D_BIG and abs(di) <= _D_BIG):
        return r0, i0
    if di != 0.0:
        c, s = c - _dmul(s, di), s + _dmul(c, di)
    if dr != 0.0:
        c, s = c * (1.0 + dr), s * (1.0 + dr)
    r1, i1 = _scaled_exp(wr, c, s, _E_T)
    # a part that is 0 or infinite both ways: the CPU's (its sign is w's rounding's)
    if (r1 == 0.0 or abs(r1) > _DMAX) and (r0 == 0.0 or abs(r0) > _DMAX):
        r1 = r0
    if (i1 == 0.0 or abs(i1) > _DMAX) and (i0 == 0.0 or abs(i0) > _DMAX):
        i1 = i0
    return r1, i1


def _ccbrt(a):
    """The CPU's ``np.power(a, 1 / 3)`` (npy_cpow: a zero gives 0, else e^(log(a) / 3),
    the principal root; 1 / 3 rounded to float64 first, as there)."""
    ar, ai = a.real * _W1, a.imag * _W1
    if ar == 0.0 and ai == 0.0:
        return complex(0.0 * _W1, 0.0 * _W1)
    r, i = _cpow_log(ar, ai, _W1 / 3.0, 0.0 * _W1)
    return complex(r, i)


@cuda.jit(device=True)
def _catan2_q(yr, yi, xr, xi, sign):
    """q = (x + iy) / sqrt(x^2 + y^2) as the CPU evaluates it, in float64 with NumPy's
    complex multiply, csqrt and Smith division; ``sign`` (-1, 1; 0: none) the exact sign
    of x^2 + y^2's imaginary part, put on a zero where float64 gives another sign (an
    underflow, a rounding)."""
    x2r, x2i = _cmul(xr, xi, xr, xi)
    y2r, y2i = _cmul(yr, yi, yr, yi)
    si = x2i + y2i
    if sign != 0 and (si == 0.0 or (si > 0.0) != (sign > 0)):
        si = _copysign(0.0 * _W1, _W1 * sign)
    sr, si = _csqrt(x2r + y2r, si)
    # 1j * y as NumPy multiplies: the scalar first (signed zeros, and 0 * inf = NaN)
    iyr, iyi = _cmul(0.0 * _W1, _W1, yr, yi)
    return _cdiv(xr + iyr, xi + iyi, sr, si)


@cuda.jit(device=True)
def _catan2_parts(yr, yi, xr, xi):
    """The CPU's complex atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)) (the reference
    interpreter's formula) of float64 parts, in float64 with NumPy's complex multiply,
    csqrt, Smith division and clog: c64's (one precision up, as the CPU), and c128's
    where a part is infinite or NaN."""
    qr, qi = _catan2_q(yr, yi, xr, xi, 0)
    lr, li = _clog(qr, qi)
    # -1j * log q as NumPy multiplies: Python's -1j is -0 - 1i
    return _cmul(-0.0 * _W1, -_W1, lr, li)


def _catan2(y, x):
    r, i = _catan2_parts(y.real * _W1, y.imag * _W1, x.real * _W1, x.imag * _W1)
    return complex(r, i)


@cuda.jit(device=True)
def _prod_split(a, b):  # a b = (h + l) 2^e exactly (finite a, b): frexp's mantissas' product
    ma, ea = math.frexp(a)
    mb, eb = math.frexp(b)
    h, lo = _two_prod(_W1 * ma, _W1 * mb)
    return h, lo, ea + eb


@cuda.jit(device=True)
def _dot_sign(a, b, c, d):
    """The sign (-1, 0 or 1) of a b + c d for finite parts of any magnitude (no overflow or
    underflow: the products as mantissa and exponent)."""
    h1, l1, e1 = _prod_split(a, b)
    h2, l2, e2 = _prod_split(c, d)
    if h2 == 0.0 or (h1 != 0.0 and e1 > e2 + 3):
        v = h1
    elif h1 == 0.0 or e2 > e1 + 3:
        v = h2
    else:
        f = _scale(_W1, e2 - e1)
        t, u = _two_sum(h1, _dmul(h2, f))
        v = t + (u + (l1 + _dmul(l2, f)))
    if v > 0.0:
        return 1
    if v < 0.0:
        return -1
    return 0


# -- the CPU's q of c128 atan2 with an unbounded exponent ---------------------------------
# x m 2^e: m a float64, 0 (a signed zero) or 0.5 <= |m| < 1, e an int; products, sums,
# quotients and roots round m to float64's 53 bits (the CPU's long double: 64), and no
# part of a product of float64 parts overflows or underflows (long double's range holds
# them all).


@cuda.jit(device=True)
def _xf(v):
    m, e = math.frexp(v)
    return _W1 * m, e + 0


@cuda.jit(device=True)
def _xf_mul(am, ae, bm, be):
    m, e = math.frexp(_dmul(am, bm))
    return _W1 * m, ae + be + e


@cuda.jit(device=True)
def _xf_div(am, ae, bm, be):
    m, e = math.frexp(am / bm)
    return _W1 * m, ae - be + e


@cuda.jit(device=True)
def _xf_add(am, ae, bm, be):  # (IEEE's zeros: x + -x = +0, -0 + -0 = -0)
    if am == 0.0 or bm == 0.0:
        if am == 0.0 and bm == 0.0:
            return am + bm, ae
        return (bm, be) if am == 0.0 else (am, ae)
    if ae < be:
        am, ae, bm, be = bm, be, am, ae
    if ae - be > 60:
        return am, ae
    m, e = math.frexp(am + _scale(bm, be - ae))
    return _W1 * m, ae + e


@cuda.jit(device=True)
def _xf_sqrt(m, e):  # (m >= 0)
    if e % 2 != 0:
        m, e = 2.0 * m, e - 1
    f, k = math.frexp(_W1 * _sqrt(m))
    return _W1 * f, e // 2 + k


@cuda.jit(device=True)
def _xf_below(am, ae, bm, be):  # |a| < |b|
    if am == 0.0 or bm == 0.0:
        return am == 0.0 and bm != 0.0
    return ae < be or (ae == be and abs(am) < abs(bm))


@cuda.jit(device=True)
def _catan2_qi_wide(yr, yi, xr, xi):
    """The imaginary part (its sign: -1, a signed zero or 1) of q = (x + iy) / sqrt(x^2 +
    y^2) as the CPU evaluates it in long double (NumPy's complex multiply and Smith
    division, glibc's csqrt branches), on finite parts with an unbounded exponent."""
    xrm, xre = _xf(xr)
    xim, xie = _xf(xi)
    yrm, yre = _xf(yr)
    yim, yie = _xf(yi)
    am, ae = _xf_mul(xrm, xre, xrm, xre)
    bm, be = _xf_mul(xim, xie, xim, xie)
    s1m, s1e = _xf_add(am, ae, -bm, be)
    am, ae = _xf_mul(xrm, xre, xim, xie)
    t1m, t1e = _xf_add(am, ae, am, ae)
    am, ae = _xf_mul(yrm, yre, yrm, yre)
    bm, be = _xf_mul(yim, yie, yim, yie)
    s2m, s2e = _xf_add(am, ae, -bm, be)
    am, ae = _xf_mul(yrm, yre, yim, yie)
    t2m, t2e = _xf_add(am, ae, am, ae)
    srm, sre = _xf_add(s1m, s1e, s2m, s2e)
    sim, sie = _xf_add(t1m, t1e, t2m, t2e)
    # glibc's csqrt of finite parts
    if sim == 0.0:
        if srm < 0.0:
            rm, re = _xf_sqrt(-srm, sre)
            rrm, rre, rim, rie = 0.0 * _W1, 0, _copysign(rm, sim), re
        else:
            rm, re = _xf_sqrt(srm, sre)
            rrm, rre, rim, rie = rm, re, _copysign(0.0 * _W1, sim), 0
    elif srm == 0.0:
        rm, re = _xf_sqrt(abs(sim), sie - 1)
        rrm, rre, rim, rie = rm, re, _copysign(rm, sim), re
    else:
        am, ae = _xf_mul(srm, sre, srm, sre)
        bm, be = _xf_mul(sim, sie, sim, sie)
        am, ae = _xf_add(am, ae, bm, be)
        dm, de = _xf_sqrt(am, ae)
        if srm > 0.0:
            am, ae = _xf_add(dm, de, srm, sre)
            rrm, rre = _xf_sqrt(am, ae - 1)
            am, ae = _xf_div(sim, sie, rrm, rre)
            rim, rie = _copysign(am, sim), ae - 1
        else:
            am, ae = _xf_add(dm, de, -srm, sre)
            rim, rie = _xf_sqrt(am, ae - 1)
            am, ae = _xf_div(sim, sie, rim, rie)
            rrm, rre = abs(am), ae - 1
            rim = _copysign(rim, sim)
    # u = x + 1j * y (NumPy's product: 0 y_r - y_i, 0 y_i + y_r), then Smith's q_i
    am, ae = _xf_add(_dmul(0.0 * _W1, yr), 0, -yim, yie)
    urm, ure = _xf_add(xrm, xre, am, ae)
    am, ae = _xf_add(_dmul(0.0 * _W1, yi), 0, yrm, yre)
    uim, uie = _xf_add(xim, xie, am, ae)
    if not _xf_below(rrm, rre, rim, rie):  # rat = bi / br, q_i = (ai - ar rat) / (br + bi rat)
        tm, te = _xf_div(rim, rie, rrm, rre)
        am, ae = _xf_mul(urm, ure, tm, te)
        qm, qe = _xf_add(uim, uie, -am, ae)
        am, ae = _xf_mul(rim, rie, tm, te)
        dm, de = _xf_add(rrm, rre, am, ae)
    else:  # rat = br / bi, q_i = (ai rat - ar) / (bi + br rat)
        tm, te = _xf_div(rrm, rre, rim, rie)
        am, ae = _xf_mul(uim, uie, tm, te)
        qm, qe = _xf_add(am, ae, -urm, ure)
        am, ae = _xf_mul(rrm, rre, tm, te)
        dm, de = _xf_add(rim, rie, am, ae)
    return qm / dm


def _catan2_128(y, x):
    """c128 atan2(y, x) = -i log q, q = u / sqrt(x^2 + y^2), u = x + iy: the CPU computes
    it in long double; here within an ulp or two of the exact value. With v = x - iy, x^2 +
    y^2 = u v and q^2 = u / v: log|q| = log(|u|^2 / |v|^2) / 4 and arg q = arg(u conj v) / 2
    or that -+ pi (the one on q's side). u and v are exact in dd (two sums), each scaled
    by a power of 2 (no overflow or underflow after), u conj v, |u|^2, |v|^2 and their
    logarithm and argument in dd (:func:`_log_dd`, :func:`_arg_dd`; |u|^2 / |v|^2 times
    4^k first for |k| <= 2, k the scales' difference, and |u|^2 / |v|^2 - 1 = 4 (x_i y_r -
    x_r y_i) / |v|^2 near 1, so that nothing cancels). q's side: q from the scaled u and u v
    in float64 (x^2 + y^2's imaginary part of the exact sign, :func:`_dot_sign`; a zero's
    as NumPy's products give it). The CPU formula's q_i (:func:`_catan2_qi_wide`) gives
    the sign of a zero arg q and, where arg q is within long double's resolution of the
    cut, the side (-pi for -0); signed zeros the CPU gets from long double residues below
    float64's range are not reproduced. u = 0: NaN + NaN i (0 / 0); v = 0: log(u / +0)
    as the CPU; an infinite or NaN part: the float64 formula (:func:`_catan2_parts`)."""
    yr, yi, xr, xi = y.real * _W1, y.imag * _W1, x.real * _W1, x.imag * _W1
    if not (abs(yr) <= _DMAX and abs(yi) <= _DMAX and abs(xr) <= _DMAX and abs(xi) <= _DMAX):
        r, i = _catan2_parts(yr, yi, xr, xi)
        return complex(r, i)
    zero = 0.0 * _W1
    big = _DMAX * 0.25
    if abs(yr) > big or abs(yi) > big or abs(xr) > big or abs(xi) > big:
        yr, yi, xr, xi = yr * 0.25, yi * 0.25, xr * 0.25, xi * 0.25
    # u = x + 1j * y as NumPy multiplies (its zeros' signs), exact; v = x - iy
    ur, url = _two_sum(xr, _dmul(zero, yr) - yi)
    ui, uil = _two_sum(xi, _dmul(zero, yi) + yr)
    vr, vrl = _two_sum(xr, yi)
    vi, vil = _two_sum(xi, -yr)
    if ur == 0.0 and ui == 0.0:
        return complex(_NAN, _NAN)
    if vr == 0.0 and vi == 0.0:  # (x^2 + y^2 = 0: q = u / +0)
        lr, li = _clog(ur / zero, ui / zero)
        r, i = _cmul(-zero, -_W1, lr, li)
        return complex(r, i)
    eu = _exponent(ur, ui)
    ev = _exponent(vr, vi)
    ur, url, ui, uil = _scale(ur, -eu), _scale(url, -eu), _scale(ui, -eu), _scale(uil, -eu)
    vr, vrl, vi, vil = _scale(vr, -ev), _scale(vrl, -ev), _scale(vi, -ev), _scale(vil, -ev)
    # arg(u conj v) / 2
    ah, al = _dd_mul(ur, url, vr, vrl)
    bh, bl = _dd_mul(ui, uil, vi, vil)
    wrh, wrl = _dd_add(ah, al, bh, bl)
    ah, al = _dd_mul(ui, uil, vr, vrl)
    bh, bl = _dd_mul(ur, url, vi, vil)
    wih, wil = _dd_add(ah, al, -bh, -bl)
    ph, pl = _arg_dd(wrh, wrl, wih, wil)
    ph, pl = 0.5 * ph, 0.5 * pl
    # log|q| = log(|u|^2 / |v|^2) / 4
    ah, al = _dd_mul(ur, url, ur, url)
    bh, bl = _dd_mul(ui, uil, ui, uil)
    nh, nl = _dd_add(ah, al, bh, bl)
    ah, al = _dd_mul(vr, vrl, vr, vrl)
    bh, bl = _dd_mul(vi, vil, vi, vil)
    dh, dl = _dd_add(ah, al, bh, bl)
    rh, rl = _dd_div(nh, nl, dh, dl)
    k = eu - ev
    if k >= -2 and k <= 2:
        rh, rl, k = _scale(rh, 2 * k), _scale(rl, 2 * k), 0
    if k == 0 and rh >= 0.75 and rh <= 1.25:  # |u|^2 / |v|^2 - 1 = 4 (xi yr - xr yi) / |v|^2
        h1, l1, e1 = _prod_split(xi, yr)
        h2, l2, e2 = _prod_split(xr, yi)
        ah, al = _scale(h1, e1 + 2 - 2 * ev), _scale(l1, e1 + 2 - 2 * ev)
        bh, bl = _scale(h2, e2 + 2 - 2 * ev), _scale(l2, e2 + 2 - 2 * ev)
        ah, al = _dd_add(ah, al, -bh, -bl)
        ah, al = _dd_div(ah, al, dh, dl)
        gh, gl = _log1p_dd(ah, al)
    else:
        gh, gl = _log_dd(rh, rl)
        kh, kl = _two_prod(2.0 * k, _LN2_H)
        gh, gl = _dd_add(gh, gl, kh, kl + _dmul(2.0 * k, _LN2_L))
    lr = 0.25 * gh
    # q's side: q from u and x^2 + y^2 = u v (float64, accurate), the imaginary part's
    # sign exact (a zero's NumPy's x x + y y's: the products' zeros, or +0 where they cancel)
    sign = _dot_sign(xr, xi, yr, yi)
    si = _dmul(ur, vi) + _dmul(ui, vr)
    if sign == 0:
        si = zero
        if (xr == 0.0 or xi == 0.0) and (yr == 0.0 or yi == 0.0):
            si = (_dmul(xr, xi) + _dmul(xi, xr)) + (_dmul(yr, yi) + _dmul(yi, yr))
    elif si == 0.0 or (si > 0.0) != (sign > 0):
        si = _copysign(zero, _W1 * sign)
    rr, ri = _csqrt(_dmul(ur, vr) - _dmul(ui, vi), si)
    qr, qi = _cdiv(ur, ui, rr, ri)
    # the CPU's q's imaginary part (its zero's sign; its side of the cut where arg q is below
    # long double's resolution: -pi for a -0)
    sign_i = _catan2_qi_wide(yr, yi, xr, xi)
    if _dmul(_cos(ph), qr) + _dmul(_sin(ph), qi) < 0.0:
        if abs(ph) < _LD_EPS:
            ph = _copysign(_PI_H, sign_i)
        elif ph > 0.0:
            ph, pl = _dd_add(ph, pl, -_PI_H, -_PI_L)
        else:
            ph, pl = _dd_add(ph, pl, _PI_H, _PI_L)
    li = ph if ph != 0.0 else _copysign(zero, sign_i)
    r, i = _cmul(-zero, -_W1, lr, li)
    return complex(r, i)


def _cexpm1(a):  # (e^x - 1) cos y - 2 sin^2(y/2) + i e^x sin y (the CPU's formula)
    x, y = a.real * _W1, a.imag * _W1
    s = _sin(y * 0.5)
    re = _dmul(_expm1(x), _cos(y)) - 2.0 * (s * s)
    if y == 0.0:
        return complex(re, y)
    return complex(re, _exp(x) * _sin(y))


def _clog1p(a):  # the CPU's formula: log1p(x(2 + x) + y^2) / 2 for |x|, |y| < 0.5
    x, y = a.real * _W1, a.imag * _W1
    if abs(x) < 0.5 and abs(y) < 0.5:
        re = 0.5 * _log1p(_dmul(x, 2.0 + x) + _dmul(y, y))
    else:
        re = _log(_hypot(1.0 + x, y))
    return complex(re, _atan2(y, 1.0 + x))


def _crsqrt(a):  # 1 / sqrt(a): NumPy's csqrt, then its division of 1 + 0i
    sr, si = _csqrt(a.real * _W1, a.imag * _W1)
    r, i = _cdiv(_W1, 0.0 * _W1, sr, si)
    return complex(r, i)


def _clogistic(a):  # the CPU's: e^z / (1 + e^z) where Re z < 0, else 1 / (1 + e^-z)
    x, y = a.real * _W1, a.imag * _W1
    if x < 0.0:
        er, ei = _cexp(x, y)
        r, i = _cdiv(er, ei, 1.0 + er, ei + 0.0)
    else:
        er, ei = _cexp(-x, -y)
        r, i = _cdiv(_W1, 0.0 * _W1, 1.0 + er, ei + 0.0)
    return complex(r, i)


_WIDE = {
    "sign": _csign,
    "power": _power(_cpow_log),
    "cbrt": _ccbrt,
    "atan2": _catan2,
    "exponential_minus_one": _cexpm1,
    "log_plus_one": _clog1p,
    "rsqrt": _crsqrt,
    "logistic": _clogistic,
}
_WIDE128 = {"power": _power(_cpow_exact), "atan2": _catan2_128}  # (c128: accurate, see each)
