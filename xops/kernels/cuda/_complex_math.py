"""Device functions of the complex elementwise ops (c64, c128), one thread one element.

A complex device array holds NumPy's complex64 / complex128 (numba.cuda types them in
kernels: ``.real``, ``.imag``, ``complex(re, im)``, + - *). Each function is built per
type by :func:`functions`, with its float constants in the part type (a float64 literal
would make a c64 function compute in float64), and follows NumPy's formulas for the
CPU's result:

* divide: NumPy's scaled (Smith) division, the larger part of the divisor first; a zero
  divisor gives the parts divided by +0 (inf / NaN), as NumPy;
* abs: ``hypot(re, im)`` (a real result); exp: ``e^re (cos im + i sin im)`` (an ``im``
  of 0 gives a 0 imaginary part); log: ``log(hypot(re, im)) + i atan2(im, re)``; sqrt:
  NumPy's ``csqrt`` for finite values (the root with ``re >= 0``, the imaginary part
  with the sign of ``im``).

They agree with the CPU within a few ulp of the part type for finite values (libdevice's
float functions and NumPy's differ by an ulp; NumPy's clog and cexp take more care near
|z| = 1 and for overflowing exponents); infinite and NaN parts follow these formulas,
not C99 Annex G.

sign, power, cbrt, atan2, tanh, sine, cosine, tan, exponential_minus_one, log_plus_one,
rsqrt and logistic compute in float64 for both types and return a complex128 that the map kernel's
store rounds once to c64 (the CPU computes c64 in c128 and rounds once: here too, so c64
results differ from the CPU's by at most an ulp of a part). Their formulas are the CPU's
(NumPy's, and glibc's complex functions behind them): npy_cpow (cbrt: its general path
with the exponent 1 / 3), atan2's -i log((x + iy) / sqrt(x^2 + y^2)), ctanh, ctan, csin, ccos,
the CPU's own expm1 / log1p / logistic, and 1 / csqrt with NumPy's division. Within a few
ulp of the part type times |cpu| for finite values (libdevice's float64 functions against
glibc's; power's e^(b log a) path: the error of log a grows by |b log a|).
"""

import math

import numpy as np
from numba import cuda

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


def _build(part):
    half, zero, one = part(0.5), part(0.0), part(1.0)

    def divide(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
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

    def absolute(a):
        return math.hypot(a.real, a.imag)

    def exp(a):
        r = math.exp(a.real)
        if a.imag == zero:
            return complex(r, a.imag)
        return complex(r * math.cos(a.imag), r * math.sin(a.imag))

    def log(a):
        return complex(math.log(math.hypot(a.real, a.imag)), math.atan2(a.imag, a.real))

    def sqrt(a):
        re, im = a.real, a.imag
        if re == zero and im == zero:
            return complex(zero, im)
        t = math.sqrt((abs(re) + math.hypot(re, im)) * half)
        if re >= zero:
            return complex(t, im / (t + t))
        return complex(abs(im) / (t + t), math.copysign(t, im))

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
        "divide": divide,
        "abs": absolute,
        "exponential": exp,
        "log": log,
        "sqrt": sqrt,
        "real": real,
        "imag": imag,
        "complex": make,
        **_WIDE,
    }


# -- ops computed in float64 for both types ------------------------------------------------
# The CPU evaluates these on complex64 operands in complex128 and rounds once (``_same``);
# here too: each widens the parts to float64 (``* _W1``: exact; a NumPy scalar in the
# simulator, where a Python float divided by zero would raise), computes, and returns a
# complex128 the map kernel's store rounds once per part to the output type.

_W1 = np.float64(1.0)
_NAN = np.float64(np.nan)
_EPS = np.float64(np.finfo(np.float64).eps)


@cuda.jit(device=True)
def _cdiv(ar, ai, br, bi):
    """(ar + i ai) / (br + i bi) in float64 as NumPy divides: Smith's scaled division."""
    abs_r, abs_i = abs(br), abs(bi)
    if abs_r >= abs_i:
        if abs_r == 0.0 and abs_i == 0.0:
            return ar / abs_r, ai / abs_r
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return (ar + ai * rat) * scl, (ai - ar * rat) * scl
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return (ar * rat + ai) * scl, (ai * rat - ar) * scl


@cuda.jit(device=True)
def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


@cuda.jit(device=True)
def _cexp(x, y):
    """e^(x + iy) (the ``exponential`` formula, in float64)."""
    r = _W1 * math.exp(x)
    if y == 0.0:
        return r, r * y
    return r * math.cos(y), r * math.sin(y)


@cuda.jit(device=True)
def _tanh_parts(x, y):
    """tanh(x + iy) in float64, glibc's ctanh for finite values: (sinh x cosh x + i sin y
    cos y) / (sinh^2 x + cos^2 y); for |x| > 20 tanh x rounds to +-1 and the imaginary
    part is 4 sin y cos y e^(-2|x|) (no overflow of sinh^2)."""
    if abs(x) > 20.0:
        return math.copysign(1.0, x), 4.0 * math.sin(y) * math.cos(y) * math.exp(-2.0 * abs(x))
    sh, ch, s, c = _W1 * math.sinh(x), math.cosh(x), _W1 * math.sin(y), math.cos(y)
    den = c * c
    if abs(sh) > abs(c) * _EPS:
        den = sh * sh + den
    return sh * ch / den, s * c / den


@cuda.jit(device=True)
def _csqrt(re, im):
    """NumPy's csqrt in float64 for finite values (see ``sqrt``)."""
    if re == 0.0 and im == 0.0:
        return 0.0 * _W1, im
    t = _W1 * math.sqrt((abs(re) + math.hypot(re, im)) * 0.5)
    if re >= 0.0:
        return t, im / (t + t)
    return abs(im) / (t + t), math.copysign(t, im)


