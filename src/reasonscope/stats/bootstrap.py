"""Intervals of means and paired differences, chosen from the values.

Coverage is measured by ``benchmarks/interval_coverage.py``; the formulas are in
:mod:`reasonscope.stats.intervals`.

* :func:`bootstrap_mean`: the mean of per-item values and its interval, at every n >= 1:

  - every value 0 or 1 (a share): the exact Clopper-Pearson interval, whatever ``method`` says, one
    item included (1 of 1 gives [0.025, 1]);
  - every value equal (and a known range), one value included: the exact bound on the share of items
    that could differ (:func:`~reasonscope.stats.intervals.equal_values_interval`), never zero-width;
    0 of 6 gives [0, 0.459], one value 0.6 in [0, 1] gives [0.015, 0.99]. Without a known range
    there is no interval (nor from one value);
  - otherwise, with ``method="auto"`` (the default): in a known range, the quasi-binomial score
    interval with a dispersion floor, widened to the Student t interval
    (:func:`~reasonscope.stats.intervals.bounded_mean`); without one, the hull of the Student t and
    the studentized bootstrap intervals.
    ``percentile``, ``basic`` or ``BCa`` ask for that ``scipy.stats.bootstrap`` interval instead (a
    ``BCa`` interval that cannot be computed falls back to percentile), clipped to the range.

  Items are the resampled unit: ``clusters`` (one label per value: the item of each sample,
  paraphrase, step or judge) averages the values of each cluster first, so the interval is the
  item-level one. The range (``bounds``) is [0, 1] when every value lies in it unless given; ``None``
  for unbounded values. Bootstrap resamples (``percentile``, ``basic``, ``BCa``) are drawn in batches of
  :func:`resample_batch` rows, so that memory does not grow with n_resamples x n.
* :func:`paired_difference`: mean of ``a_i - b_i`` over the items both sides have. Its interval:
  Newcombe's hybrid score interval when both sides are 0/1 (paired shares), else the interval of
  :func:`bootstrap_mean` on the differences (range [lo_a - hi_b, hi_a - lo_b]). The two-sided p-value
  is the paired sign-flip permutation test's (:func:`reasonscope.stats.permutation.sign_flip_test`;
  H0: differences symmetric about 0), never a bootstrap p (too many false positives on small item
  counts; ``benchmarks/p_value_calibration.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from .intervals import (
    Bounds,
    bounded_mean,
    clopper_pearson,
    equal_values_interval,
    is_binary,
    newcombe_paired,
    student_t,
    studentized_bootstrap,
    value_range,
)
from .resampling import resample_indices

# values one bootstrap call holds at once (n_resamples x n unbatched: 160 MB of float64 at 20,000 items
# and 1,000 resamples, twice that with the resampling indices); batched, about 16 MB (8 MB of values,
# 8 MB of indices) whatever n
RESAMPLE_BUDGET = 1_000_000
# below this many values, a mean without a known range is marked: its coverage on skewed data was
# measured below 0.93 (benchmarks/interval_coverage.py, docs/statistics.md)
SMALL_UNBOUNDED = 30


def resample_batch(n: int, cells: int | None = None) -> int:
    """Resamples per batch for n items.

    Resamples per batch (``scipy.stats.bootstrap``'s ``batch``) for n items: at most ``cells`` resampled values
    at once (None: :data:`RESAMPLE_BUDGET`), at least one resample.
    """
    return max(1, (RESAMPLE_BUDGET if cells is None else cells) // max(1, n))


def quantile_linear(sorted_values: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Quantiles ``p`` (in [0, 1]) of sorted values, by ``scipy.stats.quantile``'s ``linear`` formula.

    Hyndman and Fan's type 7, written as scipy.stats.quantile writes it (``j + 1 = floor(p n + 1 - p)``,
    ``g = (p n + 1 - p) mod 1``, ``(1 - g) y_j + g y_{j+1}``), so that the result equals scipy's to the last
    bit; ``numpy.quantile`` computes the same quantity by another formula, which can differ in the last bits.
    """
    n = float(len(sorted_values))
    jg = p * n + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g = np.where(j < 0, 0.0, g)
    j = np.clip(j, 0.0, n - 1).astype(np.int64)
    jp1 = np.clip(jp1, 0.0, n - 1).astype(np.int64)
    return (1 - g) * sorted_values[j] + g * sorted_values[jp1]


def paired_percentile_bootstrap(samples: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray], *,
                                confidence: float = 0.95,
                                n_resamples: int = 2000, seed: int = 0, batch: int | None = None
                                ) -> tuple[float, float]:
    """The percentile bootstrap interval of a paired statistic, as ``scipy.stats.bootstrap`` computes it.

    Equal to ``scipy.stats.bootstrap(samples, statistic, paired=True, vectorized=True, method="percentile",
    confidence_level=confidence, n_resamples=n_resamples, batch=batch, random_state=np.random.default_rng(seed))``
    (the same random stream, :func:`resample_indices` with ``batch`` rows at a time; the same
    quantile formula, :func:`quantile_linear`), without importing scipy.stats (0.5 s). Two-sided: the
    ``(1 - confidence) / 2`` and ``1 - (1 - confidence) / 2`` quantiles of the resampled statistics.

    Args:
        samples: Aligned 1-d arrays (item i of each is one observation), at least 2 items.
        statistic: ``statistic(*resampled, axis=-1)``: one value per resample (a row of each array).
        confidence: The interval's level, in (0, 1).
        n_resamples: Resamples, at least 1.
        seed: Seed of the resampling.
        batch: Resamples drawn at a time (None: all at once).

    Returns:
        ``(low, high)``; both NaN when any resampled statistic is NaN (scipy's ``nan_policy="propagate"``).
    """
    n = len(samples[0])
    if n < 2 or any(len(s) != n for s in samples):
        raise ValueError(f"paired bootstrap: expected aligned samples of at least 2 items, got lengths "
                         f"{[len(s) for s in samples]}")
    theta = [statistic(*(s[..., i] for s in samples), axis=-1)
             for i in resample_indices(n, n_resamples, seed, batch or n_resamples or 1)]
    values = np.sort(np.concatenate(theta, axis=-1))
    if np.isnan(values).any():
        return math.nan, math.nan
    alpha = np.asarray((1 - confidence) / 2, dtype=values.dtype)
    low, high = quantile_linear(values, np.stack([alpha, 1 - alpha]))
    return float(low), float(high)


