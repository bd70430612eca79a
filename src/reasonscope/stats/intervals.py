"""Confidence intervals with measured coverage: shares, bounded means, equal values, paired shares.

Which interval a mean gets is decided from its values (:func:`reasonscope.stats.bootstrap.bootstrap_mean`
applies the rule; ``benchmarks/interval_coverage.py`` measures every kind, docs/statistics.md lists the
coverage):

* :func:`clopper_pearson`: every value is 0 or 1 (a share: CQ, attack success, evidence accuracy).
  The exact binomial interval of k successes in n (the one of ``scipy.stats.binomtest(k, n).proportion_ci(
  confidence, method="exact")``): lower bound the alpha/2 quantile of Beta(k, n - k + 1), upper the
  1 - alpha/2 quantile of Beta(k + 1, n - k) (0 when k = 0, 1 when k = n). Coverage is at least the
  confidence level for every true share and n (it is conservative by construction).
* :func:`equal_values_interval`: every value is the same c and the values are bounded in [lo, hi].
  No variability is observable, but the items could still differ: with u the exact upper bound for a
  share of 0 differing items in n (``1 - (alpha / 2) ** (1 / n)``), the mean lies in
  ``[c - u (c - lo), c + u (hi - c)]`` (a share at most u of the items at the far end of the range).
  For 0/1 values this is the Clopper-Pearson interval of 0 of n (or n of n); it is never zero-width.
* :func:`bounded_mean`: any other values in a known range (rescaled to [0, 1] for the formulas).
  The quasi-binomial score interval: a [0, 1] variable with mean mu has variance at most mu (1 - mu),
  so its variance is written phi mu (1 - mu) with the dispersion phi = s^2 / (m (1 - m)) (m the mean,
  s^2 the variance, ddof 1; capped at 1). A stated floor keeps a small sample's phi from claiming too
  little spread: ``phi' = (n phi + 0.5) / (n + 0.5)`` (half an item of a 0/1 variable's dispersion).
  The interval is the set of mu with ``(m - mu)^2 <= q^2 phi' mu (1 - mu) / n``, q the Student
  t_(n-1, 1 - alpha/2) quantile: Wilson's score interval with n_eff = n / phi' items,
  ``(m + q^2 / (2 n_eff) +- q sqrt(m (1 - m) / n_eff + q^2 / (4 n_eff^2))) / (1 + q^2 / n_eff)``. It
  bends towards the middle of the range as the score interval of a share does, which keeps its
  coverage on skewed data near 0 or 1 where the symmetric t interval loses it. The reported interval
  is the hull of this one and the Student t interval ``m +- q s / sqrt(n)``, within the range.
* :func:`student_t` and :func:`studentized_bootstrap`: values without a known range (log-probability
  scores). The hull of the Student t interval ``m +- q s / sqrt(n)`` and the studentized bootstrap
  (bootstrap-t) interval: each of B resamples gives t*_b = (m*_b - m) / (s*_b / sqrt(n)), and the
  interval is ``[m - t*_(1 - alpha/2) s / sqrt(n), m - t*_(alpha/2) s / sqrt(n)]`` (order statistics
  floor(B alpha / 2) and ceil(B (1 - alpha / 2)) - 1 of the sorted t*). The bootstrap-t follows a
  skewed distribution's long tail, the t interval keeps heavy symmetric tails covered. When the
  bootstrap-t is infinite (few items: resamples of equal values) the t interval alone is used.
* :func:`newcombe_paired`: a paired difference p1 - p2 of two shares on the same items (both sides
  0/1). Newcombe's hybrid score interval with continuity correction ("Improved confidence intervals
  for the difference between binomial proportions based on paired data", method 11): with l_i, u_i
  the continuity-corrected Wilson limits of p1 and p2 and phi the correlation of the 2 x 2 table
  (ad - bc, lowered by n / 2 but not below 0 when positive; 0 when a margin is empty),
  ``low = (p1 - p2) - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)`` and
  ``high = (p1 - p2) + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2)``, within [-1, 1].

Ranges: :func:`value_range` infers [0, 1] when every value lies in it (every rate and score of the
behaviour, attack and evidence families, coverage); a caller with another known range passes it, one
without (log-probability scores) passes ``bounds=None``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .resampling import resample_indices

Bounds = tuple[float, float]
UNIT: Bounds = (0.0, 1.0)
# items' weight of the largest possible dispersion (a 0/1 variable's) in the dispersion of bounded_mean
DISPERSION_PRIOR = 0.5


def is_binary(arr: np.ndarray) -> bool:
    """True when every value is exactly 0 or 1 (a share)."""
    return bool(arr.size) and bool(np.all((arr == 0) | (arr == 1)))


def value_range(arr: np.ndarray) -> Bounds | None:
    """The range the values are known to lie in when none is given.

    [0, 1] when every value does (and there is at least one), else None.
    """
    return UNIT if arr.size and bool(np.all((arr >= 0) & (arr <= 1))) else None


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a share of k successes in n trials.

    See the module docstring. The beta quantiles in closed form (``scipy.special.betaincinv``, the function
    behind ``scipy.stats.beta.ppf``, without importing scipy.stats), equal to ``scipy.stats.binomtest(k,
    n).proportion_ci(method="exact")`` to 1e-12 (tested) and about ten times faster than its root search.
    """
    k, n = int(k), int(n)
    alpha = 1.0 - confidence
    low = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, alpha / 2))
    high = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 1 - alpha / 2))
    return low, high


