"""The values of a running program against its types, below the executor and the checks.

:func:`matches` says whether a value has a declared type; :func:`value_type_str` writes
a value's type as MLIR does. Both the executor (results, arguments) and the checks
(``check.*`` messages) use them; ``xops.stablehlo.executor`` re-exports them.
"""

from ..dtypes import DType
from ..ops.misc import Token
from ..tensor import Tensor
from .ir import TensorType, TokenType, TupleType

__all__ = ["matches", "value_type_str"]


def matches(v, t, vectorised=False):
    """Whether value ``v`` has type ``t`` (shape checks are skipped for vectorised
    bodies, whose values carry a leading batch of positions)."""
    if isinstance(t, TensorType):
        if not isinstance(v, Tensor):
            return False
        if isinstance(t.elem, DType) and v.dtype is not t.elem and v.dtype != t.elem:
            return False
        if vectorised or t.shape is None:
            return True
        return len(v.shape) == len(t.shape) and all(
            d is None or d == s for d, s in zip(t.shape, v.shape)
        )
    if isinstance(t, TokenType):
        return isinstance(v, Token)
    if isinstance(t, TupleType):
        return (
            isinstance(v, tuple)
            and len(v) == len(t.types)
            and all(matches(a, b, vectorised) for a, b in zip(v, t.types))
        )
    return True  # opaque types: nothing to check


def value_type_str(v):
    """A value's type as MLIR writes it: ``tensor<2x3xf32>``, ``!stablehlo.token``."""
    if isinstance(v, Tensor):
        return "tensor<" + "".join(f"{d}x" for d in v.shape) + v.dtype.spec_name + ">"
    if isinstance(v, tuple):
        return "tuple<" + ", ".join(value_type_str(x) for x in v) + ">"
    if isinstance(v, Token):
        return "!stablehlo.token"
    return type(v).__name__
