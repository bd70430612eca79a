"""The family's section of ``summary.json``, typed: reasonscope adds it to the published schema.

reasonscope assembles its ``Summary`` model from every family's :attr:`FamilyReport.summary_type`, so
``reasonscope output-schema`` documents this section like a built-in family's and a ``summary.json`` with
it validates.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Estimate(BaseModel):
    """A mean with its 95% interval (:func:`reasonscope.stats.estimate`)."""

    value: float | None = Field(description="The mean over items; None without any.")
    low: float | None = Field(description="Lower bound of the interval; None when there is none.")
    high: float | None = Field(description="Upper bound of the interval; None when there is none.")
    n: int = Field(description="Items behind the mean.")
    method: str = Field(description="How the interval was computed, or why there is none.")


class ModelTraceLength(BaseModel):
    """One model's numbers."""

    model_config = ConfigDict(extra="forbid")

    steps: Estimate = Field(description="Reasoning steps per answer (mean over an item's answers, then items).")
    unexplained: Estimate = Field(description="Share of answers with fewer than min_steps steps; lower is better.")
    answers: int = Field(description="Answers measured.")
    failed: int = Field(description="Failed generations, left out and counted.")


class TraceLengthSummary(BaseModel):
    """The ``trace_length`` section of ``summary.json``."""

    model_config = ConfigDict(extra="forbid")

    min_steps: int = Field(description="An answer with fewer reasoning steps than this counts as unexplained.")
    models: dict[str, ModelTraceLength] = Field(description="Model -> its numbers.")
    warnings: list[str] = Field(default_factory=list, description="Models with no usable answer.")