def zero_share_upper(n: int, confidence: float = 0.95) -> float:
    """The exact two-sided upper bound of a share observed 0 times in n: ``1 - (alpha / 2) ** (1 / n)``."""
    return 1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / n)


def equal_values_interval(c: float, n: int, bounds: Bounds, confidence: float = 0.95) -> tuple[float, float]:
    """The interval of n values all equal to c in the range ``bounds`` (module docstring)."""
    lo, hi = bounds
    u = zero_share_upper(n, confidence)
    return float(c - u * (c - lo)), float(c + u * (hi - c))


def student_t(arr: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The Student t interval ``m +- t_(n-1, 1 - alpha/2) s / sqrt(n)`` (at least 2 values)."""
    n = arr.size
    q = float(special.stdtrit(n - 1, 1 - (1 - confidence) / 2))
    half = q * float(arr.std(ddof=1)) / math.sqrt(n)
    m = float(arr.mean())
    return m - half, m + half


def studentized_bootstrap(arr: np.ndarray, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                          batch: int = 1_000_000) -> tuple[float, float]:
    """The studentized (bootstrap-t) interval of the mean.

    Needs at least 2 values, not all equal; bounds are infinite when more than alpha/2 of the resamples have
    all values equal (module docstring).
    """
    n = arr.size
    alpha = 1.0 - confidence
    m = float(arr.mean())
    se = float(arr.std(ddof=1)) / math.sqrt(n)
    parts = []
    for idx in resample_indices(n, n_resamples, seed, max(1, batch // n)):
        x = arr[idx]
        mb = x.mean(axis=1)
        sb = x.std(axis=1, ddof=1) / math.sqrt(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            tb = (mb - m) / sb
        tb[np.isnan(tb)] = 0.0
        parts.append(tb)
    t = np.sort(np.concatenate(parts))
    q_low = float(t[int(math.floor(t.size * alpha / 2))])
    q_high = float(t[min(t.size - 1, int(math.ceil(t.size * (1 - alpha / 2))) - 1)])
    return m - q_high * se, m - q_low * se


def bounded_mean(arr: np.ndarray, bounds: Bounds, confidence: float = 0.95) -> tuple[float, float]:
    """The interval of the mean of values in ``bounds``.

    Needs at least 2 values, not all equal: the hull of the quasi-binomial score interval and the Student t
    interval, within ``bounds`` (module docstring).
    """
    lo, hi = bounds
    span = hi - lo
    x = (arr - lo) / span
    n = x.size
    m = float(x.mean())
    s2 = float(x.var(ddof=1))
    q = float(special.stdtrit(n - 1, 1 - (1 - confidence) / 2))
    pq = m * (1 - m)
    phi = min(1.0, s2 / pq) if pq > 0 else 1.0
    phi = (n * phi + DISPERSION_PRIOR) / (n + DISPERSION_PRIOR)
    n_eff = n / phi
    den = 1 + q * q / n_eff
    centre = (m + q * q / (2 * n_eff)) / den
    half = q * math.sqrt(pq / n_eff + q * q / (4 * n_eff * n_eff)) / den
    t_half = q * math.sqrt(s2 / n)
    low = max(0.0, min(centre - half, m - t_half))
    high = min(1.0, max(centre + half, m + t_half))
    return lo + span * low, lo + span * high


def _wilson_cc(k: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval with continuity correction (Newcombe 1998, two-sample paper, method 4)."""
    p = k / n
    den = 2 * (n + z * z)
    low = 0.0 if k == 0 else (2 * n * p + z * z - 1 - z * math.sqrt(z * z - 2 - 1 / n + 4 * p * (n * (1 - p) + 1))) / den
    high = 1.0 if k == n else (2 * n * p + z * z + 1 + z * math.sqrt(z * z + 2 - 1 / n + 4 * p * (n * (1 - p) - 1))) / den
    return max(0.0, low), min(1.0, high)


def newcombe_paired(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's hybrid score interval (continuity-corrected) for p1 - p2 of paired 0/1 values a, b."""
    n = a.size
    z = float(special.ndtri(1 - (1 - confidence) / 2))
    both = int(np.sum((a == 1) & (b == 1)))
    only_a = int(np.sum((a == 1) & (b == 0)))
    only_b = int(np.sum((a == 0) & (b == 1)))
    neither = n - both - only_a - only_b
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = _wilson_cc(both + only_a, n, z)
    l2, u2 = _wilson_cc(both + only_b, n, z)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    if margins == 0:
        phi = 0.0
    else:
        cross = both * neither - only_a * only_b
        cross = max(cross - n / 2, 0.0) if cross > 0 else cross  # a negative phi widens: kept
        phi = cross / math.sqrt(margins)
    diff = p1 - p2
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, diff - delta), min(1.0, diff + eps)
