"""Strict parsing of LLM-judge answers.

The judge is asked for a JSON object mapping each attribute to ``{"score": number, "explanation":
text}`` (a bare number is accepted too).

Reading the object (:func:`load_object`, shared by every family that asks a model for an object)
-------------------------------------------------------------------------------------------------
The *first complete object* of the answer: from each ``{`` in turn, the standard library's JSON decoder
decodes one value from that position (``JSONDecoder.raw_decode``, raw control characters allowed inside
strings); the first position where a whole object decodes wins, so braces in prose before the object
("I will score {faithfulness, grammar}.") or after it (a note after a fenced block) change nothing. Where
JSON fails, the balanced ``{...}`` from that position is tried as a Python literal with
``ast.literal_eval`` (never ``eval``), bounded to :data:`MAX_LITERAL_CHARS` characters and
:data:`MAX_DEPTH` levels of nesting. Nothing is repaired and no value is invented.

Untrusted text never raises: an answer nested deeper than :data:`MAX_DEPTH` levels (or than Python's
recursion limit), integers longer than :data:`MAX_INT_DIGITS` digits (read as a float, so out of range),
NUL bytes, lone surrogates and megabyte-long answers give an object or a reason. Only braces that can
open an object (followed by a string, a number, a constant or ``}``) are tried, at most
:data:`MAX_CANDIDATES` of them.

Validating it
-------------
The object's values are validated with typed (pydantic) models: a score is a strict number (booleans and
strings are not numbers), an entry is a number or ``{"score": number, "explanation": ...}``. Keys are
matched to attribute names ignoring case, spaces, hyphens and underscores. A score that is missing, not a
number, not finite or outside ``[0, scale_max]`` is **unscored** with the reason, never 0. Valid scores
are divided by ``scale_max`` (1 or 10), so every judge reports on 0-1.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from ..text.nesting import nesting_exceeds
from .attributes import ATTRIBUTES, attribute_key

MAX_DEPTH = 64
MAX_INT_DIGITS = 4000
MAX_LITERAL_CHARS = 20_000
_BRACE_RE = re.compile(r"[{}]")
# where an object can start: "{" then a key (a string, a number, a constant) or "}"; "{{" cannot
_OPENING_RE = re.compile(r"\{(?=\s*[\"'}\-+\d(.\[TFN])")
MAX_CANDIDATES = 1000
_LITERAL_TRIES = 20


@dataclass
class JudgeResult:
    """A pointwise judge's answer, read.

    Attributes:
        scores: attribute -> score rescaled to [0, 1] (higher is better).
        unscored: attribute -> why it has no score.
        explanations: attribute -> the judge's explanation, when it gave one.
        error: why the whole answer could not be read; None when it could.
    """
    scores: dict[str, float] = field(default_factory=dict)  # attribute -> score in [0, 1]
    unscored: dict[str, str] = field(default_factory=dict)  # attribute -> reason
    explanations: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # the whole answer could not be read


class NoObject(ValueError):
    """The text holds no complete ``{...}`` block."""


class NotALiteral(ValueError):
    """No ``{...}`` block is a JSON object or a bounded Python literal; the message says why."""


Number = StrictInt | StrictFloat


class ScoreEntry(BaseModel):
    """One attribute's verdict: ``{"score": number, "explanation": text}`` (other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")
    score: Number
    explanation: object = None


_ENTRY = TypeAdapter(Number | ScoreEntry)
_WINNER = TypeAdapter(StrictInt | StrictStr)
_VERDICT = TypeAdapter(StrictBool | StrictStr)


def _bounded_int(digits: str) -> int | float:
    # int() refuses more than 4,300 digits (a ValueError inside the decoder); such a number is out of
    # any score's range anyway, so it is read as a float (inf) and reported as out of range.
    return int(digits) if len(digits) <= MAX_INT_DIGITS else float(digits)


_DECODER = json.JSONDecoder(parse_int=_bounded_int, strict=False)


