"""Operand plumbing of the everyday layer: array conversion, promotion, broadcasting.

Every xnp function and every Tensor operator goes through :func:`binary` (two
operands) or :func:`array` (one). The fast path — two tensors of one element type and
one shape — is two attribute checks, so ``a + b`` costs what ``xo.add(a, b)`` costs.
"""

import numpy as np

from .. import ops as _ops  # noqa: F401  (the spec ops are loaded)
from ..errors import SpecError
from ..ops import conversion as _C
from ..ops import movement as _M
from ..ops._broadcasting import broadcast_to
from ..ops._core import _weak_scalar, tstr
from ..tensor import Tensor, _wrap, tensor
from . import _dtypes as D

_PY = (bool, int, float, complex)


class AxisError(SpecError, IndexError):
    """An axis out of bounds: a SpecError that is also an IndexError (as NumPy's
    AxisError, and as the array API standard asks)."""


def is_scalar(x):
    t = type(x)
    return t is float or t is int or t is bool or t is complex


def array(x, op="asarray"):
    """``x`` as a Tensor: Tensors as they are, NumPy data keeps its type, Python data
    takes the default types (f32 for floats, i64 for ints), nested sequences of tensors
    are stacked (the graph is kept)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        try:
            return tensor(x)
        except TypeError as e:
            raise SpecError(op, "", str(e)) from None
    if isinstance(x, (list, tuple)) and _holds_tensor(x):
        return stack([array(v, op) for v in x])
    if isinstance(x, (*_PY, list, tuple)):
        try:
            return tensor(x)
        except (TypeError, ValueError, OverflowError) as e:
            raise SpecError(op, "", f"cannot make an array from {x!r:.60}: {e}") from None
    if hasattr(x, "__dlpack__") or hasattr(x, "__array__"):
        return tensor(np.asarray(x))
    raise SpecError(op, "", f"expected an array, got {type(x).__name__}")


def _holds_tensor(seq):
    for v in seq:
        if isinstance(v, Tensor):
            return True
        if isinstance(v, (list, tuple)) and _holds_tensor(v):
            return True
    return False


def to(t, dt):
    """``t`` converted to element type ``dt`` (differentiable; no-op when equal)."""
    return t if t._dtype is dt else _C.convert(t, dt)


def scalar_tensor(x, dt, op):
    """A Python scalar as a 0-d tensor of ``dt`` (weak: it takes the array's type)."""
    if dt.kind in ("si", "ui") and type(x) is float:
        raise SpecError(
            op, "", f"a Python float cannot meet an integer array of type {dt.name} here"
        )
    return _wrap(_weak_scalar(op, "scalar", x, dt), dt)


def broadcast_shapes(op, *ts):
    try:
        return np.broadcast_shapes(*(t.shape for t in ts))
    except ValueError:
        raise SpecError(
            op,
            "",
            f"shapes {' and '.join(tstr(t) for t in ts)} do not "
            f"broadcast (NumPy rules: trailing dims equal or 1)",
        ) from None


def binary(x1, x2, op, dtype=None):
    """Promote and broadcast two operands (at least one array) to Tensors of one type
    and shape; ``dtype`` forces the computation type."""
    if (
        type(x1) is Tensor
        and type(x2) is Tensor
        and x1._dtype is x2._dtype
        and x1._value.shape == x2._value.shape
        and dtype is None
    ):
        return x1, x2
    s1, s2 = is_scalar(x1), is_scalar(x2)
    if s1 and s2:
        raise SpecError(op, "", "at least one operand must be an array, got two Python scalars")
    if s2:
        a = array(x1, op)
        dt = dtype or D.scalar_dtype(a._dtype, x2, op)
        a = to(a, dt)
        return a, broadcast_to(_on_device_of(scalar_tensor(x2, dt, op), a), a._value.shape)
    if s1:
        b = array(x2, op)
        dt = dtype or D.scalar_dtype(b._dtype, x1, op)
        b = to(b, dt)
        return broadcast_to(_on_device_of(scalar_tensor(x1, dt, op), b), b._value.shape), b
    a, b = array(x1, op), array(x2, op)
    dt = dtype or D.promote_types(a._dtype, b._dtype, op)
    a, b = to(a, dt), to(b, dt)
    if a._value.shape != b._value.shape:
        shape = broadcast_shapes(op, a, b)
        a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    return a, b


def _on_device_of(t, ref):
    """Tensor ``t`` (a Python scalar operand made 0-d) on ``ref``'s device."""
    return t if type(t._value) is type(ref._value) else t.to_device(ref.device)


def result_dtype2(x1, x2, op):
    """The promoted type of two operands, without converting them."""
    s1, s2 = is_scalar(x1), is_scalar(x2)
    if s1 and s2:
        raise SpecError(op, "", "at least one operand must be an array, got two Python scalars")
    if s2:
        return D.scalar_dtype(array(x1, op)._dtype, x2, op)
    if s1:
        return D.scalar_dtype(array(x2, op)._dtype, x1, op)
    return D.promote_types(array(x1, op)._dtype, array(x2, op)._dtype, op)


def axes(op, axis, ndim, allow_none=True):
    """Normalise an ``axis`` argument (int, tuple of ints or None) to a sorted tuple."""
    if axis is None:
        if not allow_none:
            raise SpecError(op, "", "axis must be an integer, got None")
        return tuple(range(ndim))
    items = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = []
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise SpecError(op, "", f"axis must be an integer or a tuple of integers, got {axis!r}")
        a = int(a)
        if not -ndim <= a < ndim:
            raise AxisError(op, "", f"axis {a} is out of bounds for an array of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise SpecError(op, "", f"repeated axis in {axis!r}")
    return tuple(sorted(out))


def axis1(op, axis, ndim):
    """One axis (an int), normalised to [0, ndim)."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise SpecError(op, "", f"axis must be an integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise AxisError(op, "", f"axis {axis} is out of bounds for an array of rank {ndim}")
    return int(axis) % ndim


def _promote_all(ts, op):
    dt = ts[0]._dtype
    for t in ts[1:]:
        dt = D.promote_types(dt, t._dtype, op)
    return [to(t, dt) for t in ts]


def stack(arrays, /, *, axis=0):
    """The array API's stack (here, below :mod:`._manipulation`, which exports it:
    :func:`array` stacks nested sequences of tensors with it)."""
    ts = _promote_all([array(a, "stack") for a in arrays], "stack")
    if any(t.shape != ts[0].shape for t in ts):
        raise SpecError(
            "stack", "", f"arrays must have one shape, got {', '.join(tstr(t) for t in ts)}"
        )
    ax = axis1("stack", axis, ts[0].ndim + 1)
    shape = ts[0].shape[:ax] + (1,) + ts[0].shape[ax:]
    parts = [_M.reshape(t, shape) for t in ts]
    return _M.concatenate(parts, ax) if len(parts) > 1 else parts[0]


def from_numpy(arr, dt):
    """A Tensor of element type ``dt`` around a host array computed with NumPy (the
    data has no gradient: integer/bool results, indices, creation functions)."""
    arr = np.asarray(arr)
    if arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    return _wrap(np.ascontiguousarray(arr) if arr.ndim else arr.copy(), dt)
