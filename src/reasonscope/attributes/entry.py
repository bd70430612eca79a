"""The attributes family as the registry sees it (:class:`reasonscope.family.Family`).

The family covers rationale attributes and human preferences.

Imports stay light: scoring and the printer are imported when first used; the command-line sub-app
lives in ``reasonscope/cli/attributes.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..family import FamilyBase, FamilyInputs, FamilyResult, GenerationContext, MetricSpec, ScoringContext
from .catalogue import ATTRIBUTES
from .settings import AttributesConfig

if TYPE_CHECKING:
    from rich.console import Console

    from ..report.view import FamilyReport

METRICS: tuple[MetricSpec, ...] = ATTRIBUTES  # declared once, in the catalogue


class AttributesFamily(FamilyBase):
    """The attributes family as the runner sees it.

    Holds the family's name, its settings model (:class:`AttributesConfig`) and its metric descriptions;
    the runner calls it to plan answers, score a stored run and print the summary.
    """
    name = "attributes"
    settings = AttributesConfig
    metrics = METRICS

    @property
    def report(self) -> FamilyReport:
        """The family's report part (:mod:`reasonscope.attributes.report_view`), imported when first used."""
        from .report_view import REPORT

        return REPORT
    score_settings = AttributesConfig

    def check_plan(self, settings: AttributesConfig, plan: Any) -> None:
        """Rationales to judge (the plan's datasets) or preferences to explain: at least one of them."""
        if not plan.datasets and not settings.preferences:
            raise ValueError("families.attributes needs `datasets` (rationales to judge) or "
                             "families.attributes.preferences")

    def needs_plan_models(self, settings: AttributesConfig, plan: Any) -> bool:
        """When the plan has datasets: the models write the rationales the judges rate."""
        return bool(plan.datasets)

    def answers(self, settings: AttributesConfig) -> tuple[int, int]:
        """One answer to each question (its rationale is what the judges rate)."""
        return 1, 0

    def prepare(self, settings: AttributesConfig, ctx: GenerationContext) -> FamilyInputs:
        """Models are needed when the plan has datasets to answer (preferences alone need none)."""
        return FamilyInputs(needs_models=bool(ctx.datasets))

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Score the attributes of a stored run.

        Args:
            ctx: the run's store, id, settings, statistics settings, data, seed, console and base folder.

        Returns:
            The family's tables (:func:`reasonscope.attributes.scoring.score_attributes`) as a result.
        """
        from .scoring import score_attributes

        tables = score_attributes(ctx.store, ctx.run_id, ctx.settings, ctx.stats, ctx.data, seed=ctx.seed,
                                  console=ctx.console, base_dir=ctx.base_dir)
        return FamilyResult.from_tables(tables)

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the family's summary of ``tables``.

        Args:
            tables: the tables :meth:`score` produced.
            out: the console for the summary.
            err: the console for warnings.
        """
        from .printer import print_summary

        print_summary(tables, out, err)


FAMILY = AttributesFamily()
