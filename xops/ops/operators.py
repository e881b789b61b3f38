"""Python operators on Tensors, with the everyday layer's semantics (:mod:`xops.numpy`).

* ``+ - * / // % ** @``, ``== != < <= > >=``, ``& | ^ << >>``, unary ``- + abs() ~``
  are the ``xops.numpy`` functions: types promote (the array API standard's table within
  a kind, integer with float gives the float type, Python scalars are weak), operands
  broadcast NumPy-style, ``/`` is true division (integers divide as f32), ``//`` floors
  and ``%`` takes the divisor's sign, as in Python and NumPy. ``>>`` is arithmetic for
  signed and logical for unsigned integers.
* In-place forms (``a += b``) rebind the name to a new tensor: tensors are values.
* ``@`` follows NumPy's matmul (leading dims are batch dims and broadcast; a 1-D
  operand contributes no free dim), on dot_general.
* The spec functions ``xo.add``, ``xo.divide``, ``xo.remainder``, ... stay strict: one
  element type, one shape, spec semantics (integer divide truncates, remainder takes the
  dividend's sign). docs/numpy.md describes the boundary.

The fast path — two tensors of one element type and shape, or a tensor and a Python
scalar of its kind — calls the spec op directly after two attribute checks.
"""

import numpy as np

from .. import registry
from ..limits import config as _config
from ..tensor import Tensor
from . import elementwise as ew
from . import linalg
from . import movement as mv
from ._broadcasting import broadcast_batch, broadcast_to as _broadcast_to
from ._core import SpecError, as_tensor, tstr

_xnp = None  # xops.numpy, passed to _install (it sits above: numpy.linalg.matmul is ours)

_ALL = frozenset(("bool", "si", "ui", "float", "complex"))
_NUM = frozenset(("si", "ui", "float", "complex"))
_INEXACT = frozenset(("float", "complex"))
_REAL = frozenset(("si", "ui", "float"))
_INTB = frozenset(("bool", "si", "ui"))
_INT = frozenset(("si", "ui"))
_OPERAND = (Tensor, np.ndarray, np.generic, list, tuple, bool, int, float, complex)


def _binop(fn, kinds, name, a, b, reflected=False):
    """``a <op> b`` for the Tensor ``a`` (``b <op> a`` when ``reflected``): the spec op
    ``fn`` on the fast path (same type and shape, or a weak scalar ``b`` that ``a``'s type
    absorbs), else xnp's function ``name``."""
    tb = type(b)
    kind = a._dtype.kind
    if tb is Tensor:  # (a reflected call with two Tensors only comes by hand: no fast path)
        fast = not reflected and a._dtype is b._dtype and a._value.shape == b._value.shape
    elif tb is float:
        fast = kind in _INEXACT
    elif tb is int:
        fast = kind in _NUM
    elif not isinstance(b, _OPERAND):
        return NotImplemented
    else:
        fast = False
    if fast and kind in kinds:
        return fn(b, a) if reflected else fn(a, b)
    if a._dtype.quantized or isinstance(b, Tensor) and b._dtype.quantized:
        return _quantized(fn, name, a, b, reflected)
    xfn = getattr(_xnp, name)
    return xfn(b, a) if reflected else xfn(a, b)


def _quantized(fn, name, a, b, reflected=False):
    """Quantized operands keep the spec op's semantics (dequantize, op, quantize to the
    first quantized operand's type); only broadcasting is added."""
    if fn is _never:
        raise SpecError(
            name,
            "",
            f"no operator form for quantized operands {tstr(a)}; use xo.dequantize_op_quantize",
        )
    b = as_tensor(b, op=name, name="operand") if not isinstance(b, (bool, int, float)) else b
    if isinstance(b, Tensor) and a._value.shape != b._value.shape:
        try:
            shape = np.broadcast_shapes(a._value.shape, b._value.shape)
        except ValueError:
            raise SpecError(name, "", f"shapes {tstr(a)} and {tstr(b)} do not broadcast") from None
        a, b = _broadcast_to(a, shape), _broadcast_to(b, shape)
    return fn(b, a) if reflected else fn(a, b)


def _compare(direction):
    def op(x, y):
        return ew.compare(x, y, direction)

    return op


def _never(x, y):  # an operator with no spec-op fast path
    raise AssertionError("unreachable")


# dunder -> (spec op for the fast path, kinds it covers, xnp function)
_BINARY = {
    "add": (ew.add, _NUM, "add"),
    "sub": (ew.subtract, _NUM, "subtract"),
    "mul": (ew.multiply, _NUM, "multiply"),
    "truediv": (ew.divide, _INEXACT, "divide"),
    "floordiv": (_never, (), "floor_divide"),
    "mod": (_never, (), "remainder"),
    "pow": (ew.power, _INEXACT, "pow"),
    "and": (ew.and_, _INTB, "bitwise_and"),
    "or": (ew.or_, _INTB, "bitwise_or"),
    "xor": (ew.xor, _INTB, "bitwise_xor"),
    "lshift": (ew.shift_left, _INT, "bitwise_left_shift"),
    "rshift": (_never, (), "bitwise_right_shift"),
}
_COMPARE = {
    "eq": ("EQ", _ALL, "equal"),
    "ne": ("NE", _ALL, "not_equal"),
    "lt": ("LT", _REAL, "less"),
    "le": ("LE", _REAL, "less_equal"),
    "gt": ("GT", _REAL, "greater"),
    "ge": ("GE", _REAL, "greater_equal"),
}


