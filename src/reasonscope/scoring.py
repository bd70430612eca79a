"""Scoring a stored run with the families enabled in its plan. Reads only the store; calls no
generator (the NLI judge and similarity models of the plan are scoring models, not generators).
Results replace the family's previous scores for the run, so re-scoring is idempotent.

:func:`prepare_scorers` loads the scoring models; the runner calls it in a background thread
while generation runs (model loading and imports then overlap with waiting for the provider).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from .config import FamiliesConfig, StatsConfig
from .results import RunData, load_run_data
from .store import Store


@dataclass
class ScoringModels:
    nli: Any = None
    nli_reason: str | None = None
    sim: Any = None
    sim_reason: str | None = None


def prepare_scorers(families: FamiliesConfig) -> ScoringModels:
    """Load the scoring models the families need (each may be None with the reason)."""
    out = ScoringModels()
    if families.behavior is not None:
        from .behavior import family  # noqa: F401  (imports scipy.stats ahead of scoring)
        from .scorers.nli import make_nli
        from .scorers.similarity import make_similarity

        out.nli, out.nli_reason = make_nli(families.behavior.nli)
        out.sim, out.sim_reason = make_similarity(families.behavior.similarity)
    return out


def score_run(store: Store, run_id: str, families: FamiliesConfig, stats: StatsConfig, *, seed: int = 0,
              temperatures: dict[str, float] | None = None, console: Console | None = None,
              executor: str = "local", data: RunData | None = None, models: ScoringModels | None = None) -> dict:
    console = console or Console(stderr=True)
    data = data or load_run_data(store, run_id)
    out: dict = {}
    behavior = families.behavior
    if behavior is not None and data.generations:
        from .behavior.family import score_behavior

        if models is None:
            with console.status("behavior: loading scoring models"):
                models = prepare_scorers(families)
        for reason in (models.nli_reason, models.sim_reason):
            if reason:
                console.print(f"[yellow]behavior: {reason}")
        with console.status("behavior: scoring"):
            scores, tables = score_behavior(data, behavior, stats, seed=seed, temperatures=temperatures,
                                            nli=models.nli, nli_reason=models.nli_reason, sim=models.sim,
                                            sim_reason=models.sim_reason)
        store.delete_scores(run_id, "behavior")
        store.put_scores(run_id, scores)
        store.put_artefact(run_id, "behavior.json", "json", json.dumps(tables, default=str))
        out["behavior"] = tables
    return out
