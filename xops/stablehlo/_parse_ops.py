"""StableHLO's textual form, part 3 of the parser (:mod:`xops.stablehlo.parser`): the
operations, in the generic form and the pretty forms StableHLO prints (normalised to the
generic form's attributes by :func:`xops.stablehlo.pretty.normalize`), with their regions
and blocks.
"""

from .ir import Block, EnumAttr, FunctionType, Op, Region, StructAttr
from .lexer import EOF, ParseError, describe, unquote
from .pretty import normalize, result_types
from ._parse_attributes import AttributeParser

# Ops printed without a dialect prefix (the func dialect's, inside func.func): a bare
# word naming one always starts a new op.
_BARE_OPS = frozenset({"return", "call"})


class OpParser(AttributeParser):
    """Operations: the generic form, the pretty forms, regions and blocks."""

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
            raise self.error(f'expected a function type for "{name}", got {ft}')
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