def matmul(a, b):
    """``a @ b`` with NumPy's rules, on dot_general (operands of one element type)."""
    b = as_tensor(
        b, a._dtype if isinstance(b, (bool, int, float, complex)) else None, "dot_general", "rhs"
    )
    if a.ndim == 0 or b.ndim == 0:
        raise SpecError(
            "dot_general",
            "C12",
            f"@ needs operands of rank >= 1, got {tstr(a)} and {tstr(b)} (use * for scalars)",
        )
    if a.ndim <= 2 and b.ndim <= 2:
        return linalg.dot_general(
            a,
            b,
            lhs_contracting_dimensions=[a.ndim - 1],
            rhs_contracting_dimensions=[max(b.ndim - 2, 0)],
        )
    a_ = a if a.ndim > 1 else mv.reshape(a, (1,) + a.shape)
    b_ = b if b.ndim > 1 else mv.reshape(b, b.shape + (1,))
    a_, b_ = broadcast_batch("dot_general", "C9", a_, b_)
    nb = a_.ndim - 2
    out = linalg.dot_general(a_, b_, list(range(nb)), list(range(nb)), [nb + 1], [nb])
    if a.ndim == 1:
        out = mv.reshape(out, out.shape[:-2] + out.shape[-1:])
    if b.ndim == 1:
        out = mv.reshape(out, out.shape[:-1])
    return out


def _matmul_op(self, other, /):
    if type(other) is Tensor and other._dtype is self._dtype:
        return matmul(self, other)
    if not isinstance(other, _OPERAND):
        return NotImplemented
    return _xnp.matmul(self, other)


def _rmatmul_op(self, other, /):
    if not isinstance(other, _OPERAND):
        return NotImplemented
    return _xnp.matmul(other, self)


def _forward(fn, kinds, name):
    fast = getattr(fn, "_fast", None)  # the spec op's dispatch fast path (_core.fast_binary)
    if fast is not None:

        def op(self, other, /):
            if not _config.check_finite:  # what the op's wrapper would do, one call less
                out = fast((self, other))
                if out is not None:
                    return out
            if (
                type(other) is Tensor
                and self._dtype is other._dtype
                and self._value.shape == other._value.shape
                and self._dtype.kind in kinds
            ):
                return fn(self, other)
            return _binop(fn, kinds, name, self, other)

        return op

    def op(self, other, /):
        if (
            type(other) is Tensor
            and self._dtype is other._dtype
            and self._value.shape == other._value.shape
            and self._dtype.kind in kinds
        ):
            return fn(self, other)  # the fast path, inlined (one Python call less)
        return _binop(fn, kinds, name, self, other)

    return op


_SYMBOL = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "and": "&",
    "or": "|",
    "xor": "^",
    "lshift": "<<",
    "rshift": ">>",
    "matmul": "@",
}


def _inplace(forward, name, dunder):
    """``a <op>= b``: the result rebinds the name (tensors are values), and must keep
    ``a``'s element type and shape, as the standard, NumPy and PyTorch require."""

    def op(self, other, /):
        out = forward(self, other)
        if out is NotImplemented:
            return out
        if out._dtype is not self._dtype or out._value.shape != self._value.shape:
            sym = _SYMBOL[dunder]
            raise SpecError(
                name,
                "",
                f"in-place `a {sym}= b` cannot change a's element type or "
                f"shape: {tstr(self)} {sym}= {_describe(other)} gives "
                f"{tstr(out)}; write `a = a {sym} b` to rebind",
            )
        return out

    return op


def _describe(x):
    return tstr(x) if isinstance(x, Tensor) else type(x).__name__


def _backward(fn, kinds, name):
    def op(self, other, /):
        return _binop(fn, kinds, name, self, other, reflected=True)

    return op


def _unary(name):
    def op(self, /):  # (xops.numpy never hands back its input: +t is a new object)
        return getattr(_xnp, name)(self)

    return op


def _install(xnp):
    """Attach the operators to Tensor; ``xnp``: the xops.numpy namespace they fall back
    on (xops/__init__ passes it: this module does not import the layer above it)."""
    global _xnp
    _xnp = xnp
    for dunder, (fn, kinds, name) in _BINARY.items():
        for prefix, make in (("", _forward), ("r", _backward)):
            op = make(fn, kinds, name)
            op.__name__ = op.__qualname__ = f"__{prefix}{dunder}__"
            setattr(Tensor, op.__name__, op)
        op = _inplace(getattr(Tensor, f"__{dunder}__"), name, dunder)
        op.__name__ = op.__qualname__ = f"__i{dunder}__"
        setattr(Tensor, op.__name__, op)
    imatmul = _inplace(_matmul_op, "matmul", "matmul")
    imatmul.__name__ = imatmul.__qualname__ = "__imatmul__"
    for dunder, (direction, kinds, name) in _COMPARE.items():
        op = _forward(_compare(direction), kinds, name)
        op.__name__ = op.__qualname__ = f"__{dunder}__"
        setattr(Tensor, op.__name__, op)
    for dunder, name in (
        ("neg", "negative"),
        ("pos", "positive"),
        ("abs", "abs"),
        ("invert", "bitwise_invert"),
    ):
        op = _unary(name)
        op.__name__ = op.__qualname__ = f"__{dunder}__"
        setattr(Tensor, op.__name__, op)
    Tensor.__getitem__ = getitem
    Tensor.__matmul__ = _matmul_op
    Tensor.__rmatmul__ = _rmatmul_op
    Tensor.__imatmul__ = imatmul


@registry.on_device_use
def _rebuild():
    """The forward operators hold the ops' CPU fast paths (see _forward); once a tensor
    lives on another device those are off, and the operators are built again without."""
    if _xnp is not None:
        _install(_xnp)


from .._numpy_indexing import getitem  # noqa: E402  (NumPy indexing; it imports this module)
