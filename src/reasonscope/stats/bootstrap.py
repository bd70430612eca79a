"""Bootstrap confidence intervals.

* :func:`bootstrap_mean`: the mean of per-item values with a CI from ``scipy.stats.bootstrap``
  (items resampled with replacement; ``percentile`` by default, ``BCa`` and ``basic`` available;
  2,000 resamples; seeded). With fewer than 2 values the CI is ``None``; with all values equal the
  interval is that value (no sampling variability is observable). The resamples are drawn in batches
  of :func:`resample_batch` rows, so that memory does not grow with n_resamples x n (scipy draws the
  same resamples batched or not: the same interval, tested).
* :func:`paired_difference`: mean of ``a_i - b_i`` over the items both sides have, its CI by the same
  bootstrap on the paired differences (one resampling), and the two-sided p-value of the paired
  sign-flip permutation test (:func:`reasonscope.stats.permutation.sign_flip_test`; H0: differences
  symmetric about 0). The bootstrap is not used for the p-value: a bootstrap percentile p rejects
  too often on small item counts (false-positive rate 0.15 at n = 6 for a 0.05 test) and gives 0
  for differences that are all equal; ``benchmarks/p_value_calibration.py`` measures both.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

# values one bootstrap call holds at once (n_resamples x n unbatched: 160 MB of float64 at 20,000 items
# and 1,000 resamples, twice that with the resampling indices); batched, about 16 MB (8 MB of values,
# 8 MB of indices) whatever n
RESAMPLE_BUDGET = 1_000_000


def resample_batch(n: int) -> int:
    """Resamples per batch (``scipy.stats.bootstrap``'s ``batch``) for n items: at most
    :data:`RESAMPLE_BUDGET` resampled values at once, at least one resample."""
    return max(1, RESAMPLE_BUDGET // max(1, n))


@dataclass
class Estimate:
    value: float | None
    low: float | None
    high: float | None
    n: int
    method: str

    def as_dict(self) -> dict:
        return asdict(self)


def _clean(values) -> np.ndarray:
    arr = np.asarray([v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))],
                     dtype=float)
    return arr


def mean_or_none(values) -> float | None:
    """The mean of the values that are not None; None when there is none."""
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def bootstrap_mean(values, *, confidence: float = 0.95, n_resamples: int = 2000, method: str = "percentile",
                   seed: int = 0) -> Estimate:
    arr = _clean(values)
    label = f"bootstrap-{method}-{n_resamples}"
    if arr.size == 0:
        return Estimate(None, None, None, 0, label)
    mean = float(arr.mean())
    if arr.size < 2:
        return Estimate(mean, None, None, int(arr.size), label)
    if np.all(arr == arr[0]):
        return Estimate(mean, mean, mean, int(arr.size), label)
    res = stats.bootstrap((arr,), np.mean, confidence_level=confidence, n_resamples=n_resamples, method=method,
                          random_state=np.random.default_rng(seed), vectorized=True, batch=resample_batch(arr.size))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):  # BCa on near-degenerate data
        res = stats.bootstrap((arr,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                              method="percentile", random_state=np.random.default_rng(seed), vectorized=True,
                              batch=resample_batch(arr.size))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        label += "(percentile fallback)"
    return Estimate(mean, low, high, int(arr.size), label)


def estimate(values, stats, seed: int = 0) -> dict:
    """:func:`bootstrap_mean` with a plan's ``stats`` settings (confidence, resamples, method), as a dict."""
    return bootstrap_mean(values, confidence=stats.confidence, n_resamples=stats.n_resamples, method=stats.method,
                          seed=seed).as_dict()


@dataclass
class PairedDifference(Estimate):
    """The mean paired difference with its bootstrap CI, and the sign-flip test's p-value and description
    (``test``: :meth:`Significance.as_dict`, ``test_label``: one line for a table cell)."""

    p_value: float | None = None
    test: dict | None = None
    test_label: str | None = None


def paired_difference(a, b, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                      n_permutations: int = 9999, method: str = "percentile") -> PairedDifference:
    """Mean of a_i - b_i over the pairs where both are present, bootstrap CI, sign-flip p-value.

    Parameters
    ----------
    a, b
        per-item values of the two sides, aligned; a pair with a None is left out.
    confidence, n_resamples, method
        the bootstrap interval of the mean difference (:func:`bootstrap_mean`).
    n_permutations
        sign patterns of the permutation test: all of them when 2^n is at most this, else this many
        random ones (lattice data, e.g. 0/1 correctness, is always exact).
    seed
        seeds both the bootstrap and the Monte Carlo permutations.
    """
    from .permutation import sign_flip_test

    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    d = np.asarray([x - y for x, y in pairs], dtype=float)
    label = f"paired-bootstrap-{method}-{n_resamples}"
    if d.size == 0:
        return PairedDifference(None, None, None, 0, label)
    est = bootstrap_mean(d, confidence=confidence, n_resamples=n_resamples, method=method, seed=seed)
    sig = sign_flip_test(d, n_resamples=n_permutations, seed=seed)
    return PairedDifference(est.value, est.low, est.high, int(d.size), "paired-" + est.method, sig.p_value, sig.as_dict(),
                            sig.label)
