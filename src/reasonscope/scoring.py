"""Scoring a stored run with the families enabled in its plan. Reads only the store; calls no
generator (the NLI judge and similarity models of the plan are scoring models, not generators).
Results replace the family's previous scores for the run, so re-scoring is idempotent.
"""

from __future__ import annotations

import json

from rich.console import Console

from .config import FamiliesConfig, StatsConfig
from .results import load_run_data
from .store import Store


def score_run(store: Store, run_id: str, families: FamiliesConfig, stats: StatsConfig, *, seed: int = 0,
              temperatures: dict[str, float] | None = None, console: Console | None = None,
              executor: str = "local") -> dict:
    console = console or Console(stderr=True)
    data = load_run_data(store, run_id)
    out: dict = {}
    behavior = families.behavior
    if behavior is not None and data.generations:
        from .behavior.family import score_behavior
        from .scorers.nli import make_nli
        from .scorers.similarity import make_similarity

        with console.status("behavior: loading scoring models"):
            nli, nli_reason = make_nli(behavior.nli)
            sim, sim_reason = make_similarity(behavior.similarity)
        for reason in (nli_reason, sim_reason):
            if reason:
                console.print(f"[yellow]behavior: {reason}")
        with console.status("behavior: scoring"):
            scores, tables = score_behavior(data, behavior, stats, seed=seed,
                                            temperatures=temperatures, nli=nli, nli_reason=nli_reason, sim=sim,
                                            sim_reason=sim_reason)
        store.delete_scores(run_id, "behavior")
        store.put_scores(run_id, scores)
        store.put_artefact(run_id, "behavior.json", "json", json.dumps(tables, default=str))
        out["behavior"] = tables
    return out