@dataclass
class Estimate:
    """A mean with its interval.

    Attributes:
        value: the mean; None without values.
        low: the lower bound; None when no interval exists.
        high: the upper bound; None when no interval exists.
        n: the number of values (of clusters when clustered).
        method: how the interval was computed, or why there is none.
    """
    value: float | None
    low: float | None
    high: float | None
    n: int
    method: str

    def as_dict(self) -> dict:
        """The fields as a dict."""
        return asdict(self)


def _clean(values) -> np.ndarray:
    arr = np.asarray([v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))],
                     dtype=float)
    return arr


def mean_or_none(values) -> float | None:
    """The mean of the values that are not None; None when there is none."""
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def cluster_means(values, clusters) -> list[float]:
    """Per-cluster means of the values that are not missing (None, NaN), in the order clusters first appear.

    Each mean is the values' sum from left to right over their count. ``clusters``: one label per value.

    Raises:
        ValueError: When ``clusters`` does not have one label per value.
    """
    values = list(values)
    if len(values) != len(clusters):
        raise ValueError(f"clusters: expected one label per value ({len(values)}), got {len(clusters)}")
    sums: dict = {}
    for v, c in zip(values, clusters, strict=True):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        total, count = sums.get(c, (0.0, 0))
        sums[c] = (total + float(v), count + 1)
    return [total / count for total, count in sums.values()]


def _resolve_bounds(arr: np.ndarray, bounds) -> Bounds | None:
    if bounds == "infer":
        return value_range(arr)
    return None if bounds is None else (float(bounds[0]), float(bounds[1]))


