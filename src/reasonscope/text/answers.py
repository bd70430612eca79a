"""Typed answer extraction and comparison.

The answer is read from the *final-answer statement*, never from a substring anywhere in the text:

1. reasoning blocks (``<think>...</think>``, ``<reasoning>``, ``<thought>``) are set aside as trace;
2. the statement is, by priority: a prompt-specified regex (``answer_pattern``, group 1), the last
   GSM8K ``#### X``, the last ``\\boxed{X}``, the last ``Answer: X`` / ``Final answer: X``, the last
   "the (final) answer is X" (cut at the end of its sentence), else the last non-empty line
   with a letter or digit (not used when the generation was truncated: a cut-off text has no
   final answer);
3. the statement is parsed by answer type:

``number``  an ``=`` in the statement keeps only what follows the last ``=``; commas as thousands
            separators, signs (``-``, ``−``), decimals, fractions (``3/4``), mixed numbers (``1 1/2``),
            percentages (``25%`` -> 25, the sign is stripped, not divided), currency symbols and unit
            words are handled; small number words (``eight``) when there is no digit. An explicit
            statement takes its first number; a last-line fallback must hold exactly one number
            (otherwise: ambiguous, None). Compared with ``math.isclose(rel_tol, abs_tol=1e-9)``.
``boolean`` yes/no/true/false as whole words: the statement's first word if it is one, else the
            only boolean value present; both values present, or one negated ("not yes") -> ambiguous.
``choice``  a letter at the start (``B``, ``(B)``, ``B)``, ``B.``; lower case only in parentheses or
            alone), ``option B`` / ``choice B``, or the text of exactly one option.
``label``   exactly one of the known labels as a whole phrase; else the normalised statement.
``text``    lower-cased, punctuation and articles removed, whitespace collapsed, compared exactly.

Every extraction returns the answer or ``None`` with the reason (``no final answer``, ``ambiguous``,
``unparseable``...). An unparseable answer is wrong and counted as unparseable.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any

THINK_RE = re.compile(r"<(think|thinking|reasoning|thought)>(.*?)(?:</\1>|$)", re.S | re.I)
HASH_RE = re.compile(r"####\s*([^\n]*)")
ANSWER_LINE_RE = re.compile(r"(?:final\s+answer|\banswer)\s*(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*([^\n]*)", re.I)
ANSWER_IS_RE = re.compile(r"\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s+(?:is|would\s+be|=)\s*:?\s*([^\n]*)", re.I)
SENTENCE_END_RE = re.compile(r"(?<!\d)\.(?=\s|$)|(?<=\d)\.(?=\s|$)|[;!?](?=\s|$)")

_NUM_RE = re.compile(
    r"(?<![\w.])(?P<sign>[-+−–](?=\s*[$€£¥]?\s*\.?\d))?\s*(?P<cur>[$€£¥])?\s*(?P<sign2>[-−](?=\d))?"
    r"(?:(?P<whole>\d+)\s+(?P<fnum>\d+)/(?P<fden>\d+)"
    r"|(?P<num>\d+)\s*/\s*(?P<den>\d+)"
    r"|(?P<dec>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+))"
    r"(?P<pct>\s*%)?"
)
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                      "ninety": 90, "hundred": 100})
_BOOL_WORDS = {"yes": True, "true": True, "no": False, "false": False}
_ARTICLES = {"a", "an", "the"}


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
    lines = [ln.strip() for ln in body.splitlines() if re.search(r"[A-Za-z0-9]", ln)]
    if not lines:
        return None, None, "empty output"
    return _clean(lines[-1]), "last-line", ""


# ----------------------------------------------------------------------------------------------
# Typed parsers


def _number_from_match(m: re.Match) -> float:
    sign = -1.0 if (m.group("sign") or m.group("sign2") or "") in ("-", "−", "–") else 1.0
    if m.group("whole") is not None:
        den = float(m.group("fden"))
        if den == 0:
            raise ZeroDivisionError
        value = float(m.group("whole")) + float(m.group("fnum")) / den
    elif m.group("num") is not None:
        den = float(m.group("den"))
        if den == 0:
            raise ZeroDivisionError
        value = float(m.group("num")) / den
    else:
        value = float(m.group("dec").replace(",", ""))
    return sign * value


def find_numbers(span: str) -> list[float]:
    out = []
    for m in _NUM_RE.finditer(span):
        try:
            out.append(_number_from_match(m))
        except ZeroDivisionError:
            continue
    return out


def parse_number(statement: str, *, explicit: bool) -> tuple[float | None, str | None]:
    span = statement.split("=")[-1] if "=" in statement else statement
    numbers = find_numbers(span)
    if not numbers:
        words = [w for w in re.findall(r"[a-z]+", span.lower()) if w in _NUMBER_WORDS]
        if len(words) == 1:
            return float(_NUMBER_WORDS[words[0]]), None
        return None, f"unparseable: no number in final answer {statement!r:.80}"
    if explicit or len(numbers) == 1:
        return numbers[0], None
    return None, f"ambiguous: {len(numbers)} numbers in the last line {statement!r:.80}"


def parse_boolean(statement: str) -> tuple[bool | None, str | None]:
    words = re.findall(r"[a-z]+", statement.lower())
    if words and words[0] in _BOOL_WORDS:
        return _BOOL_WORDS[words[0]], None
    if any(a in ("not", "never") and b in _BOOL_WORDS for a, b in zip(words, words[1:], strict=False)):
        return None, f"ambiguous: a negated yes/no in final answer {statement!r:.80}"
    values = {_BOOL_WORDS[w] for w in words if w in _BOOL_WORDS}
    if len(values) == 1:
        return values.pop(), None
    if not values:
        return None, f"unparseable: no yes/no in final answer {statement!r:.80}"
    return None, f"ambiguous: both yes and no in final answer {statement!r:.80}"


def normalize_text(s: str) -> str:
    s = s.lower().translate(str.maketrans({c: " " for c in string.punctuation}))
    return " ".join(w for w in s.split() if w not in _ARTICLES)


def _letters(choices: list[str] | None) -> str:
    n = len(choices) if choices else 26
    return string.ascii_uppercase[:n]


def parse_choice(statement: str, choices: list[str] | None) -> tuple[str | None, str | None]:
    letters = _letters(choices)
    s = statement.strip()
    m = re.match(r"^\(?([A-Z])(?:\)|\]|(?=[\s.:,]|$))", s) or re.match(r"^\(([a-z])\)|^([a-z])\)|^([a-z])\.?$", s)
    if not m:
        m = re.search(r"\b(?:option|choice)\s*\(?([A-Za-z])\b\)?", s, re.I) or re.search(r"\(([A-Z])\)", s)
    if m:
        letter = next(g for g in m.groups() if g).upper()
        if letter in letters:
            return letter, None
        return None, f"unparseable: letter {letter} is not among the options {letters}"
    if choices:
        norm = normalize_text(s)
        hits = [letters[i] for i, c in enumerate(choices)
                if normalize_text(c) and re.search(rf"(?<!\w){re.escape(normalize_text(c))}(?!\w)", norm)]
        if len(hits) == 1:
            return hits[0], None
        if len(hits) > 1:
            return None, f"ambiguous: the final answer names options {hits}"
    return None, f"unparseable: no option letter in final answer {statement!r:.80}"


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
    think, body = split_think(text or "")
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
    explicit = source != "last-line"
    if answer_type == "number":
        value, reason = parse_number(statement, explicit=explicit)
    elif answer_type == "boolean":
        value, reason = parse_boolean(statement)
    elif answer_type == "choice":
        value, reason = parse_choice(statement, choices)
    elif answer_type == "label":
        value, reason = parse_label(statement, choices)
    else:
        value = normalize_text(statement) or None
        reason = None if value else "unparseable: empty final answer"
    return Extraction(value, reason, statement, source, trace, think)


def parse_target(target: Any, answer_type: str, choices: list[str] | None = None) -> Any:
    """The gold answer in the same typed form as :func:`extract_answer` returns."""
    if target is None:
        return None
    if answer_type == "number":
        if isinstance(target, bool):
            raise ValueError(f"numeric target expected, got {target!r}")
        if isinstance(target, int | float):
            return float(target)
        text = str(target)
        if "####" in text:
            text = text.split("####")[-1]
        nums = find_numbers(text)
        if len(nums) != 1:
            raise ValueError(f"numeric target expected, got {target!r}")
        return nums[0]
    if answer_type == "boolean":
        if isinstance(target, bool):
            return target
        value, _ = parse_boolean(str(target))
        if value is None:
            raise ValueError(f"boolean target expected (yes/no/true/false), got {target!r}")
        return value
    if answer_type == "choice":
        if isinstance(target, int) and not isinstance(target, bool):
            return _letters(choices)[target]
        text = str(target).strip()
        if len(text) == 1 and text.upper() in _letters(choices):
            return text.upper()
        letter, _ = parse_choice(text, choices)
        if letter is None:
            raise ValueError(f"choice target expected (a letter, an index or an option text), got {target!r}")
        return letter
    if answer_type == "label":
        if choices:
            for lab in choices:
                if normalize_text(lab) == normalize_text(str(target)):
                    return lab
        return normalize_text(str(target)) if not choices else str(target)
    return normalize_text(str(target))


def answers_match(pred: Any, gold: Any, answer_type: str, rel_tol: float = 1e-6) -> bool:
    if pred is None or gold is None:
        return False
    if answer_type == "number":
        return math.isclose(float(pred), float(gold), rel_tol=rel_tol, abs_tol=1e-9)
    if answer_type == "label":
        return normalize_text(str(pred)) == normalize_text(str(gold))
    return pred == gold
