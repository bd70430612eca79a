"""JSON schemas of the judges' answers.

Sent as the ``structured`` request option (:mod:`reasonscope.models.structured`) so that a constrained judge
can only write a parseable answer.

Each schema matches exactly what the judge's prompt asks for and what :mod:`reasonscope.judge.parse`
reads; explanations are bounded (``maxLength``) so a small model cannot spend its token budget on one.
The same parsers read constrained and free answers, so unparseable and unscored counts stay meaningful.
"""

from __future__ import annotations

from typing import Any

EXPLANATION = {"type": "string", "maxLength": 160}


def attribute_scores_schema(attributes: list[str], scale_max: float) -> dict[str, Any]:
    """``{"<attribute>": {"score": n, "explanation": "..."}, ...}`` for every attribute, all required.

    On the 0-10 scale a score is an integer 0-10; on the 0-1 scale a number in [0, 1].
    """
    score = {"type": "integer", "minimum": 0, "maximum": 10} if scale_max == 10 else \
        {"type": "number", "minimum": 0, "maximum": scale_max}
    entry = {"type": "object", "properties": {"score": score, "explanation": EXPLANATION},
             "required": ["score", "explanation"], "additionalProperties": False}
    return {"type": "object", "properties": {a: entry for a in attributes}, "required": list(attributes),
            "additionalProperties": False}


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


PAIRWISE_SCHEMA = _object(winner={"type": "string", "enum": ["1", "2", "tie"]}, explanation=EXPLANATION)
REASONING_SCHEMA = _object(correct={"type": "boolean"}, explanation=EXPLANATION)
SAME_MEANING_SCHEMA = _object(same={"type": "boolean"})


def label_rationale_schema(labels: list[str], rationale_chars: int = 400) -> dict[str, Any]:
    """``{"label": one of labels, "rationale": "..."}``: an evidence prediction."""
    return _object(label={"type": "string", "enum": list(labels)},
                   rationale={"type": "string", "minLength": 1, "maxLength": rationale_chars})
