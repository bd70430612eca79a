"""Reading a final answer statement as a typed value.

Numbers (one numeral, or a math expression), booleans, choice letters or texts, and labels; each reader
returns the value or None with the reason. Used by :func:`reasonscope.text.answers.extract_answer` and
:func:`~reasonscope.text.answers.read_statement`.
"""

from __future__ import annotations

import re
import string

from .commitment import Mention, clauses, committed_value
from .mathexpr import (
    MathAnswer,
    dollar_math,
    math_number_answer,
    pick_part,
    read_math,
    read_math_number,
)
from .numbers import needs_math, normalize_markup, parse_plain_number, read_numerals

_VARIABLE_EXPRESSION_RE = re.compile(r"(?<![\w.])[a-zA-Z][ ]?[-+*/^][ ]?[\d(]|[\d)][ ]?[-+*/^][ ]?[a-zA-Z](?!\w)")
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_ANY_WORD_RE = re.compile(r"\w")
_ALNUM_RE = re.compile(r"[A-Za-z0-9]")
_BOOL_RE = re.compile(r"\b(yes|no|true|false)\b", re.I)
_BOOL_WORDS = {"yes": True, "true": True, "no": False, "false": False}
_ARTICLES = {"a", "an", "the"}
# A capital "A" or "I" followed by one of these words is an option letter ("A is wrong"); followed by
# another lower-case word it is the article or the pronoun ("A good choice", "I think").
_LETTER_VERBS = {"is", "was", "seems", "looks", "would", "could", "might", "must", "should", "and", "or", "but",
                 "because", "since", "as", "appears", "matches", "fits", "gives", "remains", "holds", "makes",
                 "describes", "best", "correct", "wrong", "incorrect", "right", "it", "then", "instead", "not"}
_STRONG_LETTER_RE = re.compile(
    r"[(\[][ ]?(?P<p>[A-Za-z])[ ]?[)\]]"
    r"|(?<![\w(])(?P<r>[A-Za-z])\)"
    r"|\b(?:option|choice|letter|answer(?:[ ]is)?)[ ]?[:#]?[ ]?(?P<k>[A-Z]\b|[a-z](?=[ ]?(?:$|[.,;:!?)]|[ ]is\b)))",
    re.I)
_BARE_LETTER_RE = re.compile(r"(?<![\w'’\-])([A-Z])(?![\w'’\-])")
_FOLLOWING_WORD_RE = re.compile(r"[ ]+([a-z]+)")


# ----------------------------------------------------------------------------------------------
# Typed parsers


def _after_equals(statement: str) -> str:
    return statement.rsplit("=", 1)[-1] if "=" in statement else statement


def _number_span(statement: str, explicit: bool) -> tuple[str | None, bool, str | None]:
    """The part of a statement that holds its number.

    ``(span, explicit, None)``: the part of a statement that holds its number (a ``$...$`` math span is chosen
    before the ``=`` rule applies inside it), or ``(None, explicit, reason)``.
    """
    span = normalize_markup(statement)
    if dollar_math(span):
        part, why = pick_part(span, explicit=explicit)
        if part is None:
            return None, explicit, why
        return _after_equals(part), True, None
    return _after_equals(span), explicit, None


def parse_number(statement: str, *, explicit: bool) -> tuple[float | None, str | None]:
    """A real number from an answer statement (plain grammar, or math-verify for LaTeX and expressions).

    A statement without words that holds several numbers ("3, 4", "(1, 2]") states no single number, even
    after ``Answer:``.
    """
    span, explicit, why = _number_span(statement, explicit)
    if span is None:
        return None, why
    if needs_math(span) or _VARIABLE_EXPRESSION_RE.search(span):
        part, why = pick_part(span, explicit=explicit)
        return read_math_number(part) if part is not None else (None, why)
    return parse_plain_number(span, explicit=explicit and bool(_WORD_RE.search(span)))


def _single_numeral(span: str):
    numerals = read_numerals(span)
    if len(numerals) != 1 or numerals[0].value is None:
        return None
    n = numerals[0]
    rest = span[:n.start] + span[n.end:]
    return n if not re.search(r"\w", rest) else None


def parse_math(statement: str, *, explicit: bool) -> tuple[MathAnswer | None, str | None]:
    """A :class:`MathAnswer`: one plain numeral by the number grammar, anything else by math-verify."""
    span, explicit, why = _number_span(statement, explicit)
    if span is None:
        return None, why
    numeral = _single_numeral(span)
    if numeral is not None:
        return math_number_answer(numeral.value, numeral.text), None
    part, why = pick_part(span, explicit=explicit)
    return read_math(part) if part is not None else (None, why)


def _bool_mentions(statement: str) -> list[Mention]:
    """Mentions of yes/no/true/false used as a value.

    yes/no/true/false used as a value: first or last word of its clause, after *say/answer/reply*, or
    (true/false) after *is/be/was...* ("there is no doubt" holds no value).
    """
    out = []
    for start, end, _ in clauses(statement):
        first_word = _ANY_WORD_RE.search(statement, start, end)
        for m in _BOOL_RE.finditer(statement, start, end):
            word = m.group(1).lower()
            first = first_word is not None and first_word.start() == m.start()
            last = not _ANY_WORD_RE.search(statement, m.end(), end)
            before = statement[max(start, m.start() - 16):m.start()]
            said = re.search(r"\b(?:say|says|said|answer|answered|reply|replied)\s+$", before, re.I)
            predicate = word in ("true", "false") and re.search(r"(?:\b(?:is|be|was|are|were|seems?)|'s)\s+$",
                                                                before, re.I)
            if first or last or said or predicate:
                out.append(Mention(m.start(), m.end(), _BOOL_WORDS[word]))
    return out


