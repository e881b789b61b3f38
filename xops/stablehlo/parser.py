"""A hand-written parser for StableHLO's textual MLIR form.

A small on-demand tokenizer plus recursive descent; no third-party parser. It reads

* modules (``module @m attributes {...} { ... }``) and bare top-level functions; several
  ``func.func`` (public, private) per module; attribute and type aliases
  (``#a = ...``, ``!t = ...``); ``loc(...)`` locations (skipped);
* the generic op form ``%r:2 = "dialect.op"(%a, %b#1) <{props}> ({regions}) {attrs} :
  (types) -> types`` with regions and blocks (``^bb0(%x: tensor<f32>):``);
* the pretty forms StableHLO prints (``stablehlo.add %a, %b : tensor<4xi32>``,
  ``stablehlo.compare GE, %a, %b, FLOAT : ...``, ``stablehlo.convolution(%a, %b)
  dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {...}``,
  ``stablehlo.reduce(%x init: %i) applies stablehlo.add across dimensions = [1]``,
  ``stablehlo.while(%it = %x) : ... cond {...} do {...}``, ``stablehlo.dot_general``
  with ``batching_dims = [0] x [0]``, ``stablehlo.slice %x [0:2:1]``, ...) together
  with the ``check``, ``interpreter``, ``func`` and ``chlo`` ops of the conformance
  files. A pretty op is read by one generic loop (operands, ``key = value`` pairs, bare
  enum words, attribute dictionaries, regions, then ``: types``) and then normalised
  (:func:`xops.stablehlo.pretty.normalize`) so that it carries the same attributes, under the spec's names,
  as its generic form;
* every attribute kind the spec uses: ``dense<...>`` literals (nested lists, splats,
  ``dense<"0x...">`` blobs, hex bit patterns such as ``0x7F800000``, complex
  ``(re, im)``, ``true``/``false``), ``array<i64: 1, 2>``, ``[...]``, ``{...}``,
  ``#stablehlo<comparison_direction GE>``, ``#stablehlo.gather<...>`` and the other
  structured attributes, ``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``,
  ``@symbols``, strings, typed numbers (``1 : i64``);
* every element type (``i1``, ``i2``...``i64``, ``ui2``...``ui64``, ``f4E2M1FN``, ``f6*``,
  ``f8*``, ``bf16``, ``f16``, ``f32``, ``f64``, ``complex<f32>``, ``complex<f64>``),
  ``tensor<?x3xf32>``, ``tuple<...>``, ``!stablehlo.token`` and ``!quant.uniform<...>``.

Errors are :class:`ParseError` (a :class:`xops.SpecError`) with the line and column and
the offending source line.
"""
import re

from ..dtypes import as_dtype
from ..errors import SpecError
from ..qtype import split_quant_body, storage_name
from .ir import (Block, DenseAttr, EnumAttr, FunctionType, Hex, Module, OpaqueAttr,
                 OpaqueType, Op, QuantType, Region, StructAttr, SymbolRef, TensorType,
                 TokenType, TupleType, Func)

from .lexer import EOF, Lexer, ParseError, describe, unquote
from .pretty import conv_fields, normalize, result_types

__all__ = ["ParseError", "parse", "parse_module", "split_chunks", "parse_type",
           "parse_attribute"]


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------

_DIM = re.compile(r"(\?|[0-9]+)x")
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_UNRANKED = re.compile(r"\*x")
_ELEM_NAMES = re.compile(r"(?:[su]?i[0-9]+|ui[0-9]+|f[0-9]+(?:E[0-9]+M[0-9]+[A-Z0-9]*)?|bf16|"
                         r"tf32|index|none)\b")
# Ops printed without a dialect prefix (the func dialect's, inside func.func): a bare
# word naming one always starts a new op.
_BARE_OPS = frozenset({"return", "call"})


def _element_type(name):
    """A DType for a spec element type name, else an OpaqueType (``tf32``, ``index``)."""
    try:
        return as_dtype(storage_name(name))  # (quant storage types spell ui8 as u8)
    except (TypeError, ValueError):
        return OpaqueType(name)


