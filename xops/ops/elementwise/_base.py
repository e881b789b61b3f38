"""Shared plumbing of the elementwise ops (see :mod:`xops.ops.elementwise`).

The operand checks every op starts with ((I1) element types, (C1) one element type and
one shape, weak Python scalars), the evaluation helpers that run NumPy functions or
``xops.kernels.elementwise`` kernels in an op's compute domain, and the small helpers the
gradient rules share. No op is defined here.
"""

import numpy as np

from ...autodiff import helpers as _H
from ...dtypes import as_dtype
from ...kernels import elementwise as K
from ...kernels import pool as _pool
from ...tensor import Tensor, _wrap
from .._core import SpecError, binary_map, compute, kinds_str, operands, result, tstr
from .._core import quiet as _quiet  # (the spec defines NaN/inf results: no warnings)

# element-type kinds, as DType.kind spells them, and the groups the ops accept
_B, _SI, _UI, _F, _C = "bool", "si", "ui", "float", "complex"
_INT = (_SI, _UI)
_FC = (_F, _C)
_NUM = (_SI, _UI, _F, _C)
_ANY = (_B, _SI, _UI, _F, _C)
_PY = (bool, int, float, complex)


def _is_weak(x):
    """A Python scalar (weak type). NumPy scalars are not weak even where they subclass
    Python's (np.float64 is a float): like 0-d arrays they keep their own type and shape."""
    return isinstance(x, _PY) and not isinstance(x, np.generic)


def _unary(op, operand, kinds):
    # (a Tensor is its own operand: operands() would return it as it is)
    x = operand if type(operand) is Tensor else operands(op, operand, names=["operand"])[0]
    if x._dtype.kind not in kinds:
        raise SpecError(
            op, "I1", f"operand must be a tensor of {kinds_str(kinds)} type, got {tstr(x)}"
        )
    return x


def _binary(op, lhs, rhs, kinds, shape_label="C1"):
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    if x._dtype is not y._dtype:
        raise SpecError(
            op,
            "C1",
            f"lhs and rhs must have the same element type, got "
            f"{tstr(x)} and {tstr(y)} (convert one with xo.convert)",
        )
    if x._value.shape != y._value.shape and not (
        (_is_weak(lhs) and x.ndim == 0) or (_is_weak(rhs) and y.ndim == 0)
    ):
        raise SpecError(
            op,
            shape_label,
            f"lhs and rhs must have the same shape, got {tstr(x)} "
            f"and {tstr(y)} (broadcast with xo.broadcast_in_dim, or "
            f"use the Python operators, which broadcast like NumPy)",
        )
    if x._dtype.kind not in kinds:
        raise SpecError(
            op, "I1", f"lhs and rhs must be tensors of {kinds_str(kinds)} type, got {tstr(x)}"
        )
    return x, y


def _flat_pair(x, y, wide):
    """Both operands broadcast, flattened and widened to ``wide`` for a kernel."""
    a, b = np.broadcast_arrays(compute(x), compute(y))
    return (
        np.ascontiguousarray(a.reshape(-1), dtype=wide),
        np.ascontiguousarray(b.reshape(-1), dtype=wide),
        a.shape,
    )


def _word_pair(x, y, bits_only):
    """Both integer operands broadcast and flattened for a kernel without a widening
    copy where it can: 32- and 64-bit types keep their own arrays (viewed as int32 or
    int64 if ``bits_only``, for kernels of bit patterns such as the shifts), narrower
    types widen to int32 (uint32 if unsigned, unless ``bits_only``)."""
    dt = x._dtype
    a, b = compute(x), compute(y)
    if a.shape != b.shape:
        a, b = np.broadcast_arrays(a, b)
    shape = a.shape
    if dt.bits in (32, 64):
        word = (np.int32 if dt.bits == 32 else np.int64) if bits_only else a.dtype.type
        return words(a, word), words(b, word), shape
    a, b = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    wide = np.uint32 if dt.kind == _UI and not bits_only else np.int32
    return a.astype(wide), b.astype(wide), shape


def words(a, word):
    """``a`` as a contiguous 1-D array of the NumPy type ``word`` (of its item size): the
    array itself where it is one already, else a view (a copy if ``a`` is strided)."""
    if a.ndim == 1 and a.dtype.type is word and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a).reshape(-1).view(word)


def _int_kernel(kern_signed, kern_unsigned, x, y, small=None):
    """Run an integer binary kernel in int64 (uint64 for ui64) and wrap to x's type;
    types of at most 32 bits run ``small`` instead where given (a kernel for int32 and
    uint32 arrays: i32/ui32 operands are used as they are)."""
    dt = x._dtype
    if small is not None and dt.bits <= 32:
        a, b, shape = _word_pair(x, y, False)
        out = _pool.empty(a.shape, a.dtype)
        small(out.size, a, b, out)
        return result(out.reshape(shape), dt)
    wide = np.uint64 if dt.kind == _UI and dt.bits == 64 else np.int64
    a, b, shape = _flat_pair(x, y, wide)
    out = _pool.empty(a.shape, a.dtype)
    (kern_unsigned if wide is np.uint64 else kern_signed)(out.size, a, b, out)
    return result(out.reshape(shape), dt)


