"""Parameters: leaf tensors that a Module owns, and the one way to update them in place.

xops tensors are immutable values: no op ever changes a tensor's data. A model still
needs *slots* whose value changes over training while every reference to the slot (the
module attribute, the optimizer's list, the user's variable) stays the same object, as
PyTorch users expect of ``param``. xops keeps both properties with one rule:

    a parameter is an ordinary leaf Tensor (``requires_grad=True``, no tape node);
    :func:`assign_` rebinds *which* immutable array that Tensor object holds.

The array a parameter held before is never written to, so every tensor computed from
it, every ``p.detach()`` and every ``state_dict()`` taken earlier keeps its value (a
state dict is a snapshot: no ``copy.deepcopy`` needed). ``assign_`` is the only place in
xops that rebinds a tensor's value; the optimizers, ``Module.load_state_dict``,
``BatchNorm``'s running statistics and the in-place initialisers all go through it.

As with PyTorch's in-place updates, a tape recorded *before* an ``assign_`` refers to
the parameter object: ``assign_`` advances the parameter's version, and ``backward()``
through such a tape raises instead of reading the new value. Run ``backward()`` before
``optimizer.step()`` (the usual loop does).
"""

import numpy as np

from ..tensor import Tensor, tensor

__all__ = ["Parameter", "assign_"]


def Parameter(data, dtype=None, requires_grad=True):
    """A new parameter: a leaf Tensor of ``data`` with ``requires_grad=True``.

    Any Tensor that is a leaf and requires a gradient is a parameter when set as a
    Module attribute; this helper only spells that out (as ``torch.nn.Parameter``).

    >>> w = xo.nn.Parameter(np.zeros((3, 2), np.float32))   # f32[3,2], requires_grad
    """
    return tensor(data, dtype, requires_grad=requires_grad)


def assign_(param, value, *, allow_type_change=False):
    """Rebind leaf tensor ``param`` to ``value``'s data, in place; returns ``param``.

    ``value`` (a Tensor, NumPy array or nested sequence) must have ``param``'s shape and
    element type, unless ``allow_type_change`` (used by ``Module.to``). ``param`` keeps
    its identity, ``requires_grad`` and ``.grad``; ``value`` is not tied to ``param``
    afterwards (the data are shared, but data are never written to). Only leaves can be
    assigned: rebinding a tensor that an op produced would falsify the tape.

    >>> p = xo.tensor([1.0, 2.0], requires_grad=True)
    >>> with xo.no_grad():
    ...     xo.nn.assign_(p, p - 0.1)   # p is the same object, now [0.9, 1.9]
    xo.tensor([0.9, 1.9], f32[2])
    """
    if not isinstance(param, Tensor):
        raise TypeError(f"assign_: param must be a Tensor, got {type(param).__name__}")
    if param._node is not None:
        raise ValueError(
            f"assign_: param must be a leaf tensor (one no recorded op "
            f"produced), got the output of {param._node.op}: {param.type}"
        )
    if not isinstance(value, Tensor):
        value = tensor(
            np.asarray(value) if not isinstance(value, np.ndarray) else value,
            param._dtype if not allow_type_change else None,
        )
    if value.shape != param.shape:
        raise ValueError(f"assign_: value has shape {value.shape}, param {param.shape}")
    if value._dtype is not param._dtype and not allow_type_change:
        raise ValueError(
            f"assign_: value has element type {value._dtype.name}, param "
            f"{param._dtype.name} (convert with xo.convert first)"
        )
    if value._dtype is not param._dtype:
        if param.requires_grad and value._dtype.kind not in ("float", "complex"):
            raise ValueError(
                f"assign_: a parameter that requires a gradient must stay "
                f"floating-point, got {value._dtype.name}"
            )
        param.grad = None  # a gradient of the old type no longer fits
    from ..autodiff.tape import bump_version

    bump_version(param)  # a tape that saved param now fails loudly in backward()
    param._value = value._value
    param._dtype = value._dtype
    return param


_HOST_FLOATS = (np.float32, np.float64)


def host_floats(t, *others):
    """The NumPy arrays of ``t`` and ``others`` when all are on the host and ``t`` is f32
    or f64, else None. NumPy's float ufuncs round each result once to that type, exactly
    as xops's elementwise ops do, so an update written with them gives the ops' bits
    without an op dispatch per step (the optimizers, BatchNorm's running statistics, the
    fused cross-entropy); bf16 / f16 (computed wider, rounded by xops) and device tensors
    take the ops."""
    values = (t._value, *(o._value for o in others))
    if t._dtype.np in _HOST_FLOATS and all(type(v) is np.ndarray for v in values):
        return values
    return None
