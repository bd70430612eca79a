"""The information family's section of ``summary.json``: its typed model (part of the published schema).

:class:`InformationSummary` is the ``information`` field of :class:`reasonscope.output_files.Summary`
(:attr:`reasonscope.report.view.FamilyReport.summary_type`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..output_files import Estimate, OpenModel

__all__ = ["InformationSummary"]


class InformationSummary(OpenModel):
    """The information family's tables (REV, LAREV)."""

    methods: list[str]
    absolute: dict[str, dict[str, Estimate]] = Field(description="method -> variant -> estimate")
    separation: dict[str, dict[str, Estimate]] = Field(default_factory=dict,
                                                       description="method -> comparison -> estimate")
    accuracy: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
