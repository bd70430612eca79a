"""Bootstrap confidence intervals.

* :func:`bootstrap_mean`: the mean of per-item values with a CI from ``scipy.stats.bootstrap``
  (items resampled with replacement; ``percentile`` by default, ``BCa`` and ``basic`` available;
  2,000 resamples; seeded). With fewer than 2 values the CI is ``None``; with all values equal the
  interval is that value (no sampling variability is observable).
* :func:`paired_difference`: mean of ``a_i - b_i`` over items both models answered, CI by the same
  bootstrap on the paired differences, and a two-sided bootstrap p-value
  ``min(1, 2 * min(P*(d <= 0), P*(d >= 0)))`` from the resampled means.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


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
                          random_state=np.random.default_rng(seed), vectorized=True)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):  # BCa on near-degenerate data
        res = stats.bootstrap((arr,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                              method="percentile", random_state=np.random.default_rng(seed), vectorized=True)
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        label += "(percentile fallback)"
    return Estimate(mean, low, high, int(arr.size), label)


def estimate(values, stats, seed: int = 0) -> dict:
    """:func:`bootstrap_mean` with a plan's ``stats`` settings (confidence, resamples, method), as a dict."""
    return bootstrap_mean(values, confidence=stats.confidence, n_resamples=stats.n_resamples, method=stats.method,
                          seed=seed).as_dict()


@dataclass
class PairedDifference(Estimate):
    p_value: float | None = None


def paired_difference(a, b, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> PairedDifference:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    d = np.asarray([x - y for x, y in pairs], dtype=float)
    label = f"paired-bootstrap-{n_resamples}"
    if d.size == 0:
        return PairedDifference(None, None, None, 0, label)
    est = bootstrap_mean(d, confidence=confidence, n_resamples=n_resamples, seed=seed)
    if d.size < 2 or np.all(d == d[0]):
        p = 1.0 if np.all(d == 0) else (0.0 if d.size >= 2 else None)
        return PairedDifference(est.value, est.low, est.high, int(d.size), label, p)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n_resamples, d.size))].mean(axis=1)
    p = float(min(1.0, 2 * min((means <= 0).mean(), (means >= 0).mean())))
    return PairedDifference(est.value, est.low, est.high, int(d.size), label, p)
