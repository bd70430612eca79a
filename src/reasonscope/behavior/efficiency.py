"""ES (efficiency): the two readings of the behavioural framework's definition, both reported.

The framework (Şenol, Agrawal, Liu, *Measuring Reasoning Quality in Large Language Models: A
Multi-Dimensional Behavioral Framework*, 2026) defines ES as the "harmonic mean of CQ and inverse
normalized token count". With the length score of item i

    L_i = 1 - min(1, T_i / B)     (T_i completion tokens of the primary answer, B the token budget)

and H(a, b) = 2ab / (a + b) (0 when a + b = 0), the sentence has two readings:

* ``ES_corpus`` = H(CQ, mean_i L_i): the harmonic mean of the model's correctness CQ (the corpus
  mean of CQ_i, as the framework's table defines CQ) and its mean length score. Range [0, 1], higher is
  better. A short model with CQ = 0.5 and L = 0.9 gets 0.64; correctness enters once.
* ``ES_item`` = mean_i H(CQ_i, L_i): the harmonic mean per item, then averaged (what the peer package
  ``llm-reasoning-quality`` computes). H(0, L) = 0 and H(1, L) <= 1, so ``ES_item`` <= CQ always, and it
  equals CQ times the mean of 2L/(1+L) over the correct items: it is mostly a second copy of
  correctness, which a strategy then counts again beside CQ.

``ES`` (the column the strategies use) is ``ES_corpus`` by default (``behavior.efficiency: corpus``);
``efficiency: item`` selects the per-item reading. Both are reported beside it, with CIs, under their
own names. We default to the corpus reading because the framework's table writes ES in terms of CQ,
which it defines over the corpus, and because the per-item reading makes ES <= CQ by construction.

Degenerate cases: L_i is undefined for an item without a completion token count (an imported
output without counts): it is left out of the mean length score, while CQ_i still counts in CQ. A
failed generation follows ``stats.failed_generations``: left out of CQ, L and ES by default
(``exclude``); under ``wrong`` it has CQ_i = 0, no L_i, and ES_i = 0 in ``ES_item``. No item with a length score: ES is not applicable.

Uncertainty: ``ES_corpus`` is not a mean of per-item values, so its CI comes from a bootstrap of the
items with both coordinates resampled together (``scipy.stats.bootstrap``, paired, the plan's method,
percentile fallback; the percentile interval, the default, computed by
:func:`reasonscope.stats.bootstrap.paired_percentile_bootstrap`, equal to scipy's without importing scipy.stats). Under :data:`SMALL_BOOTSTRAP` items that bootstrap is too narrow (4 items all
correct: no resample changes CQ, and ``0.9588 [0.9578, 0.9593]`` stood beside CQ's exact [0.40, 1]),
so the interval is widened to the hull with H at the ends of CQ's and mean L's intervals, each at
level 1 - alpha/2 (:func:`monotone_bound`, conservative by Bonferroni). A difference between two models on the same items is tested with a paired
permutation test (the two models' (CQ_i, L_i) swapped within each item; exact enumeration when
2^n <= the resample count, Monte Carlo otherwise; two-sided; ``scipy.stats.permutation_test``), with a
paired bootstrap CI.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from ..stats.bootstrap import bootstrap_mean, paired_percentile_bootstrap, resample_batch

SMALL_BOOTSTRAP = 30
"""Below this many items the CI of ``ES_corpus`` is the hull of the bootstrap and :func:`monotone_bound`."""

READINGS = ("corpus", "item")
NEEDS_BOTH = ("ES needs completion token counts and a token budget: give counts (a completion_tokens column, or "
              "--tokenizer to count them) and a budget (a max_tokens column, or --budget)")
NEEDS_TOKENS = ("ES needs completion token counts: the outputs have a token budget but no counts (give a "
                "completion_tokens column, or --tokenizer to count them)")
NEEDS_BUDGET = ("ES needs a token budget: the outputs have completion token counts but no max_tokens (give "
                "--budget, or a max_tokens column)")


def missing_length_reason(tokens: int | None, budget: int | None) -> str:
    """Why an item has no length score L_i (and so no ES_i).

    Says which of the completion token count T_i and the budget B is missing, and the ``reasonscope
    score`` option that gives it (``--tokenizer`` counts tokens; ``--budget`` sets B).
    """
    if tokens is not None and budget:
        return NEEDS_BOTH  # not reached for a scored item: both given, L_i has a value
    if tokens is not None:
        return NEEDS_BUDGET
    if budget:
        return NEEDS_TOKENS
    return NEEDS_BOTH


def harmonic_of_means(cq, length, axis: int = -1):
    """H(nanmean(cq), nanmean(length)) along ``axis`` (vectorised for the bootstrap)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample with no length score gives nan
        a, b = np.nanmean(cq, axis=axis), np.nanmean(length, axis=axis)
        total = a + b
        return np.where(total > 0, 2 * a * b / np.where(total > 0, total, 1), 0.0)


