"""The behavior (multi-dimensional behavioural framework) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring, the sub-app and the printer are imported when first used.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..family import FamilyResult, MetricSpec, ScoringContext, ScoringModels
from .settings import BehaviorConfig

if TYPE_CHECKING:
    import typer
    from rich.console import Console

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("CQ", "Correctness (CQ)", "behavior", description="share of items whose extracted answer matches the target"),
    MetricSpec("CS", "Consistency (CS)", "behavior", description="pairwise agreement of the answers of K samples"),
    MetricSpec("RS", "Robustness (RS)", "behavior", description="share of paraphrases answered as the original, over "
               "correctly answered items"),
    MetricSpec("LS", "Logical coherence (LS)", "behavior", description="1 - mean contradiction probability between "
               "consecutive steps (NLI)"),
    MetricSpec("ES", "Efficiency (ES)", "behavior", description="harmonic mean of CQ and a length score against the "
               "token budget"),
    MetricSpec("SS", "Stability (SS)", "behavior", description="mean pairwise similarity of the K reasoning traces"),
)


class BehaviorFamily:
    name = "behavior"
    settings = BehaviorConfig
    metrics = METRICS

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        from rich.markup import escape

        from .family import score_behavior

        console, data = ctx.console, ctx.data
        if not data.generations:
            return None
        models = ctx.scoring_models
        if models is None:
            with console.status("behavior: loading scoring models"):
                models = prepare_scoring_models(ctx.settings)
        if ctx.executor != "local":
            from ..executors import distribute

            with console.status(f"behavior: starting the {ctx.executor} executor"):
                models = distribute(models, ctx.settings, ctx.executor)
        for reason in (models.nli_reason, models.sim_reason):
            if reason:
                console.print("[yellow]behavior: " + escape(reason))
        with console.status("behavior: scoring"):
            scores, tables = score_behavior(data, ctx.settings, ctx.stats, seed=ctx.seed, temperatures=ctx.temperatures,
                                            nli=models.nli, nli_reason=models.nli_reason, sim=models.sim,
                                            sim_reason=models.sim_reason)
        tables["backends"]["executor"] = ctx.executor
        ctx.store.delete_scores(ctx.run_id, "behavior")
        ctx.store.put_scores(ctx.run_id, scores)
        ctx.store.put_artefact(ctx.run_id, "behavior.json", "json", json.dumps(tables, default=str))
        return FamilyResult.from_tables(tables)

    def cli(self) -> typer.Typer | None:
        return None

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        from .printer import print_summary

        print_summary(tables, out, err)


def prepare_scoring_models(settings: BehaviorConfig) -> ScoringModels:
    """Load the NLI and similarity models of the behavior settings (each may be None with the reason)."""
    from ..scorers.nli import make_nli
    from ..scorers.similarity import make_similarity
    from . import family  # noqa: F401  (imports scipy.stats ahead of scoring)

    out = ScoringModels()
    out.nli, out.nli_reason = make_nli(settings.nli)
    out.sim, out.sim_reason = make_similarity(settings.similarity)
    return out


FAMILY = BehaviorFamily()
