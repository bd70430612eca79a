"""The evidence family's outputs: its section of ``summary.json`` and a line of ``evidence_instances.jsonl``.

Both are part of the published schema (:attr:`reasonscope.report.view.FamilyReport.summary_type` and
:attr:`~reasonscope.report.view.FamilyReport.records`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..output_files import OpenModel

__all__ = ["EvidenceInstance", "EvidenceSummary"]


class EvidenceSummary(OpenModel):
    """The evidence family's (RACE) tables of one model: coverage per matcher, classifier, sweeps."""

    settings: dict[str, Any] = Field(default_factory=dict)
    coverage: dict[str, dict[str, Any]] = Field(default_factory=dict, description="matcher -> coverage table")
    warnings: list[str] = Field(default_factory=list)


class EvidenceInstance(OpenModel):
    """A line of ``evidence_instances.jsonl``: one test instance with its features and rationale matches."""

    model: str
    item_id: str
    predicted: Any = None
    correct: bool | None = None
    support: list[dict[str, Any]] = Field(default_factory=list, description="top supporting features")
    contradict: list[dict[str, Any]] = Field(default_factory=list, description="top contradicting features")
    matches: dict[str, dict[str, list[dict[str, Any]]]] = Field(
        default_factory=dict, description="matcher -> support/contradict -> matches in the rationale")
    coverage: dict[str, dict[str, float | None]] = Field(
        default_factory=dict, description="matcher -> support/contradict -> coverage")
    rationale: str | None = None