class Parser:
    def __init__(self, text, line_offset=0):
        self.lx = Lexer(text, line_offset)
        self.attr_aliases = {}
        self.type_aliases = {}

    def error(self, message, pos=None):
        return self.lx.error(message, pos)

    # -- types --------------------------------------------------------------------------
    def at_type(self):
        t = self.lx.peek()
        if t.kind == "bang" or t.is_("("):
            return True
        if t.kind == "ident":
            return t.text in ("tensor", "tuple", "complex", "vector", "memref", "token") or \
                bool(_ELEM_NAMES.fullmatch(t.text))
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
            types = []
            if not lx.accept(">"):
                types.append(self.parse_type())
                while lx.accept(","):
                    types.append(self.parse_type())
                lx.expect(">")
            return TupleType(tuple(types))
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
            raise self.error(f"resource limit: tensor<{dims}x{getattr(elem, 'spec_name', elem)}> "
                             f"needs {need:,} bytes, more than the limit of {limit:,} bytes "
                             f"(xops.config.max_bytes, env XOPS_MAX_BYTES)", pos)

    def parse_quant(self, tok):
        body = self._balanced_angle()[1:-1]
        parts = split_quant_body(body)
        if parts is None:
            raise self.error(f"malformed quantized type !quant.uniform<{body}>", tok.pos)
        st, smin, smax, ex, axis, scales, zps = parts
        try:
            return QuantType(_element_type(st), _element_type(ex), scales, zps, axis, smin, smax)
        except SpecError as e:
            raise self.error(f"invalid quantized type !quant.uniform<{body}>: {e}", tok.pos) \
                from None

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
                    return lx.text[start:i + 1]
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
        inputs = []
        if not lx.accept(")"):
            inputs.append(self.parse_type())
            while lx.accept(","):
                inputs.append(self.parse_type())
            lx.expect(")")
        lx.expect("->", "'->' in a function type")
        return FunctionType(tuple(inputs), tuple(self.parse_result_types()))

    def parse_result_types(self):
        """``t`` or ``(t, t {attrs}, ...)`` (function results may carry attributes)."""
        lx = self.lx
        if lx.at("(") and not self._paren_is_function_type():
            lx.next()
            out = []
            if not lx.accept(")"):
                while True:
                    out.append(self.parse_type())
                    if lx.at("{"):
                        self.parse_attr_dict()
                    self._skip_loc()
                    if not lx.accept(","):
                        break
                lx.expect(")")
            return out
        return [self.parse_type()]

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

    # -- attributes ---------------------------------------------------------------------
    def parse_attribute(self):
        """Any attribute value (see the module docstring)."""
        lx = self.lx
        t = lx.peek()
        k = t.kind
        if k == "ident":
            if t.text == "dense":
                return self.parse_dense()
            if t.text == "array":
                return self.parse_array()
            if t.text in ("true", "false"):
                lx.next()
                self._skip_typed_suffix()
                return t.text == "true"
            if t.text == "unit":
                lx.next()
                return True
            if t.text in ("dense_resource", "sparse", "affine_map", "opaque", "strided"):
                lx.next()
                return OpaqueAttr(t.text + self._balanced_angle())
            if t.text == "loc":
                lx.next()
                self._balanced_parens()
                return OpaqueAttr("loc")
            if self.at_type():
                return self.parse_type()
            lx.next()
            return EnumAttr(t.text)
        if k in ("int", "hexint", "float"):
            lx.next()
            return self._typed_number(t)
        if k == "string":
            lx.next()
            return unquote(t.text)
        if k == "symbol":
            lx.next()
            name = t.text[1:]
            if name.startswith('"'):
                name = unquote(name)
            while lx.at(":") and lx.peek2().is_(":"):  # nested @a::@b
                lx.next()
                lx.next()
                name += "::" + lx.expect_kind("symbol", "a symbol").text[1:]
            return SymbolRef(name)
        if k == "hash":
            return self.parse_hash_attr()
        if k == "bang":
            return self.parse_type()
        if t.is_("["):
            lx.next()
            items = []
            if not lx.accept("]"):
                items.append(self.parse_attribute())
                while lx.accept(","):
                    items.append(self.parse_attribute())
                lx.expect("]")
            return items
        if t.is_("{"):
            return self.parse_attr_dict()
        if t.is_("("):
            return self.parse_type()
        if t.is_("-") or t.is_("+"):
            raise self.error("a number must follow its sign directly", t.pos)
        raise self.error(f"expected an attribute, got {describe(t)}", t.pos)

    def _skip_typed_suffix(self):
        """Read ``: i64`` after a scalar attribute (``1 : i64``). Only a scalar type
        counts: in ``iota dim = 0 : tensor<4xi32>`` the type belongs to the op."""
        lx = self.lx
        if lx.at(":"):
            nxt = lx.peek2()
            if nxt.kind == "ident" and _ELEM_NAMES.fullmatch(nxt.text):
                lx.next()
                return self.parse_type()
        return None

    def _typed_number(self, t):
        ty = self._skip_typed_suffix()
        if t.kind == "hexint":
            v = int(t.text, 16)
            if ty is not None and getattr(ty, "kind", None) == "float":
                from .literals import scalar_from_bits
                return scalar_from_bits(v, ty)
            return v
        if t.kind == "int":
            v = int(t.text)
            if ty is not None and getattr(ty, "kind", None) == "float":
                return float(v)
            if ty is not None and getattr(ty, "kind", None) == "bool":
                return bool(v)
            return v
        return float(t.text)

    def parse_attr_dict(self):
        """``{name = value, flag, "quoted" = value}`` as a dict (a flag is True)."""
        lx = self.lx
        lx.expect("{")
        out = {}
        if lx.accept("}"):
            return out
        while True:
            t = lx.next()
            if t.kind == "ident":
                key = t.text
            elif t.kind == "string":
                key = unquote(t.text)
            else:
                raise self.error(f"expected an attribute name, got {describe(t)}", t.pos)
            out[key] = self.parse_attribute() if lx.accept("=") else True
            if lx.accept("}"):
                return out
            lx.expect(",", "',' or '}' in an attribute dictionary")

    def parse_array(self):
        """``array<i64: 1, 2>`` (also ``array<i1: true>``, ``array<f32: ...>``)."""
        lx = self.lx
        lx.expect("array")
        lx.expect("<")
        elem = self.parse_type()
        items = []
        if lx.accept(":"):
            while True:
                t = lx.next()
                if t.kind in ("int", "hexint"):
                    items.append(int(t.text, 0) if t.kind == "hexint" else int(t.text))
                elif t.kind == "float":
                    items.append(float(t.text))
                elif t.kind == "ident" and t.text in ("true", "false"):
                    items.append(t.text == "true")
                else:
                    raise self.error(f"expected an array element, got {describe(t)}", t.pos)
                if not lx.accept(","):
                    break
        lx.expect(">")
        if getattr(elem, "kind", None) == "bool":
            items = [bool(v) for v in items]
        return items

    def parse_dense(self):
        lx = self.lx
        lx.expect("dense")
        lx.expect("<")
        if lx.accept(">"):
            data = []
        elif lx.peek().kind == "string":
            s = unquote(lx.next().text)
            if not re.fullmatch(r"0x[0-9A-Fa-f]*", s):
                raise self.error(f"expected a hex string in dense<\"0x...\">, got {s!r}")
            data = bytes.fromhex(s[2:])
            lx.expect(">")
        else:
            data = self._dense_item()
            lx.expect(">", "'>' closing dense<...>")
        ty = None
        if lx.at(":") and not lx.peek2().is_(":"):
            save = lx.pos
            lx.next()
            if self.at_type():
                ty = self.parse_type()
            else:
                lx.pos = save
        return DenseAttr(data, ty)

    def _dense_item(self):
        lx = self.lx
        t = lx.next()
        if t.is_("["):
            items = []
            if not lx.accept("]"):
                items.append(self._dense_item())
                while lx.accept(","):
                    items.append(self._dense_item())
                lx.expect("]")
            return items
        if t.is_("("):
            re_ = self._dense_item()
            lx.expect(",")
            im = self._dense_item()
            lx.expect(")")
            return (re_, im)
        if t.kind == "int":
            return int(t.text)
        if t.kind == "hexint":
            neg = t.text.startswith("-")
            v = Hex(int(t.text.lstrip("+-"), 16))
            return -v if neg else v
        if t.kind == "float":
            return t.text
        if t.kind == "ident":
            if t.text in ("true", "false"):
                return t.text == "true"
            if t.text in ("inf", "nan", "NaN", "Inf"):
                return t.text.lower()
        if t.is_("-") or t.is_("+"):  # -inf
            n = lx.next()
            if n.kind == "ident" and n.text.lower() in ("inf", "nan"):
                return t.text + n.text.lower()
        raise self.error(f"expected a literal element, got {describe(t)}", t.pos)

    def parse_hash_attr(self):
        """``#dialect<...>``, ``#dialect.mnemonic<...>`` or an alias ``#name``."""
        lx = self.lx
        t = lx.next()
        name = t.text[1:]
        if not lx.text.startswith("<", lx.pos):
            if name in self.attr_aliases:
                return self.attr_aliases[name]
            return OpaqueAttr(t.text)
        dialect, _, mnemonic = name.partition(".")
        angle = lx.pos
        lx.expect("<")
        if not mnemonic:
            # #stablehlo<comparison_direction GE>: an enum, or a raw body.
            a = lx.peek()
            b = lx.peek2()
            if a.kind == "ident" and b.kind == "ident":
                lx.next()
                lx.next()
                if lx.accept(">"):
                    return EnumAttr(b.text, a.text)
            lx.pos = angle
            return OpaqueAttr(t.text + self._balanced_angle())
        if mnemonic == "conv":
            return self._conv_attr(t)
        if lx.accept(">"):
            return StructAttr(mnemonic, {})
        # key = value, ... ; values are attributes, or bare words (types, enums).
        fields = {}
        save = lx.pos
        first = lx.peek()
        if not (first.kind == "ident" and lx.peek2().is_("=")):
            lx.pos = angle
            return OpaqueAttr(t.text + self._balanced_angle())
        lx.pos = save
        while True:
            key = lx.expect_kind("ident", "a field name").text
            lx.expect("=")
            fields[key] = self.parse_attribute()
            if lx.accept(">"):
                return StructAttr(mnemonic, fields)
            lx.expect(",", f"',' or '>' in #{name}<...>")

    def _conv_attr(self, t):
        lx = self.lx
        if lx.at("raw"):
            lx.next()
            fields = {}
            while True:
                key = lx.expect_kind("ident", "a field name").text
                lx.expect("=")
                fields[key] = self.parse_attribute()
                if lx.accept(">"):
                    return StructAttr("conv", fields)
                lx.expect(",")
        dn = self.parse_conv_dims(t.pos)
        lx.expect(">")
        return StructAttr("conv", dn)

    def parse_conv_dims(self, pos):
        """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`` as the spec's ConvDimensionNumbers
        fields."""
        lx = self.lx

        def dims():
            lx.expect("[")
            out = []
            if not lx.accept("]"):
                while True:
                    tk = lx.next()
                    if tk.kind == "int":
                        out.append(int(tk.text))
                    elif tk.kind == "ident":
                        out.append(tk.text)
                    else:
                        raise self.error(f"expected a dimension label, got {describe(tk)}",
                                         tk.pos)
                    if not lx.accept(","):
                        break
                lx.expect("]")
            return out

        lhs = dims()
        lx.expect("x", "'x' between the input and kernel layouts")
        rhs = dims()
        lx.expect("->")
        out = dims()
        return conv_fields(lhs, rhs, out, lambda msg: self.error(msg, pos))

    # -- operations ---------------------------------------------------------------------
    def parse_op(self):
        """One operation, with its results (``%a, %b = ``, ``%r:2 = ``)."""
        lx = self.lx
        start = lx.peek().pos
        results = []
        if lx.peek().kind == "value":
            while True:
                v = lx.expect_kind("value", "a result name").text
                if lx.at(":") and lx.peek2().kind == "int":
                    lx.next()
                    n = int(lx.next().text)
                    results.extend(f"{v}#{i}" for i in range(n))
                else:
                    results.append(v)
                if not lx.accept(","):
                    break
            lx.expect("=", "'=' after the result names")
        line, col = lx.loc(start)
        t = lx.next()
        if t.kind == "string":
            op = self.parse_generic(unquote(t.text), results)
        elif t.kind == "ident":
            op = self.parse_custom(t.text, results, t)
        else:
            raise self.error(f"expected an operation, got {describe(t)}", t.pos)
        op.line, op.column = line, col
        self._skip_loc()
        return op

    def _skip_loc(self):
        lx = self.lx
        if lx.at("loc") and lx.peek2().is_("("):
            lx.next()
            self._balanced_parens()

    def parse_generic(self, name, results):
        lx = self.lx
        operands = []
        lx.expect("(", f"'(' after \"{name}\"")
        if not lx.accept(")"):
            while True:
                operands.append(lx.expect_kind("value", "an operand").text)
                if not lx.accept(","):
                    break
            lx.expect(")")
        attrs, regions = {}, []
        while True:
            if lx.at("<") and lx.peek2().is_("{"):  # properties <{...}>
                lx.next()
                attrs.update(self.parse_attr_dict())
                lx.expect(">")
            elif lx.at("(") and lx.peek2().is_("{"):  # regions ({...}, {...})
                lx.next()
                while True:
                    regions.append(self.parse_region())
                    if not lx.accept(","):
                        break
                lx.expect(")")
            elif lx.at("["):  # successors: not supported in structured programs
                raise self.error("block successors are not supported")
            else:
                break
        if lx.at("{"):
            attrs.update(self.parse_attr_dict())
        lx.expect(":", f"':' and the type of \"{name}\"")
        ft = self.parse_type()
        if not isinstance(ft, FunctionType):
            raise self.error(f"expected a function type for \"{name}\", got {ft}")
        return Op(name, results, operands, attrs, regions, list(ft.inputs), list(ft.results))

    def parse_region(self, arg_names=None, arg_types=None):
        """``{ [^bb0(%a: t, ...):] ops... [^bb1: ...] }``. ``arg_names``/``arg_types``
        give the entry block's arguments when the syntax names them elsewhere (while)."""
        lx = self.lx
        lx.expect("{")
        blocks = []
        block = Block(list(zip(arg_names, arg_types)) if arg_names is not None else [])
        while True:
            t = lx.peek()
            if t.is_("}"):
                lx.next()
                break
            if t.kind == EOF:
                raise self.error("unexpected end of input in a region (missing '}')", t.pos)
            if t.kind == "caret":
                lx.next()
                if block.ops or blocks:
                    blocks.append(block)
                block = Block([], [], t.text)
                if lx.accept("("):
                    if not lx.accept(")"):
                        while True:
                            n = lx.expect_kind("value", "a block argument").text
                            lx.expect(":")
                            block.args.append((n, self.parse_type()))
                            self._skip_loc()
                            if not lx.accept(","):
                                break
                        lx.expect(")")
                lx.expect(":", "':' after the block label")
                continue
            block.ops.append(self.parse_op())
        blocks.append(block)
        return Region(blocks)

    def parse_custom(self, name, results, tok):
        """A pretty-printed op: one loop over its pieces, then :func:`normalize`."""
        lx = self.lx
        op = Op(name, results)
        positional = []  # bare enum words, literals, strings, symbols in order
        extra = {}  # custom-syntax pieces: init pairs, while names, slices, ...
        types = None
        while True:
            t = lx.peek()
            k = t.kind
            if k == "value":
                if _starts_op(lx):
                    break  # the next op starts here
                lx.next()
                op.operands.append(t.text)
                if lx.at("["):
                    self._operand_index(op, extra)
            elif t.is_(","):
                lx.next()
            elif t.is_("("):
                self._paren_group(op, extra)
            elif t.is_("{"):
                if self._brace_is_region():
                    self._custom_regions(op, extra)
                else:
                    op.attrs.update(self.parse_attr_dict())
            elif t.is_("<") and lx.peek2().is_("{"):
                lx.next()
                op.attrs.update(self.parse_attr_dict())
                lx.expect(">")
            elif t.is_(":") and not lx.peek2().is_(":"):
                if types is not None:
                    break
                lx.next()
                types = self._custom_types()
            elif k == "ident":
                word = t.text
                if "." in word:
                    break  # the next op (one without results) starts here
                if word in _BARE_OPS and not lx.peek2().is_("="):
                    # ``return`` / ``call`` (the func dialect's ops, printed without
                    # their dialect) start the next op. After ``stablehlo.constant
                    # dense<..> : t`` the type was read with the literal, so nothing
                    # else marks the end of the constant.
                    break
                if word == "loc" and lx.peek2().is_("("):
                    self._skip_loc()
                elif word == "applies":
                    lx.next()
                    extra["applies"] = lx.expect_kind("ident", "an op name").text
                elif word == "across":
                    lx.next()
                elif word == "attributes" and lx.peek2().is_("{"):
                    lx.next()
                    op.attrs.update(self.parse_attr_dict())
                elif word in ("cond", "do") and lx.peek2().is_("{"):
                    lx.next()
                    names = extra.get("iter_names")  # while(%it = %x): block arguments
                    if names is not None and types is not None:
                        op.regions.append(self.parse_region(names, types[1]))
                    else:
                        op.regions.append(self.parse_region())
                elif word == "reducer" and lx.peek2().is_("("):
                    lx.next()
                    self._reducer(op, extra)
                elif word == "inits" and lx.peek2().is_("("):
                    lx.next()
                    extra["num_inputs"] = len(op.operands)
                    self._paren_operands(op)
                elif lx.peek2().is_("="):
                    lx.next()
                    lx.next()
                    op.attrs[word] = self.parse_custom_value()
                elif word in ("dense", "array", "true", "false"):
                    positional.append(self.parse_attribute())
                elif types is not None:
                    break
                else:
                    lx.next()
                    positional.append(EnumAttr(word))
            elif k == "string":
                if types is not None or lx.peek2().is_("("):
                    break  # the next op, in generic form
                lx.next()
                positional.append(unquote(t.text))
            elif k == "symbol":
                positional.append(self.parse_attribute())
            elif k in ("hash", "int", "float", "hexint") or t.is_("["):
                if types is not None:
                    break
                positional.append(self.parse_attribute())
            else:
                break
        if types is None:
            types = (None, [])
        op.operand_types = types[0]
        op.result_types = list(types[1])
        try:
            normalize(op, positional, extra)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
            raise self.error(f"malformed {name}: {e}", tok.pos) from None
        op.result_types = result_types(op, types)
        return op

    def _operand_index(self, op, extra):
        """``%t[0]`` (get_tuple_element) or ``%x [0:4:2, 1:3]`` (slice)."""
        lx = self.lx
        lx.expect("[")
        entries = []
        if not lx.accept("]"):
            while True:
                parts = [int(lx.expect_kind("int", "an integer").text)]
                while lx.accept(":"):
                    parts.append(int(lx.expect_kind("int", "an integer").text))
                entries.append(parts)
                if not lx.accept(","):
                    break
            lx.expect("]")
        if all(len(e) == 1 for e in entries) and len(entries) == 1 and "slice" not in op.name:
            extra["index"] = entries[0][0]
        else:
            extra["slice"] = entries

    def _paren_operands(self, op):
        lx = self.lx
        lx.expect("(")
        if not lx.accept(")"):
            while True:
                op.operands.append(lx.expect_kind("value", "an operand").text)
                if not lx.accept(","):
                    break
            lx.expect(")")

    def _paren_group(self, op, extra):
        """``(%a, %b)``, ``(%x init: %i)`` (reduce) or ``(%it = %x, ...)`` (while)."""
        lx = self.lx
        lx.expect("(")
        if lx.accept(")"):
            return
        while True:
            t = lx.peek()
            if t.kind == "ident" and lx.peek2().is_("="):  # chlo.top_k(%x, k = 2)
                lx.next()
                lx.next()
                op.attrs[t.text] = self.parse_custom_value()
                if not lx.accept(","):
                    break
                continue
            v = lx.expect_kind("value", "an operand").text
            if lx.accept("="):  # while: %iterArg = %init
                init = lx.expect_kind("value", "an operand").text
                extra.setdefault("iter_names", []).append(v)
                op.operands.append(init)
            elif lx.at("init") and lx.peek2().is_(":"):
                lx.next()
                lx.next()
                init = lx.expect_kind("value", "an init value").text
                extra.setdefault("reduce_pairs", []).append((v, init))
            else:
                op.operands.append(v)
            if not lx.accept(","):
                break
        lx.expect(")")

    def _reducer(self, op, extra):
        """``reducer(%a: t, %b: t) (%c: t, %d: t) { body }``: group i is (lhs_i, rhs_i)."""
        lx = self.lx
        groups = []
        while lx.at("("):
            lx.next()
            g = []
            while True:
                n = lx.expect_kind("value", "a block argument").text
                lx.expect(":")
                g.append((n, self.parse_type()))
                self._skip_loc()
                if not lx.accept(","):
                    break
            lx.expect(")")
            groups.append(g)
        args = [g[0] for g in groups] + [g[1] for g in groups]
        region = self.parse_region([a[0] for a in args], [a[1] for a in args])
        op.regions.append(region)

    def _brace_is_region(self):
        """After ``{``: an attribute dictionary starts with ``name =``, ``name,``,
        ``name}``, ``"name" =`` or ``}``; anything else is a region."""
        lx = self.lx
        save = lx.pos
        try:
            lx.next()
            a = lx.peek()
            if a.is_("}"):
                return False
            if a.kind in ("value", "caret"):
                return True
            b = lx.peek2()
            if a.kind in ("ident", "string") and (b.is_("=") or b.is_(",") or b.is_("}")):
                return False
            return True
        finally:
            lx.pos = save

    def _custom_regions(self, op, extra):
        lx = self.lx
        op.regions.append(self.parse_region())
        while lx.at(",") and lx.peek2().is_("{"):
            lx.next()
            op.regions.append(self.parse_region())

    def _custom_types(self):
        """After ``:``: a function type ``(ts) -> ts`` or a list of types. Returns
        (operand types or None, types)."""
        lx = self.lx
        if lx.at("("):
            ft = self.parse_type()
            if isinstance(ft, FunctionType):
                return (list(ft.inputs), list(ft.results))
            types = [ft]
        else:
            types = [self.parse_type()]
        while lx.at(","):
            save = lx.pos
            lx.next()
            if not self.at_type():
                lx.pos = save
                break
            types.append(self.parse_type())
        if lx.accept("->"):  # `: t -> t` (CHLO's unparenthesised functional type)
            return (types, self.parse_result_types())
        return (None, types)

    def parse_custom_value(self):
        """The value after ``key =`` in a pretty op: an attribute, a bare word, a
        ``[..] x [..]`` pair (dot dims), conv layouts ``[b, 0, f]x[..]->[..]``, a
        ``{stride = ..., pad = ...}`` window, or ``<key = value, ...>``."""
        lx = self.lx
        t = lx.peek()
        if t.is_("["):
            save = lx.pos
            try:
                first = self.parse_attribute()
            except ParseError:
                lx.pos = save
                return self.parse_conv_dims(t.pos)
            if lx.at("x"):
                lx.next()
                second_start = lx.peek().pos
                try:
                    second = self.parse_attribute()
                except ParseError:
                    second = None
                if lx.at("->") or second is None:
                    lx.pos = save
                    return self.parse_conv_dims(t.pos)
                if not isinstance(second, list):
                    raise self.error("expected '[...]' after 'x'", second_start)
                return ("x", first, second)
            return first
        if t.is_("{"):
            lx.next()
            return self._fields("}", self.parse_custom_value)
        if t.is_("<"):
            lx.next()
            return StructAttr("dot_algorithm", self._fields(">", self.parse_attribute))
        return self.parse_attribute()

    def _fields(self, close, parse_value):
        """``name = value, ...`` up to and including ``close`` (the opener already read)."""
        lx = self.lx
        out = {}
        if not lx.accept(close):
            while True:
                key = lx.expect_kind("ident", "a field name").text
                lx.expect("=")
                out[key] = parse_value()
                if not lx.accept(","):
                    break
            lx.expect(close)
        return out

    # -- functions and modules ----------------------------------------------------------
    def parse_func(self):
        lx = self.lx
        start = lx.peek()
        line, col = lx.loc(start.pos)
        lx.next()  # func.func
        visibility = "public"
        while lx.peek().kind == "ident" and lx.peek().text in ("public", "private", "nested"):
            visibility = lx.next().text
        name = lx.expect_kind("symbol", "the function name (@name)").text[1:]
        if name.startswith('"'):
            name = unquote(name)
        lx.expect("(")
        arg_names, arg_types = [], []
        if not lx.accept(")"):
            while True:
                t = lx.peek()
                if t.kind == "value":
                    arg_names.append(lx.next().text)
                    lx.expect(":")
                else:
                    arg_names.append(f"%arg{len(arg_names)}")
                arg_types.append(self.parse_type())
                if lx.at("{"):
                    self.parse_attr_dict()
                self._skip_loc()
                if not lx.accept(","):
                    break
            lx.expect(")")
        results = []
        if lx.accept("->"):
            results = self.parse_result_types()
        attrs = {}
        if lx.at("attributes"):
            lx.next()
            attrs = self.parse_attr_dict()
        body = None
        if lx.at("{"):
            body = self.parse_region(arg_names, arg_types)
        self._skip_loc()
        return Func(name, arg_names, arg_types, results, body, visibility, attrs, line, col)

    def _add_generic(self, module, op):
        """Add a top-level op in generic form to ``module``."""
        if op.name in ("builtin.module", "module"):
            if op.attrs.get("sym_name") is not None:
                module.name = module.name or str(op.attrs["sym_name"])
            module.attrs.update({k: v for k, v in op.attrs.items() if k != "sym_name"})
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.ops:
                        self._add_generic(module, inner)
        elif op.name == "func.func":
            f = _func_from_generic(op)
            if f.name in module.funcs:
                raise ParseError(f"function @{f.name} is defined twice", f.line, f.column)
            module.funcs[f.name] = f

    def _skip_statement(self):
        """Skip one statement this parser has no use for: up to the end of its line,
        past any brackets it opens (which may span lines)."""
        lx = self.lx
        lx.skip_ws()
        text, i, depth = lx.text, lx.pos, 0
        pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
        closers = set(pairs.values())
        while i < len(text):
            c = text[i]
            if c == '"':
                m = _STRING_RE.match(text, i)
                i = m.end() if m else i + 1
                continue
            if c == "-" and text.startswith("->", i):
                i += 2
                continue
            if c in pairs:
                depth += 1
            elif c in closers:
                depth = max(depth - 1, 0)
            elif c == "\n" and depth == 0:
                break
            i += 1
        lx.pos = i

    def parse_module_body(self, module, closing):
        lx = self.lx
        while True:
            t = lx.peek()
            if t.kind == EOF:
                if closing:
                    raise self.error("unexpected end of input (missing '}' of the module)",
                                     t.pos)
                return
            if closing and t.is_("}"):
                lx.next()
                return
            if t.kind == "ident" and t.text in ("func.func", "func"):
                f = self.parse_func()
                if f.name in module.funcs:
                    raise ParseError(f"function @{f.name} is defined twice", f.line, f.column)
                module.funcs[f.name] = f
            elif t.kind == "ident" and t.text in ("module", "builtin.module"):
                lx.next()
                if lx.peek().kind == "symbol":
                    module.name = module.name or lx.next().text[1:]
                if lx.at("attributes"):
                    lx.next()
                    module.attrs.update(self.parse_attr_dict())
                lx.expect("{")
                self.parse_module_body(module, True)
                self._skip_loc()
            elif t.kind in ("hash", "bang") and lx.peek2().is_("="):
                lx.next()
                lx.next()
                if t.kind == "hash":
                    if lx.at("loc"):
                        lx.next()
                        self._balanced_parens()
                        value = OpaqueAttr("loc")
                    else:
                        value = self.parse_attribute()
                    self.attr_aliases[t.text[1:]] = value
                else:
                    self.type_aliases[t.text[1:]] = self.parse_type()
            elif t.kind == "string" or t.kind == "value":
                # the generic form: "builtin.module"() ({...}), "func.func"() ({...});
                # other ops at the top level carry nothing xops runs
                self._add_generic(module, self.parse_op())
            elif t.kind == "ident":
                # other top-level ops (sdy.mesh @mesh = <["x"=2]>, ...): skipped
                self._skip_statement()
            else:
                raise self.error(f"expected a function or a module, got {describe(t)}",
                                 t.pos)


