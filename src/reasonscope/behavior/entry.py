"""The behavior (multi-dimensional behavioural framework) family as the registry sees it (:class:`reasonscope.family.Family`).

Imports stay light: scoring and the printer are imported when first used.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..family import (
    FamilyBase,
    FamilyInputs,
    FamilyResult,
    GenerationContext,
    MetricSpec,
    ScoringContext,
    ScoringModels,
)
from .catalogue import BEHAVIOR
from .settings import BehaviorConfig

if TYPE_CHECKING:
    from rich.console import Console

    from ..report.view import FamilyReport
    from ..storage.store import Store

METRICS: tuple[MetricSpec, ...] = BEHAVIOR  # declared once, in the catalogue


class BehaviorFamily(FamilyBase):
    """The behaviour family (CQ, CS, RS, LS, ES, SS and the weighted strategies) as the runner sees it.

    It asks each model for K samples and P paraphrase completions per item, loads its NLI and similarity
    scorers while generation runs, and scores the run with
    :func:`reasonscope.behavior.scoring.score_behavior`.
    """

    name = "behavior"
    settings = BehaviorConfig
    metrics = METRICS

    @property
    def report(self) -> FamilyReport:
        """The family's report part (:mod:`reasonscope.behavior.report_view`), imported when first used."""
        from .report_view import REPORT

        return REPORT
    score_settings = BehaviorConfig

    def check_plan(self, settings: BehaviorConfig, plan: Any) -> None:
        """The plan's datasets are what the family asks about: it needs at least one."""
        if not plan.datasets:
            raise ValueError("families.behavior needs at least one entry in `datasets`")

    def needs_plan_models(self, settings: BehaviorConfig, plan: Any) -> bool:
        """Always: the plan's models answer its questions."""
        return True

    def answers(self, settings: BehaviorConfig) -> tuple[int, int]:
        """K samples of each question and one completion of each of its first P paraphrases."""
        return settings.samples, settings.paraphrases

    def prepare(self, settings: BehaviorConfig, ctx: GenerationContext) -> FamilyInputs:
        """Ask the models for completions of the plan's datasets; the family reads no data of its own."""
        return FamilyInputs(needs_models=True)

    def scoring_models(self, settings: BehaviorConfig, store: Store | None) -> ScoringModels:
        """The NLI and similarity scorers of ``settings`` (not loaded yet; :func:`prepare_scoring_models`)."""
        return prepare_scoring_models(settings, store)

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Score the run's generations with the behaviour metrics; store the scores and ``behavior.json``.

        Each chunk's item-level scores replace the previous scoring's as they come. Returns None when the run
        has no generation (nothing scored, nothing written).
        """
        from .scoring import score_behavior

        chunks = _with_progress(ctx)
        models = ctx.scoring_models
        if models is None:
            models = prepare_scoring_models(ctx.settings, ctx.store)
        if ctx.executor != "local":
            from ..execution.executors import distribute

            models = distribute(models, ctx.settings, ctx.executor)
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

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the behaviour table (a row per metric, a column per model) to ``out``, notes to ``err``."""
        from .printer import print_summary

        print_summary(tables, out, err)


def prepare_scoring_models(settings: BehaviorConfig, store=None) -> ScoringModels:
    """The NLI and similarity models of the behavior settings behind the store's score cache.

    See :mod:`reasonscope.scorers.cache`. Nothing is loaded here: each loads on its first cache miss
    (the reason is recorded when one cannot be used).
    """
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


def _with_progress(ctx: ScoringContext):
    """The run's chunks, with a transient progress bar over the items scored.

    Behaviour scoring reads every generation: NLI over steps, similarity over traces.
    """
    from ..execution.calls import make_progress

    total = len(ctx.store.run_item_keys(ctx.run_id))
    progress = make_progress(ctx.console, transient=True)
    with progress:
        task = progress.add_task("behavior: scoring items", total=total)
        for chunk in ctx.chunks():
            yield chunk
            progress.advance(task, len(chunk.items))
