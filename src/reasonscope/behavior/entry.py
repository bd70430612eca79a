"""The behavior (multi-dimensional behavioural framework) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring, the sub-app and the printer are imported when first used.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..family import FamilyResult, MetricSpec, ScoringContext, ScoringModels
from ..metric_specs import BEHAVIOR
from .settings import BehaviorConfig

if TYPE_CHECKING:
    import typer
    from rich.console import Console

METRICS: tuple[MetricSpec, ...] = BEHAVIOR  # declared once, in the catalogue


class BehaviorFamily:
    name = "behavior"
    settings = BehaviorConfig
    metrics = METRICS

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        from rich.markup import escape

        from .family import score_behavior

        console = ctx.console
        chunks = ctx.chunks()
        models = ctx.scoring_models
        if models is None:
            models = prepare_scoring_models(ctx.settings, ctx.store)
        if ctx.executor != "local":
            from ..executors import distribute

            models = distribute(models, ctx.settings, ctx.executor)
        for reason in (models.nli_reason, models.sim_reason):
            if reason:
                console.print("[yellow]behavior: " + escape(reason))
        replaced = False

        def write(scores: list) -> None:  # each chunk's item-level scores, in place of the previous scoring's
            nonlocal replaced
            if not replaced:
                ctx.store.delete_scores(ctx.run_id, "behavior")
                replaced = True
            ctx.store.put_scores(ctx.run_id, scores)

        scores, tables = score_behavior(chunks, ctx.settings, ctx.stats, seed=ctx.seed,
                                        temperatures=ctx.temperatures, nli=models.nli, nli_reason=models.nli_reason,
                                        sim=models.sim, sim_reason=models.sim_reason, write=write)
        if not replaced:  # no generation: nothing scored, nothing written
            return None
        tables["backends"]["executor"] = ctx.executor
        ctx.store.put_scores(ctx.run_id, scores)
        ctx.store.put_artefact(ctx.run_id, "behavior.json", "json", json.dumps(tables, default=str))
        return FamilyResult.from_tables(tables)

    def cli(self) -> typer.Typer | None:
        return None

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        from .printer import print_summary

        print_summary(tables, out, err)


def prepare_scoring_models(settings: BehaviorConfig, store=None) -> ScoringModels:
    """The NLI and similarity models of the behavior settings behind the store's score cache
    (:mod:`reasonscope.scorers.cache`); nothing is loaded here: each loads on its first cache miss
    (the reason is recorded when one cannot be used)."""
    from ..scorers.cache import ScoreCache
    from ..scorers.nli import cached_nli
    from ..scorers.similarity import cached_similarity

    cache = ScoreCache(store) if store is not None else None
    out = ScoringModels()
    out.nli, out.nli_reason = cached_nli(settings.nli, cache, label="behavior LS: NLI")
    out.sim = cached_similarity(settings.similarity, cache, label="behavior SS")
    out.preload_similarity = settings.samples >= 2
    return out


FAMILY = BehaviorFamily()
