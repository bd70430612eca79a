"""The information (REV, LAREV) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring, the sub-app and the printer are imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..family import FamilyResult, MetricSpec, ScoringContext
from ..metric_specs import INFORMATION
from .settings import InformationConfig

if TYPE_CHECKING:
    import typer
    from rich.console import Console

METRICS: tuple[MetricSpec, ...] = INFORMATION  # declared once, in the catalogue


class InformationFamily:
    name = "information"
    settings = InformationConfig
    metrics = METRICS

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        from .family import run_information

        cfg, sets = ctx.settings, ctx.store.items()
        tables = run_information(ctx.store, ctx.run_id, cfg, ctx.stats, sets[cfg.train.name],
                                 sets[cfg.test.name] if cfg.test is not None else None, ctx.run_dir,
                                 seed=ctx.seed, console=ctx.console)
        return FamilyResult.from_tables(tables)

    def cli(self) -> typer.Typer | None:
        from .cli import app

        return app

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = InformationFamily()