def _func_from_generic(op):
    """A :class:`Func` from ``"func.func"() <{sym_name = "f", function_type = (..) -> ..,
    sym_visibility = "private"}> ({ ^bb0(%arg0: ...): ... }) : () -> ()``."""
    a = op.attrs
    ft = a.get("function_type")
    if not isinstance(ft, FunctionType):
        raise ParseError(f"func.func needs function_type = (...) -> ..., got {ft!r}",
                         op.line, op.column)
    body = op.regions[0] if op.regions and op.regions[0].blocks else None
    if body is not None:
        names = [n for n, _ in body.entry.args]
    else:
        names = [f"%arg{i}" for i in range(len(ft.inputs))]
    extra = {k: v for k, v in a.items() if k not in ("sym_name", "function_type",
                                                      "sym_visibility")}
    return Func(str(a.get("sym_name")), names, list(ft.inputs), list(ft.results), body,
                str(a.get("sym_visibility", "public")), extra, op.line, op.column)


def _starts_op(lx):
    """Whether the ``%`` here starts the result list of a new op
    (``%a = ``, ``%a, %b = ``, ``%r:2 = ``) rather than being an operand."""
    save = lx.pos
    try:
        while lx.peek().kind == "value":
            lx.next()
            if lx.at(":") and lx.peek2().kind == "int":
                lx.next()
                lx.next()
            if lx.at("="):
                return True
            if not lx.accept(","):
                return False
        return False
    finally:
        lx.pos = save


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------

