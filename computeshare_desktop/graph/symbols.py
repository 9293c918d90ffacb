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
                a Mul has at most one operand that is not an Integer
    floordiv := "FloorDiv" "(" expr "," expr ")"

with at most ``MAX_OPERATORS`` operators (nary and floordiv) in one expression, each of at
most ``MAX_OPERANDS`` operands. A
hand-written tokenizer and recursive-descent parser, bounded in length and depth; any other
character, word or shape is refused.

The bounds are what keeps sympy's work small: torch's deserializer re-parses every
sub-expression, and sympy expands products of sums and compares the operands of Max and
Min, so ``Mul`` of 10 ``Add`` s of distinct symbols ran for over 90 s and ``Max`` of 75
symbols for 10 s. A product with one non-constant factor stays linear in the symbols; a
real export needs at most two operators per expression (``Add(Mul(Integer(2016), s77),
Integer(32))``). The graph's own rules (``checks.py``) allow only the batch symbol and cap
the operators of the whole graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from computeshare_desktop.graph.base import MAX_EXPR_CHARS, GraphRefused

FLAGS = frozenset({"positive", "integer", "nonnegative"})
NARY = frozenset({"Add", "Mul", "Max", "Min"})
# sympy compares the operands of these (assumption queries): ~10 ms each in torch's loader
BRANCHING = frozenset({"Max", "Min", "FloorDiv"})
MAX_DEPTH = 32
MAX_OPERATORS = 8  # in one expression
MAX_OPERANDS = 8  # of one operator (a real export writes 2)
MAX_INT_DIGITS = 19  # int64


@dataclass(frozen=True, slots=True)
class Expression:
    """What one checked expression names and costs."""

    symbols: frozenset[str]
    operators: int  # Add, Mul, Max, Min and FloorDiv, each occurrence
    branching: int  # Max, Min and FloorDiv among them


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
        self.operators = 0
        self.branching = 0

    def fail(self, what: str) -> GraphRefused:
        return GraphRefused(f"shape expression: {what} in {self.text[:80]!r}")

    def take(self, kind: str) -> Token:
        if self.at >= len(self.tokens) or self.tokens[self.at].kind != kind:
            raise self.fail(f"expected {kind}")
        self.at += 1
        return self.tokens[self.at - 1]

    def peek(self, kind: str) -> bool:
        return self.at < len(self.tokens) and self.tokens[self.at].kind == kind

    def expr(self, depth: int) -> str:
        """Parse one expression; return its head (``Symbol``, ``Integer``, ``Add`` ...)."""
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
            self.operator(head, depth)
        else:
            raise self.fail(f"{head!r} is not an allowed function")
        self.take(")")
        return head

    def operator(self, head: str, depth: int) -> None:
        self.operators += 1
        self.branching += head in BRANCHING
        if self.operators > MAX_OPERATORS:
            raise self.fail(f"more than {MAX_OPERATORS} operators")
        heads = [self.expr(depth + 1)]
        while self.peek(","):
            self.take(",")
            heads.append(self.expr(depth + 1))
            if len(heads) > MAX_OPERANDS:
                raise self.fail(f"{head} with more than {MAX_OPERANDS} operands")
        if len(heads) < 2 or (head == "FloorDiv" and len(heads) != 2):
            raise self.fail(f"{head} with {len(heads)} operands")
        if head == "Mul" and sum(h != "Integer" for h in heads) > 1:
            raise self.fail("a product of two non-constant factors")

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


def check_expression(text: str) -> Expression:
    """Parse one shape expression with the grammar above; say what it names and costs.

    Raises:
        GraphRefused: anything outside the grammar (nothing is evaluated).
    """
    if not isinstance(text, str) or len(text) > MAX_EXPR_CHARS:
        raise GraphRefused("shape expression too long or not text")
    parser = _Parser(text)
    parser.expr(0)
    if parser.at != len(parser.tokens):
        raise parser.fail("trailing text")
    return Expression(frozenset(parser.symbols), parser.operators, parser.branching)
