"""The attack (MATCHA) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring, the sub-app and the printer are imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..family import FamilyResult, MetricSpec, ScoringContext
from ..metric_specs import ATTACK
from .settings import AttackConfig

if TYPE_CHECKING:
    import typer
    from rich.console import Console

METRICS: tuple[MetricSpec, ...] = ATTACK  # declared once, in the catalogue


class AttackFamily:
    name = "attack"
    settings = AttackConfig
    metrics = METRICS

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        from .family import score_attack

        datasets = {name: items for name, items in ctx.store.items().items() if name in set(ctx.datasets)}
        tables = score_attack(ctx.store, ctx.run_id, ctx.settings, ctx.stats, datasets, ctx.models, seed=ctx.seed,
                              executor=ctx.executor, console=ctx.console)
        return FamilyResult.from_tables(tables)

    def cli(self) -> typer.Typer | None:
        from .cli import app

        return app

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = AttackFamily()
