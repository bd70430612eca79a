"""The attack family's outputs: its section of ``summary.json`` and a line of ``attack_items.jsonl``.

Both are part of the published schema (:attr:`reasonscope.report.view.FamilyReport.summary_type` and
:attr:`~reasonscope.report.view.FamilyReport.records`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..output_files import Estimate, OpenModel

__all__ = ["AttackItem", "AttackModelSummary", "AttackRates", "AttackSummary"]


class AttackRates(OpenModel):
    """Outcome rates of one attack method on one model."""

    attacked: int
    n: int = Field(description="attacks in the denominator")
    counts: dict[str, int] = Field(description="outcome -> count")
    success: Estimate
    wrong: Estimate
    unattackable: Estimate


class AttackModelSummary(OpenModel):
    """The attack family's (MATCHA) table of one model."""

    items: int
    answered_correctly: int
    attacked: int
    rates: dict[str, AttackRates] = Field(description="method -> rates")


class AttackSummary(OpenModel):
    """The attack family's tables."""

    settings: dict[str, Any] = Field(default_factory=dict)
    methods: list[str]
    models: dict[str, AttackModelSummary]
    skipped_models: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    transfer: dict[str, Any] = Field(default_factory=dict)


class AttackItem(OpenModel):
    """A line of ``attack_items.jsonl``: one attack on one item, its outcome and the two chains."""

    model: str
    item: str
    method: str
    outcome: str = Field(description="success, wrong, unattackable, clean_wrong, not_judged or invalid")
    why: str | None = None
    question: str
    perturbed_question: str | None = None
    clean: dict[str, Any]
    perturbed: dict[str, Any]
