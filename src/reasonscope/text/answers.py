"""Typed answer extraction and comparison (the full rules: ``docs/answers.md``).

The answer is read from the *final-answer statement*, never from a substring anywhere in the text:

1. terminal escape sequences and control characters are removed from the copy that is read
   (:mod:`reasonscope.text.sanitize`; ``\\x1b[1mAnswer: 1\\x1b[0m`` reads as ``Answer: 1``);
2. reasoning blocks (``<think>...</think>``, ``<reasoning>``, ``<thought>``) are set aside as trace;
3. the statement is, by priority: a prompt-specified regex (``answer_pattern``, group 1), the last
   GSM8K ``#### X``, the last ``\\boxed{X}``, the last ``Answer: X`` / ``Final answer: X``, the last
   "the (final) answer is X" (cut at the end of its sentence), else the last non-empty line
   with a letter or digit (not used when the generation was truncated: a cut-off text has no
   final answer);
4. the statement is parsed by answer type:

``number``  an ``=`` in the statement keeps only what follows the last ``=``. Plain text is read by the
            number grammar of :mod:`reasonscope.text.numbers` (signs, decimals, thousands separators
            including LaTeX ``{,}``, scientific notation, fractions, mixed numbers, percent, currency,
            units; a value outside the double range is unparseable). LaTeX (``\\frac{3}{4}``,
            ``2\\sqrt{2}``) and arithmetic expressions (``5 + 3``, ``2^10``) are read by math-verify in a
            bounded child process (:mod:`reasonscope.text.mathexpr`) and must denote one real number.
            An explicit statement with words takes its first number (or math part); a last-line
            fallback, or a statement made only of numbers ("3, 4"), must hold exactly one (otherwise:
            ambiguous). Small number words (``eight``) when there is no digit. Compared with
            ``math.isclose(rel_tol, abs_tol=1e-9)``.
``math``    a symbolic answer (:class:`~reasonscope.text.mathexpr.MathAnswer`): a plain numeral as a
            number, anything else through math-verify (expressions, intervals, sets, matrices); compared
            as numbers when both are real numbers, else with math-verify's ``verify``.
``boolean`` yes/no/true/false as whole words, the value the statement finally commits to
            (:mod:`reasonscope.text.commitment`): "No, wait: yes" is yes, "yes and no" is ambiguous,
            "not yes" only rejects and is unparseable.
``choice``  an option letter (``B``, ``(B)``, ``B)``, ``option B``, a capital letter standing alone) or,
            when no letter is named, an option's text; the option the statement finally commits to:
            "Not A; the answer is C" and "(A) is wrong. (C)" are C.
``label``   exactly one of the known labels as a whole phrase; else the normalised statement.
``text``    lower-cased, punctuation and articles removed, whitespace collapsed, compared exactly.

Every extraction returns the answer or ``None`` with the reason (``empty output``, ``truncated before a
final answer``, ``ambiguous: ...``, ``unparseable: ...``); no input raises, and reading is linear in the
text's length (a statement longer than :data:`MAX_STATEMENT_CHARS`, 5,000 characters, is not an answer
statement: unparseable). An unparseable answer is wrong and counted as unparseable (the behaviour
table's ``unparseable`` column per model; ``samples.jsonl`` has the reason in ``answer_reason``).
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any

from .commitment import Mention, clauses, committed_value
from .mathexpr import (
    MathAnswer,
    dollar_math,
    math_equal,
    math_number_answer,
    pick_part,
    read_math,
    read_math_number,
)
from .numbers import find_numbers, needs_math, normalize_markup, parse_plain_number, read_numerals
from .sanitize import strip_terminal_codes

__all__ = ["Extraction", "answers_match", "extract_answer", "final_statement", "find_numbers", "normalize_text",
           "parse_boolean", "parse_choice", "parse_label", "parse_number", "parse_target", "split_think"]

MAX_STATEMENT_CHARS = 5000
THINK_RE = re.compile(r"<(think|thinking|reasoning|thought)>(.*?)(?:</\1>|$)", re.S | re.I)
HASH_RE = re.compile(r"####\s*([^\n]*)")
# (no two adjacent \s* before the colon: "answer" followed by a long run of spaces stays linear)
ANSWER_LINE_RE = re.compile(r"(?:final\s+answer|\banswer)\s*(?:\*\*\s*)?[:：]\s*(?:\*\*)?\s*([^\n]*)", re.I)
ANSWER_IS_RE = re.compile(r"\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s+(?:is|would\s+be|=)\s*:?\s*([^\n]*)", re.I)
SENTENCE_END_RE = re.compile(r"(?<!\d)\.(?=\s|$)|(?<=\d)\.(?=\s|$)|[;!?](?=\s|$)")
# a variable next to an operator and a number ("x + 1", "2*n"): an expression, not a number
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


@dataclass
class Extraction:
    """Result of reading an answer: ``answer`` (typed) or ``None`` with ``reason``."""

    answer: Any
    reason: str | None
    statement: str | None
    source: str | None
    trace: str
    think: str | None

    @property
    def ok(self) -> bool:
        return self.answer is not None


# ----------------------------------------------------------------------------------------------
# Separating reasoning from the final statement


def split_think(text: str) -> tuple[str | None, str]:
    """Return (think content or None, text without think blocks). Nothing is thrown away."""
    blocks = [m.group(2).strip() for m in THINK_RE.finditer(text)]
    rest = THINK_RE.sub("", text)
    # A closing tag without an opening one (some servers strip the opening tag).
    if not blocks and "</think>" in rest:
        head, _, rest = rest.partition("</think>")
        blocks = [head.strip()]
    return ("\n\n".join(blocks) if blocks else None), rest.strip()


def _cut_sentence(span: str) -> str:
    m = SENTENCE_END_RE.search(span)
    return span[: m.start()] if m else span


def _clean(span: str) -> str:
    span = span.strip().strip("*").strip()
    span = re.sub(r"^\$+|\$+$", lambda m: m.group(0) if re.search(r"\d", span) else "", span)
    return span.strip().rstrip(".").strip()


def _boxed(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 1, start + len("\\boxed{")
    begin = i
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[begin:i - 1] if depth == 0 else None


def final_statement(body: str, *, truncated: bool = False,
                    answer_pattern: str | None = None) -> tuple[str | None, str | None, str]:
    """Find the final-answer statement: (statement, source, reason-if-none)."""
    if answer_pattern:
        found = list(re.finditer(answer_pattern, body, re.I | re.M))
        if found:
            return _clean(found[-1].group(1)), "pattern", ""
    found = list(HASH_RE.finditer(body))
    if found:
        return _clean(found[-1].group(1)), "####", ""
    boxed = _boxed(body)
    if boxed is not None:
        return _clean(boxed), "boxed", ""
    found = list(ANSWER_LINE_RE.finditer(body))
    if found:
        return _clean(found[-1].group(1)), "answer-line", ""
    found = list(ANSWER_IS_RE.finditer(body))
    if found:
        return _clean(_cut_sentence(found[-1].group(1))), "answer-is", ""
    if truncated:
        return None, None, "truncated before a final answer"
    last = next((ln.strip() for ln in reversed(body.splitlines()) if _ALNUM_RE.search(ln)), None)
    if last is None:
        return None, None, "empty output"
    return _clean(last), "last-line", ""


# ----------------------------------------------------------------------------------------------
# Typed parsers


def _after_equals(statement: str) -> str:
    return statement.rsplit("=", 1)[-1] if "=" in statement else statement


def _number_span(statement: str, explicit: bool) -> tuple[str | None, bool, str | None]:
    """``(span, explicit, None)``: the part of a statement that holds its number (a ``$...$`` math span is
    chosen before the ``=`` rule applies inside it), or ``(None, explicit, reason)``."""
    span = normalize_markup(statement)
    if dollar_math(span):
        part, why = pick_part(span, explicit=explicit)
        if part is None:
            return None, explicit, why
        return _after_equals(part), True, None
    return _after_equals(span), explicit, None


def parse_number(statement: str, *, explicit: bool) -> tuple[float | None, str | None]:
    """A real number from an answer statement (plain grammar, or math-verify for LaTeX and expressions).
    A statement without words that holds several numbers ("3, 4", "(1, 2]") states no single number,
    even after ``Answer:``."""
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
    """yes/no/true/false used as a value: first or last word of its clause, after *say/answer/reply*, or
    (true/false) after *is/be/was...* ("there is no doubt" holds no value)."""
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
    """An option letter: the option the statement finally commits to (see :mod:`.commitment`); option texts
    count only when no letter is named."""
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


# ----------------------------------------------------------------------------------------------
# Public API


def extract_answer(text: str, answer_type: str, *, choices: list[str] | None = None, truncated: bool = False,
                   answer_pattern: str | None = None) -> Extraction:
    """Read the typed answer of a model output (see the module docstring); never raises on any text."""
    think, body = split_think(strip_terminal_codes(text or ""))
    statement, source, why = final_statement(body, truncated=truncated, answer_pattern=answer_pattern)
    trace = body
    if source in ("answer-line", "####", "pattern"):
        cut = {"answer-line": ANSWER_LINE_RE, "####": HASH_RE}.get(source)
        found = list(cut.finditer(body)) if cut else []
        if found:
            trace = body[: found[-1].start()].strip()
    if statement is None:
        return Extraction(None, why, None, None, trace, think)
    if not statement:
        return Extraction(None, "unparseable: empty final answer", statement, source, trace, think)
    if len(statement) > MAX_STATEMENT_CHARS:
        return Extraction(None, f"unparseable: final answer statement longer than {MAX_STATEMENT_CHARS} characters",
                          statement, source, trace, think)
    value, reason = read_statement(statement, answer_type, choices, explicit=source != "last-line")
    return Extraction(value, reason, statement, source, trace, think)


def read_statement(statement: str, answer_type: str, choices: list[str] | None = None, *,
                   explicit: bool = True) -> tuple[Any, str | None]:
    """The typed value of an answer statement, or ``(None, reason)``."""
    if answer_type == "number":
        return parse_number(statement, explicit=explicit)
    if answer_type == "math":
        return parse_math(statement, explicit=explicit)
    if answer_type == "boolean":
        return parse_boolean(statement)
    if answer_type == "choice":
        return parse_choice(statement, choices)
    if answer_type == "label":
        return parse_label(statement, choices)
    value = normalize_text(statement) or None
    return value, None if value else "unparseable: empty final answer"


def parse_target(target: Any, answer_type: str, choices: list[str] | None = None) -> Any:
    """The gold answer in the same typed form as :func:`extract_answer` returns; raises ``ValueError``
    (with what was expected) when the target cannot be read as its type."""
    if target is None:
        return None
    if isinstance(target, str):
        target = strip_terminal_codes(target)  # read as the predictions are
    if answer_type in ("number", "math"):
        if isinstance(target, bool):
            raise ValueError(f"numeric target expected, got {target!r}")
        if isinstance(target, int | float):
            try:
                value = float(target)
            except OverflowError:
                value = math.inf
            if not math.isfinite(value):
                raise ValueError(f"numeric target must be a finite number, got {str(target)[:40]}")
            return value if answer_type == "number" else math_number_answer(value, str(target))
        text = str(target)
        if "####" in text:
            text = text.split("####")[-1]
        value, why = (parse_number if answer_type == "number" else parse_math)(text, explicit=False)
        if value is None:
            kind = "numeric" if answer_type == "number" else "math"
            raise ValueError(f"{kind} target expected, got {str(target)[:80]!r} ({why})")
        return value
    if answer_type == "boolean":
        if isinstance(target, bool):
            return target
        value, _ = parse_boolean(str(target))
        if value is None:
            raise ValueError(f"boolean target expected (yes/no/true/false), got {str(target)[:80]!r}")
        return value
    if answer_type == "choice":
        if isinstance(target, int) and not isinstance(target, bool):
            letters = _letters(choices)
            if not 0 <= target < len(letters):
                raise ValueError(f"choice index {target} outside the {len(letters)} options")
            return letters[target]
        text = str(target).strip()
        if len(text) == 1 and text.upper() in _letters(choices):
            return text.upper()
        letter, _ = parse_choice(text, choices)
        if letter is None:
            raise ValueError(f"choice target expected (a letter, an index or an option text), got {text[:80]!r}")
        return letter
    if answer_type == "label":
        if choices:
            for lab in choices:
                if normalize_text(lab) == normalize_text(str(target)):
                    return lab
        return normalize_text(str(target)) if not choices else str(target)
    return normalize_text(str(target))


def answers_match(pred: Any, gold: Any, answer_type: str, rel_tol: float = 1e-6) -> bool:
    """Typed equality: numbers within ``rel_tol`` (absolute 1e-9), math answers by value or math-verify,
    labels after normalisation, everything else exactly. ``None`` never matches."""
    if pred is None or gold is None:
        return False
    if answer_type == "number":
        return math.isclose(float(pred), float(gold), rel_tol=rel_tol, abs_tol=1e-9)
    if answer_type == "math":
        if not isinstance(pred, MathAnswer) or not isinstance(gold, MathAnswer):
            return False
        return math_equal(gold, pred, rel_tol)
    if answer_type == "label":
        return normalize_text(str(pred)) == normalize_text(str(gold))
    return pred == gold
