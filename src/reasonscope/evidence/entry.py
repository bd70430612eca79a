"""The evidence (RACE) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring and the printer are imported when first used; the command-line sub-app
lives in ``reasonscope/cli/evidence.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..family import FamilyBase, FamilyInputs, FamilyResult, GenerationContext, MetricSpec, ScoringContext
from .catalogue import EVIDENCE
from .settings import EvidenceConfig, ScoreEvidenceConfig

if TYPE_CHECKING:
    from rich.console import Console

    from ..report.view import FamilyReport
    from ..types import Item

METRICS: tuple[MetricSpec, ...] = EVIDENCE  # declared once, in the catalogue


class EvidenceFamily(FamilyBase):
    """The evidence family (RACE) as the runner sees it.

    It reads its own train and test sets, asks each model for a label and a rationale per test item (or
    imports predictions), and scores coverage with :func:`reasonscope.evidence.stored.score_evidence`.
    """

    name = "evidence"
    settings = EvidenceConfig
    metrics = METRICS

    @property
    def report(self) -> FamilyReport:
        """The family's report part (:mod:`reasonscope.evidence.report_view`), imported when first used."""
        from .report_view import REPORT

        return REPORT
    score_settings = ScoreEvidenceConfig

    def needs_plan_models(self, settings: EvidenceConfig, plan: Any) -> bool:
        """Unless ``predictions`` gives the labels and rationales, the plan's models write them."""
        return not settings.predictions

    def own_datasets(self, settings: EvidenceConfig) -> list[tuple[str, Any]]:
        """Its ``train`` and ``test`` splits."""
        return [(split, getattr(settings, split)) for split in ("train", "test") if getattr(settings, split) is not None]

    def prepare(self, settings: EvidenceConfig, ctx: GenerationContext) -> FamilyInputs:
        """Read the train and test sets and build the requests.

        See :func:`reasonscope.evidence.generation.prepare_evidence`.
        """
        from .generation import prepare_evidence

        return prepare_evidence(settings, ctx)

    def prepare_import(self, settings: ScoreEvidenceConfig, ctx: GenerationContext, source: str
                       ) -> tuple[ScoreEvidenceConfig, dict[str, list[Item]]]:
        """The settings and the train / test sets to score the imported outputs of ``source`` with.

        See :func:`reasonscope.evidence.generation.prepare_evidence_import`.
        """
        from .generation import prepare_evidence_import

        return prepare_evidence_import(settings, ctx, source)

    def may_reuse_finished_run(self, settings: EvidenceConfig) -> bool:
        """Not with imported predictions (the file is read again each run)."""
        return not settings.predictions

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Score RACE coverage over the stored run; store the scores and ``evidence.json``."""
        from .stored import score_evidence

        tables = score_evidence(ctx.store, ctx.run_id, ctx.settings, ctx.stats, ctx.data, seed=ctx.seed,
                                console=ctx.console, models=ctx.models)
        return FamilyResult.from_tables(tables)

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the evidence tables to ``out`` and their notes to ``err``."""
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = EvidenceFamily()
