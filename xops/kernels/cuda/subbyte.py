"""The sub-byte integer types (i2, i4, ui2, ui4) on the device, computed as the CPU does:
in int8 / uint8, each result wrapped to the type's own width.

Such a tensor is stored on the device as uint8 bytes holding its two's-complement bit
pattern in the low bits (ml_dtypes' layout: i4 -1 is 0x0F). :func:`widen` gives the
int8 (sign-extended) or uint8 values, :func:`wrap` the low bits of int8 / uint8 results
back as the sub-byte type; both are one integer map kernel. The elementwise kernels
(:mod:`.elementwise`) widen the operands, run their int8 / uint8 kernel and wrap the
result, so integer arithmetic wraps at 2 or 4 bits as on the CPU, bit for bit.
"""

import numpy as np
from numba import cuda

from ...dtypes import as_dtype
from ...tensor import _wrap
from ._storage import compiled as _k, device_empty, flat, from_holder, launch_1d

__all__ = ["SUB", "is_sub", "wide_type", "widen", "wrap"]

SUB = ("i2", "i4", "ui2", "ui4")
_WIDE = {"si": as_dtype("i8"), "ui": as_dtype("ui8")}


def is_sub(dt):
    return dt.name in SUB


def wide_type(dt):
    """int8 for i2 / i4, uint8 for ui2 / ui4."""
    return _WIDE[dt.kind]


def _widen_k(x, bits, signed, out):
    """Low-bit patterns (uint8) -> their values (int8 sign-extended, or uint8)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        h = np.int32(x[i]) & ((1 << bits) - 1)
        if signed == 1:
            half = 1 << (bits - 1)
            h = ((h + half) & ((1 << bits) - 1)) - half
        out[i] = h


def _wrap_k(x, bits, out):
    """Integers (bytes read as uint8, 64-bit ones as int64) -> their low ``bits`` bits."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = np.int64(x[i]) & ((1 << bits) - 1)


def widen(t):
    """Sub-byte tensor ``t`` as int8 / uint8 values: a device tensor for a device tensor,
    a 0-d CPU tensor for a 0-d CPU one (a weak scalar operand)."""
    w = wide_type(t._dtype)
    v = t._value
    if not hasattr(v, "copy_to_host"):
        return _wrap(np.asarray(v, w.np), w)
    out = device_empty(t.shape, w.np)
    launch_1d(_k(_widen_k), t.size, flat(v), t._dtype.bits, int(t._dtype.kind == "si"), flat(out))
    return from_holder(out, w)


def wrap(t, dt):
    """Integer or i1 device tensor ``t`` wrapped to sub-byte type ``dt`` (the low bits of
    its two's complement: the CPU's wrap)."""
    out = device_empty(t.shape, dt.np)
    src = flat(t._value)
    if src.dtype.itemsize in (1, 8):
        src = src.view(np.uint8 if src.dtype.itemsize == 1 else np.int64)
    launch_1d(_k(_wrap_k), t.size, src, dt.bits, flat(out))
    return from_holder(out, dt)
