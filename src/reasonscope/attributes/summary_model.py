"""The attributes family's outputs: its section of ``summary.json`` and a line of ``attributes_judgements.jsonl``.

Both are part of the published schema (:attr:`reasonscope.report.view.FamilyReport.summary_type` and
:attr:`~reasonscope.report.view.FamilyReport.records`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..output_files import Estimate, OpenModel

__all__ = ["AttributesJudgement", "AttributesSummary"]


class AttributesSummary(OpenModel):
    """The attributes family's tables: judged and automatic scores, agreement, ratings."""

    attributes: list[str] = Field(default_factory=list)
    scores: dict[str, dict[str, Estimate]] = Field(default_factory=dict, description="model -> attribute -> estimate")
    agreement: dict[str, dict[str, Any]] = Field(default_factory=dict)
    ratings: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class AttributesJudgement(OpenModel):
    """A line of ``attributes_judgements.jsonl``: one judge's scores of one reasoning chain."""

    model: str
    item: str
    judge: str
    key: str | None = Field(default=None, description="the judge request's cache key")
    scores: dict[str, float | None] = Field(description="attribute -> score in [0, 1]")
    unscored: dict[str, Any] = Field(default_factory=dict, description="attribute -> why it has no score")
    explanations: dict[str, Any] = Field(default_factory=dict)
    raw: str | None = None
