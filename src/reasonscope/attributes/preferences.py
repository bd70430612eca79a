"""Human preferences judged by attribute.

Human preferences: judge both responses of each pair pointwise (features for SHAP) and, with ``pairwise``,
each pair in both orders to cancel position bias.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from ..execution.calls import complete_cached, planned_request
from ..judge.parse import combine_orders, parse_pairwise
from ..judge.prompts import PAIRWISE_VERSION, pairwise_messages
from ..judge.schemas import PAIRWISE_SCHEMA
from ..models.base import LanguageModel
from ..shared_settings import StatsConfig
from ..storage.store import Store
from .judging import Target, judge_pointwise, unit_scores
from .ratings import (
    preference_ratings,
    preference_warnings,
)
from .settings import AttributesConfig


def score_preferences(path: Path, judges: list[LanguageModel], cfg: AttributesConfig, store: Store,
                      stats: StatsConfig, *, seed: int, console: Console) -> tuple[dict, list[str]]:
    """Judge and rate the human preference records.

    Pointwise attributes of both responses, SHAP explanation of the human winner, pairwise judging in both
    orders, and the recorded battles rated by the human labels and by each attribute.
    """
    from ..data.preferences import load_preferences

    records = load_preferences(path)
    names = cfg.names
    warnings: list[str] = []
    out: dict[str, Any] = {"path": str(path), "n": len(records),
                           "winners": {w: sum(1 for r in records if r.winner == w) for w in ("a", "b", "tie")}}
    targets = [Target(r.model_a if side == "a" else r.model_b, f"{r.id}|{side}", r.question,
                      r.response_a if side == "a" else r.response_b) for r in records for side in ("a", "b")]
    verdicts = {j.name: judge_pointwise(j, targets, cfg.model_copy(update={"show_reference": False}), store,
                                        seed=seed, console=console) for j in judges}
    per_unit = unit_scores(targets, verdicts, names)
    decided = [r for r in records if r.winner != "tie"]
    feats = np.array([[_diff(per_unit[(r.model_a, f"{r.id}|a")][a], per_unit[(r.model_b, f"{r.id}|b")][a])
                       for a in names] for r in decided], dtype=float).reshape(len(decided), len(names))
    labels = np.array([1 if r.winner == "a" else 0 for r in decided], dtype=int)
    out["explain"] = None
    if not judges:
        warnings.append("preference explanation needs attribute scores: no judge ran")
    elif len(decided) < 4 or len(set(labels.tolist())) < 2 or np.isnan(feats).all():
        warnings.append(f"preference explanation needs both winners among 4+ decided records with scores "
                        f"(have {len(decided)})")
    else:
        try:
            from .explain import explain_preferences

            exp = explain_preferences(feats, labels, names, folds=cfg.folds, seed=seed)
            out["explain"] = {"n": exp.n, "cv_accuracy": exp.cv_accuracy, "cv_auc": exp.cv_auc, "folds": cfg.folds,
                              "importance": exp.importance,
                              "shap_values": np.asarray(exp.shap_values).round(6).tolist(),
                              "features": [[None if math.isnan(x) else x for x in row] for row in exp.features]}
            if exp.cv_accuracy is None:
                warnings.append(f"preference classifier not cross-validated: each winner needs {cfg.folds}+ records")
        except ImportError as err:
            warnings.append(f"preference explanation not computed: {err} (pip install 'reasonscope[explain]')")
    out["pairwise"] = {}
    if cfg.pairwise:
        for j in judges:
            out["pairwise"][j.name] = judge_pairwise(j, records, store, seed=seed, console=console)
    out["scores"] = [{"id": r.id, "model_a": r.model_a, "model_b": r.model_b, "human": r.winner,
                      "a": per_unit[(r.model_a, f"{r.id}|a")], "b": per_unit[(r.model_b, f"{r.id}|b")]}
                     for r in records]
    out["ratings"] = preference_ratings(out["scores"], names, margin=cfg.margin, n_resamples=cfg.rating_resamples,
                                        seed=seed, confidence=stats.confidence)
    human = out["ratings"]["human"]
    out["human_ratings"] = human["bradley_terry"] if human else None
    out["human_elo"] = human["elo"] if human else None
    warnings += preference_warnings(out["ratings"])
    return out, warnings


def _diff(a: float | None, b: float | None) -> float:
    return float("nan") if a is None or b is None else a - b


def judge_pairwise(judge: LanguageModel, records, store: Store, *, seed: int, console: Console) -> dict:
    """Each record judged twice (A first, then B first); a win only when both orders agree."""
    planned = []
    for r in records:
        for order, (first, second) in (("ab", (r.response_a, r.response_b)), ("ba", (r.response_b, r.response_a))):
            planned.append((r, order, planned_request(judge, "preferences", None, f"pairwise:{order}", 0,
                                                      pairwise_messages(r.question, first, second), seed,
                                                      PAIRWISE_VERSION, {"task": "pairwise", "texts": [first, second]},
                                                      item_id=r.id, structured={"json_schema": PAIRWISE_SCHEMA})))
    completions = complete_cached(judge, [p for *_, p in planned], store, console=console,
                                     label=f"pairwise {judge.name}")
    verdicts: dict[str, dict[str, tuple[str | None, str | None]]] = {}
    for r, order, p in planned:
        c = completions[p.key]
        verdicts.setdefault(r.id, {})[order] = (None, f"judge call failed: {c.error}") if c.error \
            else parse_pairwise(c.text)
    rows, agree, compared = [], 0, 0
    counts = {"consistent": 0, "inconsistent": 0, "unparsed": 0}
    for r in records:
        (ab, why_ab), (ba, why_ba) = verdicts[r.id]["ab"], verdicts[r.id]["ba"]
        winner, status = combine_orders(ab, ba)
        counts[status] += 1
        if winner in ("a", "b") and r.winner in ("a", "b"):
            compared += 1
            agree += winner == r.winner
        rows.append({"id": r.id, "human": r.winner, "judge": winner, "status": status, "a_first": ab, "b_first": ba,
                     "reasons": [w for w in (why_ab, why_ba) if w]})
    return {**counts, "n": len(records), "compared": compared,
            "agreement_with_human": agree / compared if compared else None, "records": rows}
