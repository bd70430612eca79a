"""The behaviour family's section of ``summary.json``: its typed model (part of the published schema).

:class:`BehaviorSummary` is the ``behavior`` field of :class:`reasonscope.output_files.Summary`
(:attr:`reasonscope.report.view.FamilyReport.summary_type`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..output_files import Estimate, OpenModel, PAdjust

__all__ = ["BehaviorSummary", "PairedComparison", "StrategyScore"]


class StrategyScore(OpenModel):
    """A weighted strategy score of one model."""

    value: float | None
    low: float | None = Field(default=None, description="95% CI low (item bootstrap of the weighted mean)")
    high: float | None = Field(default=None, description="95% CI high")
    left_out: list[str] = Field(default_factory=list, description="metrics left out (not computed)")
    renormalised: bool = Field(default=False, description="weights renormalised over the metrics left")


class PairedComparison(OpenModel):
    """A paired difference between two models on one metric, with its test."""

    model_a: str
    model_b: str
    metric: str
    difference: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    test: str | None = None


class BehaviorSummary(OpenModel):
    """The behaviour family's tables (CQ, CS, RS, LS, SS, ES and the strategies)."""

    metrics: dict[str, dict[str, Estimate]] = Field(description="model -> metric -> estimate")
    strategies: dict[str, dict[str, StrategyScore]] = Field(default_factory=dict,
                                                            description="model -> strategy -> score")
    per_dataset: dict[str, dict[str, dict[str, Estimate]]] = Field(
        default_factory=dict, description="model -> dataset -> metric -> estimate")
    per_type: dict[str, dict[str, dict[str, Estimate]]] = Field(
        default_factory=dict, description="model -> item type -> metric -> estimate")
    paired: list[PairedComparison] = Field(default_factory=list)
    strategy_weights: dict[str, dict[str, float]] = Field(default_factory=dict)
    user_strategies: list[str] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    p_adjust: PAdjust | None = None
    counts: dict[str, dict[str, int]] = Field(default_factory=dict, description="model -> count name -> count")
    warnings: list[str] = Field(default_factory=list)
