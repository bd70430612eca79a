"""Strict parsing of LLM-judge answers.

The judge is asked for a JSON object mapping each attribute to ``{"score": number, "explanation":
text}`` (a bare number is accepted too). Parsing: the outermost ``{...}`` as JSON, else as a Python
literal with ``ast.literal_eval`` (never ``eval``). Keys are matched to attribute names ignoring case,
spaces, hyphens and underscores. A score that is missing, not a number (booleans are not numbers),
not finite or outside ``[0, scale_max]`` is **unscored** with the reason, never 0. Valid scores are
divided by ``scale_max`` (1 or 10), so every judge reports on 0-1.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from .attributes import ATTRIBUTES, attribute_key


@dataclass
class JudgeResult:
    scores: dict[str, float] = field(default_factory=dict)  # attribute -> score in [0, 1]
    unscored: dict[str, str] = field(default_factory=dict)  # attribute -> reason
    explanations: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # the whole answer could not be read


class NoObject(ValueError):
    """The text holds no ``{...}`` block."""


class NotALiteral(ValueError):
    """The ``{...}`` block is neither JSON nor a Python literal."""


def load_object(text: str) -> Any:
    """The outermost ``{...}`` of a model's answer: JSON, else a Python literal via ``ast.literal_eval``;
    never ``eval``. Raises :class:`NoObject` or :class:`NotALiteral`. Shared by every family that asks
    a model for an object (judges, evidence predictions)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise NoObject("no JSON object")
    blob = text[start:end + 1]
    try:
        return json.loads(blob)
    except json.JSONDecodeError:
        try:
            return ast.literal_eval(blob)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise NotALiteral("neither JSON nor a Python literal") from None


def read_object(text: str) -> tuple[Any, str | None]:
    """``(object, None)`` from a judge's answer, or ``(None, why it could not be read)``."""
    try:
        return load_object(text or ""), None
    except NoObject:
        return None, "no JSON object in the judge's answer"
    except NotALiteral:
        return None, "the judge's object is neither JSON nor a Python literal"


def parse_judgement(text: str, attributes: list[str] | None = None, *, scale_max: float = 1.0) -> JudgeResult:
    wanted = list(attributes or ATTRIBUTES)
    obj, why = read_object(text)
    if why:
        return JudgeResult(unscored={a: why for a in wanted}, error=why)
    if not isinstance(obj, dict):
        return JudgeResult(unscored={a: "the judge's answer is not an object" for a in wanted},
                           error="not an object")
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
        value = found[attr]
        if isinstance(value, dict):
            if isinstance(value.get("explanation"), str):
                res.explanations[attr] = value["explanation"]
            value = value.get("score")
        if isinstance(value, bool) or not isinstance(value, int | float):
            res.unscored[attr] = f"score is not a number: {value!r:.40}"
        elif not math.isfinite(value) or not 0 <= value <= scale_max:
            res.unscored[attr] = f"score {value!r} outside [0, {scale_max:g}]"
        else:
            res.scores[attr] = float(value) / scale_max
    return res


def parse_pairwise(text: str) -> tuple[str | None, str | None]:
    """``("1" | "2" | "tie", None)`` from a pairwise judge's ``{"winner": ...}``, else ``(None, reason)``.
    Accepted spellings: 1/2/tie, "answer 1", "first"/"second", numbers 1 and 2."""
    obj, why = read_object(text)
    if why:
        return None, why
    if not isinstance(obj, dict) or "winner" not in obj:
        return None, "no 'winner' key in the judge's answer"
    raw = obj["winner"]
    if isinstance(raw, bool):
        return None, f"winner is not 1, 2 or tie: {raw!r}"
    value = str(raw).strip().lower().removeprefix("answer").strip()
    found = {"1": "1", "first": "1", "2": "2", "second": "2", "tie": "tie", "draw": "tie"}.get(value)
    if found is None:
        return None, f"winner is not 1, 2 or tie: {raw!r:.40}"
    return found, None


def combine_orders(a_first: str | None, b_first: str | None) -> tuple[str | None, str]:
    """Combine the verdicts of the two orders into ``a`` / ``b`` / ``tie``: a win only when both orders
    name the same response (``"1"`` with A shown first and ``"2"`` with B shown first); two ties are a tie;
    any disagreement is a tie marked ``inconsistent``; a missing verdict gives ``None``."""
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
    """``(True | False, None)`` from a judge's ``{"correct": true/false}`` (also "yes"/"no" strings), else
    ``(None, reason)``."""
    obj, why = read_object(text)
    if why:
        return None, why
    if not isinstance(obj, dict) or key not in obj:
        return None, f"no {key!r} key in the judge's answer"
    value = obj[key]
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes"), None
    return None, f"{key} is not true or false: {value!r:.40}"
