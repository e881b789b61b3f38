"""Tokens and tuples: Token, after_all, create_token, tuple, get_tuple_element,
optimization_barrier.

An eager framework runs ops in program order, so tokens carry no data and order
nothing: they exist so that programs written against the spec (infeed/outfeed,
send/recv, while loops threading a token) keep their signatures. A spec tuple is a
Python tuple of values (tensors, tokens, tuples).

Gradients: tuple, get_tuple_element and optimization_barrier are tape primitives with
structural rules (each tensor element gets its own cotangent). Only tensors at the top
level of a result are recorded; a nested tuple passes through as the very object, so
the tensors inside keep their own tape nodes.
"""

import builtins

import numpy as np

from ..autodiff.tape import is_grad_enabled, keep, primitive
from ..tensor import Tensor
from ..registry import declare
from ._core import SpecError, as_tensor, attr_int, check

__all__ = [
    "Token",
    "after_all",
    "create_token",
    "tuple",
    "get_tuple_element",
    "optimization_barrier",
]


class Token:
    """A value of the spec's ``token`` type: no data; it only sequences side effects
    (which an eager framework already runs in program order).

    >>> xo.after_all(xo.create_token(), xo.create_token())   # xo.Token()
    xo.Token()
    """

    __slots__ = ()

    def __repr__(self):
        return "xo.Token()"

    def __reduce__(self):
        return (Token, ())


@primitive("after_all")
def after_all(*inputs):
    """stablehlo.after_all: a token that depends on every token in ``inputs`` (I1: each
    one a token; zero inputs are allowed and give a fresh token).

    >>> xo.after_all(xo.create_token(), xo.create_token())   # xo.Token()
    xo.Token()
    """
    for i, t in enumerate(inputs):
        if not isinstance(t, Token):
            raise SpecError(
                "after_all", "I1", f"inputs must be tokens, got {_kind(t)} for inputs[{i}]"
            )
    return Token()


@primitive("create_token", spec=None)  # MHLO's token op; the spec has after_all
def create_token():
    """XLA CreateToken (legacy): after_all with no inputs, a fresh token.

    >>> xo.create_token()   # xo.Token()
    xo.Token()
    """
    return after_all()


def _value(op, label, name, v, allow_tuple):
    """A spec value: a Tensor, a Token or (if allowed) a tuple of values; NumPy arrays
    and Python scalars become Tensors."""
    if isinstance(v, (Tensor, Token)):
        return v
    if isinstance(v, builtins.tuple):
        if not allow_tuple:
            raise SpecError(op, label, f"{name} must be a tensor or a token, got a tuple")
        return builtins.tuple(_value(op, label, f"{name}[{i}]", e, True) for i, e in enumerate(v))
    if isinstance(v, (np.ndarray, np.generic, bool, int, float, complex, list)):
        return as_tensor(v, op=op, name=name)
    raise SpecError(
        op, label, f"{name} must be a tensor, a token or a tuple, got {type(v).__name__}"
    )


def _kind(v):
    if isinstance(v, Tensor):
        return f"a tensor {v.type}"
    return f"a {type(v).__name__}"


@primitive("tuple", quantized="native")
def tuple(*val):
    """stablehlo.tuple: the values ``val`` as one tuple value (a Python tuple). Elements
    may be tensors, tokens or tuples (C1: element i has type(val[i])); NumPy arrays and
    Python scalars become tensors.

    >>> xo.tuple(xo.tensor([1.0, 2.0]), xo.tuple(xo.tensor(3)))   # ([1, 2], (3,))
    (xo.tensor([1., 2.], f32[2]), (xo.tensor(3, i64[]),))
    """
    return builtins.tuple(_value("tuple", "I1", f"val[{i}]", v, True) for i, v in enumerate(val))


@tuple.defvjp
def _tuple_vjp(g, out, val):
    # the cotangent has the tuple's (nested) structure: each element gets its own part
    return (g,)


@declare("get_tuple_element", quantized="native")
def get_tuple_element(tuple, index):
    """stablehlo.get_tuple_element: element ``index`` of the tuple ``tuple``
    (C1: 0 <= index < size(tuple); no Python-style negative indices).

    >>> xo.get_tuple_element(xo.tuple(xo.tensor([1.0, 2.0]), xo.tuple(xo.tensor(3))), 0)
    ... # [1, 2]
    xo.tensor([1., 2.], f32[2])
    """
    v = _element(tuple, index)
    if isinstance(v, Tensor) and is_grad_enabled():
        return _get_tuple_element(tuple, index)  # records (a node with its own rule)
    # A token or a nested tuple comes back as the very object (tensors inside it keep
    # their own tape nodes, so gradients flow through unchanged). It is not recorded:
    # the tape records only tensors that are outputs at the top level.
    return v


def _element(tuple, index):
    op = "get_tuple_element"
    operand = tuple
    if not isinstance(operand, builtins.tuple):
        raise SpecError(op, "I1", f"operand must be a tuple, got {_kind(operand)}")
    i = attr_int(op, "I2", "index", index)
    check(
        0 <= i < len(operand),
        op,
        "C1",
        lambda: f"index must be in [0, size(operand)={len(operand)}), got {i}",
    )
    keep(op, index=i)
    return operand[i]


_get_tuple_element = primitive("get_tuple_element", core=True)(_element)


@_get_tuple_element.defvjp
def _get_tuple_element_vjp(g, out, tuple, index):
    i = index  # (kept parsed by the op: an int)
    return ([g if k == i else None for k in range(len(tuple))],)


get_tuple_element.op_name = "get_tuple_element"
get_tuple_element.defvjp = _get_tuple_element.defvjp


@primitive("optimization_barrier", quantized="native")
def optimization_barrier(*operand):
    """stablehlo.optimization_barrier: the identity on any number of tensors and tokens
    (C1: result types equal operand types); it only fences compiler transformations,
    which an eager framework does not make. Returns a tuple of the same values.

    >>> xo.optimization_barrier(xo.tensor(0.0), xo.tensor(1.0))   # (0.0, 1.0)
    (xo.tensor(0., f32[]), xo.tensor(1., f32[]))
    """
    return builtins.tuple(
        _value("optimization_barrier", "I1", f"operand[{i}]", v, False)
        for i, v in enumerate(operand)
    )


@optimization_barrier.defvjp
def _optimization_barrier_vjp(g, out, operand):
    return ([c if isinstance(v, Tensor) else None for c, v in zip(g, operand)],)
