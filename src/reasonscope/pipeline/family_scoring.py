"""Scoring a stored run with the families enabled in its plan.

One loop over the registered families (:mod:`reasonscope.registry`), each scored through
:class:`reasonscope.family.Family`; this module names no family. Behavior, evidence and attributes read the
store and call no generator: the NLI judge, similarity models and attribute judges are scoring models, and the
judges' calls go through the store's request cache like every call (a re-score asks nothing twice). Attack and
information generate or train on their own and are scored first (only a generated run enables them). Results
replace the family's previous scores for the run, so re-scoring is idempotent.

:func:`prepare_scorers` wraps the scoring models in the store's score cache without loading them;
each loads on its first cache miss, or earlier through :meth:`ScoringModels.warm`, which the runner
calls in a background thread while generation runs (loading then overlaps with waiting for the
provider; a run with nothing to generate loads nothing ahead).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from ..family import ScoringContext, ScoringModels
from ..plan import FamiliesConfig
from ..registry import enabled_families
from ..shared_settings import ModelConfig, StatsConfig
from ..storage.run_data import RunData
from ..storage.store import Store

__all__ = ["ScoringModels", "prepare_scorers", "score_run"]


def prepare_scorers(families: FamiliesConfig | Any, store: Store | None = None) -> ScoringModels:
    """The scoring models the families need, behind the store's score cache.

    See :mod:`reasonscope.scorers.cache`.

    They are those of the first enabled family in canonical order that names some
    (:meth:`reasonscope.family.Family.scoring_models`). Nothing is loaded here: each model loads on its first
    cache miss, so a re-run, or a metric with nothing to score (SS with one sample per item), loads no model
    at all.
    """
    for family, settings in enabled_families(families, canonical=True):
        models = family.scoring_models(settings, store)
        if models is not None:
            return models
    return ScoringModels()


def score_run(store: Store, run_id: str, families: FamiliesConfig | Any, stats: StatsConfig, *, seed: int = 0,
              temperatures: dict[str, float] | None = None, console: Console | None = None,
              executor: str = "local", data: RunData | None = None, models: ScoringModels | None = None,
              base_dir: Path | None = None, run_dir: Path | None = None,
              plan_models: Sequence[ModelConfig] = (), datasets: Sequence[str] = (),
              seconds: dict[str, float] | None = None) -> dict:
    """Score the run with every enabled family; returns family name -> its tables (``summary.json`` section).

    ``seconds``, when given, receives each family's wall time (scoring, training and its model calls).
    """
    import time

    console = console or Console(stderr=True)
    out: dict = {}
    for family, settings in enabled_families(families):
        start = time.perf_counter()
        ctx = ScoringContext(store=store, run_id=run_id, settings=settings, stats=stats, console=console, seed=seed,
                             executor=executor, base_dir=base_dir, run_dir=run_dir, models=list(plan_models),
                             datasets=tuple(datasets), temperatures=temperatures, scoring_models=models, _data=data)
        result = family.score(ctx)
        if seconds is not None:
            seconds[family.name] = time.perf_counter() - start
        data = ctx._data  # loaded at most once for all families
        if result is not None:
            out[family.name] = result.tables
    return out

