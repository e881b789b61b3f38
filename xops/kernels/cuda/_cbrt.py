"""The cube root on the device, the same bits as the CPU's (:func:`xops.ops._portable.cbrt`).

The CPU scales the operand by 2**(3k) into [1, 8), takes a start within a few ulps, one
Newton step, and of the five float64 values around the result the one whose cube is
nearest the scaled operand (the cube's residual in double-double arithmetic, Dekker's
product, no FMA), so every start within an ulp or so gives the same root. The device runs
the same steps: the start is ``pow(a, 1/3)`` (libdevice), the candidates and the residual
are the CPU's, written so that NVVM's default contraction of a multiply and an add into
one FMA cannot change a rounding: every product is an explicit ``fma(a, b, +0.0)``,
which is ``fl(a * b)`` (an FMA never fuses into another add). Scaling by powers of two
is done by exact multiplications (no frexp / ldexp on the device).
"""

import numpy as np
from numba import cuda

__all__ = ["cbrt"]

_SPLIT = 134217729.0  # 2**27 + 1 (Veltkamp's splitting constant for float64)
_THIRD = 1.0 / 3.0
_BIG = 2.0**96
_SMALL = 2.0**-96
_ULP1, _ULP2, _ULP4 = 2.0**-53, 2.0**-52, 2.0**-51  # ulps in [0.5, 1), [1, 2), [2, 4)
_TWO32, _TWO_M32 = 2.0**32, 2.0**-32


@cuda.jit(device=True)
def _mul(a, b):
    """fl(a * b), never contracted with a following add (see the module's docstring)."""
    return cuda.fma(a, b, 0.0)


@cuda.jit(device=True)
def _two_product(a, b):
    """(p, e) with p = fl(a*b) and p + e = a*b exactly (Dekker, as the CPU)."""
    p = _mul(a, b)
    t = _mul(_SPLIT, a)
    ah = t - (t - a)
    al = a - ah
    t = _mul(_SPLIT, b)
    bh = t - (t - b)
    bl = b - bh
    e = (_mul(ah, bh) - p) + _mul(ah, bl)
    e = e + _mul(al, bh)
    return p, e + _mul(al, bl)


@cuda.jit(device=True)
def _residual(y, a):
    """y**3 - a, as the CPU's ``_cube_residual``."""
    s, s_lo = _two_product(y, y)
    c, c_lo = _two_product(s, y)
    return ((c - a) + c_lo) + _mul(s_lo, y)


@cuda.jit(device=True)
def _up(y):
    """The next float64 above ``y`` (0.5 <= y < 4)."""
    if y >= 2.0:
        return y + _ULP4
    return y + (_ULP2 if y >= 1.0 else _ULP1)


@cuda.jit(device=True)
def _down(y):
    """The next float64 below ``y`` (0.5 < y <= 4)."""
    if y > 2.0:
        return y - _ULP4
    return y - (_ULP2 if y > 1.0 else _ULP1)


@cuda.jit(device=True)
def _best(c, a, best, r_best):
    """(c, |residual|) if c's residual is below ``r_best`` (a tie keeps the earlier,
    smaller candidate, as the CPU), else (best, r_best)."""
    r = abs(_residual(c, a))
    if r < r_best:
        return c, r
    return best, r_best


def cbrt(v):
    """The cube root of float32 / float64 ``v``, as float64 (the CPU rounds it to the
    operand's type once: the store does). Plain Python: the elementwise map kernels
    compile it as their device function."""
    x = np.float64(v)
    a = abs(x)
    if a == 0.0 or a - a != 0.0:  # zeros, infinities, NaN: their own roots
        return x
    k = 0  # a = scaled * 2**(3k), scaled in [1, 8): exact multiplications
    while a >= _BIG:
        a = a * _SMALL
        k += 32
    while a < _SMALL:
        a = a * _BIG
        k -= 32
    while a >= 8.0:
        a = a * 0.125
        k += 1
    while a < 1.0:
        a = a * 8.0
        k -= 1
    y = a**_THIRD
    y = y - _residual(y, a) / _mul(_mul(3.0, y), y)  # one Newton step
    d1 = _down(y)
    d2 = _down(d1)
    u1 = _up(y)
    best, r_best = d2, abs(_residual(d2, a))  # the candidates in ascending order
    best, r_best = _best(d1, a, best, r_best)
    best, r_best = _best(y, a, best, r_best)
    best, r_best = _best(u1, a, best, r_best)
    best, r_best = _best(_up(u1), a, best, r_best)
    while k >= 32:
        best = best * _TWO32
        k -= 32
    while k <= -32:
        best = best * _TWO_M32
        k += 32
    while k > 0:
        best = best * 2.0
        k -= 1
    while k < 0:
        best = best * 0.5
        k += 1
    return -best if x < 0 else best
