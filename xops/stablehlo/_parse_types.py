"""StableHLO's textual form, part 1 of the parser (:mod:`xops.stablehlo.parser`): the
parser state and the types (element types, ``tensor<...>``, ``tuple<...>``,
``!quant.uniform<...>``, function types, aliases).
"""

import re

from ..dtypes import as_dtype
from ..errors import SpecError
from ..qtype import split_quant_body, storage_name
from .ir import FunctionType, OpaqueType, QuantType, TensorType, TokenType, TupleType
from .lexer import EOF, Lexer, ParseError, describe

_DIM = re.compile(r"(\?|[0-9]+)x")
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_UNRANKED = re.compile(r"\*x")
_ELEM_NAMES = re.compile(
    r"(?:[su]?i[0-9]+|ui[0-9]+|f[0-9]+(?:E[0-9]+M[0-9]+[A-Z0-9]*)?|bf16|"
    r"tf32|index|none)\b"
)


def _element_type(name):
    """A DType for a spec element type name, else an OpaqueType (``tf32``, ``index``)."""
    try:
        return as_dtype(storage_name(name))  # (quant storage types spell ui8 as u8)
    except (TypeError, ValueError):
        return OpaqueType(name)


class TypeParser:
    """The parser's state (the token stream, the alias tables) and the types."""

    def __init__(self, text, line_offset=0):
        self.lx = Lexer(text, line_offset)
        self.attr_aliases = {}
        self.type_aliases = {}

    def error(self, message, pos=None):
        return self.lx.error(message, pos)

    def _items(self, close, item):
        """Values read by ``item()``, separated by commas, up to and including ``close``
        (the opener already read)."""
        lx = self.lx
        out = []
        if not lx.accept(close):
            out.append(item())
            while lx.accept(","):
                out.append(item())
            lx.expect(close)
        return out

    def at_type(self):
        t = self.lx.peek()
        if t.kind == "bang" or t.is_("("):
            return True
        if t.kind == "ident":
            return t.text in ("tensor", "tuple", "complex", "vector", "memref", "token") or bool(
                _ELEM_NAMES.fullmatch(t.text)
            )
        return False

    def parse_type(self):
        lx = self.lx
        t = lx.peek()
        if t.is_("("):
            return self.parse_function_type()
        if t.kind == "bang":
            lx.next()
            name = t.text
            if name in ("!stablehlo.token", "!mhlo.token"):
                return TokenType()
            if name == "!quant.uniform":
                return self.parse_quant(t)
            if lx.text.startswith("<", lx.pos):
                body = self._balanced_angle()
                return OpaqueType(name + body)
            if name[1:] in self.type_aliases:
                return self.type_aliases[name[1:]]
            return OpaqueType(name)
        if t.kind != "ident":
            raise self.error(f"expected a type, got {describe(t)}", t.pos)
        lx.next()
        name = t.text
        if name == "tensor":
            return self._tensor_body(t)
        if name == "tuple":
            lx.expect("<")
            return TupleType(tuple(self._items(">", self.parse_type)))
        if name == "complex":
            lx.expect("<")
            part = self.parse_type()
            lx.expect(">")
            return _element_type(f"complex<{getattr(part, 'spec_name', part)}>")
        if name == "token":
            return TokenType()
        if name in ("vector", "memref"):
            return OpaqueType(name + self._balanced_angle())
        return _element_type(name)

    def _tensor_body(self, t):
        lx = self.lx
        lx.expect("<")
        shape = []
        if lx.match(_UNRANKED):
            shape = None
        else:
            while True:
                m = lx.match(_DIM)
                if not m:
                    break
                shape.append(None if m.group(1) == "?" else int(m.group(1)))
        elem = self.parse_type()
        encoding = None
        if lx.accept(","):
            encoding = self.parse_attribute()
        lx.expect(">", "'>' closing the tensor type")
        if shape is not None and None not in shape:
            self._check_size(shape, elem, t.pos)
        return TensorType(None if shape is None else tuple(shape), elem, encoding)

    def _check_size(self, shape, elem, pos):
        """Refuse a tensor type larger than the memory limit (:mod:`.limits`)."""
        from .limits import max_tensor_bytes, tensor_bytes

        need, limit = tensor_bytes(shape, elem), max_tensor_bytes()
        if need > limit:
            dims = "x".join(map(str, shape))
            raise self.error(
                f"resource limit: tensor<{dims}x{getattr(elem, 'spec_name', elem)}> "
                f"needs {need:,} bytes, more than the limit of {limit:,} bytes "
                f"(xops.config.max_bytes, env XOPS_MAX_BYTES)",
                pos,
            )

    def parse_quant(self, tok):
        body = self._balanced_angle()[1:-1]
        parts = split_quant_body(body)
        if parts is None:
            raise self.error(f"malformed quantized type !quant.uniform<{body}>", tok.pos)
        st, smin, smax, ex, axis, scales, zps = parts
        try:
            return QuantType(_element_type(st), _element_type(ex), scales, zps, axis, smin, smax)
        except SpecError as e:
            raise self.error(
                f"invalid quantized type !quant.uniform<{body}>: {e}", tok.pos
            ) from None

    def _balanced_angle(self):
        """The text of a balanced ``<...>`` group at the current position."""
        lx = self.lx
        lx.skip_ws()
        start = lx.pos
        if not lx.text.startswith("<", start):
            raise self.error("expected '<'", start)
        depth, i = 0, start
        while i < len(lx.text):
            c = lx.text[i]
            if c == '"':
                m = _STRING_RE.match(lx.text, i)
                i = m.end() if m else i + 1
                continue
            if c == "-" and lx.text.startswith("->", i):
                i += 2
                continue
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
                if depth == 0:
                    lx.pos = i + 1
                    return lx.text[start : i + 1]
            i += 1
        raise self.error("unbalanced '<'", start)

    def _balanced_parens(self):
        lx = self.lx
        lx.expect("(")
        depth = 1
        while depth:
            t = lx.next()
            if t.kind == EOF:
                raise self.error("unbalanced '('", t.pos)
            if t.is_("("):
                depth += 1
            elif t.is_(")"):
                depth -= 1

    def parse_function_type(self):
        lx = self.lx
        lx.expect("(")
        inputs = self._items(")", self.parse_type)
        lx.expect("->", "'->' in a function type")
        return FunctionType(tuple(inputs), tuple(self.parse_result_types()))

    def parse_result_types(self):
        """``t`` or ``(t, t {attrs}, ...)`` (function results may carry attributes)."""
        lx = self.lx
        if lx.at("(") and not self._paren_is_function_type():
            lx.next()
            return self._items(")", self._annotated_type)
        return [self.parse_type()]

    def _skip_loc(self):
        """Skip a ``loc(...)`` location, if one is here."""
        lx = self.lx
        if lx.at("loc") and lx.peek2().is_("("):
            lx.next()
            self._balanced_parens()

    def _annotated_type(self):
        """A type in a signature: its attribute dictionary and location are skipped."""
        t = self.parse_type()
        if self.lx.at("{"):
            self.parse_attr_dict()
        self._skip_loc()
        return t

    def _paren_is_function_type(self):
        """Whether the ``(`` here starts a function type ``(...) -> ...`` (as a single
        result type) rather than a parenthesised result list."""
        lx = self.lx
        save = lx.pos
        try:
            self._balanced_parens()
            return lx.at("->")
        except ParseError:
            return False
        finally:
            lx.pos = save
