"""The in-memory form of a parsed StableHLO program: types, attributes, ops, regions.

Everything here is plain data. :mod:`xops.stablehlo.parser` builds it from text and
:mod:`xops.stablehlo.executor` runs it. Both the generic form
(``"stablehlo.add"(%a, %b) : (...) -> ...``) and the pretty forms
(``stablehlo.add %a, %b : ...``) parse to the same :class:`Op`: attributes carry the
spec's names (``iota_dimension``, ``dot_dimension_numbers``, ``window_strides``, ...).
"""

from dataclasses import dataclass, field

from ..dtypes import DType
from ..qtype import QuantizedType

__all__ = [
    "TensorType",
    "TupleType",
    "TokenType",
    "QuantType",
    "OpaqueType",
    "FunctionType",
    "DenseAttr",
    "EnumAttr",
    "StructAttr",
    "SymbolRef",
    "OpaqueAttr",
    "Op",
    "Block",
    "Region",
    "Func",
    "Module",
    "type_str",
    "elem_str",
]


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------

# ``!quant.uniform<...>`` element types are xops' own (validated when parsed).
QuantType = QuantizedType


@dataclass(frozen=True)
class _Verbatim:
    """Something kept as its text, printed as it is (the base of the opaque types and
    attributes: equal only to one of its own class)."""

    text: str

    def __str__(self):
        return self.text


class OpaqueType(_Verbatim):
    """A type xops has no values for (``tf32``, ``index``, other dialects' types)."""


@dataclass(frozen=True)
class TensorType:
    """``tensor<2x?x3xf32>``: ``shape`` has None for a dynamic dim (None for unranked);
    ``elem`` is a :class:`xops.DType`, a :class:`QuantType` or an :class:`OpaqueType`."""

    shape: object
    elem: object
    encoding: object = None

    @property
    def is_static(self):
        return self.shape is not None and all(d is not None for d in self.shape)

    @property
    def is_quantized(self):
        return isinstance(self.elem, QuantType)

    def __str__(self):
        if self.shape is None:
            dims = "*x"
        else:
            dims = "".join(f"{'?' if d is None else d}x" for d in self.shape)
        return f"tensor<{dims}{elem_str(self.elem)}>"


@dataclass(frozen=True)
class TupleType:
    types: tuple

    def __str__(self):
        return f"tuple<{', '.join(map(str, self.types))}>"


@dataclass(frozen=True)
class TokenType:
    def __str__(self):
        return "!stablehlo.token"


@dataclass(frozen=True)
class FunctionType:
    inputs: tuple
    results: tuple

    def __str__(self):
        res = ", ".join(map(str, self.results))
        if len(self.results) != 1:
            res = f"({res})"
        return f"({', '.join(map(str, self.inputs))}) -> {res}"


def elem_str(e):
    """An element type as the MLIR grammar writes it (``f32``, ``complex<f64>``)."""
    return e.spec_name if isinstance(e, DType) else str(e)


def type_str(t):
    return str(t)


# ---------------------------------------------------------------------------------------
# Attributes (Python values: int, float, bool, str, list, dict, and the classes below)
# ---------------------------------------------------------------------------------------


@dataclass
class DenseAttr:
    """``dense<...> : tensor<...>``. ``data`` is the literal as written: nested lists
    whose leaves are Python ints, bools, float literals kept as their decimal text
    (``str``, so narrow types round from the exact decimal once), :class:`Hex` bit
    patterns and ``(re, im)`` tuples; or a hex blob (``bytes``). ``type`` is the
    attribute's tensor type. :func:`xops.stablehlo.literals.to_array` converts it; that
    module, above this one, installs it as the method ``to_array`` (the package imports
    it), so this module imports nothing of the package."""

    data: object
    type: object = None

    def ints(self):
        """The literal as (nested) Python ints, for integer attributes."""
        return self.to_array().tolist()

    def __repr__(self):
        return f"dense<{_short(self.data)}> : {self.type}"


class Hex(int):
    """An integer literal written in hexadecimal: a bit pattern for float elements."""

    __slots__ = ()


class EnumAttr(str):
    """An enum value: ``#stablehlo<comparison_direction GE>`` is ``EnumAttr("GE")`` with
    ``kind == "comparison_direction"``; in pretty forms the bare word ``GE``."""

    __slots__ = ("kind",)

    def __new__(cls, value, kind=None):
        s = super().__new__(cls, value)
        s.kind = kind
        return s


@dataclass
class StructAttr:
    """``#stablehlo.gather<offset_dims = [2, 3], ...>``: ``kind`` ("gather") and its
    fields by name."""

    kind: str
    fields: dict

    def get(self, name, default=None):
        return self.fields.get(name, default)


@dataclass(frozen=True)
class SymbolRef:
    """``@name``: a reference to a function (or another symbol)."""

    name: str

    def __str__(self):
        return f"@{self.name}"


class OpaqueAttr(_Verbatim):
    """An attribute kept as its text (``dense_resource<...>``, unknown dialects)."""


def _short(data, limit=60):
    s = repr(data)
    return s if len(s) <= limit else s[:limit] + "..."


# ---------------------------------------------------------------------------------------
# Operations, blocks, regions, functions, modules
# ---------------------------------------------------------------------------------------


@dataclass
class Op:
    """One operation. ``results`` and ``operands`` are SSA names (``%0``, ``%x#1``);
    ``result_types`` the declared types (``operand_types`` too where the text gives
    them); ``line``/``column`` locate it in the source."""

    name: str
    results: list = field(default_factory=list)
    operands: list = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    regions: list = field(default_factory=list)
    operand_types: list = None
    result_types: list = field(default_factory=list)
    line: int = 0
    column: int = 0

    def __repr__(self):
        res = ", ".join(self.results)
        return f"<Op {res + ' = ' if res else ''}{self.name} at {self.line}:{self.column}>"


@dataclass
class Block:
    args: list = field(default_factory=list)  # [(name, type)]
    ops: list = field(default_factory=list)
    label: str = None


@dataclass
class Region:
    blocks: list = field(default_factory=list)

    @property
    def entry(self):
        return self.blocks[0]


@dataclass
class Func:
    name: str
    arg_names: list
    arg_types: list
    result_types: list
    body: Region = None  # None for a declaration
    visibility: str = "public"
    attrs: dict = field(default_factory=dict)
    line: int = 0
    column: int = 0

    @property
    def type(self):
        return FunctionType(tuple(self.arg_types), tuple(self.result_types))


@dataclass
class Module:
    """A module: its functions by name, in source order. ``chunk`` is the index of the
    ``// -----`` section it came from (0 when the text has none); ``first_line`` the
    source line where that section starts."""

    funcs: dict = field(default_factory=dict)
    name: str = None
    attrs: dict = field(default_factory=dict)
    source: str = None
    chunk: int = 0
    first_line: int = 1
