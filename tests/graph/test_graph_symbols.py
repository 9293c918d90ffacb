"""The shape-expression grammar: exactly the srepr forms of integer size arithmetic."""

from __future__ import annotations

import pytest
import sympy
from torch.utils._sympy.functions import FloorDiv

from computeshare_desktop.graph import GraphRefused
from computeshare_desktop.graph.symbols import Expression, check_expression, is_symbol_name

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
    assert check_expression(text).symbols == symbols


def test_whatever_srepr_writes_for_size_arithmetic_is_accepted():
    """The grammar follows sympy's own printer, not a guess of it."""
    s = sympy.Symbol("s77", positive=True, integer=True)
    t = sympy.Symbol("s5", positive=True, integer=True)
    for expr in (s, 2 * s, s + 1, s - t, 16 * s + t, FloorDiv(s, 2), sympy.Max(s, t),
                 sympy.Min(2 * s, t + 3), FloorDiv(16 * s, 4) + 1, 2 * (s + 1) * 3):
        assert {str(x) for x in expr.free_symbols} == \
            check_expression(sympy.srepr(expr)).symbols


def test_an_expression_counts_its_operators():
    assert check_expression(f"Add(Mul(Integer(2016), {S}), Integer(32))") == \
        Expression(frozenset({"s77"}), 2, 0)
    assert check_expression(f"Max(FloorDiv({S}, Integer(2)), Integer(1))").branching == 2


@pytest.mark.parametrize("text, why", [
    # 585 characters: torch's loader ran for over 90 s (sympy expands the product)
    ("Mul(" + ", ".join(f"Add(Symbol('s{2 * i}', integer=True), Symbol('s{2 * i + 1}', "
                        f"integer=True))" for i in range(10)) + ")", "operators"),
    ("Mul(" + ", ".join([f"Add({S}, Integer(1))"] * 2) + ")", "two non-constant"),
    (f"Mul({S}, {S})", "two non-constant"),
    ("Max(" + ", ".join(f"Add({S}, Integer({i}))" for i in range(9)) + ")", "operators"),
    ("Mul(" + ", ".join([S] * 40) + ")", "more than 8 operands"),
    ("Mul(" + ", ".join([S] * 3) + ")", "two non-constant"),
])
def test_expressions_that_make_sympy_work_for_minutes_are_refused(text, why):
    with pytest.raises(GraphRefused, match=why):
        check_expression(text)


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
