"""What crosses into and out of the tape: primals, cotangents, and values that left it.

* **Primals** given to ``xo.grad`` / ``value_and_grad`` / ``vjp`` may be Tensors, NumPy
  arrays, Python scalars, or nested tuples / lists / dicts of them (pytrees, as in JAX).
  A rectangular list or tuple holding only Python numbers (at any depth) is *one* array, as
  ``xo.tensor`` would make it: ``xo.grad(f)([0.5, 1.0])`` differentiates with respect to
  an f32[2] tensor and returns its gradient as one. Integer and boolean inputs have no
  gradient: a clear error (as JAX), never zeros.
* **Cotangents** (``vjp_fn(ct)``, ``t.backward(gradient)``) may be NumPy arrays, nested
  lists or scalars; they take the output's element type and must have its shape.
* **Values that left the tape.** Converting a tensor that requires a gradient to NumPy
  or Python (``np.asarray(t)``, ``t.numpy()``, ``t.tolist()``, ``float(t)``) is
  allowed, but the tape cannot follow the value. While ``f`` runs under a transform,
  such conversions are noted; an input that then gets *no* gradient although one of
  those converted tensors was computed from it raises an error naming the conversion,
  instead of returning a zero gradient that is not the true one.
"""

import numbers

import numpy as np

from ..errors import SpecError
from ..registry import op as _op  # ops by name, at call time: they sit above the tape
from ..tensor import Tensor, _escapes, _leaves

_NUMBER = (bool, int, float, complex, np.number, np.bool_)


def _number_shape(x):
    """The shape of a rectangular (nested) list/tuple of Python/NumPy scalars, else None."""
    if isinstance(x, (list, tuple)):
        if not x:
            return None
        shapes = {_number_shape(v) for v in x}
        if len(shapes) != 1 or None in shapes:
            return None
        return (len(x),) + shapes.pop()
    return () if isinstance(x, _NUMBER) else None


def _is_number_tree(x):
    """A non-empty rectangular (nested) list/tuple of Python/NumPy scalars only."""
    return isinstance(x, (list, tuple)) and _number_shape(x) is not None


def _is_leaf(x):
    return isinstance(x, (Tensor, np.ndarray, np.generic, numbers.Number)) or _is_number_tree(x)


def map_primals(tree, fn):
    """``tree`` with each primal leaf (see the module docstring) replaced by fn(leaf)."""
    if _is_leaf(tree):
        return fn(tree)
    if isinstance(tree, (list, tuple)):
        return type(tree)(map_primals(v, fn) for v in tree)
    if isinstance(tree, dict):
        return {k: map_primals(v, fn) for k, v in tree.items()}
    return tree


def as_primal(x, op="grad"):
    """A primal leaf as a Tensor of a float or complex type (else a clear error)."""
    from ..ops._core import as_tensor
    from ..tensor import tensor

    if isinstance(x, Tensor):
        t = x
    elif isinstance(x, (list, tuple)):
        t = tensor(x)
    else:
        t = as_tensor(x, op=op, name="input")
    if t._dtype.kind not in ("float", "complex"):
        what = (
            f"Python {type(x).__name__} {x!r:.40}"
            if not isinstance(x, (Tensor, np.ndarray))
            else type(x).__name__
        )
        raise SpecError(
            op,
            "",
            f"cannot differentiate with respect to a {t.type} input "
            f"({what}): only float and complex inputs have "
            f"gradients; pass floats (e.g. 3.0, not 3) or convert with "
            f"xo.convert(x, 'f32')",
        )
    return t


def as_cotangent(c, like, op):
    """Cotangent ``c`` (Tensor, array, list, scalar) for output ``like``."""
    from ..tensor import tensor

    if not isinstance(c, Tensor):
        if c is None or isinstance(c, (str, bytes, dict)):
            raise SpecError(
                op,
                "",
                f"a cotangent must be a tensor, array or number, got "
                f"{type(c).__name__} for output {like.type}",
            )
        c = tensor(
            np.broadcast_to(np.asarray(c), like.shape) if np.ndim(c) == 0 else c, like._dtype
        )
    if c.shape != like.shape:
        raise SpecError(
            op, "", f"the cotangent {c.type} must have the shape of the output {like.type}"
        )
    if c._dtype is not like._dtype:
        if c._dtype.kind not in ("float", "complex"):
            raise SpecError(
                op, "", f"the cotangent {c.type} must be floating-point like the output {like.type}"
            )
        c = _op.convert(c, like._dtype)
    return c


class watch_escapes:
    """Context manager: collects the tensors that require a gradient and were converted
    to NumPy / Python while it is active (``.tensors``)."""

    def __enter__(self):
        self._prev = _escapes.watch
        self.tensors = []
        _escapes.watch = self.tensors
        return self

    def __exit__(self, *exc):
        _escapes.watch = self._prev
        if self._prev is not None:
            self._prev.extend(self.tensors)  # an outer transform sees them too
        return False


def _ancestors(tensors):
    """ids of every tensor the given ones were computed from (themselves included)."""
    seen, nodes, stack = set(), set(), list(tensors)
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        node = t._node
        if node is not None and id(node) not in nodes:
            nodes.add(id(node))
            stack.extend(a for a in _leaves(node.args) if isinstance(a, Tensor))
    return seen


def check_connected(missing, escaped, op="grad"):
    """Raise if an input without a gradient (``missing``: (position, Tensor) pairs) is
    an ancestor of a tensor that was converted to NumPy / Python while f ran."""
    if not missing or not escaped:
        return
    reach = _ancestors(escaped)
    for where, t in missing:
        if id(t) in reach:
            via = next(e for e in escaped if id(t) in _ancestors([e]))
            raise SpecError(
                op,
                "",
                f"input {where} ({t.type}) gets no gradient because f "
                f"converted a tensor computed from it ({via.type}) to "
                f"NumPy or Python (np.asarray, .numpy(), .tolist(), "
                f"float(), .item()), which the tape cannot follow; keep "
                f"the computation in xops (xops.numpy functions, "
                f"operators, NumPy ufuncs on tensors)",
            )
