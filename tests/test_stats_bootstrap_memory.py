"""Bootstrap resamples drawn in batches: the same intervals as one unbatched draw, and memory that does not
grow with n_resamples x n."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy import stats

from reasonscope.behavior.efficiency import corpus_efficiency
from reasonscope.stats import bootstrap as B


@pytest.mark.parametrize("method", ["percentile", "BCa", "basic"])
def test_batched_interval_equals_the_unbatched_one(method, monkeypatch):
    x = np.random.default_rng(4).random(500)
    whole = stats.bootstrap((x,), np.mean, n_resamples=400, method=method, vectorized=True,
                            random_state=np.random.default_rng(9))
    monkeypatch.setattr(B, "RESAMPLE_BUDGET", 500 * 7)  # 7 resamples per batch: 58 batches
    assert B.resample_batch(500) == 7
    est = B.bootstrap_mean(x, n_resamples=400, method=method, seed=9)
    assert (est.low, est.high) == (float(whole.confidence_interval.low), float(whole.confidence_interval.high))


def test_resample_batch_bounds():
    assert B.resample_batch(20_000) == B.RESAMPLE_BUDGET // 20_000
    assert B.resample_batch(10 * B.RESAMPLE_BUDGET) == 1  # at least one resample
    assert B.resample_batch(0) == B.RESAMPLE_BUDGET


def _peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_peak_memory_does_not_grow_with_resamples_times_items():
    x = np.random.default_rng(0).random(20_000)
    peak = _peak_mb(lambda: B.bootstrap_mean(x, n_resamples=1000, seed=1))
    unbatched = _peak_mb(lambda: stats.bootstrap((x,), np.mean, n_resamples=1000, vectorized=True,
                                                 random_state=np.random.default_rng(1)))
    assert unbatched > 300  # 1,000 x 20,000 resampled values and their indices
    assert peak < 40  # about 8 MB of values and 8 MB of indices per batch, plus the data


def test_corpus_efficiency_interval_is_unchanged_by_batching(monkeypatch):
    rng = np.random.default_rng(3)
    rows = [{"CQ": float(rng.random() < 0.7), "conciseness": float(rng.random())} for _ in range(300)]
    before = corpus_efficiency(rows, n_resamples=300, seed=2)
    monkeypatch.setattr(B, "RESAMPLE_BUDGET", 600 * 5)
    after = corpus_efficiency(rows, n_resamples=300, seed=2)
    assert before == after and before["low"] < before["value"] < before["high"]
