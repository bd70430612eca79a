r"""Where RACE's asymmetry comes from: predicted labels, gold classes, clustered intervals, null controls.

RACE compares the rationales of correct and incorrect predictions (:mod:`reasonscope.evidence.scoring`).
When a model gives one label most of the time, "correct" mostly means "the gold label is that label", and
A(correct) - A(incorrect) may be a difference between gold classes rather than between correct and
incorrect predictions. These functions read the per-instance rows of a RACE table (``instances`` of
``evidence.json``: ``item_id``, ``gold``, ``predicted``, ``correct``, ``evaluated``, ``coverage``) and
separate the two readings.

Notation, per matcher, over the scored instances (evaluated class not None): cov_S and cov_C are an
instance's support and contradiction coverage (None when its set is empty, left out of that mean);
for a group g, S(g) and C(g) are the means of the defined values, A(g) = S(g) - C(g) (range [-1, 1]);
D = A(correct) - A(incorrect). The two halves of D are S(correct) - S(incorrect) (higher = correct
predictions cite more supporting evidence) and C(correct) - C(incorrect) (lower = correct predictions
cite less contradicting evidence); D = the first minus the second.

* :func:`label_distribution`: counts and shares of predicted and gold labels, and the accuracy of the
  constant predictor that always says the most common gold label (the chance level to compare with).
* :func:`by_gold_class`: within each gold class k, the groups' n, S, C, A and
  D_k = A_k(correct) - A_k(incorrect) (None when a group of k has no coverage).
* :func:`stratified_difference` / :func:`stratified_permutation_test`: D_strat = sum_k w_k D_k over the
  classes where D_k is defined, w_k = n_k / sum n_k (n_k: scored instances of class k). H0: within each
  gold class, the coverage pair of an instance is independent of whether its prediction was correct. The
  correct/incorrect flags are permuted within each class (class sizes and per-class group sizes kept);
  two-sided p = (1 + #{|D*_strat| >= |D_strat|}) / (1 + P), Monte Carlo over P seeded permutations. A
  D_strat near 0 with D far from 0 says the asymmetry is a gold-class difference.
* :func:`cluster_intervals`: a percentile cluster bootstrap of S, C, A per group, both halves, D and
  D_strat. Clusters (e-SNLI: the premise, shared by a pair's three hypotheses) are drawn with
  replacement, each instance weighted by its cluster's count, and every statistic recomputed as a
  weighted mean; without clusters each instance is its own cluster (the ordinary bootstrap). The
  two-sided bootstrap p of a difference is min(1, 2 min(share of resamples <= 0, share >= 0)), the
  level at which the percentile interval first touches 0. Resamples in which a statistic is undefined
  (a group without coverage) are left out of its interval and counted (``undefined``).
* :func:`shuffle_rationales` / :func:`shuffle_labels`: null controls, written as predictions for
  ``reasonscope evidence --predictions``. Shuffled rationales carry no information about the item they
  are scored on, so D must vanish; shuffled labels break the link between a label and the rationale
  written for it.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

UNPARSEABLE = "(unparseable)"
GROUP_STATS = ("support_correct", "contradict_correct", "asymmetry_correct", "support_incorrect",
               "contradict_incorrect", "asymmetry_incorrect")
DIFFERENCES = ("support_difference", "contradict_difference", "difference", "stratified_difference")
"""Statistics whose sign matters: each also gets a bootstrap p in :func:`cluster_intervals`."""


def label_distribution(instances: Sequence[dict], classes: Sequence[str]) -> dict[str, Any]:
    """Predicted and gold label counts and shares, accuracy, and the constant predictor's accuracy.

    Args:
        instances: RACE's per-instance rows (``gold`` list, ``predicted`` label or None, ``correct``).
        classes: The class labels, in table order; a prediction outside them counts as unparseable.

    Returns:
        ``{"n", "predicted": {label: count}, "predicted_share": {label: share}, "gold": {label: count},
        "accuracy", "majority_accuracy", "majority_label"}``; shares in [0, 1]. ``majority_accuracy`` is the
        accuracy of always answering the most common gold label (ties: the first class).

    Examples:
        >>> rows = [{"gold": ["a"], "predicted": "a", "correct": True},
        ...         {"gold": ["b"], "predicted": "a", "correct": False}]
        >>> label_distribution(rows, ["a", "b"])["predicted_share"]
        {'a': 1.0, 'b': 0.0, '(unparseable)': 0.0}
    """
    n = len(instances)
    labels = [*classes, UNPARSEABLE]
    pred = Counter(r["predicted"] if r["predicted"] in classes else UNPARSEABLE for r in instances)
    gold = Counter(r["gold"][0] for r in instances)
    majority = max(classes, key=lambda c: gold[c]) if classes else None
    return {"n": n, "predicted": {lab: pred[lab] for lab in labels},
            "predicted_share": {lab: pred[lab] / n if n else 0.0 for lab in labels},
            "gold": {lab: gold[lab] for lab in classes},
            "accuracy": sum(bool(r["correct"]) for r in instances) / n if n else None,
            "majority_label": majority, "majority_accuracy": gold[majority] / n if n and majority else None}


class _Columns:
    """The scored instances of one matcher as arrays (NaN for an undefined coverage)."""

    def __init__(self, instances: Sequence[dict], matcher: str, clusters: dict[str, Any] | None = None):
        rows = [r for r in instances if r.get("evaluated") is not None]
        cov = [r["coverage"][matcher] for r in rows]
        s = np.array([np.nan if c["support"] is None else c["support"] for c in cov], dtype=float)
        c = np.array([np.nan if c["contradict"] is None else c["contradict"] for c in cov], dtype=float)
        self.n = len(rows)
        self.s_ok, self.c_ok = (~np.isnan(s)).astype(float), (~np.isnan(c)).astype(float)
        self.s, self.c = np.nan_to_num(s), np.nan_to_num(c)
        self.correct = np.array([bool(r["correct"]) for r in rows], dtype=bool)
        self.gold = [r["gold"][0] for r in rows]
        self.classes = sorted(set(self.gold))
        self.gold_idx = np.array([self.classes.index(g) for g in self.gold], dtype=int)
        keys = [r["item_id"] if clusters is None else clusters.get(r["item_id"], r["item_id"]) for r in rows]
        order = list(dict.fromkeys(keys))
        pos = {k: i for i, k in enumerate(order)}
        self.cluster_idx = np.array([pos[k] for k in keys], dtype=int)
        self.n_clusters = len(order)
        n_k = np.bincount(self.gold_idx, minlength=len(self.classes)) if self.n else np.zeros(0)
        self.class_n = n_k

    def means(self, w: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weighted S and C of the instances in ``mask``, one value per row of ``w`` (NaN when undefined).

        ``mask`` is either one boolean row (n) or one row per row of ``w`` (B x n).
        """
        m = w * mask
        with np.errstate(invalid="ignore", divide="ignore"):
            return ((m * self.s).sum(-1) / (m * self.s_ok).sum(-1),
                    (m * self.c).sum(-1) / (m * self.c_ok).sum(-1))

    def statistics(self, w: np.ndarray, correct: np.ndarray | None = None,
                   strat_weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Every statistic of the module for instance weights ``w`` (B x n) and correctness flags."""
        g = self.correct if correct is None else correct
        sc, cc = self.means(w, g)
        si, ci = self.means(w, ~g)
        out = {"support_correct": sc, "contradict_correct": cc, "asymmetry_correct": sc - cc,
               "support_incorrect": si, "contradict_incorrect": ci, "asymmetry_incorrect": si - ci,
               "support_difference": sc - si, "contradict_difference": cc - ci,
               "difference": (sc - cc) - (si - ci)}
        weights = self.stratum_weights() if strat_weights is None else strat_weights
        total = np.zeros(w.shape[0])
        for k, wk in enumerate(weights):
            if wk == 0:
                continue
            in_k = self.gold_idx == k
            a_s, a_c = self.means(w, g & in_k)
            b_s, b_c = self.means(w, ~g & in_k)
            total = total + wk * ((a_s - a_c) - (b_s - b_c))
        out["stratified_difference"] = total if weights.sum() > 0 else np.full(w.shape[0], np.nan)
        return out

    def stratum_weights(self) -> np.ndarray:
        """w_k = n_k / sum n_k over the gold classes where D_k is defined on the observed data, else 0."""
        ones = np.ones((1, self.n))
        defined = np.zeros(len(self.classes))
        for k in range(len(self.classes)):
            in_k = self.gold_idx == k
            a_s, a_c = self.means(ones, self.correct & in_k)
            b_s, b_c = self.means(ones, ~self.correct & in_k)
            defined[k] = float(np.isfinite((a_s - a_c) - (b_s - b_c))[0])
        n_k = self.class_n * defined
        return n_k / n_k.sum() if n_k.sum() else n_k


def _value(x: np.ndarray) -> float | None:
    v = float(x[0])
    return v if math.isfinite(v) else None


def by_gold_class(instances: Sequence[dict], matcher: str) -> list[dict[str, Any]]:
    """RACE within each gold class: the correct and incorrect groups' n, S, C, A, and D_k.

    Returns:
        One row per gold class (sorted): ``{"gold", "n", "n_correct", "n_incorrect", "support_correct",
        "contradict_correct", "asymmetry_correct", "support_incorrect", "contradict_incorrect",
        "asymmetry_incorrect", "difference", "support_all", "contradict_all", "asymmetry_all"}``; a mean is
        None when its group has no defined coverage. ``*_all`` are over the whole class, whatever the
        prediction: unequal values across classes are the gold-class difference.
    """
    cols = _Columns(instances, matcher)
    ones = np.ones((1, cols.n))
    rows = []
    for k, gold in enumerate(cols.classes):
        in_k = cols.gold_idx == k
        sc, cc = cols.means(ones, cols.correct & in_k)
        si, ci = cols.means(ones, ~cols.correct & in_k)
        sa, ca = cols.means(ones, in_k)
        row = {"gold": gold, "n": int(in_k.sum()), "n_correct": int((cols.correct & in_k).sum()),
               "n_incorrect": int((~cols.correct & in_k).sum()),
               "support_correct": _value(sc), "contradict_correct": _value(cc),
               "asymmetry_correct": _value(sc - cc), "support_incorrect": _value(si),
               "contradict_incorrect": _value(ci), "asymmetry_incorrect": _value(si - ci),
               "difference": _value((sc - cc) - (si - ci)),
               "support_all": _value(sa), "contradict_all": _value(ca), "asymmetry_all": _value(sa - ca)}
        rows.append(row)
    return rows


def stratified_difference(instances: Sequence[dict], matcher: str) -> float | None:
    """D_strat = sum_k w_k D_k over the gold classes where D_k is defined (module docstring); range [-2, 2]."""
    cols = _Columns(instances, matcher)
    return _value(cols.statistics(np.ones((1, cols.n)))["stratified_difference"]) if cols.n else None


def stratified_permutation_test(instances: Sequence[dict], matcher: str, *, n_permutations: int = 2000,
                                seed: int = 0) -> dict[str, Any]:
    """D_strat and its two-sided p under H0: correctness exchangeable within each gold class.

    Returns:
        ``{"value", "p_value", "n_permutations", "classes_used", "test", "null"}``; value and p are None when
        no gold class holds both correct and incorrect instances with coverage.
    """
    cols = _Columns(instances, matcher)
    out = {"n_permutations": n_permutations, "test": "correct/incorrect flags permuted within each gold class",
           "null": "coverage independent of correctness within each gold class"}
    weights = cols.stratum_weights() if cols.n else np.zeros(0)
    out["classes_used"] = [c for c, w in zip(cols.classes, weights, strict=True) if w > 0]
    observed = _value(cols.statistics(np.ones((1, cols.n)), strat_weights=weights)["stratified_difference"]) \
        if cols.n else None
    if observed is None:
        return {**out, "value": None, "p_value": None}
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_permutations, 250):
        b = min(250, n_permutations - start)
        flags = np.tile(cols.correct, (b, 1))
        for k in range(len(cols.classes)):
            idx = np.flatnonzero(cols.gold_idx == k)
            flags[:, idx] = rng.permuted(flags[:, idx], axis=1)
        null = cols.statistics(np.ones((b, cols.n)), flags, weights)["stratified_difference"]
        hits += int(np.sum(np.abs(null) >= abs(observed) - 1e-12))
    return {**out, "value": observed, "p_value": (1 + hits) / (1 + n_permutations)}


def cluster_intervals(instances: Sequence[dict], matcher: str, clusters: dict[str, Any] | None = None, *,
                      confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Percentile cluster-bootstrap intervals of the group means, both halves, D and D_strat.

    Args:
        instances: RACE's per-instance rows.
        matcher: The matcher whose coverage is read.
        clusters: item id -> cluster label (e-SNLI: the premise); None or a missing id: its own cluster.
        confidence: Interval level.
        n_resamples: Bootstrap resamples.
        seed: Seed of the resampling.

    Returns:
        ``{"n", "n_clusters", "method", stat: {"value", "low", "high", "undefined"[, "p_value"]}}`` for each of
        :data:`GROUP_STATS` and :data:`DIFFERENCES`; the differences carry the two-sided bootstrap p.
    """
    cols = _Columns(instances, matcher, clusters)
    out: dict[str, Any] = {"n": cols.n, "n_clusters": cols.n_clusters,
                           "method": f"percentile cluster bootstrap ({n_resamples:,} resamples of "
                                     f"{cols.n_clusters} clusters)"}
    if not cols.n:
        return out
    weights = cols.stratum_weights()
    observed = cols.statistics(np.ones((1, cols.n)), strat_weights=weights)
    rng = np.random.default_rng(seed)
    k = cols.n_clusters
    draws: dict[str, list[np.ndarray]] = {name: [] for name in observed}
    for start in range(0, n_resamples, 500):
        b = min(500, n_resamples - start)
        counts = rng.multinomial(k, np.full(k, 1.0 / k), size=b).astype(float)
        for name, values in cols.statistics(counts[:, cols.cluster_idx], strat_weights=weights).items():
            draws[name].append(values)
    alpha = (1 - confidence) / 2
    for name in (*GROUP_STATS, *DIFFERENCES):
        t = np.concatenate(draws[name])
        ok = t[np.isfinite(t)]
        row: dict[str, Any] = {"value": _value(observed[name]), "undefined": int(t.size - ok.size)}
        if ok.size:
            row["low"], row["high"] = (float(x) for x in np.quantile(ok, [alpha, 1 - alpha]))
        else:
            row["low"] = row["high"] = None
        if name in DIFFERENCES:
            row["p_value"] = (min(1.0, 2 * min(float(np.mean(ok <= 0)), float(np.mean(ok >= 0))))
                              if ok.size and row["value"] is not None else None)
        out[name] = row
    return out


def _shuffleable(predictions: Sequence[dict]) -> list[int]:
    return [i for i, p in enumerate(predictions) if p.get("label") is not None and p.get("rationale")]


def shuffle_rationales(predictions: Sequence[dict], clusters: dict[str, Any] | None = None, *,
                       seed: int = 0) -> list[dict]:
    """Null control: each rationale moves to another item (of another cluster when clusters are given).

    Rows with a label and a rationale are ordered by cluster (clusters in a seeded random order) and each
    takes the rationale ``m`` positions further (cyclically), m the size of the largest cluster, so no
    rationale stays in its own cluster when no cluster holds half the rows or more. Labels, ids and the
    other rows (no label or no rationale) are unchanged.

    Raises:
        ValueError: When a cluster holds half the shuffleable rows or more (no shift leaves every row).
    """
    out = [dict(p) for p in predictions]
    idx = _shuffleable(predictions)
    if len(idx) < 2:
        return out
    key = {i: (clusters or {}).get(str(predictions[i]["id"]), str(predictions[i]["id"])) for i in idx}
    order = list(dict.fromkeys(key[i] for i in idx))
    random.Random(seed).shuffle(order)
    rank = {c: r for r, c in enumerate(order)}
    ordered = sorted(idx, key=lambda i: rank[key[i]])
    m = max(Counter(key.values()).values())
    if 2 * m > len(ordered):
        raise ValueError(f"shuffle_rationales: a cluster holds {m} of {len(ordered)} rows; every rationale can "
                         "leave its cluster only when each holds fewer than half")
    for j, i in enumerate(ordered):
        out[i]["rationale"] = predictions[ordered[(j + m) % len(ordered)]]["rationale"]
    return out


def shuffle_labels(predictions: Sequence[dict], *, seed: int = 0) -> list[dict]:
    """Null control: the labels of the rows with a label and a rationale, permuted among them (seeded).

    The label distribution stays; each rationale keeps its item but is scored against a label it was not
    written for.
    """
    out = [dict(p) for p in predictions]
    idx = _shuffleable(predictions)
    labels = [predictions[i]["label"] for i in idx]
    random.Random(seed).shuffle(labels)
    for i, lab in zip(idx, labels, strict=True):
        out[i]["label"] = lab
    return out
