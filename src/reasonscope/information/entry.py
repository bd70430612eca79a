"""The information (REV, LAREV) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring and the printer are imported when first used; the command-line sub-app
lives in ``reasonscope/cli/information.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..family import FamilyBase, FamilyInputs, FamilyResult, GenerationContext, MetricSpec, ScoringContext
from .catalogue import INFORMATION
from .settings import InformationConfig

if TYPE_CHECKING:
    from rich.console import Console

    from ..report.view import FamilyReport

METRICS: tuple[MetricSpec, ...] = INFORMATION  # declared once, in the catalogue


class InformationFamily(FamilyBase):
    """The information family (REV and LAREV) as the runner sees it.

    It reads its own train and test sets, trains its evaluators in its own pass and scores rationale
    variants with :func:`reasonscope.information.scoring.run_information`.
    """

    name = "information"
    settings = InformationConfig
    metrics = METRICS

    @property
    def report(self) -> FamilyReport:
        """The family's report part (:mod:`reasonscope.information.report_view`), imported when first used."""
        from .report_view import REPORT

        return REPORT

    def own_datasets(self, settings: InformationConfig) -> list[tuple[str, Any]]:
        """Its ``train`` split and, when set, its ``test`` split."""
        return [(split, getattr(settings, split)) for split in ("train", "test") if getattr(settings, split) is not None]

    def prepare(self, settings: InformationConfig, ctx: GenerationContext) -> FamilyInputs:
        """Read the train and (when set) test sets; the family trains on them in its own pass."""
        from ..data.loaders import load_dataset

        return FamilyInputs(items={cfg.name: load_dataset(cfg, base_dir=ctx.base_dir, seed=ctx.seed).items
                                   for cfg in (settings.train, settings.test) if cfg is not None})

    def may_reuse_finished_run(self, settings: InformationConfig) -> bool:
        """Never: the family trains in a pass of its own."""
        return False

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Train the evaluators, score the test items and store the scores and ``information.json``."""
        from .scoring import run_information

        cfg, sets = ctx.settings, ctx.store.items()
        tables = run_information(ctx.store, ctx.run_id, cfg, ctx.stats, sets[cfg.train.name],
                                 sets[cfg.test.name] if cfg.test is not None else None, ctx.run_dir,
                                 seed=ctx.seed, console=ctx.console)
        return FamilyResult.from_tables(tables)

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the information tables to ``out`` and their notes to ``err``."""
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = InformationFamily()
