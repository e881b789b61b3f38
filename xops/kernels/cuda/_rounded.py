"""Float arithmetic that rounds every product, as the CPU's kernels do.

NVVM contracts a product and a following sum into one fma (one rounding instead of
two) unless the product is an opaque call; the CPU's results round the product first.
Kernels that must give the CPU's bits (the rng transformations, the fused optimizer
updates) multiply through libdevice's ``fmul_rn`` / ``dmul_rn`` on a GPU. Division and
square root are IEEE already (numba's default, no fast math). The simulator runs plain
Python arithmetic on NumPy scalars of the type (its square root: float64's, rounded once
to float32, which is float32's correctly rounded root)."""

import math
import operator
from fractions import Fraction

import numpy as np

from ._storage import numba_cuda, simulated

__all__ = ["fma", "ops"]

_built = {}


def ops(np_type):
    """(mul, add, sub, div, sqrt) device functions of ``np_type`` (float32 / float64),
    made once per type."""
    fns = _built.get(np_type)
    if fns is None:
        fns = _built[np_type] = _simulator_ops(np_type) if simulated() else _gpu_ops(np_type)
    return fns


def _gpu_ops(np_type):
    from numba.cuda import libdevice as L

    if np_type is np.float32:
        return L.fmul_rn, L.fadd_rn, L.fsub_rn, L.fdiv_rn, L.fsqrt_rn
    # (libdevice has no dsub_rn; a difference of _rn products cannot be contracted)
    return L.dmul_rn, L.dadd_rn, operator.sub, L.ddiv_rn, L.dsqrt_rn


def _simulator_ops(np_type):
    cuda = numba_cuda()

    @cuda.jit(device=True)
    def mul(a, b):
        return a * b

    @cuda.jit(device=True)
    def add(a, b):
        return a + b

    @cuda.jit(device=True)
    def sub(a, b):
        return a - b

    @cuda.jit(device=True)
    def div(a, b):
        return a / b

    @cuda.jit(device=True)
    def sqrt(a):
        return np_type(math.sqrt(a))

    return mul, add, sub, div, sqrt


_fmas = {}


def fma(np_type):
    """A device function ``fma(a, b, c)``: a * b + c rounded once (IEEE fusedMultiplyAdd)
    in ``np_type`` (float32 / float64), the instruction NumPy's complex multiply loop uses
    on FMA CPUs. libdevice's ``fmaf_rn`` / ``fma_rn`` on a GPU; under the simulator
    :func:`_exact_fma` of the type."""
    fn = _fmas.get(np_type)
    if fn is None:
        if simulated():
            fn = _simulator_fma(np_type)
        else:
            from numba.cuda import libdevice as L

            fn = L.fmaf_rn if np_type is np.float32 else L.fma_rn
        _fmas[np_type] = fn
    return fn


def _simulator_fma(np_type):
    cuda = numba_cuda()

    @cuda.jit(device=True)
    def fused(a, b, c):
        return _exact_fma(a, b, c, np_type)

    return fused


def _exact_fma(a, b, c, np_type):
    """a * b + c rounded once to ``np_type`` (Python, for the simulator): NaN and
    infinite terms as IEEE (an infinite or NaN factor's product, then the sum; an
    infinite or NaN c with finite factors: c), finite ones exactly in
    rationals, rounded to nearest even (float32 from the exact value, not from a float64
    rounding of it); an exact zero is -0 only where the product and c are both -0 or
    negative-signed zeros, as IEEE's sum of zeros."""
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b)):
        with np.errstate(all="ignore"):
            return np_type(np.float64(a) * np.float64(b) + np.float64(c))
    if not math.isfinite(c):  # (an exact product is finite, whatever its size)
        return np_type(c)
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        product_sign = math.copysign(1.0, a) * math.copysign(1.0, b)
        negative = a * b == 0 and product_sign < 0 and c == 0 and math.copysign(1.0, c) < 0
        return np_type(-0.0 if negative else 0.0)
    info = np.finfo(np_type)
    p = info.nmant + 1  # significand bits
    n, d = abs(exact.numerator), exact.denominator
    e = n.bit_length() - d.bit_length()  # floor(log2 |exact|), maybe one too high:
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    qexp = max(e, info.minexp) - (p - 1)  # the exponent of the spacing at |exact|
    q, r = divmod(n * (1 << max(0, -qexp)), d * (1 << max(0, qexp)))
    twice = 2 * r
    if twice > d * (1 << max(0, qexp)) or (twice == d * (1 << max(0, qexp)) and q % 2):
        q += 1
    value = math.ldexp(q, qexp) if q.bit_length() + qexp <= info.maxexp else math.inf
    if value > float(info.max):
        value = math.inf
    return np_type(-value if exact < 0 else value)
