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

import numpy as np

from ._storage import numba_cuda, simulated

__all__ = ["ops"]

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
