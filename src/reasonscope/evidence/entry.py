"""The evidence (RACE) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring, the sub-app and the printer are imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..family import FamilyResult, MetricSpec, ScoringContext
from ..metric_specs import EVIDENCE
from .settings import EvidenceConfig

if TYPE_CHECKING:
    import typer
    from rich.console import Console

METRICS: tuple[MetricSpec, ...] = EVIDENCE  # declared once, in the catalogue


class EvidenceFamily:
    name = "evidence"
    settings = EvidenceConfig
    metrics = METRICS

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        from .stored import score_evidence

        tables = score_evidence(ctx.store, ctx.run_id, ctx.settings, ctx.stats, ctx.data, seed=ctx.seed,
                                console=ctx.console, models=ctx.models)
        return FamilyResult.from_tables(tables)

    def cli(self) -> typer.Typer | None:
        from .cli import app

        return app

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = EvidenceFamily()
