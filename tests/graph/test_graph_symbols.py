"""The shape-expression grammar: exactly the srepr forms of integer size arithmetic."""

from __future__ import annotations

import pytest
import sympy
from torch.utils._sympy.functions import FloorDiv

from computeshare_desktop.graph import GraphRefused
from computeshare_desktop.graph.symbols import check_expression, is_symbol_name

S = "Symbol('s77', positive=True, integer=True)"


@pytest.mark.parametrize("text, symbols", [
    (S, {"s77"}),
    (f"Mul(Integer(2), {S})", {"s77"}),
    (f"Add({S}, Integer(-1))", {"s77"}),
    (f"FloorDiv({S}, Integer(2))", {"s77"}),
    (f"Max(Integer(1), Mul(Integer(3), {S}))", {"s77"}),
    (f"Min({S}, Symbol('s3', integer=True, nonnegative=True))", {"s77", "s3"}),
    ("Integer(-9223372036854775808)", set()),
])
def test_the_forms_the_serializer_writes_are_accepted(text, symbols):
    assert check_expression(text) == symbols


def test_whatever_srepr_writes_for_size_arithmetic_is_accepted():
    """The grammar follows sympy's own printer, not a guess of it."""
    s = sympy.Symbol("s77", positive=True, integer=True)
    t = sympy.Symbol("s5", positive=True, integer=True)
    for expr in (s, 2 * s, s + 1, s - t, 16 * s * t, FloorDiv(s, 2), sympy.Max(s, t),
                 sympy.Min(2 * s, t + 3), FloorDiv(s * t, 4) + 1):
        assert {str(x) for x in expr.free_symbols} == check_expression(sympy.srepr(expr))


@pytest.mark.parametrize("text", [
    "", "Symbol", "Symbol()", "Symbol('s77')", "Symbol('s77', positive=True)",
    "Symbol('s77', integer=False)", "Symbol('s77', integer=True, integer=True)",
    "Symbol('u0', integer=True)", "Symbol('x', integer=True)", "Symbol('s', integer=True)",
    "Symbol('s77', integer=True, commutative=True)", "Symbol('s77', integer=1)",
    f"Mul({S})", f"FloorDiv({S}, Integer(2), Integer(3))", f"Add({S},)", f"Add({S}",
    f"{S})", f"Add({S}, Integer(1)) Integer(2)", f"Pow({S}, Integer(2))",
    f"Mod({S}, Integer(2))", "Integer(1.5)", "Integer(--1)", "Integer(-)", "Integer(1e9)",
    "Integer(" + "9" * 20 + ")", "Float('1.0')", "Rational(1, 2)", "Integer(0x10)",
    "Integer(1)\nInteger(2)", "Integer(1)\t", "Integer(١)", "Ｉnteger(1)",
    f"Add({S}, Symbol('s77', positive=True, integer=True).__class__)",
    "__import__('os').system('true')", "Symbol('s77', integer=True)._assumptions",
    "lambda: 0", "Integer(1) if True else 0", "[Integer(1)]", "Integer((1))",
    "Add(" * 40 + S + ", Integer(1))" * 40, "Integer(1)" + " " * 3000,
])
def test_anything_else_is_refused(text):
    with pytest.raises(GraphRefused, match="shape expression"):
        check_expression(text)


def test_symbol_names():
    assert is_symbol_name("s0") and is_symbol_name("s77")
    assert not any(is_symbol_name(n) for n in ("s", "u0", "s-1", "s٣", "S1", "s1a", "s" * 11))
