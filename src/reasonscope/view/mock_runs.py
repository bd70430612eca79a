"""Mock run folders for the viewer's tests and its scale benchmark: stores written directly, no model called.

:func:`write_mock_run` writes a run folder as a behaviour run would leave it: the run record (plan,
notes with the outcome), the items, one generation per model and item, item-level scores (``CQ`` 0/1
from the answer, ``SS`` a number, ``LS`` not applicable with its reason), the family's stored result
(``behavior.json``, enough for the report's card and tables) and a ``summary.json``. Rows are inserted in
bulk, so a run of 200,000 items takes seconds. The numbers are deterministic functions of the item's
position: they exercise the viewer, they measure nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..storage.store import Store
from ..types import Item, canonical_json

__all__ = ["METRICS", "write_mock_run"]

METRICS = ("CQ", "CS", "RS", "LS", "SS", "ES_item", "conciseness", "ES_corpus", "ES")
"""The behaviour metrics of the stored result (those without item scores here are n/a)."""


def _estimate(values: list[float]) -> dict[str, Any]:
    n = len(values)
    mean = sum(values) / n if n else None
    half = 1.96 * (max(mean * (1 - mean), 0.0) / n) ** 0.5 if n and mean is not None and 0 <= mean <= 1 else None
    return {"value": mean, "low": None if half is None else max(0.0, mean - half),
            "high": None if half is None else min(1.0, mean + half), "n": n, "method": "mock", "failed": 0}


def write_mock_run(folder: str | Path, *, items: int = 20, models: tuple[str, ...] = ("mock-a",),
                   dataset: str = "arith", created: float | None = None, outputs: dict[int, str] | None = None,
                   status: str = "finished", exit_code: int = 0, summary: bool = True) -> str:
    """Write a mock run of ``items`` items and ``models`` into ``folder``; return its run id.

    ``outputs``: item position -> the raw output of every model on that item (default ``Step: i + 1 =
    i+1.\\nAnswer: i+1``, wrong on every third item). ``created``: the run's start (Unix time).
    ``status``/``exit_code``: what the run record says; ``summary``: write ``summary.json``.
    """
    folder = Path(folder)
    store = Store(folder)
    try:
        config = {"experiment": {"name": folder.name, "seed": 0},
                  "models": [{"spec": "mock/reasoner", "name": m} for m in models],
                  "datasets": [{"name": dataset, "format": "jsonl", "size": items}],
                  "families": {"behavior": {"samples": 1, "paraphrases": 0}}}
        run_id = store.start_run(kind="run", config=config, seed=0)
        created = time.time() if created is None else created
        its = [Item(id=f"q{i:06d}", input=f"What is {i} + 1?", target=str(i + 1), answer_type="number",
                    group=dataset) for i in range(items)]
        store.put_items(dataset, its)
        gens, links, scores = [], [], []
        values: dict[str, dict[str, list[float]]] = {m: {"CQ": [], "SS": []} for m in models}
        for i, it in enumerate(its):
            for m in models:
                wrong = i % 3 == 2
                text = (outputs or {}).get(i) or f"Step: {i} + 1 = {i + 1}.\nAnswer: {i + (2 if wrong else 1)}"
                key = f"mock-{m}-{it.id}"
                gens.append((key, "mock", m, "{}", text, "stop", 10, 12, 0.0, 0.0, None, 1, "generated", created))
                links.append((run_id, m, dataset, it.id, "original", 0, key, 64))
                cq, ss = (0.0 if wrong or (outputs or {}).get(i) else 1.0), (i % 10) / 10
                values[m]["CQ"].append(cq)
                values[m]["SS"].append(ss)
                item_key = f"{dataset}/{it.id}"
                scores += [(run_id, "behavior", "CQ", m, item_key, cq, None, canonical_json({"answer": str(i + 1)})),
                           (run_id, "behavior", "SS", m, item_key, ss, None, "{}"),
                           (run_id, "behavior", "LS", m, item_key, None, "not computed: no NLI backend", "{}")]
        with store.transaction() as c:
            c.executemany("INSERT INTO generations(key, provider, model_id, request, text, finish_reason, "
                          "prompt_tokens, completion_tokens, latency_s, cost_usd, error, attempts, source, created) "
                          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", gens)
            c.executemany("INSERT INTO run_generations(run_id, model, dataset, item_id, variant, sample, key, "
                          "max_tokens) VALUES (?,?,?,?,?,?,?,?)", links)
            c.executemany("INSERT INTO scores(run_id, family, metric, model, item_id, value, reason, details) "
                          "VALUES (?,?,?,?,?,?,?,?)", scores)
            c.execute("UPDATE runs SET created=? WHERE run_id=?", (created, run_id))
        na = {"value": None, "low": None, "high": None, "n": 0, "method": "no values", "failed": 0,
              "reason": "not computed in a mock run"}
        behavior = {"metrics": {m: {k: _estimate(values[m][k]) if k in values[m] else dict(na) for k in METRICS}
                                for m in models},
                    "strategies": {}, "per_dataset": {}, "per_type": {}, "paired": [], "strategy_weights": {},
                    "user_strategies": [], "settings": {"samples": 1, "paraphrases": 0, "efficiency": "corpus",
                                                        "confidence": 0.95},
                    "p_adjust": {"method": "holm", "m": 0, "rows": 0, "description": "none"},
                    "counts": {m: {"items": items, "generations": items, "failed": 0, "unparseable": 0,
                                   "truncated": 0, "pending": 0} for m in models}, "warnings": [],
                    "backends": {"answer_matching": "mock", "nli": "none", "similarity": "mock"}}
        store.put_artefact(run_id, "behavior.json", "json", json.dumps(behavior))
        outcome = {"code": exit_code, "message": "" if exit_code == 0 else "mock outcome", "max_failed": None,
                   "models": {m: {"requested": items, "answered": items, "failed": 0, "pending": 0,
                                  "failed_example": None, "pending_example": None} for m in models}}
        if status != "running":
            store.finish_run(run_id, status=status, notes={"outcome": outcome}, finished=created + 60)
        if summary:
            (folder / "summary.json").write_text(json.dumps(
                {"run": {"run_id": run_id, "kind": "run", "status": status, "created": created},
                 "config": config, "behavior": behavior}), encoding="utf-8")
        return run_id
    finally:
        store.close()
