"""CUDA kernels of ``real``, ``imag`` and ``complex`` (the other complex elementwise ops
run in :mod:`.elementwise`, on the device functions of :mod:`._complex_math`).

Each takes the CPU op's own arguments and runs its operand checks
(:mod:`xops.ops.elementwise._base`; ``complex``'s part-type check runs the CPU op on 0-d
stand-ins, O(1)), then one map kernel: a c64 / c128 device array is NumPy's complex
layout, read and written by numba.cuda as complex values. ``real`` of a float operand is
the operand itself (the same device buffer); ``imag`` of a float operand is zeros of its
type. All three move or build values without rounding: bit-exact with the CPU.
"""

import numpy as np

from ...dtypes import as_dtype
from ...errors import SpecError
from ...ops.elementwise import _base as B
from ...registry import get as _get_op
from ._complex_math import functions
from ._storage import device_empty, flat, from_holder
from .elementwise import _run2, _zero_d, complex_op
from .narrow import is_small_float
from .movement import fill

__all__ = ["KERNELS"]

_C64, _C128 = as_dtype("c64"), as_dtype("c128")


def real(operand):
    x = B._unary("real", operand, B._FC)
    if x._dtype.kind == "float":
        return from_holder(x._value, x._dtype)
    return complex_op("real", x)


def imag(operand):
    x = B._unary("imag", operand, B._FC)
    dt = x._dtype
    if dt.kind == "complex":
        return complex_op("imag", x)
    if not (is_small_float(dt) or dt.np in (np.float32, np.float64)):
        raise SpecError("imag", "device", f"has no cuda kernel for element type {dt.name}")
    out = device_empty(x.shape, dt.np)  # zeros of the float type, as the CPU converts 0.0
    word = np.dtype(f"u{dt.np.itemsize}")  # (+0: all bits clear; f8E8M0FNU has no zero:
    zero = np.zeros(1, np.float32).astype(dt.np).view(word)[0]  # its NaN, 0xff)
    fill(flat(out).view(word), int(zero))
    return from_holder(out, dt)


def complex(lhs, rhs):  # noqa: A001  (the op's own name)
    x, y = B._binary("complex", lhs, rhs, (B._F,))
    _get_op("complex").kernels["cpu"](_zero_d(x._dtype), _zero_d(y._dtype))  # (I1: f32, f64)
    out_dt = _C64 if x._dtype.np == np.float32 else _C128
    return _run2("complex", functions(out_dt.np)["complex"], x, y, out_dt)


KERNELS = {"real": real, "imag": imag, "complex": complex}
