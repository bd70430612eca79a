"""Scoring a run with the behaviour family.

Per-item scores, corpus estimates with 95% CIs (chosen by the kind of values: reasonscope.stats.bootstrap), strategies, breakdowns per dataset and per item type (``metadata.type``), and paired model
differences. See :mod:`reasonscope.behavior.metrics` for the formulas and
:mod:`reasonscope.behavior.efficiency` for the two readings of ES (``ES`` is the one the plan's
``efficiency`` setting selects, ``ES_corpus`` and ``ES_item`` are both reported).

Failed generations (a refusal, an empty reply, a rejected request: ``Generation.error``) are not
answers. With ``stats.failed_generations: exclude`` (the default) they are left out of every metric:
an item whose primary generation failed has no CQ, LS or ES. With ``wrong`` they count as wrong
answers in CQ (0) and ES (H(0, .) = 0). Either way the pairwise metrics never compare a failed
generation: CS and SS use the item's successful samples only (n/a with fewer than two), RS the
successful paraphrases (n/a when none is left). Every estimate carries ``n`` (items with a value) and
``failed`` (failed generations among those the metric reads: the primary for CQ, LS and ES, the K
samples for CS and SS, the primary and the paraphrases for RS).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from ..scorers.cache import ScorerUnavailable
from ..scorers.nli import NLIScorer
from ..scorers.similarity import Similarity
from ..shared_settings import StatsConfig
from ..stats.bootstrap import bootstrap_mean, mean_or_none, paired_difference
from ..stats.multiple import adjust_rows
from ..storage.run_data import RunData, is_correct
from ..types import Item, Score
from . import metrics as M
from .catalogue import BEHAVIOR_METRICS
from .efficiency import NEEDS_BOTH, corpus_efficiency_of, missing_length_reason, paired_corpus_efficiency_of
from .item_table import ItemTable
from .settings import BehaviorConfig
from .strategies import ItemResamples, all_strategies, composite, composite_interval

FAMILY = "behavior"
NOT_APPLICABLE = {
    "CS": "CS needs 2+ samples per item",
    "SS": "SS needs 2+ samples per item",
    "RS": "RS needs an originally correct item with paraphrases",
    "ES": NEEDS_BOTH,
}
FAILED = "generation failed (left out: stats.failed_generations is exclude)"
NOTHING_TO_COMPARE = "fewer than 2 successful samples to compare (failed generations are never compared)"
NOT_APPLICABLE["ES_item"] = NOT_APPLICABLE["ES_corpus"] = NOT_APPLICABLE["conciseness"] = NOT_APPLICABLE["ES"]
# per-item rows: the corpus ES is formed from CQ_i and conciseness L_i (or ES_item), see _estimates
ITEM_METRICS = ("CQ", "CS", "RS", "LS", "ES_item", "conciseness", "SS")
EFFICIENCY_COLUMNS = ("ES_corpus", "ES_item", "conciseness")


def _item_type(item: Item) -> str:
    return str(item.metadata.get("type") or item.answer_type)


@dataclass
class _Tally:
    """What scoring keeps of each (model, item) once its chunk is scored.

    The item-level values, the failed generations each metric read and the item's dataset and type (columns of an
    :class:`~reasonscope.behavior.item_table.ItemTable` per model), and the reasons of missing values. A few
    numbers per item: the generations and the scores' details are not kept.
    """

    per_item: dict[str, ItemTable] = field(default_factory=dict)  # model -> its items' values, failed counts, groups
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    reasons: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (model, metric) -> reasons
    missing_by_model: dict[str, int] = field(default_factory=dict)


def score_behavior(data: RunData | Iterable[RunData], cfg: BehaviorConfig, stats: StatsConfig, *, seed: int = 0,
                   temperatures: dict[str, float] | None = None, nli: NLIScorer | None = None,
                   nli_reason: str | None = None, sim: Similarity | None = None,
                   sim_reason: str | None = None,
                   write: Callable[[list[Score]], None] | None = None) -> tuple[list[Score], dict[str, Any]]:
    """Score the run with the behaviour family.

    ``data`` is the run (:class:`RunData`) or its chunks of whole items
    (:func:`reasonscope.storage.run_data.iter_run_chunks`). Each chunk is scored on its own (the NLI and similarity
    inputs of a chunk go to the scorers in one batch each) and only a few numbers per item are kept
    for the corpus estimates. ``write``: called with each chunk's item-level scores, which are then
    not kept (the returned list holds the corpus-level scores only); without it, the returned list
    holds every score, item-level first. The estimates do not depend on the chunking (items keep
    their order).
    """
    chunks = [data] if isinstance(data, RunData) else data
    acc = _Tally()
    kept: list[Score] = []
    for chunk in chunks:
        scored, nli, nli_reason, sim, sim_reason = _score_chunk(chunk, cfg, stats.failed_generations, acc, nli,
                                                                nli_reason, sim, sim_reason)
        if not chunk.generations:
            continue
        if write is not None:
            write(scored)
        else:
            kept += scored
    policy = stats.failed_generations
    per_item, counts = acc.per_item, acc.counts
    for model, c in counts.items():
        c["pending"] = acc.missing_by_model.get(model, 0)
    tables = _aggregate(per_item, cfg, stats, seed)
    for model, mets in tables["metrics"].items():
        for metric, est in mets.items():
            # ES and ES_corpus have no per-item value: their items' reason is the length score's
            why = acc.reasons.get((model, "conciseness" if metric in ("ES", "ES_corpus") else metric))
            if est["value"] is None and why:
                est["reason"] = "; ".join(sorted(why))
    tables["counts"] = counts
    tables["backends"] = {"nli": nli.description if nli else f"none ({nli_reason})",
                          "similarity": sim.description if sim else f"none ({sim_reason})",
                          "answer_matching": f"typed extraction, numeric rel_tol={cfg.rel_tol}"}
    # score cache use of this scoring (requested / unique / cached / computed inputs, forward calls, loads)
    tables["backends"]["score_cache"] = {name: asdict(s.stats) for name, s in (("nli", nli), ("similarity", sim))
                                         if s is not None and hasattr(s, "stats")}
    warnings = []
    for model, temp in (temperatures or {}).items():
        if temp == 0 and model in per_item:
            warnings.append(f"{model}: temperature 0, so CS and SS are trivially 1 and are not measurements")
    for model, c in counts.items():
        if c["failed"] and policy == "exclude":
            warnings.append(f"{model}: {c['failed']} of {c['generations']} generations failed; left out of every "
                            "metric (stats.failed_generations: exclude) and never compared in CS, RS or SS")
        elif c["failed"]:
            warnings.append(f"{model}: {c['failed']} of {c['generations']} generations failed; counted as wrong in "
                            "CQ and ES (stats.failed_generations: wrong), never compared in CS, RS or SS")
    missing = sum(acc.missing_by_model.values())
    if missing:
        warnings.append(f"{missing} requested generations have no stored completion: pending (rate limits, "
                        "server errors or timeouts outlasted the retries) or the run was interrupted; the metrics "
                        "leave them out; run the same command again to send them")
    tables["warnings"] = warnings
    for model, mvals in tables["metrics"].items():
        for metric, est in mvals.items():
            kept.append(Score(family=FAMILY, metric=metric, model=model, item_id=None, value=est["value"],
                              reason=est.get("reason"), details=est))
        for name, res in tables["strategies"].get(model, {}).items():
            kept.append(Score(family=FAMILY, metric=f"strategy:{name}", model=model, value=res["value"],
                              details=res))
    return kept, tables


def _score_chunk(data: RunData, cfg: BehaviorConfig, policy: str, acc: _Tally, nli: NLIScorer | None,
                 nli_reason: str | None, sim: Similarity | None,
                 sim_reason: str | None) -> tuple[list[Score], Any, str | None, Any, str | None]:
    """The item-level scores of one chunk; its per-item values go to ``acc``.

    Returns the scores and the scorers for the next chunk (a scorer that fails to load is None from then on, with its reason).
    """
    for model, n in data.missing_by_model.items():
        acc.missing_by_model[model] = acc.missing_by_model.get(model, 0) + n
    groups = {key: M.split_variants(gens) for key, gens in M.group_by_item(data.generations, data.items).items()}
    # -- batch the model-based parts: NLI over consecutive steps, similarity over trace pairs --------
    ls_pairs: list[tuple[str, str]] = []
    ls_slices: dict[tuple[str, str], slice] = {}
    ss_a: list[str] = []
    ss_b: list[str] = []
    ss_slices: dict[tuple[str, str], slice] = {}
    for key, (originals, _) in groups.items():
        if originals and nli is not None and not originals[0].error and len(originals[0].steps) >= 2:
            pairs = M.consecutive_pairs(originals[0].steps)
            ls_slices[key] = slice(len(ls_pairs), len(ls_pairs) + len(pairs))
            ls_pairs.extend(pairs)
        answered = [g for g in originals if not g.error]
        if sim is not None and len(answered) >= 2:
            start = len(ss_a)
            for g1, g2 in combinations(answered, 2):
                ss_a.append(g1.trace or g1.raw_text)
                ss_b.append(g2.trace or g2.raw_text)
            ss_slices[key] = slice(start, len(ss_a))
    # a scorer behind the score cache loads on its first miss; one that fails to load then is "not computed"
    contra: list[float] = []
    if nli is not None and ls_pairs:
        try:
            contra = nli.contradiction(ls_pairs)
        except ScorerUnavailable as err:
            nli, nli_reason = None, str(err)
    sims: list[float] = []
    if sim is not None and ss_a:
        try:
            sims = sim.pairwise(ss_a, ss_b)
        except ScorerUnavailable as err:
            sim, sim_reason = None, str(err)

    scores: list[Score] = []
    per_item, counts = acc.per_item, acc.counts
    for (model, item_id), (originals, paras) in groups.items():
        item = data.items[item_id]
        gens = originals + paras
        prim = originals[0] if originals else None
        c = counts.setdefault(model, {"items": 0, "generations": 0, "failed": 0, "unparseable": 0, "truncated": 0,
                                      "pending": 0})
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
        answered = [g for g in originals if not g.error]
        answered_paras = [g for g in paras if not g.error]
        prim_failed = prim.error is not None
        n_failed = len(originals) - len(answered)
        failed = {"CQ": int(prim_failed), "LS": int(prim_failed), "ES_item": int(prim_failed),
                  "conciseness": int(prim_failed), "CS": n_failed, "SS": n_failed,
                  "RS": int(prim_failed) + len(paras) - len(answered_paras)}
        left_out = prim_failed and policy == "exclude"
        correct = 1.0 if is_correct(prim, item, cfg.rel_tol) else 0.0
        vals["CQ"], reasons["CQ"] = (None, FAILED) if left_out else (correct, None)
        details["CQ"] = {"answer": prim.answer, "gold": item.target, "reason": prim.answer_reason,
                         "failed": prim_failed, "error": prim.error}
        # CS (successful samples only)
        vals["CS"] = M.pairs_agreement([g.answer for g in answered], item.answer_type, cfg.rel_tol)
        if vals["CS"] is None:
            reasons["CS"] = NOT_APPLICABLE["CS"] if len(originals) < 2 else NOTHING_TO_COMPARE
        details["CS"] = {"answers": [g.answer for g in answered], "failed_samples": n_failed}
        # RS (successful paraphrases only)
        vals["RS"] = None
        if not paras:
            reasons["RS"] = "no paraphrases"
        elif prim_failed:
            reasons["RS"] = "original generation failed"
        elif not correct:
            reasons["RS"] = "original answer incorrect"
        elif not answered_paras:
            reasons["RS"] = "every paraphrase generation failed (failed generations are never compared)"
        else:
            vals["RS"] = M.robustness(prim.answer, [g.answer for g in answered_paras], item.answer_type, cfg.rel_tol)
            details["RS"] = {"original": prim.answer, "paraphrases": {g.variant: g.answer for g in answered_paras},
                             "failed_paraphrases": len(paras) - len(answered_paras)}
        # LS
        if nli is None:
            vals["LS"], reasons["LS"] = None, f"not computed: {nli_reason}"
        elif prim_failed:
            vals["LS"], reasons["LS"] = None, "generation failed"
        else:
            sl = ls_slices.get((model, item_id))
            probs = contra[sl] if sl else []
            vals["LS"] = M.coherence(probs, len(prim.steps))
            reasons["LS"] = None if vals["LS"] is not None else "no reasoning steps (empty generation)"
            details["LS"] = {"steps": prim.steps, "contradiction": probs, "backend": nli.description,
                             "convention": "one step -> 1.0" if len(prim.steps) == 1 else None}
        # ES: the per-item reading ES_i and the length score L_i (the corpus reading is formed in _estimates)
        tokens = prim.completion_tokens if not prim_failed else None
        if left_out:
            vals["ES_item"] = vals["conciseness"] = None
            reasons["ES_item"] = reasons["conciseness"] = FAILED
        else:
            # counted as wrong (failed_generations: wrong): ES_i = H(0, .) = 0; its length score is unknown
            vals["ES_item"] = 0.0 if (prim_failed and prim.max_tokens) else M.efficiency(correct, tokens,
                                                                                          prim.max_tokens)
            vals["conciseness"] = M.length_score(tokens, prim.max_tokens)
        for key in ("ES_item", "conciseness"):
            if vals[key] is None and not reasons.get(key):
                reasons[key] = missing_length_reason(tokens, prim.max_tokens)
            details[key] = {"tokens": tokens, "budget": prim.max_tokens}
        # SS (successful samples only)
        if sim is None:
            vals["SS"], reasons["SS"] = None, f"not computed: {sim_reason}"
        else:
            sl = ss_slices.get((model, item_id))
            vals["SS"] = mean_or_none(sims[sl]) if sl else None
            if vals["SS"] is None:
                reasons["SS"] = NOT_APPLICABLE["SS"] if len(originals) < 2 else NOTHING_TO_COMPARE
            details["SS"] = {"method": sim.description, "failed_samples": n_failed}
        if model not in per_item:
            per_item[model] = ItemTable(ITEM_METRICS)
        per_item[model].add(item_id, vals, failed, item.group, _item_type(item))
        for metric in ITEM_METRICS:
            reason = reasons.get(metric)
            if vals.get(metric) is None and reason:
                acc.reasons.setdefault((model, metric), set()).add(reason)
            scores.append(Score(family=FAMILY, metric=metric, model=model, item_id=item_id, value=vals.get(metric),
                                reason=reason, details=details.get(metric, {})))

    return scores, nli, nli_reason, sim, sim_reason


def _estimates(table: ItemTable, stats: StatsConfig, seed: int, efficiency: str = "corpus",
               rows: np.ndarray | None = None) -> dict[str, dict]:
    """Corpus estimates of the six metrics plus ``ES_corpus``, ``ES_item`` and ``conciseness``.

    ``ES`` is in the selected reading. Each estimate comes with its CI and ``failed`` = failed generations the metric read on those
    items; over every item of ``table`` or over ``rows`` (places, in item order).
    """
    out = {}
    for metric in [m for m in BEHAVIOR_METRICS if m != "ES"] + ["ES_item", "conciseness"]:
        est = bootstrap_mean(table.values(metric, rows), confidence=stats.confidence,
                             n_resamples=stats.n_resamples, method=stats.method, seed=seed).as_dict()
        est["failed"] = table.failed(metric, rows)
        out[metric] = est
    out["ES_corpus"] = corpus_efficiency_of(table.column("CQ", rows), table.column("conciseness", rows),
                                            confidence=stats.confidence, n_resamples=stats.n_resamples,
                                            method=stats.method, seed=seed)
    out["ES_corpus"]["failed"] = table.failed("CQ", rows)
    out["ES"] = {**out[f"ES_{efficiency}"], "reading": f"ES_{efficiency}"}
    for metric, est in out.items():
        if est["value"] is None:
            est["reason"] = NOT_APPLICABLE.get(metric, "no item could be scored")
    return out


def _aggregate(per_item: dict[str, ItemTable], cfg: BehaviorConfig, stats: StatsConfig, seed: int) -> dict[str, Any]:
    strategies = all_strategies(cfg.strategies)
    tables: dict[str, Any] = {"metrics": {}, "strategies": {}, "per_dataset": {}, "per_type": {}, "paired": [],
                              "strategy_weights": strategies,
                              "user_strategies": sorted(cfg.strategies),
                              "settings": {"samples": cfg.samples, "paraphrases": cfg.paraphrases,
                                           "efficiency": cfg.efficiency,
                                           "confidence": stats.confidence, "n_resamples": stats.n_resamples,
                                           "failed_generations": stats.failed_generations}}
    for model, table in per_item.items():
        tables["metrics"][model] = ests = _estimates(table, stats, seed, cfg.efficiency)
        point = {m: e["value"] for m, e in ests.items()}
        tables["strategies"][model] = {}
        columns = {m: table.column(m) for m in ("CQ", "CS", "RS", "LS", "SS", "ES_item", "conciseness")}
        resamples = ItemResamples(columns, efficiency=cfg.efficiency, n_resamples=stats.n_resamples, seed=seed)
        for name, weights in strategies.items():
            value, left_out = composite(weights, point)
            used = [m for m, w in weights.items() if w > 0 and m not in left_out]
            low, high = composite_interval(columns, weights, used, efficiency=cfg.efficiency,
                                           confidence=stats.confidence, n_resamples=stats.n_resamples,
                                           seed=seed, resamples=resamples) if value is not None else (None, None)
            tables["strategies"][model][name] = {"value": value, "low": low, "high": high, "left_out": left_out,
                                                 "renormalised": bool(left_out), "ES": f"ES_{cfg.efficiency}"}
        for label, part in (("per_dataset", "dataset"), ("per_type", "type")):
            # a bucket holding every item (one dataset, one type) is the whole corpus: the same values in the
            # same order, with the same seed, give the same estimates, so they are not resampled again
            tables[label][model] = {b: copy.deepcopy(ests) if len(r) == len(table) else _estimates(
                table, stats, seed, cfg.efficiency, rows=r) for b, r in sorted(table.groups(part).items())}
    models = list(per_item)
    for a, b in combinations(models, 2):
        common = sorted(set(per_item[a].place) & set(per_item[b].place))
        at_a, at_b = per_item[a].places(common), per_item[b].places(common)
        for metric in (*BEHAVIOR_METRICS, *EFFICIENCY_COLUMNS):
            source = f"ES_{cfg.efficiency}" if metric == "ES" else metric
            if source == "ES_corpus":
                d = paired_corpus_efficiency_of(
                    per_item[a].column("CQ", at_a), per_item[a].column("conciseness", at_a),
                    per_item[b].column("CQ", at_b), per_item[b].column("conciseness", at_b),
                    confidence=stats.confidence, n_resamples=stats.n_resamples, seed=seed,
                    n_permutations=stats.n_permutations)
                tables["paired"].append({"model_a": a, "model_b": b, "metric": metric, **d})
                continue
            xa = per_item[a].values(source, at_a)
            xb = per_item[b].values(source, at_b)
            d = paired_difference(xa, xb, confidence=stats.confidence, n_resamples=stats.n_resamples, seed=seed,
                                  n_permutations=stats.n_permutations, method=stats.method)
            tables["paired"].append({"model_a": a, "model_b": b, "metric": metric, "difference": d.value,
                                     "low": d.low, "high": d.high, "n": d.n, "p_value": d.p_value,
                                     "test": d.test_label, "null": (d.test or {}).get("null")})
    # ES is the ES_<reading> row again (the same test): Holm counts it once
    reading = f"ES_{cfg.efficiency}"
    tables["p_adjust"] = adjust_rows(tables["paired"], stats.p_adjust, same=lambda r: (
        r["model_a"], r["model_b"], reading if r["metric"] == "ES" else r["metric"]))
    return tables