def _arrays(rows: Sequence[dict], cq_key: str = "CQ", length_key: str = "conciseness"):
    cq = np.array([np.nan if r.get(cq_key) is None else float(r[cq_key]) for r in rows])
    length = np.array([np.nan if r.get(length_key) is None else float(r[length_key]) for r in rows])
    return cq, length


def corpus_efficiency(rows: Sequence[dict], *, confidence: float = 0.95, n_resamples: int = 2000,
                      method: str = "percentile", seed: int = 0) -> dict:
    """Corpus efficiency ``ES_corpus`` = H(CQ, mean_i L_i), with a bootstrap CI.

    H(a, b) = 2ab / (a + b) (0 when a + b = 0); CQ is the mean of the items' CQ_i and L_i = 1 - min(1,
    T_i / B) their length scores; items are resampled with (CQ_i, L_i) together.

    Args:
        rows: Per-item rows holding ``CQ`` (CQ_i) and ``conciseness`` (L_i); None: no value.
        confidence: Confidence level of the interval.
        n_resamples: Bootstrap resamples.
        method: ``scipy.stats.bootstrap`` method (percentile fallback).
        seed: Seed of the resampling.

    Returns:
        An estimate dict (value, low, high, n, method). The value is in [0, 1], higher is better; n counts
        the items with a length score. No such item (or no CQ_i): value None and n = 0.

    Examples:
        >>> corpus_efficiency([{"CQ": 1.0, "conciseness": 0.5}, {"CQ": 0.0, "conciseness": 0.5}])["value"]
        0.5
    """
    return corpus_efficiency_of(*_arrays(rows), confidence=confidence, n_resamples=n_resamples, method=method,
                                seed=seed)


def corpus_efficiency_of(cq: np.ndarray, length: np.ndarray, *, confidence: float = 0.95,
                         n_resamples: int = 2000, method: str = "percentile", seed: int = 0) -> dict:
    """:func:`corpus_efficiency` of the items' ``CQ_i`` and ``L_i`` as two aligned arrays (NaN: none)."""
    n = int(np.sum(~np.isnan(length)))
    method = "percentile" if method == "auto" else method  # "auto" (the rule for means) is percentile here
    label = f"bootstrap-{method}-{n_resamples} (items resampled, (CQ_i, L_i) together)"
    if n == 0 or np.all(np.isnan(cq)):
        return {"value": None, "low": None, "high": None, "n": 0, "method": label}
    value = float(harmonic_of_means(cq, length))
    low = high = None
    if len(cq) >= 2:
        for m in dict.fromkeys((method, "percentile")):  # BCa is undefined on constant data: percentile then
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if m == "percentile":  # scipy.stats.bootstrap's percentile interval, without importing it
                    low, high = paired_percentile_bootstrap(
                        (cq, length), harmonic_of_means, confidence=confidence, n_resamples=n_resamples,
                        seed=seed, batch=resample_batch(2 * len(cq)))
                else:
                    from scipy import stats as sps  # 0.5 s of imports, only for a method the plan names

                    res = sps.bootstrap((cq, length), harmonic_of_means, paired=True, vectorized=True,
                                        confidence_level=confidence, n_resamples=n_resamples, method=m,
                                        random_state=np.random.default_rng(seed), batch=resample_batch(2 * len(cq)))
                    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if not (math.isnan(low) or math.isnan(high)):
                break
            low = high = None
    if n < SMALL_BOOTSTRAP:  # a bootstrap of a few items cannot see CQ's uncertainty: hull with the bound
        b_low, b_high = monotone_bound(cq, length, confidence)
        low = b_low if low is None else min(low, b_low)
        high = b_high if high is None else max(high, b_high)
        label += f"; under {SMALL_BOOTSTRAP} items widened to H(CQ, L) at the ends of their {1 - (1 - confidence) / 2:g} intervals"
    return {"value": value, "low": low, "high": high, "n": n, "method": label}


