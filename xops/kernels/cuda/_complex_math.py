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
"""

import math

import numpy as np

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

    return {
        "divide": divide,
        "abs": absolute,
        "exponential": exp,
        "log": log,
        "sqrt": sqrt,
        "real": real,
        "imag": imag,
        "complex": make,
    }