def _balanced(text: str, start: int) -> str | None:
    """The ``{...}`` that opens at ``start``.

    By counting braces (quoting is ignored: this span is only tried as a Python literal), or ``None`` when it
    does not close within :data:`MAX_LITERAL_CHARS` characters or nests deeper than :data:`MAX_DEPTH` levels.
    """
    depth = 0
    for m in _BRACE_RE.finditer(text, start, start + MAX_LITERAL_CHARS):
        depth += 1 if m.group(0) == "{" else -1
        if depth > MAX_DEPTH:
            return None
        if depth == 0:
            return text[start:m.end()]
    return None


def _literal(blob: str) -> Any:
    try:
        return ast.literal_eval(blob)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def load_object(text: str) -> Any:
    """The first complete object of a model's answer (see the module docstring).

    Raises :class:`NoObject` or :class:`NotALiteral` (with the reason), never anything else.
    """
    first = text.find("{")
    if first < 0 or text.rfind("}") < first:
        raise NoObject("no JSON object")
    why = "is neither JSON nor a Python literal"
    literal_tries = 0
    for n, opening in enumerate(_OPENING_RE.finditer(text, first)):
        if n >= MAX_CANDIDATES:
            break
        start = opening.start()
        try:
            obj, _end = _DECODER.raw_decode(text, start)
        except RecursionError:
            obj, why = None, f"is nested deeper than {MAX_DEPTH} levels"
        except ValueError:  # JSONDecodeError, or a number the decoder cannot convert
            obj = None
        if obj is None and literal_tries < _LITERAL_TRIES:
            literal_tries += 1
            blob = _balanced(text, start)
            obj = _literal(blob) if blob is not None else None
        if isinstance(obj, dict):
            if not nesting_exceeds(obj, MAX_DEPTH):
                return obj
            why = f"is nested deeper than {MAX_DEPTH} levels"
    raise NotALiteral(why)


def read_object(text: str) -> tuple[Any, str | None]:
    """``(object, None)`` from a judge's answer, or ``(None, why it could not be read)``."""
    try:
        return load_object(text or ""), None
    except NoObject:
        return None, "no JSON object in the judge's answer"
    except NotALiteral as err:
        return None, f"the judge's object {err}"


def _score(value: Any, scale_max: float) -> tuple[float | None, str | None, str | None]:
    """``(score on 0-1, explanation, None)`` or ``(None, explanation, reason)`` for one attribute's entry."""
    try:
        entry = _ENTRY.validate_python(value)
    except ValidationError:
        shown = value.get("score") if isinstance(value, dict) else value
        return None, None, f"score is not a number: {_short(shown)}"
    explanation = None
    if isinstance(entry, ScoreEntry):
        explanation = entry.explanation if isinstance(entry.explanation, str) else None
        entry = entry.score
    if isinstance(entry, float) and not math.isfinite(entry) or not 0 <= entry <= scale_max:  # ints: no float()
        return None, explanation, f"score {_short(entry)} outside [0, {scale_max:g}]"
    return float(entry) / scale_max, explanation, None