_SPLIT = re.compile(r"^// -----[ \t]*$", re.M)


def split_chunks(text):
    """The ``// -----`` sections of ``text`` as (first line number, section text)."""
    out, pos, line = [], 0, 1
    for m in _SPLIT.finditer(text):
        chunk = text[pos:m.start()]
        out.append((line, chunk))
        line += chunk.count("\n")  # the next section starts on the separator's line
        pos = m.end()
    out.append((line, text[pos:]))
    return out


def parse_module(text, first_line=1, chunk=0):
    """Parse one module (or top-level functions) from ``text``."""
    p = Parser(text, first_line - 1)
    m = Module(source=text, chunk=chunk, first_line=first_line)
    p.parse_module_body(m, closing=False)
    return m


def parse(text):
    """Parse ``text`` into a list of :class:`Module`, one per ``// -----`` section
    (sections holding only comments are dropped)."""
    mods = []
    for i, (line, chunk) in enumerate(split_chunks(text)):
        m = parse_module(chunk, line, i)
        if m.funcs or m.name:
            mods.append(m)
    return mods


def parse_type(text):
    """Parse one type, e.g. ``parse_type("tensor<2x?xbf16>")``."""
    p = Parser(text)
    t = p.parse_type()
    if p.lx.peek().kind != EOF:
        raise p.error("unexpected text after the type")
    return t


def parse_attribute(text):
    """Parse one attribute, e.g. ``parse_attribute("dense<[1, 2]> : tensor<2xi32>")``."""
    p = Parser(text)
    a = p.parse_attribute()
    if p.lx.peek().kind != EOF:
        raise p.error("unexpected text after the attribute")
    return a
