"""Scoring a run with the behaviour family: per-item scores, corpus estimates with 95% bootstrap CIs,
strategies, breakdowns per dataset and per item type (``metadata.type``), and paired model
differences. See :mod:`reasonscope.behavior.metrics` for the formulas.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from ..config import BEHAVIOR_METRICS, BehaviorConfig, StatsConfig
from ..results import RunData, is_correct
from ..scorers.nli import NLIScorer
from ..scorers.similarity import Similarity
from ..stats.bootstrap import bootstrap_mean, mean_or_none, paired_difference
from ..stats.multiple import adjust_rows
from ..types import Item, Score
from . import metrics as M
from .strategies import all_strategies, composite

FAMILY = "behavior"
NOT_APPLICABLE = {
    "CS": "CS needs 2+ samples per item",
    "SS": "SS needs 2+ samples per item",
    "RS": "RS needs an originally correct item with paraphrases",
    "ES": "ES needs completion token counts and a token budget",
}


def _item_type(item: Item) -> str:
    return str(item.metadata.get("type") or item.answer_type)


def score_behavior(data: RunData, cfg: BehaviorConfig, stats: StatsConfig, *, seed: int = 0,
                   temperatures: dict[str, float] | None = None, nli: NLIScorer | None = None,
                   nli_reason: str | None = None, sim: Similarity | None = None,
                   sim_reason: str | None = None) -> tuple[list[Score], dict[str, Any]]:
    groups = {key: M.split_variants(gens) for key, gens in M.group_by_item(data.generations, data.items).items()}
    # -- batch the model-based parts: NLI over consecutive steps, similarity over trace pairs --------
    ls_pairs: list[tuple[str, str]] = []
    ls_slices: dict[tuple[str, str], slice] = {}
    ss_a: list[str] = []
    ss_b: list[str] = []
    ss_slices: dict[tuple[str, str], slice] = {}
    for key, (originals, _) in groups.items():
        if originals and nli is not None and len(originals[0].steps) >= 2:
            pairs = M.consecutive_pairs(originals[0].steps)
            ls_slices[key] = slice(len(ls_pairs), len(ls_pairs) + len(pairs))
            ls_pairs.extend(pairs)
        if sim is not None and len(originals) >= 2:
            start = len(ss_a)
            for g1, g2 in combinations(originals, 2):
                ss_a.append(g1.trace or g1.raw_text)
                ss_b.append(g2.trace or g2.raw_text)
            ss_slices[key] = slice(start, len(ss_a))
    contra = nli.contradiction(ls_pairs) if (nli is not None and ls_pairs) else []
    sims = sim.pairwise(ss_a, ss_b) if (sim is not None and ss_a) else []

    scores: list[Score] = []
    per_item: dict[str, dict[str, dict[str, float | None]]] = {}
    counts: dict[str, dict[str, int]] = {}
    for (model, item_id), (originals, paras) in groups.items():
        item = data.items[item_id]
        gens = originals + paras
        prim = originals[0] if originals else None
        c = counts.setdefault(model, {"items": 0, "generations": 0, "failed": 0, "unparseable": 0, "truncated": 0})
        c["items"] += 1
        c["generations"] += len(gens)
        c["failed"] += sum(1 for g in gens if g.error)
        c["unparseable"] += sum(1 for g in gens if not g.error and g.answer is None)
        c["truncated"] += sum(1 for g in gens if g.truncated)
        vals: dict[str, float | None] = {}
        reasons: dict[str, str | None] = {}
        details: dict[str, dict] = {}
        if prim is None:
            continue
        correct = 1.0 if is_correct(prim, item, cfg.rel_tol) else 0.0
        vals["CQ"] = correct
        details["CQ"] = {"answer": prim.answer, "gold": item.target, "reason": prim.answer_reason,
                         "failed": prim.error is not None}
        # CS
        vals["CS"] = M.pairs_agreement([g.answer for g in originals], item.answer_type, cfg.rel_tol)
        reasons["CS"] = None if vals["CS"] is not None else NOT_APPLICABLE["CS"]
        details["CS"] = {"answers": [g.answer for g in originals]}
        # RS
        if correct and paras:
            vals["RS"] = M.robustness(prim.answer, [g.answer for g in paras], item.answer_type, cfg.rel_tol)
            details["RS"] = {"original": prim.answer, "paraphrases": {g.variant: g.answer for g in paras}}
        else:
            vals["RS"] = None
            reasons["RS"] = "no paraphrases" if not paras else "original answer incorrect"
        # LS
        if nli is None:
            vals["LS"], reasons["LS"] = None, f"not computed: {nli_reason}"
        else:
            sl = ls_slices.get((model, item_id))
            probs = contra[sl] if sl else []
            vals["LS"] = M.coherence(probs, len(prim.steps))
            reasons["LS"] = None if vals["LS"] is not None else "no reasoning steps (failed or empty generation)"
            details["LS"] = {"steps": prim.steps, "contradiction": probs, "backend": nli.description,
                             "convention": "one step -> 1.0" if len(prim.steps) == 1 else None}
        # ES
        tokens = prim.completion_tokens if not prim.error else None
        if prim.error and prim.max_tokens:
            vals["ES"] = 0.0  # a failed generation is wrong, so ES_i = H(0, .) = 0
        else:
            vals["ES"] = M.efficiency(correct, tokens, prim.max_tokens)
        reasons["ES"] = None if vals["ES"] is not None else NOT_APPLICABLE["ES"]
        details["ES"] = {"tokens": tokens, "budget": prim.max_tokens}
        # SS
        if sim is None:
            vals["SS"], reasons["SS"] = None, f"not computed: {sim_reason}"
        else:
            sl = ss_slices.get((model, item_id))
            vals["SS"] = mean_or_none(sims[sl]) if sl else None
            reasons["SS"] = None if vals["SS"] is not None else NOT_APPLICABLE["SS"]
            details["SS"] = {"method": sim.description}
        per_item.setdefault(model, {})[item_id] = vals
        for metric in BEHAVIOR_METRICS:
            scores.append(Score(family=FAMILY, metric=metric, model=model, item_id=item_id, value=vals.get(metric),
                                reason=reasons.get(metric), details=details.get(metric, {})))

    tables = _aggregate(per_item, data, cfg, stats, seed)
    item_reasons: dict[tuple[str, str], set[str]] = {}
    for s in scores:
        if s.value is None and s.reason:
            item_reasons.setdefault((s.model, s.metric), set()).add(s.reason)
    for model, mets in tables["metrics"].items():
        for metric, est in mets.items():
            if est["value"] is None and item_reasons.get((model, metric)):
                est["reason"] = "; ".join(sorted(item_reasons[(model, metric)]))
    tables["counts"] = counts
    tables["backends"] = {"nli": nli.description if nli else f"none ({nli_reason})",
                          "similarity": sim.description if sim else f"none ({sim_reason})",
                          "answer_matching": f"typed extraction, numeric rel_tol={cfg.rel_tol}"}
    warnings = []
    for model, temp in (temperatures or {}).items():
        if temp == 0 and model in per_item:
            warnings.append(f"{model}: temperature 0, so CS and SS are trivially 1 and are not measurements")
    for model, c in counts.items():
        if c["failed"]:
            warnings.append(f"{model}: {c['failed']} failed generations, counted as wrong")
    if data.missing:
        warnings.append(f"{data.missing} requested generations are missing (the run was interrupted); "
                        "run the same command again to finish it")
    tables["warnings"] = warnings
    for model, mvals in tables["metrics"].items():
        for metric, est in mvals.items():
            scores.append(Score(family=FAMILY, metric=metric, model=model, item_id=None, value=est["value"],
                                reason=est.get("reason"), details=est))
        for name, res in tables["strategies"].get(model, {}).items():
            scores.append(Score(family=FAMILY, metric=f"strategy:{name}", model=model, value=res["value"],
                                details=res))
    return scores, tables


def _estimates(rows: dict[str, dict[str, float | None]], stats: StatsConfig, seed: int) -> dict[str, dict]:
    out = {}
    for metric in BEHAVIOR_METRICS:
        values = [v.get(metric) for v in rows.values()]
        est = bootstrap_mean(values, confidence=stats.confidence, n_resamples=stats.n_resamples,
                             method=stats.method, seed=seed).as_dict()
        if est["value"] is None:
            est["reason"] = NOT_APPLICABLE.get(metric, "no item could be scored")
        out[metric] = est
    return out


def _aggregate(per_item, data: RunData, cfg: BehaviorConfig, stats: StatsConfig, seed: int) -> dict[str, Any]:
    strategies = all_strategies(cfg.strategies)
    tables: dict[str, Any] = {"metrics": {}, "strategies": {}, "per_dataset": {}, "per_type": {}, "paired": [],
                              "strategy_weights": strategies,
                              "user_strategies": sorted(cfg.strategies),
                              "settings": {"samples": cfg.samples, "paraphrases": cfg.paraphrases,
                                           "confidence": stats.confidence, "n_resamples": stats.n_resamples}}
    for model, rows in per_item.items():
        tables["metrics"][model] = ests = _estimates(rows, stats, seed)
        point = {m: e["value"] for m, e in ests.items()}
        tables["strategies"][model] = {}
        for name, weights in strategies.items():
            value, left_out = composite(weights, point)
            tables["strategies"][model][name] = {"value": value, "left_out": left_out,
                                                 "renormalised": bool(left_out)}
        for label, key_fn in (("per_dataset", lambda it: it.group), ("per_type", _item_type)):
            buckets: dict[str, dict] = {}
            for item_id, vals in rows.items():
                buckets.setdefault(key_fn(data.items[item_id]), {})[item_id] = vals
            tables[label][model] = {b: _estimates(r, stats, seed) for b, r in sorted(buckets.items())}
    models = list(per_item)
    for a, b in combinations(models, 2):
        common = sorted(set(per_item[a]) & set(per_item[b]))
        for metric in BEHAVIOR_METRICS:
            xa = [per_item[a][i].get(metric) for i in common]
            xb = [per_item[b][i].get(metric) for i in common]
            d = paired_difference(xa, xb, confidence=stats.confidence, n_resamples=stats.n_resamples, seed=seed,
                                  n_permutations=stats.n_permutations, method=stats.method)
            tables["paired"].append({"model_a": a, "model_b": b, "metric": metric, "difference": d.value,
                                     "low": d.low, "high": d.high, "n": d.n, "p_value": d.p_value,
                                     "test": d.test_label, "null": (d.test or {}).get("null")})
    tables["p_adjust"] = adjust_rows(tables["paired"], stats.p_adjust)
    return tables