def _float_kernel2(kern, x, y):
    a, b = compute(x), compute(y)
    with_scalar = _SCALAR_KERNELS.get(kern)
    if with_scalar is not None and a.dtype == b.dtype and (a.size == 1 or b.size == 1):
        shape = np.broadcast_shapes(a.shape, b.shape)
        s_first = a.size == 1 and b.shape == shape
        if s_first or a.shape == shape:  # one operand a scalar: no array of it
            full, s = (b, a) if s_first else (a, b)
            perm = None if full.flags.c_contiguous else K.memory_order([full])
            if perm is not None:  # (a transposed result: read in its memory order)
                full = full.transpose(perm)
            flat = np.ascontiguousarray(full).reshape(-1)
            out = _pool.empty(flat.shape, flat.dtype)
            with_scalar(out.size, flat, s.reshape(-1)[0], out, s_first)
            out = out.reshape(full.shape)
            if perm is not None:
                out = out.transpose(np.argsort(perm))
            return result(out, x._dtype)
    a, b = np.broadcast_arrays(a, b)
    a = np.ascontiguousarray(a).reshape(-1)
    b = np.ascontiguousarray(b).reshape(-1)
    out = _pool.empty(a.shape, a.dtype)  # (recycled: no page faults)
    kern(out.size, a, b, out)
    return result(out.reshape(np.broadcast_shapes(x.shape, y.shape)), x._dtype)


_SCALAR_KERNELS = {K.float_maximum: K.float_maximum_scalar, K.float_minimum: K.float_minimum_scalar}
_NARROW_FORMATS = {"bf16": K.BF16, "f16": K.F16}


def _narrow_bits2(x, y, op):
    """add, subtract or multiply (``op``: K.ADD, ...) of bf16 or f16 operands on their
    bit patterns in one pass (``K.narrow_binary``: the same bits as converting to
    float32, computing and rounding back); None for other element types."""
    fmt = _NARROW_FORMATS.get(x._dtype.name)
    if fmt is None:
        return None
    a, b = np.broadcast_arrays(x._value, y._value)
    a = np.ascontiguousarray(a).reshape(-1).view(np.uint16)
    b = np.ascontiguousarray(b).reshape(-1).view(np.uint16)
    out = np.empty(a.size, x._value.dtype)
    K.narrow_binary(a, b, out.view(np.uint16), op, fmt)
    return _wrap(out.reshape(np.broadcast_shapes(x.shape, y.shape)), x._dtype)


def _fast2(ufunc, x, y):
    """Hot path for types NumPy computes in directly: no conversion. Quiet (IEEE
    overflow/invalid are defined results) and always an ndarray (a ufunc on 0-d
    arrays returns a NumPy scalar)."""
    with _quiet():  # (binary_map: pooled results, pieces, broadcast rows; the same bits)
        return _wrap(np.asarray(binary_map(ufunc, x._value, y._value)), x._dtype)


def _make_complex(re, im, dtype):
    """re + i*im built part by part: the expression ``re + 1j * im`` turns an infinite
    ``im`` into a NaN real part (0 * inf)."""
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtype)
    out.real = re
    out.imag = im
    return out


def _same(x, fn):
    """Apply a NumPy function in x's compute domain; result has x's element type.
    complex64 is evaluated in complex128 and rounded once: NumPy's complex64 functions
    lose thousands of ULPs where a part cancels (log1p near |1 + z| = 1, expm1, rsqrt,
    logistic), and the StableHLO reference interpreter computes complex ops in double."""
    with _quiet():
        a = compute(x)
        if a.dtype == np.complex64:
            a = a.astype(np.complex128)
        if a.size >= K.THREADED_THRESHOLD:  # exp, tanh, ... in blocks on every core
            return result(K.threaded_unary(fn, a), x._dtype)
        return result(fn(a), x._dtype)


def _complex64_in_double(fn):
    """A binary NumPy function that evaluates complex64 operands in complex128 (the
    caller rounds once to complex64): complex64 division and pow lose hundreds of ULP
    where a part cancels; the StableHLO reference interpreter computes both in double."""

    def wide(a, b):
        if a.dtype == np.complex64:
            return fn(a.astype(np.complex128), b.astype(np.complex128))
        return fn(a, b)

    wide.__name__ = getattr(fn, "__name__", "wide")
    return wide


def _same2(x, y, fn):
    a, b = compute(x), compute(y)
    if x._dtype.name == "f8E8M0FNU":
        # E8M0 spans float32's whole exponent range and has no zero: a product or
        # quotient below float32's subnormals would become 0 in float32 and then NaN,
        # where rounding the exact result once gives the smallest value, 2^-127
        a, b = a.astype(np.float64), b.astype(np.float64)
    with _quiet():
        return result(fn(a, b), x._dtype)


def _part_dtype(dt):
    """f32 for c64, f64 for c128; real types are their own part type."""
    if dt.kind == _C:
        return as_dtype("f32" if dt.np == np.complex64 else "f64")
    return dt


# the gradient rules' helpers (one copy for every family: xops.autodiff.helpers)
_needs, _zeros, _like = _H.needs, _H.zeros_like, _H.like
