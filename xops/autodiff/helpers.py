"""The helpers gradient rules share, one copy for every op family (and the engine).

Rules are written with xops ops, so that under ``create_graph`` / nested ``xo.grad`` they
are recorded too. The ops are reached through :data:`xops.registry.op` (looked up by name
when called), so this module sits below every op module: it imports the Tensor class, the
registry and the operand conversion of :mod:`xops.ops._core` only, and any family may
use it whatever its place among the others.
"""

import builtins

from ..ops._core import as_tensor
from ..registry import op as _op
from ..tensor import Tensor

__all__ = [
    "needs",
    "is_diff",
    "zeros",
    "zeros_like",
    "ones_like",
    "sum",
    "sum_to",
    "broadcast_to",
    "like",
]


def needs(a):
    """Whether argument ``a`` gets a cotangent (a Tensor that requires a gradient; the
    engine drops all others)."""
    return isinstance(a, Tensor) and a.requires_grad


def is_diff(t):
    """Whether ``t``'s element type carries gradients (float or complex)."""
    return t._dtype.kind in ("float", "complex")


def zeros(shape, dt):
    """A zero tensor of ``shape`` and element type ``dt`` (a stride-0 broadcast of one
    zero)."""
    return _op.broadcast_in_dim(_op.constant(0, dt), [], list(shape))


def zeros_like(t):
    """Zeros of ``t``'s element type and shape, on ``t``'s device."""
    return _filled_like(t, 0)


def ones_like(t):
    """Ones of ``t``'s element type and shape, on ``t``'s device."""
    return _filled_like(t, 1)


def _filled_like(t, value):
    return _op.broadcast_in_dim(_on(_op.constant(value, t._dtype), t), [], t.shape)


def _on(c, t):
    """Constant ``c`` on ``t``'s device (the CPU: ``c`` itself)."""
    return c if type(t._value) is type(c._value) else c.to_device(t.device)


def sum(t, dims=None):  # noqa: A001  (the helper's name in every rule: H.sum)
    """``t`` summed over ``dims`` (all by default; none: ``t`` itself) with reduce's add
    body (its kernel fast path)."""
    dims = list(range(t.ndim)) if dims is None else sorted(dims)
    if not dims:
        return t
    return _op.reduce(t, _on(_op.constant(0, t._dtype), t), dims, _op.add)


def sum_to(g, ref):
    """``g`` summed to 0-d where ``ref`` (the operand it is the cotangent of) is 0-d."""
    if ref.ndim == 0 and g.ndim > 0:
        return sum(g)
    return g


def broadcast_to(t, shape):
    """0-d ``t`` broadcast to ``shape`` (a tensor of that shape as it is)."""
    if t.shape == builtins.tuple(shape):
        return t
    return _op.broadcast_in_dim(t, [], list(shape))


def like(a, ref):
    """Operand ``a`` of a recorded binary op as a Tensor of ``ref``'s shape. A weak Python
    scalar becomes a constant of ref's element type broadcast to its shape, so that a
    rule's own ops never meet two Python scalars; tensors come back as they are (their
    graph is kept)."""
    if isinstance(a, Tensor):
        return a
    t = _on(as_tensor(a, ref._dtype), ref)  # (on ref's device)
    return t if t.shape == ref.shape else _op.broadcast_in_dim(t, [], ref.shape)
