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


def _former_strategy_draws(n, n_resamples, seed, cells):
    """ItemResamples._batches as it was written before the shared generator."""
    rng = np.random.default_rng(seed)
    batch = max(1, cells // max(1, n))
    for start in range(0, n_resamples, batch):
        yield rng.integers(0, n, size=(min(batch, n_resamples - start), n))


def _former_paired_draws(n, n_resamples, seed, batch):
    """paired_percentile_bootstrap's draws as they were written before the shared generator."""
    rng = np.random.default_rng(seed)
    step = batch or n_resamples or 1
    for k in range(0, n_resamples, step):
        yield rng.integers(0, n, (min(step, n_resamples - k), n))


def _former_studentized_draws(n, n_resamples, seed, batch):
    """studentized_bootstrap's draws as they were written before the shared generator."""
    rng = np.random.default_rng(seed)
    per = max(1, batch // n)
    for start in range(0, n_resamples, per):
        yield rng.integers(0, n, size=(min(per, n_resamples - start), n))


@pytest.mark.parametrize(("n", "n_resamples", "seed", "budget"), [
    (7, 50, 0, 4_000_000), (7, 50, 3, 21), (500, 400, 9, 500 * 7), (1, 10, 2, 5), (30, 1, 1, 29), (12, 0, 0, 100)])
def test_one_generator_draws_what_each_former_draw_did(n, n_resamples, seed, budget):
    """Each caller's batches (its own cell budget or ``batch``) are the arrays its inline draw made, ``==``."""
    from reasonscope.behavior.strategies import ItemResamples

    def same(got, want):
        got, want = list(got), list(want)
        assert [g.shape for g in got] == [w.shape for w in want]
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
        return got

    shared = B.resample_indices(n, n_resamples, seed, B.resample_batch(n, budget))
    draws = same(shared, _former_strategy_draws(n, n_resamples, seed, budget))
    assert sum(len(d) for d in draws) == n_resamples
    columns = {"CQ": np.zeros(n)}
    import reasonscope.behavior.strategies as S

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S, "RESAMPLE_CELLS", budget)
        same(ItemResamples(columns, efficiency="item", n_resamples=n_resamples, seed=seed)._batches(),
             _former_strategy_draws(n, n_resamples, seed, budget))
    for batch in (None, 1, 3, budget):
        same(B.resample_indices(n, n_resamples, seed, batch or n_resamples or 1),
             _former_paired_draws(n, n_resamples, seed, batch))
    same(B.resample_indices(n, n_resamples, seed, B.resample_batch(n, budget)),
         _former_studentized_draws(n, n_resamples, seed, budget))


def test_resample_indices_by_hand():
    """Two rows at a time from default_rng(5): the first batch is rng.integers(0, 4, (2, 4)), the last the one row
    left; every index in range."""
    draws = list(B.resample_indices(4, 5, 5, 2))
    assert [d.shape for d in draws] == [(2, 4), (2, 4), (1, 4)]
    rng = np.random.default_rng(5)
    assert np.array_equal(draws[0], rng.integers(0, 4, (2, 4)))
    assert all(((d >= 0) & (d < 4)).all() for d in draws)
