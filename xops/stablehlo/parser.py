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
  (:func:`xops.stablehlo.pretty.normalize`) so that it carries the same attributes,
  under the spec's names, as its generic form;
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

The grammar is one class built in layers, one module each: ``_parse_types.TypeParser``
(the parser state and the types), ``_parse_attributes.AttributeParser`` (attributes),
``_parse_ops.OpParser`` (operations, regions, blocks) and :class:`Parser` here
(functions and modules), with the entry points below.
"""

import re

from .ir import Func, FunctionType, Module, OpaqueAttr
from .lexer import EOF, ParseError, describe, unquote
from ._parse_ops import OpParser
from ._parse_types import _STRING_RE

__all__ = ["ParseError", "parse", "parse_module", "split_chunks", "parse_type", "parse_attribute"]


class Parser(OpParser):
    """The whole grammar: types, attributes and operations (the base classes), then
    functions and modules."""

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
                arg_types.append(self._annotated_type())
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
                    raise self.error("unexpected end of input (missing '}' of the module)", t.pos)
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
                raise self.error(f"expected a function or a module, got {describe(t)}", t.pos)


def _func_from_generic(op):
    """A :class:`Func` from ``"func.func"() <{sym_name = "f", function_type = (..) -> ..,
    sym_visibility = "private"}> ({ ^bb0(%arg0: ...): ... }) : () -> ()``."""
    a = op.attrs
    ft = a.get("function_type")
    if not isinstance(ft, FunctionType):
        raise ParseError(
            f"func.func needs function_type = (...) -> ..., got {ft!r}", op.line, op.column
        )
    body = op.regions[0] if op.regions and op.regions[0].blocks else None
    if body is not None:
        names = [n for n, _ in body.entry.args]
    else:
        names = [f"%arg{i}" for i in range(len(ft.inputs))]
    extra = {k: v for k, v in a.items() if k not in ("sym_name", "function_type", "sym_visibility")}
    return Func(
        str(a.get("sym_name")),
        names,
        list(ft.inputs),
        list(ft.results),
        body,
        str(a.get("sym_visibility", "public")),
        extra,
        op.line,
        op.column,
    )


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------

_SPLIT = re.compile(r"^// -----[ \t]*$", re.M)


def split_chunks(text):
    """The ``// -----`` sections of ``text`` as (first line number, section text)."""
    out, pos, line = [], 0, 1
    for m in _SPLIT.finditer(text):
        chunk = text[pos : m.start()]
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


def _parse_whole(text, rule, what):
    """``text`` read by the grammar rule ``rule`` (a Parser method), which must consume
    all of it."""
    p = Parser(text)
    value = rule(p)
    if p.lx.peek().kind != EOF:
        raise p.error(f"unexpected text after the {what}")
    return value


def parse_type(text):
    """Parse one type, e.g. ``parse_type("tensor<2x?xbf16>")``."""
    return _parse_whole(text, Parser.parse_type, "type")


def parse_attribute(text):
    """Parse one attribute, e.g. ``parse_attribute("dense<[1, 2]> : tensor<2xi32>")``."""
    return _parse_whole(text, Parser.parse_attribute, "attribute")