def _short(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"<{len(str(abs(value)))} digits>"  # at most MAX_INT_DIGITS digits: str() can write it
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def parse_judgement(text: str, attributes: list[str] | None = None, *, scale_max: float = 1.0) -> JudgeResult:
    """Read a pointwise judge's answer into per-attribute scores.

    The first object of the answer (its ``scores`` member when that is an object) is read; keys are
    matched to attribute names (:func:`attribute_key`, first match kept). Each entry is a number or
    ``{"score": n, "explanation": "..."}``; a score in [0, ``scale_max``] is divided by ``scale_max``.

    Args:
        text: the judge's answer.
        attributes: the attributes asked for; all twelve when None.
        scale_max: the top of the scale the judge was given (1 or 10).

    Returns:
        A :class:`JudgeResult`: an attribute that is missing, not a number or out of range is unscored with
        the reason; no readable object leaves every attribute unscored and sets ``error``.
    """
    wanted = list(attributes or ATTRIBUTES)
    obj, why = read_object(text)
    if why:
        return JudgeResult(unscored={a: why for a in wanted}, error=why)
    if isinstance(obj.get("scores"), dict):
        obj = obj["scores"]
    found: dict[str, Any] = {}
    for key, value in obj.items():
        attr = attribute_key(str(key))
        if attr is not None and attr not in found:
            found[attr] = value
    res = JudgeResult()
    for attr in wanted:
        if attr not in found:
            res.unscored[attr] = "missing from the judge's answer"
            continue
        score, explanation, reason = _score(found[attr], scale_max)
        if explanation is not None:
            res.explanations[attr] = explanation
        if reason is not None:
            res.unscored[attr] = reason
        else:
            res.scores[attr] = score
    return res


def parse_pairwise(text: str) -> tuple[str | None, str | None]:
    """``("1" | "2" | "tie", None)`` from a pairwise judge's ``{"winner": ...}``, else ``(None, reason)``.

    Accepted spellings: 1/2/tie, "answer 1", "first"/"second", numbers 1 and 2.
    """
    obj, why = read_object(text)
    if why:
        return None, why
    if "winner" not in obj:
        return None, "no 'winner' key in the judge's answer"
    raw = obj["winner"]
    try:
        raw = _WINNER.validate_python(raw)
    except ValidationError:
        return None, f"winner is not 1, 2 or tie: {_short(raw)}"
    value = str(raw).strip().lower().removeprefix("answer").strip() if not isinstance(raw, int) or \
        abs(raw) < 10 else ""
    found = {"1": "1", "first": "1", "2": "2", "second": "2", "tie": "tie", "draw": "tie"}.get(value)
    if found is None:
        return None, f"winner is not 1, 2 or tie: {_short(raw)}"
    return found, None


def combine_orders(a_first: str | None, b_first: str | None) -> tuple[str | None, str]:
    """Combine the verdicts of the two orders into ``a`` / ``b`` / ``tie``.

    A win only when both orders name the same response (``"1"`` with A shown first and ``"2"`` with B shown
    first); two ties are a tie; any disagreement is a tie marked ``inconsistent``; a missing verdict gives
    ``None``.
    """
    if a_first is None or b_first is None:
        return None, "unparsed"
    in_a = {"1": "a", "2": "b", "tie": "tie"}[a_first]
    in_b = {"1": "b", "2": "a", "tie": "tie"}[b_first]
    if in_a == in_b:
        return in_a, "consistent"
    return "tie", "inconsistent"


# Phrases by which a rationale addresses its grader. A match is flagged and counted; the score still
# comes from the judge's own JSON (the rationale is never parsed for scores).
_HOSTILE = [
    re.compile(r"\b(ignore|disregard|forget|override)\b[^.\n]{0,60}\b(instruction|prompt|rubric|rule|guideline|"
               r"above|previous|criteria)", re.I),
    re.compile(r"\b(judge|grader|evaluator|reviewer|assistant|ai|model)\b[^.\n]{0,60}\b(must|should|will|shall)\b"
               r"[^.\n]{0,40}\b(score|rate|grade|give|award|mark)", re.I),
    re.compile(r"\b(give|assign|award|rate|grade|score)\b[^.\n]{0,40}\b(1\.0|10/10|10 out of 10|100%|full marks|"
               r"perfect score|maximum score|highest score|top marks)", re.I),
    re.compile(r"[{,]\s*[\"']?(score|scores|winner)[\"']?\s*:", re.I),
]


def hostile_flags(rationale: str) -> list[str]:
    """The passages of a rationale that try to steer its grader (see ``_HOSTILE``), empty when none."""
    out = []
    for pattern in _HOSTILE:
        m = pattern.search(rationale or "")
        if m:
            out.append(m.group(0)[:120])
    return out


def parse_verdict(text: str, key: str = "correct") -> tuple[bool | None, str | None]:
    """Parse a correctness judge's verdict.

    ``(True | False, None)`` from a judge's ``{"correct": true/false}`` (also "yes"/"no" strings), else
    ``(None, reason)``.
    """
    obj, why = read_object(text)
    if why:
        return None, why
    if key not in obj:
        return None, f"no {key!r} key in the judge's answer"
    value = obj[key]
    try:
        value = _VERDICT.validate_python(value)
    except ValidationError:
        return None, f"{key} is not true or false: {_short(value)}"
    if isinstance(value, bool):
        return value, None
    if value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes"), None
    return None, f"{key} is not true or false: {_short(value)}"
