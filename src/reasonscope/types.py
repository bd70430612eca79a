"""The shared data model: :class:`Item`, :class:`Completion`, :class:`Generation`, :class:`Score`.

Every family reads and writes these types; the store persists them and the report renders them.

Choices
-------
* Item ids are stable: the id given by the dataset, or ``"h-" + sha256(content)[:16]`` where the
  content is the canonical JSON of ``input``, ``choices`` and ``target``. The same question therefore
  gets the same id in every run, which is what makes resume and cross-run comparison possible.
* A :class:`Completion` is what a provider returned (raw text, token counts, finish reason, error).
  A :class:`Generation` is the completion interpreted for one item: the answer extracted from it (or
  ``None`` with the reason), the reasoning trace and its steps. The raw text is always kept.
* A :class:`Score` with ``value=None`` means "not applicable / not computed"; ``reason`` says why.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

AnswerType = Literal["number", "math", "boolean", "choice", "label", "text"]
VARIANT_ORIGINAL = "original"


def paraphrase_index(variant: str) -> int | None:
    """``p0`` -> 0, ``p1`` -> 1...; None for any other variant."""
    return int(variant[1:]) if variant.startswith("p") and variant[1:].isdigit() else None


def is_question_variant(variant: str) -> bool:
    """The original question or one of its paraphrases.

    Other variants (``evidence``...) are a family's own requests about the item.
    """
    return variant == VARIANT_ORIGINAL or paraphrase_index(variant) is not None


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the input of every hash in reasonscope."""
    return _CANONICAL.encode(obj)


def stable_hash(obj: Any, length: int = 16) -> str:
    """The first ``length`` hex digits of the sha256 of ``obj``'s canonical JSON: a key stable across runs."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


class Item(BaseModel):
    """One evaluation item (a question, a premise/hypothesis pair, a text to classify)."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    input: str
    choices: list[str] | None = None
    target: Any = None
    answer_type: AnswerType = "text"
    rationale: str | None = None
    perturbations: list[str] = Field(default_factory=list)
    group: str = "default"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _assign_id(self) -> Item:
        if not self.id:
            self.id = "h-" + stable_hash({"input": self.input, "choices": self.choices, "target": self.target})
        return self

    def variant_text(self, variant: str) -> str:
        """Question text of a variant.

        ``p0``, ``p1``... are paraphrases; any other variant (``original``, or a family's own request such as
        ``evidence``) asks about the item's own input.
        """
        index = paraphrase_index(variant)
        return self.input if index is None else self.perturbations[index]

    def variants(self, max_paraphrases: int | None = None) -> list[str]:
        """The item's question variants: ``original`` then ``p0``, ``p1``... (at most ``max_paraphrases``)."""
        n = len(self.perturbations) if max_paraphrases is None else min(max_paraphrases, len(self.perturbations))
        return [VARIANT_ORIGINAL] + [f"p{i}" for i in range(n)]


class Completion(BaseModel):
    """What a provider returned for one request.

    ``error`` set and ``pending`` false: the request failed for good (a refusal, an empty reply, a
    rejected request); it is stored and is a *failed generation*. ``pending`` true: no answer came that
    says anything about the model (rate limits, server errors or timeouts outlasted the retries, or the
    key or endpoint was refused); ``error`` says why, nothing is stored, and the next run sends it again.
    """

    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    error: str | None = None
    attempts: int = 1
    pending: bool = False
    # how a ``structured`` request was honoured: "grammar:llguidance", "response_format", "tool", or
    # "prompt-only: <why>" when the server refused the constraint (see reasonscope.models.structured)
    constraint: str | None = None

    @property
    def failed(self) -> bool:
        """Failed for good (stored as a failed generation); pending requests are not failed."""
        return self.error is not None and not self.pending

    @property
    def truncated(self) -> bool:
        """Whether generation stopped at the token limit (finish reason ``length`` or ``max_tokens``)."""
        return self.finish_reason in ("length", "max_tokens")


class Generation(BaseModel):
    """A completion interpreted for an item: raw text, extracted answer, trace and steps."""

    model: str
    item_id: str
    variant: str = VARIANT_ORIGINAL
    sample: int = 0
    raw_text: str
    answer: Any = None
    answer_reason: str | None = None
    trace: str = ""
    think: str | None = None
    steps: list[str] = Field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    max_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    finish_reason: str | None = None
    truncated: bool = False
    error: str | None = None
    source: str = "generated"
    key: str | None = None


class Score(BaseModel):
    """One metric value. ``item_id=None`` is a corpus-level score; ``value=None`` is not applicable."""

    family: str
    metric: str
    model: str
    item_id: str | None = None
    value: float | None = None
    reason: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
