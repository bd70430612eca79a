r"""The arithmetic check of a chain of thought: every stated equation that can be read must hold.

What is read
------------
The text is split into tokens: numbers, the operators ``+ - * / ^`` (also ``− – × ÷ · ** \times
\cdot \div``, ``x`` between two operands, ``of`` after a percent or a fraction), parentheses,
``=``, words and other characters. A *chain* is a maximal run of number, operator, parenthesis and
``=`` tokens on one line; its ``=`` signs split it into sides, ``s0 = s1 = ... = sn``, and each
``=`` is one *link* ``s_i = s_{i+1}``. A side is parsed whole by a small grammar (numbers,
parentheses, unary minus, ``+ - * /``, ``^`` with a whole exponent up to 100) and evaluated exactly
with :class:`fractions.Fraction` (no ``eval``, no floating-point error).

Numbers: ``1,200`` (commas only in groups of three), ``3.5``, ``.5``, a currency sign ``$ € £ ¥``
before the number, ``50%`` / ``50 percent`` = 0.5, a mixed number ``1 1/2`` = 1.5. A number glued to
letters (``5kg``, ``3rd``, ``X2``), written with a leading zero (``0900``, a time or a code) or
joined to digits by ``:`` or ``,`` (``2:30``, ``1,2``) is not read as a number.

What is skipped (counted, never called false)
---------------------------------------------
A link is checked only when both its sides parse. It is skipped, with the reason, when a side is
empty (``Total = 5``), is a *fragment* of a longer expression (it starts or ends with a binary
operator, as ``4/5 = 240`` inside ``x * 4/5 = 240``; it has an unmatched parenthesis; it borders an
arithmetic word such as ``times``, ``by``, ``of`` or ``x`` that is not between two numbers, or a
magnitude word such as ``million``), is a lone number right after a word on the left (``3 times 4
= 12``, ``half of 10 = 5``: the left side may be a verbal expression), does not parse (``1 2 = 3``,
``19(2) = 38``), or when the whole chain has no operator (``Day 1 = 2 hours``).

When a link holds
-----------------
The two sides A and B agree at the precision the text states: |A - B| <= tol, where a side that is a
single stated number with d decimals contributes half a unit of its last place, 0.5 * 10^-d (scaled
by 1/100 for a percent), and tol is the larger of the two (0 when both sides are expressions). So
``100 / 3 = 33.33`` and ``2/3 = 0.67`` hold, ``100 / 6 = 16`` and ``3 * 4 = 13`` do not. Two more
readings are accepted, each stated in the equation's ``reason``:

* percent points: when only one side holds a percent sign, the percent may be read as a plain number
  of points (``9 / 27 * 100 = 33.33%``);
* running computation: ``a = n op ... = c`` where the middle side starts with the value of the left
  side (``20 * 2 = 40 + 5 = 45``): the link holds when ``a`` equals ``n`` (and the next link is
  checked as usual).

Division by zero makes a link false.

Calculator annotations
----------------------
GSM8K-style worked solutions carry calculator annotations ``<<48/2=24>>`` that models imitate. Both
are checked: each annotation's content is a chain of its own (source ``annotation``), and the text
with the annotations removed is checked as prose (source ``text``), so ``48/2 = <<48/2=24>>25`` fails
on the prose link ``48/2 = 25``.

Validation on the 7,473 GSM8K training solutions (correct by construction; see the attack docs
page and ``benchmarks/arithmetic_gsm8k.py``): the checker flags a false equation in 0.5% or fewer of
them, and it still flags most solutions in which one stated result was changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .arithmetic_parse import _Side
from .arithmetic_tokens import (
    _ANNOTATION,
    _ARITH_WORDS,
    _BINARY_ONLY,
    _DIVIDING_VERBS,
    _FRACTION_WORDS,
    _MAGNITUDES,
    _UNIT_KINDS,
    _Tok,
    _tokens,
    _Unreadable,
)


@dataclass(frozen=True)
class Equation:
    """One link ``lhs = rhs`` of a chain.

    ``holds`` is True or False for a checked link and None for a skipped one; ``reason`` says why
    it was skipped, why it is false (``division by zero``) or which reading made it hold (``percent
    points``, ``running computation``; empty for a plain match). ``lhs`` and ``rhs`` are the values
    of the two sides (None when a side was not evaluated).
    """

    text: str
    lhs: float | None
    rhs: float | None
    holds: bool | None
    reason: str = ""
    source: str = "text"  # text | annotation


@dataclass
class ArithmeticCheck:
    """Every link found in a text, checked or skipped."""

    equations: list[Equation] = field(default_factory=list)

    @property
    def checked(self) -> list[Equation]:
        """The links that were checked (``holds`` True or False)."""
        return [e for e in self.equations if e.holds is not None]

    @property
    def false(self) -> list[Equation]:
        """The checked links that do not hold."""
        return [e for e in self.equations if e.holds is False]

    @property
    def skipped(self) -> list[Equation]:
        """The links found but not checked (``holds`` None, with a ``reason``)."""
        return [e for e in self.equations if e.holds is None]

    @property
    def passed(self) -> bool:
        """No checked link is false (a text with nothing to check passes)."""
        return not self.false

    def counts(self) -> dict[str, int]:
        """The numbers of checked, false and skipped links, as the attack table records them."""
        return {"checked": len(self.checked), "false": len(self.false), "skipped": len(self.skipped)}


_CHAIN_KINDS = ("num", "unit", "op", "lp", "rp", "eq")


def _chains(toks: list[_Tok]) -> list[tuple[int, int]]:
    """[start, end) token ranges of the runs of chain tokens holding an ``=``."""
    out, i = [], 0
    while i < len(toks):
        if toks[i].kind not in _CHAIN_KINDS:
            i += 1
            continue
        j = i
        while j < len(toks) and toks[j].kind in _CHAIN_KINDS:
            j += 1
        if any(t.kind == "eq" for t in toks[i:j]):
            out.append((i, j))
        i = j
    return out


def _trim_parens(side: list[_Tok], *, left: bool) -> list[_Tok] | None:
    """Drop a parenthesis an equation's side leaves unmatched at its outer end.

    An opening parenthesis the left side never closes (``(20 + 5 = 25)``) or a closing one the right side
    never opened is dropped; None when the side still has an unmatched parenthesis (a fragment).
    """
    side = list(side)
    depth = sum((t.kind == "lp") - (t.kind == "rp") for t in side)
    if left:
        while depth > 0 and side and side[0].kind == "lp":
            side.pop(0)
            depth -= 1
    else:
        while depth < 0 and side and side[-1].kind == "rp":
            side.pop()
            depth += 1
    depth = 0
    for t in side:
        depth += (t.kind == "lp") - (t.kind == "rp")
        if depth < 0:
            return None
    return side if depth == 0 else None


def _word(t: _Tok | None) -> str | None:
    return t.text.lower() if t is not None and t.kind == "word" else None


def _fragment_reason(side: list[_Tok], toks: list[_Tok], start: int, end: int, *, first: bool, last: bool,
                     text: str) -> str | None:
    """Why a side cannot be taken as a whole expression, or None."""
    if not side:
        return "a side is empty"
    head, tail = side[0], side[-1]
    if head.kind == "op" and (head.text in _BINARY_ONLY or head.text == "+"):
        return "fragment: a side starts with an operator"
    if tail.kind == "op":
        return "fragment: a side ends with an operator"
    if first and head.kind == "op" and head.text == "-":
        unary = head.end == side[1].start if len(side) > 1 else False
        glued_left = head.start > 0 and (text[head.start - 1].isalnum())
        if not unary or glued_left:
            return "fragment: a side starts with a minus sign that belongs to something before it"
    if first and head.start > 0 and (text[head.start - 1].isalnum() or text[head.start - 1] in "_."):
        return "fragment: the left side is glued to the text before it"
    if last and tail.end < len(text) and text[tail.end].isalnum():
        return "fragment: the right side is glued to the text after it"
    if not first and any(t.word == "of" for t in side):
        return "fragment: 'of' right of an '=' names what the number counts"
    before = toks[start - 1] if first and start > 0 else None
    after = toks[end] if last and end < len(toks) else None
    w = _word(before)
    if w is not None:
        two_before = toks[start - 2] if start > 1 else None
        if w in _ARITH_WORDS - {"of", "by", "into"} or (w == "of" and two_before is not None and (
                two_before.kind == "num" or _word(two_before) in _FRACTION_WORDS)) or (
                w in ("by", "into") and two_before is not None and (
                two_before.kind == "num" or _word(two_before) in _DIVIDING_VERBS)):
            return f"fragment: the left side follows the word {before.text!r}"
        if w == "and" and two_before is not None and two_before.kind == "num":
            return "fragment: the left side continues a number before 'and' (``1 and 1/4``)"
        if sum(t.kind == "num" for t in side) == 1 and all(t.kind in ("num", "unit") for t in side):
            return "a lone number after words (the left side may be a verbal expression)"
    if first and sum(t.kind == "num" for t in side) == 1 and all(t.kind in ("num", "unit") for t in side) \
            and any(t.kind == "unit" for t in side):
        return "a lone quantity on the left names what is computed (``8 batches = 5.5 * 8``)"
    w = _word(after)
    if w in _MAGNITUDES:
        return f"fragment: the right side is followed by {after.text!r}"
    if w in _ARITH_WORDS - {"of"}:  # ``= 6 of those 20``: ``of`` names what the number counts
        following = toks[end + 1:end + 4]
        if any(t.kind == "num" for t in following):
            return f"fragment: the right side continues with {after.text!r}"
    if w == "and" and len(toks) > end + 2 and (toks[end + 1].kind == "lp" or (
            toks[end + 1].kind == "num" and toks[end + 2].text == "/")):
        return "fragment: the right side continues as a mixed number (``16 and 2/3``)"
    return None


def _rounds_to(exact: Fraction, stated: Fraction, unit: Fraction) -> bool:
    """Whether ``stated`` is ``exact`` rounded or truncated to a multiple of ``unit``.

    Rounded to the nearest multiple (half a unit either way) or truncated toward zero to one (``50 / 3 = 16``,
    ``15 / 90 * 100 = 16.66``).
    """
    return abs(exact - stated) <= unit / 2 or int(exact / unit) * unit == stated


def _close(a: _Side, b: _Side, va: Fraction, vb: Fraction, scale: Fraction) -> bool:
    """Whether A and B agree at the precision the text states.

    Exactly when both sides are expressions, else the stated side must be the other side rounded or truncated
    at its last place (either way round when both sides are stated numbers).
    """
    if va == vb:
        return True
    ua, ub = a.last_place(scale), b.last_place(scale)
    return (ub is not None and _rounds_to(va, vb, ub)) or (ua is not None and _rounds_to(vb, va, ua))


def _agree(a: _Side, b: _Side) -> tuple[bool, str, Fraction, Fraction]:
    """Check one link A = B: (A and B agree, the reading that made them agree, value of A, value of B).

    See the module docstring; the values are those of the plain reading (percent = 1/100, unspaced fractions
    whole).
    """
    hundredth, one = Fraction(1, 100), Fraction(1)
    va, vb = a.value(hundredth), b.value(hundredth)
    if _close(a, b, va, vb, hundredth):
        return True, "", va, vb
    if (a.tight_fraction or b.tight_fraction) and _close(a, b, a.value(hundredth, tight=False),
                                                        b.value(hundredth, tight=False), hundredth):
        return True, "unspaced fraction read left to right", va, vb
    if a.percent != b.percent and _close(a, b, a.value(one), b.value(one), one):
        return True, "percent points", va, vb
    if "cent" in b.units and a.money and not b.money and _close(a, b, 100 * va, vb, hundredth):
        return True, "cents", va, vb
    return False, "", va, vb


def _running(a: _Side, b: _Side) -> bool:
    """``a = n op ...``: the right side starts with a number that equals ``a`` (at its precision)."""
    ops = [k for k, t in enumerate(b.toks) if t.kind == "op"]
    if not ops or b.toks[0].kind != "num" or any(t.kind != "unit" for t in b.toks[1:ops[0]]):
        return False
    head = _Side(b.toks[:ops[0]], b.text)
    try:
        return _agree(a, head)[0]
    except (_Unreadable, ZeroDivisionError, RecursionError):
        return False


def _check_chain(toks: list[_Tok], start: int, end: int, text: str, source: str) -> list[Equation]:
    chain = toks[start:end]
    raw_sides: list[list[_Tok]] = [[]]
    for t in chain:
        if t.kind == "eq":
            raw_sides.append([])
        else:
            raw_sides[-1].append(t)
    n = len(raw_sides)
    sides: list[_Side | None] = []
    why_not: list[str] = []
    for k, raw in enumerate(raw_sides):
        trimmed = raw
        if k == 0:
            trimmed = _trim_parens(raw, left=True)
        elif k == n - 1:
            trimmed = _trim_parens(raw, left=False)
        elif raw:
            trimmed = _trim_parens(raw, left=True)
        if trimmed is None:
            sides.append(None)
            why_not.append("fragment: unmatched parenthesis")
            continue
        reason = _fragment_reason(trimmed, toks, start, end, first=k == 0, last=k == n - 1, text=text)
        sides.append(None if reason else _Side(trimmed, _span(trimmed, text)))
        why_not.append(reason or "")
    has_op = any(s is not None and s.has_op for s in sides)
    out = []
    for k in range(n - 1):
        a, b = sides[k], sides[k + 1]
        label = (_span(raw_sides[k], text) + " = " + _span(raw_sides[k + 1], text)).strip()
        if a is None or b is None:
            out.append(Equation(label, None, None, None, why_not[k] or why_not[k + 1], source))
            continue
        if not has_op:
            out.append(Equation(label, None, None, None, "no operation in the chain", source))
            continue
        out.append(_check_link(a, b, label, source))
    return out


def _units_differ(a: _Side, b: _Side) -> bool:
    """Whether the link names two different units of one kind: a conversion the check does not make.

    For example ``2 hours + 30 minutes``, ``2 hours = 120 minutes``, ``$1 / 2 = 50 cents``.
    """
    if a.rate or b.rate:
        return False  # ``6 hours/week * 6 weeks = 36 hours``: a rate carries the conversion
    units = a.units | b.units
    return any(u != v and _UNIT_KINDS[u] == _UNIT_KINDS[v] for u in units for v in units)


def _check_link(a: _Side, b: _Side, label: str, source: str) -> Equation:
    try:
        ok, how, va, vb = _agree(a, b)
    except ZeroDivisionError:
        return Equation(label, None, None, False, "division by zero", source)
    except _Unreadable as e:
        return Equation(label, None, None, None, f"does not parse: {e}", source)
    except RecursionError:
        return Equation(label, None, None, None, "does not parse: nested too deeply", source)
    if not ok and _running(a, b):
        ok, how = True, "running computation"
    if not ok and _units_differ(a, b):
        return Equation(label, _float(va), _float(vb), None, "different units of one kind (not converted)", source)
    return Equation(label, _float(va), _float(vb), ok, how, source)


def _float(v: Fraction) -> float:
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _span(toks: list[_Tok], text: str) -> str:
    return text[toks[0].start:toks[-1].end] if toks else ""


def find_equations(text: str, *, source: str = "text") -> list[Equation]:
    """Every link of every chain in ``text`` (annotations are not treated specially here)."""
    out = []
    for line in (text or "").split("\n"):  # a chain never spans lines
        if "=" in line:
            toks = _tokens(line)
            out += [e for start, end in _chains(toks) for e in _check_chain(toks, start, end, line, source)]
    return out


def check_arithmetic(text: str) -> ArithmeticCheck:
    """Check the prose (calculator annotations removed) and each ``<<...>>`` annotation on its own."""
    text = text or ""
    equations = []
    for m in _ANNOTATION.finditer(text):
        equations += find_equations(m.group(1), source="annotation")
    equations += find_equations(_ANNOTATION.sub("", text))
    return ArithmeticCheck(equations)


def stated_numbers(text: str) -> list[Fraction]:
    """The values of the numbers ``text`` states in digits, in order, read as the check reads them.

    Calculator annotations are read too. A number glued to letters (``5kg``, ``3rd``), a time or a code
    (``2:30``, ``0900``) is not a quantity and is left out; a sign is an operator, so values are
    non-negative; a percent keeps its written value (``50%`` gives 50).

    Examples:
        >>> [int(v) for v in stated_numbers("3 + 4 = 7 apples on day 2, the 3rd")]
        [3, 4, 7, 2]
    """
    return [t.value for t in _tokens(text or "") if t.kind == "num"]


def evaluate(expression: str) -> float:
    """The value of one arithmetic expression (``3 x 4 + 1,200 / 2``, ``50% * 20``).

    No names, no calls, no ``eval``.

    Raises:
        ValueError: The text does not parse as a whole expression.
    """
    toks = _tokens(expression)
    if not toks or any(t.kind not in ("num", "op", "lp", "rp") for t in toks):
        raise ValueError(f"not an arithmetic expression: {expression!r}")
    try:
        return _float(_Side(toks, expression).value(Fraction(1, 100)))
    except _Unreadable as e:
        raise ValueError(f"not an arithmetic expression: {expression!r} ({e})") from None
