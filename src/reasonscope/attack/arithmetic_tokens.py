"""Tokens of the arithmetic checker (:mod:`reasonscope.attack.arithmetic`), read from free text.

Numbers with their written precision, operators (symbols and words), units and labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
    """Turn the words that name what a number counts into ``unit`` tokens attached to the number.

    For example ``12 steps * 8 inches/step = 96 inches``: up to two words (``inches/step``, ``t-shirts`` count
    as one, ``per`` does not count) right after a number or ``)`` and right before an operator or ``=``, or
    right after a number that follows an ``=`` (``= 96 inches``); a tight ``/word`` after a number
    (``$15/phone``) is a unit anywhere. Words that change a value (``and``, ``times``, ``dozen``, ``half``,
    ...) are never units.
    """
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
    """Whether the word ``t`` (``x`` or ``of``) is a multiplication between ``prev`` and ``nxt``.

    ``x`` between two operands is a multiplication; ``of`` after a percent or a fraction ``a/b`` and
    before a number (``50% of 20``, ``1/2 of 60``) is one too.
    """
    if not _between_operands(prev, nxt):
        return False
    return t.text.lower() == "x" or (prev.kind == "num" and (
        prev.percent or bool(re.search(r"/\s*[$€£¥]?$", text[:prev.start]))))


# -- parsing and evaluation ----------------------------------------------------------------------------


def _singular(word: str) -> str:
    if word in ("feet", "foot"):
        return "foot"
    if word == "pennies":
        return "penny"
    for tail, repl in (("ches", "ch"), ("shes", "sh"), ("ies", "y"), ("s", "")):
        if word.endswith(tail) and len(word) > len(tail) + 1:
            return word[: -len(tail)] + repl
    return word