def parse_boolean(statement: str) -> tuple[bool | None, str | None]:
    """yes/no/true/false: the value the statement finally commits to (see :mod:`.commitment`)."""
    return committed_value(statement, _bool_mentions(statement), "yes/no", show=lambda v: "yes" if v else "no")


def normalize_text(s: str) -> str:
    """Lower-cased text with punctuation turned into spaces and the articles a/an/the dropped."""
    s = s.lower().translate(str.maketrans({c: " " for c in string.punctuation}))
    return " ".join(w for w in s.split() if w not in _ARTICLES)


def _letters(choices: list[str] | None) -> str:
    n = len(choices) if choices else 26
    return string.ascii_uppercase[:n]


def _letter_mentions(statement: str, letters: str) -> list[Mention]:
    out: list[Mention] = []
    covered: set[int] = set()
    for m in _STRONG_LETTER_RE.finditer(statement):
        group = next(g for g in ("p", "r", "k") if m.group(g))
        out.append(Mention(m.start(), m.end(), m.group(group).upper()))
        covered.add(m.start(group))
    first_word = _ANY_WORD_RE.search(statement)
    for m in _BARE_LETTER_RE.finditer(statement):
        letter = m.group(1)
        if m.start() in covered:
            continue
        at_start = first_word is not None and first_word.start() == m.start()
        if letter not in letters and not at_start:
            continue
        nxt = _FOLLOWING_WORD_RE.match(statement, m.end())
        if letter in "AI" and nxt and nxt.group(1) not in _LETTER_VERBS:
            continue  # the article "A" or the pronoun "I"
        out.append(Mention(m.start(), m.end(), letter))
    whole = re.fullmatch(r"\(?([a-z])\)?\.?", statement.strip())
    if whole and not out:
        out.append(Mention(0, len(statement), whole.group(1).upper()))
    return out


def _text_mentions(statement: str, choices: list[str], letters: str) -> list[Mention]:
    found: list[Mention] = []
    for letter, choice in zip(letters, choices, strict=False):
        words = normalize_text(choice).split()
        if not words:
            continue
        pattern = r"(?<![\w.])" + r"\W+(?:(?:a|an|the)\W+)?".join(map(re.escape, words)) + r"(?!\w|[.,]\d)"
        found += [Mention(m.start(), m.end(), letter) for m in re.finditer(pattern, statement, re.I)]
    # an option text inside a longer one found too ("York" inside "New York") is not a mention
    out, reach = [], (-1, -1)
    for m in sorted(found, key=lambda m: (m.start, -m.end)):
        if m.end <= reach[1] and (m.start, m.end) != reach:
            continue
        out.append(m)
        if m.end > reach[1]:
            reach = (m.start, m.end)
    return out


def parse_choice(statement: str, choices: list[str] | None) -> tuple[str | None, str | None]:
    """An option letter from an answer statement.

    An option letter: the option the statement finally commits to (see :mod:`.commitment`); option texts count
    only when no letter is named.
    """
    letters = _letters(choices)
    mentions = _letter_mentions(statement, letters)
    if not mentions and choices:
        mentions = _text_mentions(statement, choices, letters)
    if not mentions:
        return None, f"unparseable: no option letter in final answer {statement!r:.80}"
    letter, reason = committed_value(statement, mentions, "option")
    if letter is not None and letter not in letters:
        return None, f"unparseable: letter {letter} is not among the options {letters}"
    return letter, reason


def parse_label(statement: str, labels: list[str] | None) -> tuple[str | None, str | None]:
    """``(label, None)`` or ``(None, reason)`` from an answer statement.

    Without ``labels`` the normalised statement is the label. Otherwise a label counts when its normalised
    text occurs as whole words in the normalised statement; a label found only inside a longer label that is
    also found ("entailment" in "not entailment") is dropped.

    Args:
        statement: the final answer statement.
        labels: the allowed labels, or None for free text.

    Returns:
        The one label found, or the reason: ``unparseable`` (empty, or no label) or ``ambiguous`` (several).
    """
    norm = normalize_text(statement)
    if not labels:
        return (norm, None) if norm else (None, "unparseable: empty final answer")
    hits = {lab for lab in labels if re.search(rf"(?<!\w){re.escape(normalize_text(lab))}(?!\w)", norm)}
    # a label that is part of a longer label found too ("entailment" inside "not entailment") is dropped
    hits = {h for h in hits if not any(h != o and normalize_text(h) in normalize_text(o) for o in hits)}
    if len(hits) == 1:
        return hits.pop(), None
    if hits:
        return None, f"ambiguous: several labels in final answer {sorted(hits)}"
    return None, f"unparseable: none of the labels {labels} in final answer {statement!r:.80}"
