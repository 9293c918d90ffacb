"""The strict grammar of the graph's shape expressions, checked before any sympy call.

torch's deserializer hands every ``expr_str`` to ``sympy.sympify``, which evaluates Python.
The serializer writes them with ``sympy.srepr``, so a real one reads like
``Mul(Integer(2), Symbol('s77', positive=True, integer=True))``. This module accepts exactly
that form for the integer arithmetic of dynamic shapes and nothing looser::

    expr     := symbol | integer | nary | floordiv
    symbol   := "Symbol" "(" "'" s<digits> "'" ("," flag "=" "True")+ ")"   flag in FLAGS,
                "integer" among them, none twice
    integer  := "Integer" "(" ["-"] <digits> ")"
    nary     := ("Add" | "Mul" | "Max" | "Min") "(" expr ("," expr)+ ")"
    floordiv := "FloorDiv" "(" expr "," expr ")"

A hand-written tokenizer and recursive-descent parser, bounded in length and depth; any other
character, word or shape is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from computeshare_desktop.graph.base import MAX_EXPR_CHARS, GraphRefused

FLAGS = frozenset({"positive", "integer", "nonnegative"})
NARY = frozenset({"Add", "Mul", "Max", "Min"})
MAX_DEPTH = 32
MAX_INT_DIGITS = 19  # int64


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "word", "int", "str" or the punctuation itself: ( ) , =
    text: str


def is_symbol_name(text: str) -> bool:
    """A backed size symbol's name: ``s`` and 1 to 9 digits (``s77``)."""
    return 2 <= len(text) <= 10 and text[0] == "s" and text[1:].isascii() \
        and text[1:].isdigit()


def _tokens(text: str) -> Iterator[Token]:
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == " ":
            i += 1
        elif c in "(),=":
            yield Token(c, c)
            i += 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < n and text[j].isascii() and text[j].isalpha():
                j += 1
            yield Token("word", text[i:j])
            i = j
        elif c == "-" or (c.isascii() and c.isdigit()):
            j = i + 1
            while j < n and text[j].isascii() and text[j].isdigit():
                j += 1
            if text[i:j] == "-":
                raise GraphRefused(f"shape expression: '-' without digits in {text[:80]!r}")
            yield Token("int", text[i:j])
            i = j
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0 or not is_symbol_name(text[i + 1:j]):
                raise GraphRefused(f"shape expression: bad symbol name in {text[:80]!r}")
            yield Token("str", text[i + 1:j])
            i = j + 1
        else:
            raise GraphRefused(f"shape expression: character {c!r} not allowed in "
                               f"{text[:80]!r}")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = list(_tokens(text))
        self.at = 0
        self.symbols: set[str] = set()

    def fail(self, what: str) -> GraphRefused:
        return GraphRefused(f"shape expression: {what} in {self.text[:80]!r}")

    def take(self, kind: str) -> Token:
        if self.at >= len(self.tokens) or self.tokens[self.at].kind != kind:
            raise self.fail(f"expected {kind}")
        self.at += 1
        return self.tokens[self.at - 1]

    def peek(self, kind: str) -> bool:
        return self.at < len(self.tokens) and self.tokens[self.at].kind == kind

    def expr(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail("nesting too deep")
        head = self.take("word").text
        self.take("(")
        if head == "Symbol":
            self.symbol()
        elif head == "Integer":
            digits = self.take("int").text
            if len(digits.lstrip("-")) > MAX_INT_DIGITS:
                raise self.fail("integer too long")
        elif head in NARY or head == "FloorDiv":
            self.expr(depth + 1)
            count = 1
            while self.peek(","):
                self.take(",")
                self.expr(depth + 1)
                count += 1
            if count < 2 or (head == "FloorDiv" and count != 2):
                raise self.fail(f"{head} with {count} operands")
        else:
            raise self.fail(f"{head!r} is not an allowed function")
        self.take(")")

    def symbol(self) -> None:
        self.symbols.add(self.take("str").text)
        flags: set[str] = set()
        while self.peek(","):
            self.take(",")
            flag = self.take("word").text
            self.take("=")
            if flag not in FLAGS or flag in flags or self.take("word").text != "True":
                raise self.fail(f"symbol assumption {flag!r}")
            flags.add(flag)
        if "integer" not in flags:
            raise self.fail("a symbol that is not an integer")


def check_expression(text: str) -> frozenset[str]:
    """Parse one shape expression with the grammar above; return the symbols it names.

    Raises:
        GraphRefused: anything outside the grammar (nothing is evaluated).
    """
    if not isinstance(text, str) or len(text) > MAX_EXPR_CHARS:
        raise GraphRefused("shape expression too long or not text")
    parser = _Parser(text)
    parser.expr(0)
    if parser.at != len(parser.tokens):
        raise parser.fail("trailing text")
    return frozenset(parser.symbols)
