"""The behaviour statistics' fast paths give the values of the reference paths, bit for bit.

ES_corpus's percentile bootstrap without scipy.stats (reasonscope.stats.bootstrap.paired_percentile_bootstrap
against ``scipy.stats.bootstrap``), the strategies' intervals on resamples shared by a model's strategies
(reasonscope.behavior.strategies.ItemResamples against each strategy drawing its own), and a default behaviour
scoring path that does not import scipy.stats.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from reasonscope.behavior.efficiency import (
    corpus_efficiency_of,
    harmonic_of_means,
    paired_corpus_efficiency_of,
)
from reasonscope.behavior.strategies import BUILTIN_STRATEGIES, ItemResamples, composite_interval
from reasonscope.stats.bootstrap import paired_percentile_bootstrap, quantile_linear, resample_batch

ROOT = Path(__file__).resolve().parents[1]
NAN = float("nan")


def scipy_interval(samples, statistic, confidence, n_resamples, seed, batch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap(samples, statistic, paired=True, vectorized=True, method="percentile",
                              confidence_level=confidence, n_resamples=n_resamples, batch=batch,
                              random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def es_columns(n: int, seed: int, missing: float = 0.0):
    rng = np.random.default_rng(seed)
    cq = (rng.random(n) < 0.7).astype(float)
    length = rng.random(n)
    length[rng.random(n) < missing] = NAN
    return cq, length


@pytest.mark.parametrize(("n", "seed", "missing", "confidence", "n_resamples", "batch"), [
    (2, 0, 0.0, 0.95, 2000, None),
    (7, 1, 0.3, 0.95, 999, 100),
    (40, 2, 0.0, 0.9, 2000, resample_batch(80)),
    (300, 3, 0.1, 0.95, 2000, resample_batch(600)),  # several batches: the stream continues across them
    (1200, 4, 0.5, 0.99, 1500, 333),
])
def test_percentile_bootstrap_equals_scipy_stats_bootstrap(n, seed, missing, confidence, n_resamples, batch):
    cq, length = es_columns(n, seed, missing)
    ours = paired_percentile_bootstrap((cq, length), harmonic_of_means, confidence=confidence,
                                       n_resamples=n_resamples, seed=seed, batch=batch)
    assert ours == scipy_interval((cq, length), harmonic_of_means, confidence, n_resamples, seed, batch)


def test_percentile_bootstrap_of_a_four_sample_difference_equals_scipy():
    cq_a, len_a = es_columns(50, 5)
    cq_b, len_b = es_columns(50, 6, missing=0.2)

    def diff(ca, la, cb, lb, axis=-1):
        return harmonic_of_means(ca, la, axis) - harmonic_of_means(cb, lb, axis)

    samples = (cq_a, len_a, cq_b, len_b)
    ours = paired_percentile_bootstrap(samples, diff, n_resamples=2000, seed=3, batch=resample_batch(200))
    assert ours == scipy_interval(samples, diff, 0.95, 2000, 3, resample_batch(200))


def test_quantile_linear_by_hand_and_against_scipy():
    y = np.array([1.0, 2.0, 4.0, 8.0])
    # type 7: h = (n - 1) p = 0.75 at p = 0.25: 1 + 0.75 (2 - 1); at p = 0.9: h = 2.7: 4 + 0.7 (8 - 4)
    assert quantile_linear(y, np.array([0.0, 0.25, 0.9, 1.0])).tolist() == pytest.approx([1.0, 1.75, 6.8, 8.0])
    values = np.sort(np.random.default_rng(0).random(2001))
    p = np.array([0.025, 0.05, 0.5, 0.95, 0.975])
    assert np.array_equal(quantile_linear(values, p), stats.quantile(values, p))


def test_percentile_bootstrap_rejects_unaligned_samples_and_propagates_nan():
    with pytest.raises(ValueError, match=r"aligned samples of at least 2 items, got lengths \[3, 2\]"):
        paired_percentile_bootstrap((np.ones(3), np.ones(2)), harmonic_of_means)
    low, high = paired_percentile_bootstrap((np.array([NAN, 1.0]),), lambda x, axis=-1: x.sum(axis=axis))
    assert np.isnan(low) and np.isnan(high)


def test_corpus_efficiency_interval_is_scipys():
    cq, length = es_columns(200, 7, missing=0.1)
    got = corpus_efficiency_of(cq, length, n_resamples=2000, seed=11)
    assert (got["low"], got["high"]) == scipy_interval((cq, length), harmonic_of_means, 0.95, 2000, 11,
                                                       resample_batch(400))
    assert got["method"] == "bootstrap-percentile-2000 (items resampled, (CQ_i, L_i) together)"
    # BCa is still scipy's own (imported only for it)
    bca = corpus_efficiency_of(cq, length, n_resamples=500, seed=11, method="BCa")
    assert bca["low"] < got["value"] < bca["high"] and bca["method"].startswith("bootstrap-BCa-500")


def test_paired_corpus_efficiency_interval_is_scipys():
    cq_a, len_a = es_columns(30, 8)
    cq_b, len_b = es_columns(30, 9)
    got = paired_corpus_efficiency_of(cq_a, len_a, cq_b, len_b, n_resamples=1000, seed=2, n_permutations=999)

    def diff(ca, la, cb, lb, axis=-1):
        return harmonic_of_means(ca, la, axis) - harmonic_of_means(cb, lb, axis)

    assert (got["low"], got["high"]) == scipy_interval((cq_a, len_a, cq_b, len_b), diff, 0.95, 1000, 2,
                                                       resample_batch(120))
    assert 0.0 < got["p_value"] <= 1.0


def reference_interval(columns, weights, used, *, efficiency, confidence=0.95, n_resamples=2000, seed=0,
                       cells=4_000_000):
    """composite_interval as written before the resamples were shared (each strategy draws its own)."""
    n = len(columns["CQ"])
    total = sum(weights[m] for m in used)
    rng = np.random.default_rng(seed)
    batch = max(1, cells // n)
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for start in range(0, n_resamples, batch):
            idx = rng.integers(0, n, size=(min(batch, n_resamples - start), n))
            means = {}
            for m in used:
                if m == "ES" and efficiency == "corpus":
                    means[m] = harmonic_of_means(columns["CQ"][idx], columns["conciseness"][idx], axis=1)
                else:
                    means[m] = np.nanmean(columns["ES_item" if m == "ES" else m][idx], axis=1)
            scores.append(sum(weights[m] * means[m] for m in used) / total)
    q = np.concatenate(scores)
    q = q[~np.isnan(q)]
    alpha = (1 - confidence) / 2
    return float(np.quantile(q, alpha)), float(np.quantile(q, 1 - alpha))


@pytest.mark.parametrize("efficiency", ["corpus", "item"])
@pytest.mark.parametrize(("n", "cells"), [(60, 4_000_000), (500, 300_000)])  # 300,000 cells: 7 batches
def test_shared_resamples_give_each_strategy_its_own_interval_bit_for_bit(efficiency, n, cells, monkeypatch):
    from reasonscope.behavior import strategies

    monkeypatch.setattr(strategies, "RESAMPLE_CELLS", cells)
    rng = np.random.default_rng(n)
    columns = {m: rng.random(n) for m in ("CS", "LS", "SS", "ES_item", "conciseness")}
    columns["CQ"] = (rng.random(n) < 0.6).astype(float)
    columns["RS"] = np.where(rng.random(n) < 0.3, NAN, rng.random(n))  # NaN: the nanmean path
    columns["conciseness"][:3] = NAN
    shared = ItemResamples(columns, efficiency=efficiency, n_resamples=2000, seed=4)
    for name, weights in BUILTIN_STRATEGIES.items():
        used = [m for m, w in weights.items() if w > 0 and not (name == "edge_device" and m == "RS")]
        got = composite_interval(columns, weights, used, efficiency=efficiency, seed=4, resamples=shared)
        alone = composite_interval(columns, weights, used, efficiency=efficiency, seed=4)
        assert got == alone == reference_interval(columns, weights, used, efficiency=efficiency, seed=4,
                                                  cells=cells), name


def test_default_behaviour_statistics_do_not_import_scipy_stats():
    code = ("import sys, numpy as np\n"
            "from reasonscope.behavior.efficiency import corpus_efficiency_of\n"
            "from reasonscope.behavior.strategies import composite_interval\n"
            "import reasonscope.behavior.scoring, reasonscope.behavior.entry\n"
            "cq = np.array([1.0, 0.0, 1.0, 1.0]); length = np.array([0.5, 0.9, 0.7, 0.2])\n"
            "r = corpus_efficiency_of(cq, length, n_resamples=200, method='auto')\n"
            "cols = {m: length for m in ('CQ', 'CS', 'RS', 'LS', 'SS', 'ES_item', 'conciseness')}\n"
            "composite_interval(cols, {'CQ': 0.5, 'ES': 0.5}, ['CQ', 'ES'], efficiency='corpus', n_resamples=200)\n"
            "print(r['low'] is not None, 'scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["True", "False"], out.stderr
