"""The attack (MATCHA) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring and the printer are imported when first used; the command-line sub-app
lives in ``reasonscope/cli/attack.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..family import FamilyBase, FamilyInputs, FamilyResult, GenerationContext, MetricSpec, ScoringContext
from .catalogue import ATTACK
from .settings import AttackConfig

if TYPE_CHECKING:
    from rich.console import Console

    from ..report.view import FamilyReport

METRICS: tuple[MetricSpec, ...] = ATTACK  # declared once, in the catalogue


class AttackFamily(FamilyBase):
    """The attack family (MATCHA) as the runner sees it.

    It optionally loads its own dataset, attacks each white-box model on the chosen items and scores the
    outcomes with :func:`reasonscope.attack.scoring.score_attack`.
    """

    name = "attack"
    settings = AttackConfig
    metrics = METRICS

    @property
    def report(self) -> FamilyReport:
        """The family's report part (:mod:`reasonscope.attack.report_view`), imported when first used."""
        from .report_view import REPORT

        return REPORT

    def check_plan(self, settings: AttackConfig, plan: Any) -> None:
        """Items to attack (the plan's datasets or its own ``dataset``) and a model to attack."""
        if not ((plan.datasets or settings.dataset) and plan.models):
            raise ValueError("families.attack needs `datasets` (or families.attack.dataset) and a white-box model in "
                             "`models` (hf/... or smollm2)")

    def prepare(self, settings: AttackConfig, ctx: GenerationContext) -> FamilyInputs:
        """The family's own dataset (``dataset``), when set: loaded here and stored with the run's items."""
        if settings.dataset is None:
            return FamilyInputs()
        from ..data.loaders import load_dataset

        items = load_dataset(settings.dataset, base_dir=ctx.base_dir, seed=ctx.seed).items
        return FamilyInputs(items={settings.dataset.name: items})

    def may_reuse_finished_run(self, settings: AttackConfig) -> bool:
        """Never: the family generates in a pass of its own."""
        return False

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Attack the run's white-box models on the chosen datasets; store the scores and ``attack.json``."""
        from .scoring import score_attack

        chosen = {ctx.settings.dataset.name} if ctx.settings.dataset is not None else set(ctx.datasets)
        datasets = {name: items for name, items in ctx.store.items().items() if name in chosen}
        tables = score_attack(ctx.store, ctx.run_id, ctx.settings, ctx.stats, datasets, ctx.models, seed=ctx.seed,
                              executor=ctx.executor, console=ctx.console)
        return FamilyResult.from_tables(tables)

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the attack tables to ``out`` and their notes to ``err``."""
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = AttackFamily()
