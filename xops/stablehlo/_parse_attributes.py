"""StableHLO's textual form, part 2 of the parser (:mod:`xops.stablehlo.parser`): the
attributes (``dense<...>`` literals, ``array<...>``, ``[...]``, ``{...}``,
``#stablehlo<...>`` enums and structured attributes, the convolution dimension numbers,
symbols, strings, typed numbers).
"""

import re

from .ir import DenseAttr, EnumAttr, Hex, OpaqueAttr, StructAttr, SymbolRef
from .lexer import describe, unquote
from .pretty import conv_fields
from ._parse_types import _ELEM_NAMES, TypeParser


class AttributeParser(TypeParser):
    """Attributes: literals, dense<...>, arrays, dictionaries, #dialect<...> and the
    convolution dimension numbers."""

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
            return self._items("]", self.parse_attribute)
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
                raise self.error(f'expected a hex string in dense<"0x...">, got {s!r}')
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
            return self._items("]", self._dense_item)
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
                        raise self.error(f"expected a dimension label, got {describe(tk)}", tk.pos)
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
