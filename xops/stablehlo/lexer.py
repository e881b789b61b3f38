"""The tokenizer of the StableHLO parser: on-demand tokens over the text, with
positions, so the parser can also read characters directly where MLIR's syntax is not a
token stream (``tensor<2x3xf32>``: ``2x3x`` are dimensions, not a number and a name).
"""

import bisect
import re

from ..errors import SpecError

__all__ = ["ParseError", "Lexer", "Tok", "EOF", "describe", "unquote"]


class ParseError(SpecError):
    """Malformed StableHLO text. ``line`` and ``column`` are 1-based."""

    def __init__(self, message, line=0, column=0, source_line=None):
        self.line, self.column = line, column
        text = f"line {line}, column {column}: {message}"
        if source_line is not None:
            text += f"\n    {source_line}\n    {' ' * (column - 1)}^"
        super().__init__("stablehlo parser", "", text)


# ---------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------

_WS = re.compile(r"(?:\s+|//[^\n]*)+")
_ID = r"[A-Za-z_$.\-][A-Za-z0-9_$.\-]*"
_TOKEN = re.compile(
    r"""
 (?P<value>%[A-Za-z0-9_$.\-]+(?:\#[0-9]+)?)
|(?P<symbol>@(?:[A-Za-z_$.\-][A-Za-z0-9_$.\-]*|"(?:[^"\\]|\\.)*"))
|(?P<caret>\^[A-Za-z0-9_$.\-]+)
|(?P<hash>\#[A-Za-z_$.][A-Za-z0-9_$.\-]*)
|(?P<bang>![A-Za-z_$.][A-Za-z0-9_$.\-]*)
|(?P<hexint>[-+]?0x[0-9A-Fa-f]+)
|(?P<float>[-+]?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+)
|(?P<int>[-+]?[0-9]+)
|(?P<string>"(?:[^"\\]|\\.)*")
|(?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
|(?P<arrow>->)
|(?P<punct>[()\[\]{}<>,:=*?+|\-])
""",
    re.X,
)


class Tok:
    __slots__ = ("kind", "text", "pos", "end")

    def __init__(self, kind, text, pos, end):
        self.kind, self.text, self.pos, self.end = kind, text, pos, end

    def __repr__(self):
        return f"Tok({self.kind}, {self.text!r})"

    def is_(self, text):
        return self.kind in ("punct", "arrow", "ident") and self.text == text


EOF = "eof"


class Lexer:
    """On-demand tokens over ``text``; ``pos`` is the next character to read, so type
    parsing can read characters directly (``2x3xf32`` is not a token stream)."""

    def __init__(self, text, line_offset=0):
        self.text = text
        self.pos = 0
        self.line_offset = line_offset
        self._peeked = None  # (pos, Tok)
        self._line_starts = None

    # -- positions ----------------------------------------------------------------------
    def loc(self, pos):
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer(r"\n", self.text)]
        i = bisect.bisect_right(self._line_starts, pos) - 1
        return i + 1 + self.line_offset, pos - self._line_starts[i] + 1

    def error(self, message, pos=None):
        pos = self.pos if pos is None else pos
        line, col = self.loc(pos)
        start = self._line_starts[line - 1 - self.line_offset]
        end = self.text.find("\n", start)
        src = self.text[start : end if end >= 0 else len(self.text)]
        return ParseError(message, line, col, src.rstrip())

    def skip_ws(self):
        m = _WS.match(self.text, self.pos)
        if m:
            self.pos = m.end()

    # -- tokens -------------------------------------------------------------------------
    def peek(self):
        if self._peeked is not None and self._peeked[0] == self.pos:
            return self._peeked[1]
        self.skip_ws()
        start = self.pos
        if start >= len(self.text):
            tok = Tok(EOF, "", start, start)
        else:
            m = _TOKEN.match(self.text, start)
            if not m:
                raise self.error(f"unexpected character {self.text[start]!r}", start)
            tok = Tok(m.lastgroup, m.group(), start, m.end())
        self._peeked = (self.pos, tok)
        return tok

    def peek2(self):
        """The token after the next one (no side effects)."""
        save = self.pos
        t = self.peek()
        self.pos = t.end
        try:
            return self.peek()
        finally:
            self.pos = save

    def next(self):
        t = self.peek()
        self.pos = t.end
        return t

    def at(self, text):
        return self.peek().is_(text)

    def accept(self, text):
        if self.peek().is_(text):
            return self.next()
        return None

    def expect(self, text, what=None):
        t = self.peek()
        if not t.is_(text):
            raise self.error(f"expected {what or repr(text)}, got {describe(t)}", t.pos)
        return self.next()

    def expect_kind(self, kind, what):
        t = self.peek()
        if t.kind != kind:
            raise self.error(f"expected {what}, got {describe(t)}", t.pos)
        return self.next()

    def match(self, regex):
        """Match a compiled regex at the next non-space character; consume on success."""
        self.skip_ws()
        m = regex.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m


def describe(t):
    return "end of input" if t.kind == EOF else repr(t.text)


def unquote(s):
    body = s[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n in '"\\':
                out.append(n)
                i += 2
                continue
            if n == "n":
                out.append("\n")
                i += 2
                continue
            if n == "t":
                out.append("\t")
                i += 2
                continue
            if re.match(r"[0-9A-Fa-f]{2}", body[i + 1 : i + 3]):
                out.append(chr(int(body[i + 1 : i + 3], 16)))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)