def monotone_bound(cq: np.ndarray, length: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """``[H(CQ_low, L_low), H(CQ_high, L_high)]``, each of CQ and mean L at confidence ``1 - alpha / 2``.

    H grows with each argument, so when both intervals hold their means (probability at least
    ``1 - alpha`` by Bonferroni) H(CQ, mean L) lies between these ends: a conservative interval that, unlike
    an item bootstrap of a few items (all correct: no resample differs), keeps CQ's exact uncertainty.
    """
    level = 1 - (1 - confidence) / 2
    a = bootstrap_mean(cq[~np.isnan(cq)], confidence=level, bounds=(0.0, 1.0))
    b = bootstrap_mean(length[~np.isnan(length)], confidence=level, bounds=(0.0, 1.0))
    if a.low is None or b.low is None:
        return 0.0, 1.0
    return float(harmonic_of_means(np.array([a.low]), np.array([b.low]))), \
        float(harmonic_of_means(np.array([a.high]), np.array([b.high])))


def paired_corpus_efficiency(rows_a: Sequence[dict], rows_b: Sequence[dict], *, confidence: float = 0.95,
                             n_resamples: int = 2000, seed: int = 0, n_permutations: int = 9999) -> dict:
    """ES_corpus(A) - ES_corpus(B) over the same items (row j of each is item j).

    Returns:
        The difference (in [-1, 1]; positive: A is more efficient), a paired bootstrap CI and a two-sided
        paired permutation p-value (see the module docstring).
    """
    return paired_corpus_efficiency_of(*_arrays(rows_a), *_arrays(rows_b), confidence=confidence,
                                       n_resamples=n_resamples, seed=seed, n_permutations=n_permutations)


def paired_corpus_efficiency_of(cq_a: np.ndarray, len_a: np.ndarray, cq_b: np.ndarray, len_b: np.ndarray, *,
                                confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                                n_permutations: int = 9999) -> dict:
    """:func:`paired_corpus_efficiency` of the two models' ``CQ_i`` and ``L_i`` as aligned arrays (NaN: none)."""
    keep = ~(np.isnan(len_a) & np.isnan(len_b))
    cq_a, len_a, cq_b, len_b = cq_a[keep], len_a[keep], cq_b[keep], len_b[keep]
    n = int(keep.sum())
    out = {"difference": None, "low": None, "high": None, "n": n, "p_value": None,
           "test": "paired permutation (models swapped within items), two-sided",
           "null": "the two models' outputs are exchangeable within each item"}
    if n == 0 or np.all(np.isnan(len_a)) or np.all(np.isnan(len_b)):
        return out

    def diff(ca, la, cb, lb, axis=-1):
        return harmonic_of_means(ca, la, axis) - harmonic_of_means(cb, lb, axis)

    out["difference"] = float(diff(cq_a, len_a, cq_b, len_b))
    if n < 2:
        return out
    out["low"], out["high"] = paired_percentile_bootstrap((cq_a, len_a, cq_b, len_b), diff, confidence=confidence,
                                                          n_resamples=n_resamples, seed=seed,
                                                          batch=resample_batch(4 * n))
    cq = np.concatenate([cq_a, cq_b])
    length = np.concatenate([len_a, len_b])

    def by_index(ia, ib, axis=-1):  # ia, ib index the stacked (A then B) arrays; swapping them swaps models
        return diff(cq[ia], length[ia], cq[ib], length[ib], axis)

    from scipy import stats as sps  # 0.5 s of imports, only when two models are compared

    test = sps.permutation_test((np.arange(n), np.arange(n) + n), by_index, permutation_type="samples",
                                vectorized=True, n_resamples=n_permutations, alternative="two-sided",
                                random_state=np.random.default_rng(seed))
    out["p_value"] = float(test.pvalue)
    return out
