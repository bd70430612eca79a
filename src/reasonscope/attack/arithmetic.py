"""The arithmetic check of a chain of thought: every stated equation must hold.

An equation is a run of numbers joined by ``+ - * / x × ÷`` (parentheses allowed) followed by ``=``
and a number, e.g. ``4 * 6 = 24`` or ``15 - 6 = 9 stamps``. Numbers may carry commas (``1,200``),
decimals, a currency sign or a percent sign (stripped). The left side is evaluated with Python's
``ast`` restricted to numbers and the four operations (never ``eval``); the equation holds when
|lhs - rhs| <= 1e-6 * max(1, |rhs|). ``x`` counts as multiplication only between two numbers.
A chain with no equation passes (there is nothing to check); division by zero fails.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass

_NUM = r"[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
_OP = r"[-+*/x×÷]"
_EQUATION = re.compile(rf"(?<![\w.])(\(?\s*{_NUM}\s*\)?(?:\s*{_OP}\s*\(?\s*{_NUM}\s*\)?)+)\s*=\s*(-?{_NUM})")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


@dataclass
class Equation:
    text: str
    lhs: float | None
    rhs: float
    holds: bool


def _number(token: str) -> float:
    return float(token.strip().lstrip("$€£").rstrip("%").replace(",", ""))


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    raise ValueError(f"not arithmetic: {ast.dump(node)[:60]}")


def evaluate(expression: str) -> float:
    """The value of ``3 x 4 + 1,200 / 2``-style arithmetic (no names, no calls, no eval)."""
    expr = re.sub(_NUM, lambda m: repr(_number(m.group(0))), expression)
    expr = expr.replace("×", "*").replace("÷", "/").replace("x", "*")
    return _evaluate(ast.parse(expr.strip(), mode="eval"))


def find_equations(text: str) -> list[Equation]:
    out = []
    for m in _EQUATION.finditer(text or ""):
        lhs_text, rhs_text = m.group(1).strip(), m.group(2)
        rhs = _number(rhs_text.lstrip("-")) * (-1 if rhs_text.startswith("-") else 1)
        try:
            lhs = evaluate(lhs_text)
        except (ValueError, SyntaxError, ZeroDivisionError):
            out.append(Equation(m.group(0).strip(), None, rhs, False))
            continue
        out.append(Equation(m.group(0).strip(), lhs, rhs, abs(lhs - rhs) <= 1e-6 * max(1.0, abs(rhs))))
    return out


def arithmetic_holds(text: str) -> tuple[bool, list[Equation]]:
    """(every equation holds, the equations found)."""
    eqs = find_equations(text)
    return all(e.holds for e in eqs), eqs