def _sign(a):  # NaN parts: (NaN, NaN); a zero: itself (signed zeros kept); else a / |a|
    re, im = a.real * _W1, a.imag * _W1
    if re != re or im != im:
        return complex(_NAN, _NAN)
    if re == 0.0 and im == 0.0:
        return complex(re, im)
    r, i = _cdiv(re, im, _W1 * math.hypot(re, im), 0.0 * _W1)
    return complex(r, i)


def _power(a, b):
    """NumPy's npy_cpow: a^0 = 1; 0^b = 0 (Re b > 0) or NaN; an integer exponent |n| < 100
    (Im b = 0) by repeated squaring (1, 2, 3 unrolled; a negative one divides 1 by the
    power); else e^(b log a), log a = log|a| + i arg a (glibc's cpow)."""
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
    r, i = _cpow_log(ar, ai, br, bi)
    return complex(r, i)


@cuda.jit(device=True)
def _cpow_log(ar, ai, br, bi):
    """e^(b log a), log a = log|a| + i arg a (glibc's cpow; npy_cpow's general path)."""
    lr, li = _W1 * math.log(math.hypot(ar, ai)), math.atan2(ai, ar)
    r, i = _cmul(br, bi, lr, li)
    return _cexp(r, i)


def _cbrt(a):
    """The CPU's ``np.power(a, 1 / 3)`` (npy_cpow: a zero gives 0, else e^(log(a) / 3),
    the principal root; 1 / 3 rounded to float64 first, as there)."""
    ar, ai = a.real * _W1, a.imag * _W1
    if ar == 0.0 and ai == 0.0:
        return complex(0.0 * _W1, 0.0 * _W1)
    r, i = _cpow_log(ar, ai, _W1 / 3.0, 0.0 * _W1)
    return complex(r, i)


def _atan2(y, x):
    """The CPU's complex atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)) (the reference
    interpreter's formula), in float64 with NumPy's complex multiply, csqrt and Smith
    division: for c64 one precision up, as the CPU (c128 has no kernel: the CPU computes
    it in long double, where x + iy cancels)."""
    yr, yi, xr, xi = y.real * _W1, y.imag * _W1, x.real * _W1, x.imag * _W1
    x2r, x2i = _cmul(xr, xi, xr, xi)
    y2r, y2i = _cmul(yr, yi, yr, yi)
    sr, si = _csqrt(x2r + y2r, x2i + y2i)
    iyr, iyi = _cmul(0.0 * _W1, _W1, yr, yi)  # (1j * y and the -1j below as NumPy multiplies:
    qr, qi = _cdiv(xr + iyr, xi + iyi, sr, si)  # signed zeros, and 0 * inf = NaN, as the CPU's)
    r, i = _cmul(_W1 * math.log(math.hypot(qr, qi)), math.atan2(qi, qr), 0.0 * _W1, -_W1)
    return complex(r, i)


def _tanh(a):
    r, i = _tanh_parts(a.real * _W1, a.imag * _W1)
    return complex(r, i)


def _tan(a):  # tan z = -i tanh(iz) (glibc's ctan)
    r, i = _tanh_parts(-(a.imag * _W1), a.real * _W1)
    return complex(i, -r)


def _sine(a):  # sin x cosh y + i cos x sinh y
    x, y = a.real * _W1, a.imag * _W1
    return complex(math.sin(x) * math.cosh(y), math.cos(x) * math.sinh(y))


def _cosine(a):  # cos x cosh y - i sin x sinh y (glibc: ccosh(-y + ix))
    x, y = a.real * _W1, a.imag * _W1
    return complex(math.cosh(y) * math.cos(x), math.sinh(-y) * math.sin(x))


def _expm1(a):  # (e^x - 1) cos y - 2 sin^2(y/2) + i e^x sin y (the CPU's formula)
    x, y = a.real * _W1, a.imag * _W1
    s = math.sin(y * 0.5)
    re = math.expm1(x) * math.cos(y) - 2.0 * (s * s)
    if y == 0.0:
        return complex(re, y)
    return complex(re, math.exp(x) * math.sin(y))


def _log1p(a):  # the CPU's formula: log1p(x(2 + x) + y^2) / 2 for |x|, |y| < 0.5
    x, y = a.real * _W1, a.imag * _W1
    if abs(x) < 0.5 and abs(y) < 0.5:
        re = 0.5 * math.log1p(x * (2.0 + x) + y * y)
    else:
        re = math.log(math.hypot(1.0 + x, y))
    return complex(re, math.atan2(y, 1.0 + x))


def _rsqrt(a):  # 1 / sqrt(a): NumPy's csqrt, then its division of 1 + 0i
    sr, si = _csqrt(a.real * _W1, a.imag * _W1)
    r, i = _cdiv(_W1, 0.0 * _W1, sr, si)
    return complex(r, i)


def _logistic(a):  # the CPU's: e^z / (1 + e^z) where Re z < 0, else 1 / (1 + e^-z)
    x, y = a.real * _W1, a.imag * _W1
    if x < 0.0:
        er, ei = _cexp(x, y)
        r, i = _cdiv(er, ei, 1.0 + er, ei)
    else:
        er, ei = _cexp(-x, -y)
        r, i = _cdiv(_W1, 0.0 * _W1, 1.0 + er, ei)
    return complex(r, i)


_WIDE = {
    "sign": _sign,
    "power": _power,
    "cbrt": _cbrt,
    "atan2": _atan2,
    "tanh": _tanh,
    "sine": _sine,
    "cosine": _cosine,
    "tan": _tan,
    "exponential_minus_one": _expm1,
    "log_plus_one": _log1p,
    "rsqrt": _rsqrt,
    "logistic": _logistic,
}
