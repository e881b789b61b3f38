"""The helpers gradient rules share, one copy for every op family (and the engine).

Rules are written with xops ops, so that under ``create_graph`` / nested ``xo.grad`` they
are recorded too. The ops are reached through :data:`xops.registry.op` (looked up by name
when called), so this module sits below every op module: it imports the Tensor class, the
registry and the operand conversion of :mod:`xops.ops._core` only, and any family may
use it whatever its place among the others.
"""

import builtins

import numpy as np

from ..limits import check_nbytes
from ..ops._core import as_tensor, broadcast_view
from ..registry import op as _op
from ..tensor import Tensor, _wrap

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


_SCALARS = {}  # (value, element type) -> its 0-d constant; rules ask for few of them


def _scalar(value, dt):
    """The 0-d constant ``value`` of element type ``dt``, made once per pair (tensors are
    immutable values; only ever handed to ops here, never returned to a caller as is).
    A float or complex zero / one is written as a float literal: the exact same value
    without converting a Python int."""
    key = (value, dt)
    c = _SCALARS.get(key)
    if c is None:
        c = _op.constant(float(value) if _float_like(dt) else value, dt)
        if len(_SCALARS) < 256:
            _SCALARS[key] = c
    return c


def _float_like(dt):
    """Whether element type ``dt`` carries gradients (float or complex)."""
    return dt.kind in ("float", "complex") and not dt.quantized


def zeros(shape, dt):
    """A zero tensor of ``shape`` and element type ``dt`` (a stride-0 broadcast of one
    zero)."""
    return _op.broadcast_in_dim(_fresh(_scalar(0, dt), shape), [], list(shape))


def zeros_on(shape, dt, like):
    """:func:`zeros` on ``like``'s device (its one zero copied to a device once: see
    :func:`_on`)."""
    return _op.broadcast_in_dim(_on(_fresh(_scalar(0, dt), shape), like), [], list(shape))


def zeros_like(t):
    """Zeros of ``t``'s element type and shape, on ``t``'s device."""
    return _filled_like(t, 0)


def ones_like(t):
    """Ones of ``t``'s element type and shape, on ``t``'s device."""
    return _filled_like(t, 1)


_FILLS = {}  # (device, element type, shape, value) -> a filled array off the CPU, shared
_FILLS_BYTES = 64 << 20  # (what the shared fills may hold on a device in all)
_ZERO_IDS = set()  # ids of the shared zero arrays (alive: _FILLS holds them)


def _filled_like(t, value):
    if type(t._value) is not np.ndarray:  # a device: one shared array per shape
        key = (str(t.device), t._dtype, t.shape, value)
        v = _FILLS.get(key)
        if v is None:
            c = _on(_scalar(value, t._dtype), t)
            v = _op.broadcast_in_dim(_fresh(c, t.shape), [], t.shape)._value
            _keep_fill(key, v)
        return _wrap(v, t._dtype)
    c = _scalar(value, t._dtype)
    if _float_like(t._dtype):
        # what broadcast_in_dim(c, [], t.shape) returns (a read-only stride-0 view of
        # the constant), built here: the engine asks for these for every unused output
        # of a multi-output op and every root, and its other checks (rank-0 operand, no
        # broadcast dims, an existing tensor's shape) cannot fail
        check_nbytes("broadcast_in_dim", t.shape, t._dtype)
        v = c._value.reshape((1,) * len(t.shape))
        return _wrap(broadcast_view(v, t.shape), t._dtype)
    return _op.broadcast_in_dim(_fresh(c, t.shape), [], t.shape)


def _keep_fill(key, v):
    """Share device array ``v`` (filled with ``key``'s value) for later requests. Tensors
    never write their data, and an in-place op (index_add_) copies a buffer that anything
    else holds, so one array serves every zeros_like / ones_like of its shape; the
    engine's zero cotangents, asked for in every backward pass, then cost no kernel."""
    total = builtins.sum(a.nbytes for a in _FILLS.values())
    if total + v.nbytes > _FILLS_BYTES:
        _FILLS.clear()
        _ZERO_IDS.clear()
    if v.nbytes <= _FILLS_BYTES // 4:
        _FILLS[key] = v
        if key[3] == 0:
            _ZERO_IDS.add(id(v))


def is_shared_zero(t):
    """Whether ``t`` holds a shared zero array of a device (:func:`zeros_like` made it)."""
    return id(t._value) in _ZERO_IDS


def _fresh(c, shape):
    """Shared constant ``c``, or a Tensor of its own where a 0-d ``shape`` could hand
    ``c`` itself back to a caller (who may then assign to it)."""
    return c if shape else _wrap(c._value, c._dtype)


_DEVICE_SCALARS = {}  # (device, element type, value bytes) -> a 0-d constant's device array


def _on(c, t):
    """Constant ``c`` on ``t``'s device (the CPU: ``c`` itself). A 0-d constant is copied
    to a device once (a host-to-device copy waits for the device: a rule that copied its
    constants on every call would stall the queue of kernels each time)."""
    if type(t._value) is type(c._value):
        return c
    if c.ndim:
        return c.to_device(t.device)
    key = (str(t.device), c._dtype, c._value.tobytes())
    v = _DEVICE_SCALARS.get(key)
    if v is None:
        if len(_DEVICE_SCALARS) >= 256:
            _DEVICE_SCALARS.clear()
        v = _DEVICE_SCALARS[key] = c.to_device(t.device)._value
    return _wrap(v, c._dtype)


def sum(t, dims=None):  # noqa: A001  (the helper's name in every rule: H.sum)
    """``t`` summed over ``dims`` (all by default; none: ``t`` itself) with reduce's add
    body (its kernel fast path)."""
    dims = list(range(t.ndim)) if dims is None else sorted(dims)
    if not dims:
        return t
    t, dims = _reduced_last(t, dims)
    return _op.reduce(t, _on(_scalar(0, t._dtype), t), dims, _op.add)


def _reduced_last(t, dims):
    """``(t, dims)``, or the view of ``t`` transposed to (kept dims, ``dims``) and its
    trailing dims where that view is C-contiguous and ``dims`` lie apart (more than one
    block, size-1 dims aside): reduce would copy ``t`` into exactly that order before
    folding its rows, so the fold is the same, without the copy (or two, for a
    non-contiguous ``t``). A cotangent laid out channel-first, as convolution leaves
    it, meets this in every channel-bias gradient."""
    v = t._value
    if type(v) is not np.ndarray or v.flags.c_contiguous:
        return t, dims
    flags = [d in dims for d in range(t.ndim) if t.shape[d] != 1]
    if builtins.sum(f and (i == 0 or not flags[i - 1]) for i, f in enumerate(flags)) < 2:
        return t, dims
    perm = [d for d in range(t.ndim) if d not in dims] + dims
    if not v.transpose(perm).flags.c_contiguous:
        return t, dims
    return _op.transpose(t, perm), list(range(t.ndim - len(dims), t.ndim))


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