def _scipy_interval(arr: np.ndarray, confidence: float, n_resamples: int, method: str, seed: int
                    ) -> tuple[float, float, str]:
    from scipy import stats  # 0.5 s of imports, only for a method the plan names (and efficiency's bootstrap)

    label = f"bootstrap-{method}-{n_resamples}"
    res = stats.bootstrap((arr,), np.mean, confidence_level=confidence, n_resamples=n_resamples, method=method,
                          random_state=np.random.default_rng(seed), vectorized=True, batch=resample_batch(arr.size))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):  # BCa on near-degenerate data
        res = stats.bootstrap((arr,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                              method="percentile", random_state=np.random.default_rng(seed), vectorized=True,
                              batch=resample_batch(arr.size))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        label += "(percentile fallback)"
    return low, high, label


def bootstrap_mean(values, *, confidence: float = 0.95, n_resamples: int = 2000, method: str = "auto",
                   seed: int = 0, bounds: Bounds | None | str = "infer", clusters=None,
                   shares: bool = True) -> Estimate:
    """The mean of ``values`` (None and NaN left out) and its interval (module docstring).

    Args:
        values (Sequence[float | None]): per-item values; with ``clusters``, any number of values per item.
        confidence: the interval's level.
        n_resamples: bootstrap resamples (percentile, basic, BCa; ``auto`` on values without a range).
        method: ``auto`` (exact for shares, equal-values bound, else the bounded score interval) or a
            ``scipy.stats.bootstrap`` method for values that are neither 0/1 nor all equal.
        seed: seeds the resampling.
        bounds: the range the values are known to lie in; ``"infer"``: [0, 1] when every value does,
            else unbounded; ``None``: unbounded.
        clusters (Sequence | None): one label per value (the item it belongs to): values are averaged per
            label first and ``n`` counts labels.
        shares: False keeps 0/1 values off the exact share interval (a difference that happens to be 0/1).
    """
    if clusters is not None:
        values = cluster_means(values, clusters)
    arr = _clean(values)
    if arr.size == 0:
        return Estimate(None, None, None, 0, "no values")
    n, mean = int(arr.size), float(arr.mean())
    if shares and is_binary(arr):  # at every n >= 1: 1 of 1 gives [0.025, 1]
        low, high = clopper_pearson(int(arr.sum()), n, confidence)
        return Estimate(mean, low, high, n, "clopper-pearson")
    rng = _resolve_bounds(arr, bounds)
    if n < 2 and rng is None:
        return Estimate(mean, None, None, n, "one value without a known range: no interval")
    if np.all(arr == arr[0]):  # one value in a known range included: never zero-width
        if rng is None:
            return Estimate(mean, None, None, n, "all values equal; no interval without a known range")
        low, high = equal_values_interval(mean, n, rng, confidence)
        return Estimate(mean, low, high, n, f"equal-values-bound in [{rng[0]:g}, {rng[1]:g}]")
    if method == "auto" and rng is not None:
        low, high = bounded_mean(arr, rng, confidence)
        label = f"quasi-binomial-score-t in [{rng[0]:g}, {rng[1]:g}]"
    elif method == "auto":
        low, high = student_t(arr, confidence)
        b_low, b_high = studentized_bootstrap(arr, confidence, n_resamples, seed, batch=RESAMPLE_BUDGET)
        if math.isfinite(b_low) and math.isfinite(b_high):
            low, high = min(low, b_low), max(high, b_high)
            label = f"student-t + studentized-bootstrap-{n_resamples} (no known range"
        else:
            label = "student-t (no known range"
        label += "; coverage measured below 0.93 on skewed data under 30 items)" if n < SMALL_UNBOUNDED else ")"
    else:
        low, high, label = _scipy_interval(arr, confidence, n_resamples, method, seed)
        if rng is not None:
            low, high = max(rng[0], low), min(rng[1], high)
    return Estimate(mean, low, high, n, label)


def estimate(values, stats, seed: int = 0, *, clusters=None, bounds: Bounds | None | str = "infer") -> dict:
    """:func:`bootstrap_mean` with a plan's ``stats`` settings (confidence, resamples, method), as a dict."""
    return bootstrap_mean(values, confidence=stats.confidence, n_resamples=stats.n_resamples, method=stats.method,
                          seed=seed, clusters=clusters, bounds=bounds).as_dict()


@dataclass
class PairedDifference(Estimate):
    """The mean paired difference with its interval and sign-flip test.

    The mean paired difference with its interval, and the sign-flip test's p-value and description (``test``:
    :meth:`Significance.as_dict`, ``test_label``: one line for a table cell).
    """

    p_value: float | None = None
    test: dict | None = None
    test_label: str | None = None


def paired_difference(a, b, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                      n_permutations: int = 9999, method: str = "auto", bounds: Bounds | None | str = "infer",
                      clusters=None) -> PairedDifference:
    """Mean of a_i - b_i over the pairs where both are present, its interval, sign-flip p-value.

    Args:
        a (Sequence[float | None]): Per-item values of the first side; a pair with a None is left out.
        b (Sequence[float | None]): Per-item values of the second side, aligned with ``a``.
        confidence: Confidence level of the interval (module docstring).
        n_resamples: Bootstrap resamples of the interval.
        method: The interval method (module docstring); paired 0/1 values always get Newcombe's hybrid
            score interval.
        n_permutations: sign patterns of the permutation test: all of them when 2^n is at most this, else
            this many random ones (lattice data, e.g. 0/1 correctness, is always exact).
        seed: seeds the bootstrap and the Monte Carlo permutations.
        bounds: the range of a and b (``"infer"``: [0, 1] when every value of both lies in it); the
            differences lie in [lo - hi, hi - lo].
        clusters (Sequence | None): one label per pair (its item): the pairs of a label are averaged first.
    """
    from .permutation import sign_flip_test

    keep = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x is not None and y is not None
            and not (isinstance(x, float) and math.isnan(x)) and not (isinstance(y, float) and math.isnan(y))]
    xa, xb = [a[i] for i in keep], [b[i] for i in keep]
    if clusters is not None:
        labels = [clusters[i] for i in keep]
        xa, xb = cluster_means(xa, labels), cluster_means(xb, labels)
    va, vb = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
    d = va - vb
    if d.size == 0:
        return PairedDifference(None, None, None, 0, "no pairs")
    sig = sign_flip_test(d, n_resamples=n_permutations, seed=seed)
    if is_binary(va) and is_binary(vb):
        low, high = newcombe_paired(va, vb, confidence)
        return PairedDifference(float(d.mean()), low, high, int(d.size),
                                "paired-newcombe-score-cc", sig.p_value, sig.as_dict(),
                                sig.label)
    if bounds == "infer":
        ra, rb = value_range(va), value_range(vb)
        rng = None if ra is None or rb is None else (ra[0] - rb[1], ra[1] - rb[0])
    else:
        rng = None if bounds is None else (float(bounds[0]) - float(bounds[1]), float(bounds[1]) - float(bounds[0]))
    est = bootstrap_mean(d, confidence=confidence, n_resamples=n_resamples, method=method, seed=seed, bounds=rng,
                         shares=False)
    return PairedDifference(est.value, est.low, est.high, int(d.size), "paired-" + est.method, sig.p_value,
                            sig.as_dict(), sig.label)
