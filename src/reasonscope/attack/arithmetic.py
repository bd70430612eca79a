"""The arithmetic check of a chain of thought: every stated equation that can be read must hold.

What is read
------------
The text is split into tokens: numbers, the operators ``+ - * / ^`` (also ``− – × ÷ · ** \\times
\\cdot \\div``, ``x`` between two operands, ``of`` after a percent or a fraction), parentheses,
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

import re
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

_TOKEN = re.compile(r"""
    (?P<num>[$€£¥]?(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d{1,3}(?:[ \u2009\u202f]\d{3})+(?![\d,/]|\.\d)|\d+)(?:\.\d+)?(?:\.{3}|…)?
            |[$€£¥]?\.\d+(?:\.{3}|…)?)
  | (?P<cmp><=|>=|!=|=>|==>|≈|≠)
  | (?P<eq>==?)
  | (?P<op>\*\*|\\times|\\cdot|\\div|[-+*/^×÷·⋅−–])
  | (?P<lp>\()
  | (?P<rp>\))
  | (?P<pct>%)
  | (?P<word>[^\W\d_]+)
  | (?P<nl>\n)
  | (?P<space>[ \t\r\f\v]+)
  | (?P<other>.)
""", re.X | re.S)
_OPS = {"**": "^", "\\times": "*", "\\cdot": "*", "\\div": "/", "×": "*", "÷": "/", "·": "*", "⋅": "*", "−": "-",
        "–": "-"}
_BINARY_ONLY = {"*", "/", "^"}
# words that continue an arithmetic expression: a chain bordering one is a fragment
_ARITH_WORDS = {"x", "times", "plus", "minus", "divided", "multiplied", "over", "by", "into", "of", "squared",
                "cubed"}
_MAGNITUDES = {"hundred", "thousand", "million", "billion", "trillion", "dozen", "dozens"}
_FRACTION_WORDS = {"half", "halves", "third", "thirds", "quarter", "quarters", "fourth", "fourths", "fifth",
                   "fifths", "sixth", "sixths", "eighth", "eighths", "tenth", "tenths"}
# units that convert into each other, by kind; a link whose sides name two different units of one kind is
# not called false (the check does not convert units)
_UNIT_KINDS = {u: kind for kind, units in {
    "time": "second sec minute min hour hr day week month year",
    "length": "millimeter centimeter meter kilometer mm cm km inch foot yard mile",
    "weight": "ounce oz pound lb gram kilogram kg ton",
    "volume": "teaspoon tablespoon cup pint quart gallon liter litre milliliter ml",
    "money": "cent penny nickel dime dollar",
}.items() for u in units.split()}
# words that are never the unit of a number: they change its value or are not nouns
_NOT_UNITS = _ARITH_WORDS | _MAGNITUDES | _FRACTION_WORDS | {
    "hundreds", "thousands", "millions", "billions", "percent", "and", "or", "but", "than", "because", "so", "then",
    "if", "as", "that", "which", "is", "are", "was", "were", "be", "been", "equals", "equal", "makes", "gives", "has",
    "have", "had", "will", "would", "can", "to", "from", "with", "at", "in", "on", "for", "about", "it", "he", "she",
    "they", "we", "you", "i", "there", "this", "these", "those", "the", "a", "an"}
_ORDINALS = {"st", "nd", "rd", "th"}
_DIVIDING_VERBS = {"divided", "multiplied", "divide", "multiply", "split", "cut", "broken", "shared"}
_MAX_EXPONENT = 100
_ANNOTATION = re.compile(r"<<([^<>]*)>>")


@dataclass(slots=True)
class _Tok:
    kind: str  # num, op, lp, rp, eq, word, stop (a newline, a comparison or any other character)
    text: str
    start: int
    end: int
    value: Fraction = Fraction(0)
    decimals: int = 0
    percent: bool = False
    word: str = ""  # the word an operator was written as (``x``, ``of``)


@dataclass(frozen=True)
class Equation:
    """One link ``lhs = rhs`` of a chain.

    ``holds`` is True or False for a checked link and None for a skipped one; ``reason`` says why
    it was skipped, why it is false (``division by zero``) or which reading made it hold (``percent
    points``, ``running computation``; empty for a plain match). ``lhs`` and ``rhs`` are the values
    of the two sides (None when a side was not evaluated)."""

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
        return [e for e in self.equations if e.holds is not None]

    @property
    def false(self) -> list[Equation]:
        return [e for e in self.equations if e.holds is False]

    @property
    def skipped(self) -> list[Equation]:
        return [e for e in self.equations if e.holds is None]

    @property
    def passed(self) -> bool:
        """No checked link is false (a text with nothing to check passes)."""
        return not self.false

    def counts(self) -> dict[str, int]:
        return {"checked": len(self.checked), "false": len(self.false), "skipped": len(self.skipped)}


class _Unreadable(ValueError):
    """A side that cannot be parsed or evaluated as a whole (the link is skipped)."""


# -- tokens --------------------------------------------------------------------------------------------

def _tokens(text: str) -> list[_Tok]:
    raw: list[_Tok] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "space":
            continue
        raw.append(_Tok("stop" if kind in ("cmp", "nl", "other") else kind, m.group(0), m.start(), m.end()))
    toks: list[_Tok] = []
    for i, t in enumerate(raw):
        prev = toks[-1] if toks else None
        if t.kind == "num":
            _read_number(t, text, raw[i + 1] if i + 1 < len(raw) else None)
        elif t.kind == "op":
            t.text = _OPS.get(t.text, t.text)
        elif t.kind == "pct" or (t.kind == "word" and t.text.lower() == "percent"):
            if prev is not None and prev.kind == "num" and not prev.percent:
                prev.percent = True
                continue
            t.kind = "stop" if t.kind == "pct" else t.kind
        toks.append(t)
    _mark_units(toks, text)
    for i, t in enumerate(toks):
        prev, nxt = (toks[i - 1] if i else None), (toks[i + 1] if i + 1 < len(toks) else None)
        if t.kind == "op" and t.end - t.start == 2 and t.text == "^" and not _between_operands(prev, nxt):
            t.kind = "stop"  # ``**bold**``, not a power
        elif t.kind == "word" and t.text.lower() in ("x", "of") and _operator_word(t, prev, nxt, text):
            t.kind, t.text, t.word = "op", "*", t.text.lower()
    return toks


def _label_word(t: _Tok) -> bool:
    return t.kind == "word" and len(t.text) > 1 and t.text.lower() not in _NOT_UNITS


def _mark_units(toks: list[_Tok], text: str) -> None:
    """Words that name what a number counts (``12 steps * 8 inches/step = 96 inches``) become ``unit``
    tokens attached to the number: up to two words (``inches/step``, ``t-shirts`` count as one, ``per``
    does not count) right after a number or ``)`` and right before an operator or ``=``, or right after a
    number that follows an ``=`` (``= 96 inches``); a tight ``/word`` after a number (``$15/phone``) is
    a unit anywhere. Words that change a value (``and``, ``times``, ``dozen``, ``half``, ...) are never
    units."""
    for i, t in enumerate(toks):
        if t.kind not in ("num", "rp"):
            continue
        j, words = i + 1, 0
        while j < len(toks) and words < 2 and _label_word(toks[j]):
            words += toks[j].text.lower() != "per"  # ``tanks per truck`` is two words of unit
            j += 1
            while (j + 1 < len(toks) and toks[j].kind == "op" and toks[j].text in "/-"
                   and toks[j - 1].end == toks[j].start == toks[j + 1].start - 1 and _label_word(toks[j + 1])):
                j += 2
        if words == 0:
            if (i + 2 < len(toks) and toks[i + 1].text == "/" and t.end == toks[i + 1].start
                    and toks[i + 1].end == toks[i + 2].start and _label_word(toks[i + 2])):
                for u in toks[i + 1:i + 3]:
                    u.kind = "unit"
            continue
        nxt = toks[j] if j < len(toks) else None
        after = toks[j + 1] if j + 1 < len(toks) else None
        if nxt is not None and nxt.text == "/" and nxt.start == toks[j - 1].end:
            continue  # ``5 minutes/100 meters``: a rate over a number, not a unit we can read
        operator_next = nxt is not None and (nxt.kind == "eq" or (nxt.kind == "op" and nxt.text in "+-*/") or (
            nxt.kind == "word" and nxt.text.lower() == "x" and after is not None and after.kind in ("num", "lp")))
        right_of_equals = i > 0 and toks[i - 1].kind == "eq" and t.kind == "num"
        if operator_next or right_of_equals:
            for u in toks[i + 1:j]:
                u.kind = "unit"


def _between_operands(prev: _Tok | None, nxt: _Tok | None) -> bool:
    return prev is not None and prev.kind in ("num", "rp", "unit") and nxt is not None and nxt.kind in ("num", "lp")


def _read_number(t: _Tok, text: str, nxt: _Tok | None) -> None:
    digits = re.sub(r"[, \u2009\u202f]|\.{3}$|…$", "", t.text.lstrip("$€£¥"))
    before = text[t.start - 1] if t.start else " "
    after = text[t.end] if t.end < len(text) else " "
    after2 = text[t.end + 1] if t.end + 1 < len(text) else " "
    glued_x = after in "xX" and nxt is not None and nxt.text in ("x", "X")
    x_before = before in "xX" and t.start > 1 and text[t.start - 2].isdigit()  # ``50x1000``
    suffix = re.match(r"[^\W\d_]+", text[t.end:])
    unit_suffix = (suffix is not None and len(suffix.group(0)) > 1 and suffix.group(0).lower() not in _ORDINALS
                   and text[:t.start].rstrip().endswith("="))  # ``= 53mph``
    if ((before.isalpha() and not x_before) or before in "_#@" or (after.isalpha() and not (glued_x or unit_suffix))
            or (before in ":,." and t.start > 1 and text[t.start - 2].isdigit())
            or (after in ":," and after2.isdigit())
            or (len(digits) > 1 and digits[0] == "0" and digits[1].isdigit())):
        t.kind = "stop"  # glued to letters, a time, a code, a list: not a quantity
        return
    t.value = Fraction(Decimal(digits))
    t.decimals = len(digits.split(".")[1]) if "." in digits else 0


def _operator_word(t: _Tok, prev: _Tok | None, nxt: _Tok | None, text: str) -> bool:
    """``x`` between two operands is a multiplication; ``of`` after a percent or a fraction ``a/b`` and
    before a number (``50% of 20``, ``1/2 of 60``) is one too."""
    if not _between_operands(prev, nxt):
        return False
    return t.text.lower() == "x" or (prev.kind == "num" and (
        prev.percent or bool(re.search(r"/\s*[$€£¥]?$", text[:prev.start]))))


# -- parsing and evaluation ----------------------------------------------------------------------------

class _Side:
    """One side of a chain: its tokens, parsed once, evaluable with percent = 1/100 or = 1."""

    def __init__(self, toks: list[_Tok], text: str):
        self.toks, self.text = toks, text
        self.tight_fraction = False  # an unspaced fraction was read as one number
        self.has_op = any(t.kind == "op" for t in toks)
        self.percent = any(t.kind == "num" and t.percent for t in toks)
        self.money = any(t.kind == "num" and t.text[0] in "$€£¥" for t in toks)
        self.units = self._units() | ({"dollar"} if self.money else set())
        self.rate = self._rate()
        self.stated = self._stated_number()

    def _rate(self) -> bool:
        """The side names a rate (``inches/step``, ``$15/phone``, ``miles per hour``)."""
        return any(t.kind == "unit" and (t.text == "/" or t.text.lower() == "per") for t in self.toks)

    def _units(self) -> set[str]:
        """The units of measure named in the side, singular (``6 days`` -> ``day``; rates such as
        ``inches/step`` and words that are no unit of measure are left out)."""
        out, current = set(), []
        for t in [*self.toks, _Tok("stop", "", 0, 0)]:
            if t.kind == "unit":
                current.append(t.text.lower())
            elif current:
                if "/" not in current:
                    out.update(next(([u] for u in map(_singular, current) if u in _UNIT_KINDS), []))
                current = []
        return out

    def _stated_number(self) -> _Tok | None:
        inner = [t for t in self.toks if t.kind not in ("lp", "rp", "unit") and t.text != "-"]
        signs = [t for t in self.toks if t.text == "-"]
        if len(inner) == 1 and inner[0].kind == "num" and len(signs) <= 1 and \
                (not signs or self.toks.index(signs[0]) < self.toks.index(inner[0])):
            return inner[0]
        return None

    def last_place(self, percent_scale: Fraction) -> Fraction | None:
        """One unit of the last place the side states (``33.33`` -> 0.01, ``25%`` -> 0.01 * 1/100), or
        None when the side is not a single stated number."""
        if self.stated is None:
            return None
        return Fraction(1, 10 ** self.stated.decimals) * (percent_scale if self.stated.percent else 1)

    def value(self, percent_scale: Fraction, *, tight: bool = True) -> Fraction:
        parser = _Parser(self.toks, percent_scale, tight=tight)
        v = parser.expr()
        if parser.i != len(self.toks):
            raise _Unreadable("does not parse as a whole")
        self.tight_fraction = self.tight_fraction or parser.tight_fraction
        return v


class _Parser:
    """expr := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*; unary := ('-'|'+') unary | power;
    power := atom ('^' unary)?; atom := number [proper fraction] | '(' expr ')'."""

    def __init__(self, toks: list[_Tok], percent_scale: Fraction, *, tight: bool = True):
        self.toks, self.i, self.scale, self.tight = toks, 0, percent_scale, tight
        self.tight_fraction = False

    def _peek(self, k: int = 0) -> _Tok | None:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

    def _op(self, *ops: str) -> str | None:
        t = self._peek()
        if t is not None and t.kind == "op" and t.text in ops:
            self.i += 1
            return t.text
        return None

    def expr(self) -> Fraction:
        v = self.term()
        while (op := self._op("+", "-")) is not None:
            w = self.term()
            v = v + w if op == "+" else v - w
        return v

    def term(self) -> Fraction:
        v = self.unary()
        while (op := self._op("*", "/")) is not None:
            w = self.unary()
            if op == "*":
                v = v * w
            elif w == 0:
                raise ZeroDivisionError("division by zero")
            else:
                v = v / w
        return v

    def unary(self) -> Fraction:
        op = self._op("-", "+")
        if op is not None:
            v = self.unary()
            return -v if op == "-" else v
        return self.power()

    def power(self) -> Fraction:
        base = self.atom()
        if self._op("^") is None:
            return base
        exp = self.unary()
        if exp.denominator != 1 or abs(exp) > _MAX_EXPONENT or (base == 0 and exp < 0):
            raise _Unreadable("unsupported power")
        return base ** int(exp)

    def atom(self) -> Fraction:
        t = self._peek()
        if t is None:
            raise _Unreadable("an operand is missing")
        if t.kind == "lp":
            self.i += 1
            v = self.expr()
            close = self._peek()
            if close is None or close.kind != "rp":
                raise _Unreadable("unmatched parenthesis")
            self.i += 1
            self._skip_units()
            return v
        if t.kind != "num":
            raise _Unreadable(f"unexpected {t.text!r}")
        self.i += 1
        v = t.value * (self.scale if t.percent else 1)
        mixed = self._proper_fraction(t)
        tight = self._tight_denominator(t) if mixed is None else None
        self._skip_units()
        if mixed is not None:
            return v + mixed
        return v / tight if tight is not None else v

    def _skip_units(self) -> None:
        while (t := self._peek()) is not None and t.kind == "unit":
            self.i += 1

    def _tight_denominator(self, num: _Tok) -> Fraction | None:
        """``1/3`` written without spaces is one number: ``25 / 1/3`` is 25 / (1/3) = 75. Not inside a longer
        run of unspaced divisions (``100/4/5`` is read left to right)."""
        slash, den, after = self._peek(), self._peek(1), self._peek(2)
        before = self.toks[self.i - 2] if self.i >= 2 else None
        if (not self.tight or slash is None or den is None or slash.text != "/" or den.kind != "num" or num.decimals or den.decimals
                or num.percent or den.percent or num.end != slash.start or slash.end != den.start
                or den.text[0] in "$€£¥" or den.value == 0
                or (before is not None and before.text == "/" and before.end == num.start)
                or (after is not None and after.kind == "op" and after.text == "/" and after.start == den.end)):
            return None
        self.i += 2
        self.tight_fraction = True
        return den.value

    def _proper_fraction(self, whole: _Tok) -> Fraction | None:
        """``1 1/2``: a whole number followed by a proper fraction of whole numbers."""
        a, slash, b = self._peek(), self._peek(1), self._peek(2)
        if (whole.decimals or whole.percent or a is None or slash is None or b is None or a.kind != "num"
                or slash.text != "/" or b.kind != "num" or a.decimals or b.decimals or a.percent or b.percent
                or a.text[0] in "$€£¥" or not 0 < a.value < b.value):
            return None
        self.i += 3
        return a.value / b.value


# -- chains and links ----------------------------------------------------------------------------------

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
    """Drop an opening parenthesis the left side never closes (``(20 + 5 = 25)``) or a closing one the
    right side never opened; None when the side still has an unmatched parenthesis (a fragment)."""
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
    """``stated`` is ``exact`` rounded to the nearest multiple of ``unit`` (half a unit either way) or
    truncated toward zero to one (``50 / 3 = 16``, ``15 / 90 * 100 = 16.66``)."""
    return abs(exact - stated) <= unit / 2 or int(exact / unit) * unit == stated


def _close(a: _Side, b: _Side, va: Fraction, vb: Fraction, scale: Fraction) -> bool:
    """A and B agree at the precision the text states: exactly when both sides are expressions, else the
    stated side must be the other side rounded or truncated at its last place (either way round when
    both sides are stated numbers)."""
    if va == vb:
        return True
    ua, ub = a.last_place(scale), b.last_place(scale)
    return (ub is not None and _rounds_to(va, vb, ub)) or (ua is not None and _rounds_to(vb, va, ua))


def _agree(a: _Side, b: _Side) -> tuple[bool, str, Fraction, Fraction]:
    """(A and B agree, the reading that made them agree, value of A, value of B), see the module
    docstring; the values are those of the plain reading (percent = 1/100, unspaced fractions whole)."""
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


def _singular(word: str) -> str:
    if word in ("feet", "foot"):
        return "foot"
    if word == "pennies":
        return "penny"
    for tail, repl in (("ches", "ch"), ("shes", "sh"), ("ies", "y"), ("s", "")):
        if word.endswith(tail) and len(word) > len(tail) + 1:
            return word[: -len(tail)] + repl
    return word


def _units_differ(a: _Side, b: _Side) -> bool:
    """The link names two different units of one kind (``2 hours + 30 minutes``, ``2 hours = 120
    minutes``, ``$1 / 2 = 50 cents``): a conversion the check does not make."""
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


def evaluate(expression: str) -> float:
    """The value of one arithmetic expression (``3 x 4 + 1,200 / 2``, ``50% * 20``); ValueError when it
    does not parse as a whole. No names, no calls, no ``eval``."""
    toks = _tokens(expression)
    if not toks or any(t.kind not in ("num", "op", "lp", "rp") for t in toks):
        raise ValueError(f"not an arithmetic expression: {expression!r}")
    try:
        return _float(_Side(toks, expression).value(Fraction(1, 100)))
    except _Unreadable as e:
        raise ValueError(f"not an arithmetic expression: {expression!r} ({e})") from None
