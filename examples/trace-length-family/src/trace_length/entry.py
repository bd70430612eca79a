"""The family object reasonscope loads through the entry point ``trace_length = "trace_length.entry:FAMILY"``.

It satisfies :class:`reasonscope.family.Family`; :class:`reasonscope.family.FamilyBase` supplies every
method this family does not need to change. Imports stay light (scoring and the printer load on first use):
reasonscope imports this module whenever it lists the families.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from reasonscope.family import FamilyBase, FamilyInputs, FamilyResult, GenerationContext, ScoringContext

from .commands import app as commands_app
from .metrics import FAMILY_NAME, METRICS
from .settings import TraceLengthConfig

if TYPE_CHECKING:
    from rich.console import Console

    from reasonscope.report.view import FamilyReport


class TraceLengthFamily(FamilyBase):
    """How many reasoning steps each answer shows, and the share of answers with (almost) none."""

    name = FAMILY_NAME
    settings = TraceLengthConfig
    score_settings = TraceLengthConfig  # `reasonscope score` may measure imported outputs too
    metrics = METRICS
    commands = commands_app  # `reasonscope trace-length steps TEXT`

    @property
    def report(self) -> FamilyReport:
        """The family's part of report.html, summary.json and results.xlsx (:mod:`trace_length.report_view`)."""
        from .report_view import REPORT

        return REPORT

    def answers(self, settings: TraceLengthConfig) -> tuple[int, int]:
        """``samples`` answers to each question of the plan's datasets, no paraphrase."""
        return settings.samples, 0

    def prepare(self, settings: TraceLengthConfig, ctx: GenerationContext) -> FamilyInputs:
        """The family reads no data of its own; it needs the plan's models to answer."""
        return FamilyInputs(needs_models=True)

    def check_plan(self, settings: TraceLengthConfig, plan: Any) -> None:
        """A plan with this family needs datasets to ask about (checked before any model is called)."""
        if not plan.datasets:
            raise ValueError(f"families.{self.name} needs at least one entry in `datasets`")

    def needs_plan_models(self, settings: TraceLengthConfig, plan: Any) -> bool:
        """Always: the answers measured come from the plan's models."""
        return True

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Measure every answer of the run; store the item scores and ``trace_length.json``.

        Returns None (nothing written) when the run has no answer to the plan's questions.
        """
        from .scoring import score_trace_length

        scores, tables = score_trace_length(ctx.chunks(), ctx.settings, ctx.stats, seed=ctx.seed)
        if not tables["models"]:
            return None
        ctx.store.delete_scores(ctx.run_id, self.name)  # a re-scoring replaces the previous scores
        ctx.store.put_scores(ctx.run_id, scores)
        ctx.store.put_artefact(ctx.run_id, f"{self.name}.json", "json", json.dumps(tables))
        return FamilyResult.from_tables(tables)

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the family's section of ``summary.json`` (:mod:`trace_length.printer`)."""
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = TraceLengthFamily()
