r"""The number grammar: reading a number written in plain text (or in light LaTeX markup).

A *numeral* is, in this order of parts:

==================  =============================================================================
sign                ``-`` ``+`` ``−`` (U+2212) ``–`` (en dash), before or after a currency symbol
currency            ``$ € £ ¥ ₹`` (``\$`` in LaTeX); dropped
body                a decimal ``1234`` ``3.50`` ``.5``; thousands separators ``1,234,567`` (groups
                    of exactly three digits; LaTeX ``1{,}000`` and thin spaces ``1\,000`` are
                    the same); a fraction of integers ``3/4``; a mixed number ``1 1/2``
exponent            scientific notation ``1e3`` ``2.5e-1`` ``1.5E+2``, and ``2 × 10^3``,
                    ``2 \times 10^{3}``, ``2.5 \cdot 10^{-1}``, ``3*10**2``
percent             ``25%`` / ``25\%`` -> 25 (the sign is dropped, not divided: questions state
                    percentages as numbers)
units               words after the number (``5 km``, ``18 apples``, ``5\text{ km}``) are ignored
==================  =============================================================================

What is **not** a number here (the numeral is unparseable, with the reason, never read as its
leading digits):

* a numeral glued to another one by ``. , : / - ^`` (``1.2.3``, ``1,5``, ``10-12``, ``3:4``,
  ``2024-01-01``): a version, a decimal comma, a range, a ratio or a date;
* a fraction with a zero denominator (``8/0``);
* a value outside the double-precision range: ``1e400`` or a 5,000-digit integer (about 1.8e308 is the
  largest finite double; comparing two such numbers would compare two infinities). Tiny values
  underflow to 0 and then compare within the absolute tolerance.

Statements that hold LaTeX (``\frac``, ``\sqrt``, braces...) or an arithmetic expression with an
operator other than ``-`` and ``/`` (``5 + 3``, ``2^10``) are not read here but by
:mod:`reasonscope.text.mathexpr`; :func:`normalize_markup` and :func:`needs_math` decide the route.

Every pattern in this module runs in time linear in the text (no nested unbounded repetition), so a
megabyte-long answer is read in milliseconds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_CURRENCY = "$€£¥₹"
_NUMERAL_RE = re.compile(
    rf"""
    (?<![\w.,/^])                                        # not glued to a word or to another number
    (?:(?P<sign>[-+−–])(?=[{_CURRENCY}]?\.?\d))?
    (?P<cur>[{_CURRENCY}][ ]?)?
    (?P<sign2>[-−](?=\.?\d))?
    (?:
        (?P<whole>\d+)[ ](?P<fnum>\d+)/(?P<fden>\d+)
      | (?P<num>\d+)[ ]?/[ ]?(?P<den>\d+)(?![.,]?\d)
      | (?P<dec>(?:\d{{1,3}}(?:,\d{{3}})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?P<exp>[eE][-+−]?\d+)?
    )
    (?P<pct>[ ]?%)?
    """,
    re.X,
)
# What may not follow a numeral: another number glued on by . , : / - ^ (see the module docstring).
_GLUED_RE = re.compile(r"[.,:/^\-−–][.,:/^\-−–]?\d")
_GLUED_TAIL_RE = re.compile(r"[\d.,:/^\-−–]+")

_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                      "ninety": 90, "hundred": 100})

# Light LaTeX that the plain grammar reads itself.
_LATEX_GROUP_RE = re.compile(r"(?<=\d)(?:\{,\}|\\[,;:! ])(?=\d{3}(?!\d))")
_LATEX_TEXT_RE = re.compile(r"\\(?:text|mathrm|textrm|textnormal|mbox|mathit)[ ]?\{([^{}\\]*)\}")
_LATEX_DELIMS_RE = re.compile(r"\\[()\[\]]")
_SCI_RE = re.compile(
    r"(?<![\d.,])(?P<m>\d[\d,]*(?:\.\d+)?|\.\d+)[ \t]{0,3}(?:[×x*·]|\\times|\\cdot)[ \t]{0,3}10[ \t]{0,3}"
    r"(?:\^|\*\*)[ \t]{0,3}(?:\{[ \t]{0,3}(?P<e1>[-+−]?\d{1,6})[ \t]{0,3}\}|\(?(?P<e2>[-+−]?\d{1,6})\)?)"
)
_MARKUP_RE = re.compile(r"\\[A-Za-z]|[{}^_]")
_ATOM = r"[-+−]?\(*[-+−]?[$]?(?:\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+−]?\d+)?|\.\d+)%?\)*"
_EXPRESSION_RE = re.compile(rf"{_ATOM}(?:[ \t]*(?:\*\*|[-+*/×÷·^])[ \t]*{_ATOM})+")
_STRONG_OPERATOR_RE = re.compile(r"\*\*|[+*×÷·^]")
_TRAILING_WORDS_RE = re.compile(r"(?:[\s.,;:!?]+[^\W\d_][^\W\d_\s]*)+[\s.,;:!?]*$|[\s.,;:!?]+$")
MAX_EXPRESSION_CHARS = 500


@dataclass(frozen=True)
class Numeral:
    """One number found in a text: ``value`` or, when it cannot be read, ``None`` with ``reason``."""

    value: float | None
    reason: str | None
    start: int
    end: int
    text: str


def normalize_markup(span: str) -> str:
    r"""Rewrite the light LaTeX and scientific-notation forms that the plain grammar reads itself.

    ``1{,}000`` / ``1\,000`` -> ``1,000``; ``\$`` -> ``$``; ``\%`` -> ``%``; ``\text{ km}`` -> `` km ``;
    ``\(``, ``\)``, ``\[``, ``\]`` are dropped; ``2 \times 10^{3}`` / ``2 × 10^3`` -> ``2e3``.
    """
    span = _LATEX_GROUP_RE.sub(",", span)
    span = span.replace("\\$", "$").replace("\\%", "%")
    span = _LATEX_TEXT_RE.sub(r" \1 ", span)
    span = _LATEX_DELIMS_RE.sub(" ", span)
    return _SCI_RE.sub(lambda m: f"{m.group('m')}e{(m.group('e1') or m.group('e2')).replace('−', '-')}", span)


def needs_math(span: str) -> bool:
    r"""Whether a span needs the math reader.

    True when a (normalised) span holds LaTeX markup or an arithmetic expression that the plain grammar would
    misread (``\frac{3}{4}`` is not 3, ``2^10`` is not 2, ``5 + 3`` is not 5).
    """
    if _MARKUP_RE.search(span):
        return True
    return is_expression(span)


def is_expression(span: str) -> bool:
    """Whether a span is an arithmetic expression.

    The span, less trailing words and punctuation, is an arithmetic expression of numbers with at least one
    operator among ``+ * × ÷ · ^ **`` (a lone ``-`` or ``/`` is a range, a date or a fraction).
    """
    span = span.strip().lstrip("$")
    if len(span) > MAX_EXPRESSION_CHARS or not _STRONG_OPERATOR_RE.search(span):
        return False
    core = _TRAILING_WORDS_RE.sub("", span)
    return _EXPRESSION_RE.fullmatch(core) is not None and core.count("(") == core.count(")")


def _value(m: re.Match) -> tuple[float | None, str | None]:
    negative = (m.group("sign") or m.group("sign2") or "") in ("-", "−", "–")
    try:
        if m.group("whole") is not None:
            den = float(m.group("fden"))
            value = float(m.group("whole")) + float(m.group("fnum")) / den if den else None
        elif m.group("num") is not None:
            den = float(m.group("den"))
            value = float(m.group("num")) / den if den else None
        else:
            value = float(m.group("dec").replace(",", "") + (m.group("exp") or "").replace("−", "-"))
    except OverflowError:
        value = math.inf
    if value is None:
        return None, f"unparseable: division by zero in {m.group(0).strip()!r:.40}"
    if not math.isfinite(value):
        digits = sum(c.isdigit() for c in m.group(0))
        return None, (f"unparseable: {m.group(0).strip()[:20]!r}... ({digits} digits) is outside the "
                      "double-precision range (about 1.8e308)")
    return (-value if negative else value), None


def read_numerals(span: str) -> list[Numeral]:
    """Every numeral of ``span``, in order.

    A glued or out-of-range numeral carries its reason instead of a value.
    """
    out: list[Numeral] = []
    pos = 0
    while True:
        m = _NUMERAL_RE.search(span, pos)
        if m is None:
            return out
        start, end = m.start(), m.end()
        if not m.group("pct") and _GLUED_RE.match(span, end):
            end = _GLUED_TAIL_RE.match(span, end).end()
            text = span[start:end].strip()
            out.append(Numeral(None, f"unparseable: {text[:40]!r} is not one number (a range, date, ratio, "
                                     "version or decimal comma?)", start, end, text))
        else:
            value, reason = _value(m)
            out.append(Numeral(value, reason, start, end, m.group(0).strip()))
        pos = max(end, start + 1)


def parse_plain_number(span: str, *, explicit: bool) -> tuple[float | None, str | None]:
    """A number from a plain-text span.

    The first numeral of an explicit answer statement, the only numeral of a last-line fallback (several:
    ambiguous), else one small number word (``eight``).
    """
    numerals = read_numerals(span)
    if not numerals:
        words = [w for w in re.findall(r"[a-z]+", span.lower()) if w in _NUMBER_WORDS]
        if len(words) == 1:
            return float(_NUMBER_WORDS[words[0]]), None
        return None, f"unparseable: no number in final answer {span.strip()!r:.80}"
    if not explicit and len(numerals) > 1:
        return None, f"ambiguous: {len(numerals)} numbers in final answer {span.strip()!r:.80}"
    first = numerals[0]
    return first.value, first.reason


def find_numbers(span: str) -> list[float]:
    """The values of the readable numerals of ``span`` (kept for callers that list numbers)."""
    return [n.value for n in read_numerals(normalize_markup(span)) if n.value is not None]
