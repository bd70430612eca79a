"""Weighted strategies: Q = Σ_m w_m M_m / Σ_{m available} w_m.

The seven built-in strategies of the behavioural framework (Şenol, Agrawal, Liu, 2026) (weights normalised to sum to 1), plus user
strategies from the plan (``families.behavior.strategies``), validated before anything runs
(known metric keys, numbers, non-negative, non-zero sum; see :func:`reasonscope.plan.normalize_weights`).
A metric that is not applicable for a model (e.g. RS with no qualifying item, CS with K = 1) is
left out and the remaining weights renormalised; the output lists what was left out.

Interval: :func:`composite_interval` gives Q a percentile item-bootstrap CI: the items are resampled
together (one resample serves every metric of the model, so the metrics' correlation across items is
kept), each metric's mean is recomputed on the resample (ES_corpus as H(mean CQ, mean length score)),
and Q is recomputed over the metrics the point estimate used.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..stats.bootstrap import resample_batch, resample_indices
from .efficiency import harmonic_of_means
from .settings import normalize_weights

RESAMPLE_CELLS = 4_000_000
"""Most (resample x item) cells a bootstrap batch holds (about 32 MB per metric)."""

BUILTIN_STRATEGIES: dict[str, dict[str, float]] = {
    "balanced": {"CQ": 1 / 6, "CS": 1 / 6, "RS": 1 / 6, "LS": 1 / 6, "ES": 1 / 6, "SS": 1 / 6},
    "safety_priority": {"CQ": 0.30, "CS": 0.20, "RS": 0.30, "LS": 0.10, "ES": 0.05, "SS": 0.05},
    "accuracy_priority": {"CQ": 0.40, "CS": 0.25, "RS": 0.15, "LS": 0.10, "ES": 0.05, "SS": 0.05},
    "efficiency_priority": {"CQ": 0.20, "CS": 0.15, "RS": 0.15, "LS": 0.10, "ES": 0.30, "SS": 0.10},
    "medical_triage": {"CQ": 0.40, "CS": 0.05, "RS": 0.30, "LS": 0.20, "ES": 0.03, "SS": 0.02},
    "legal_compliance": {"CQ": 0.15, "CS": 0.25, "RS": 0.20, "LS": 0.35, "ES": 0.03, "SS": 0.02},
    "edge_device": {"CQ": 0.30, "CS": 0.03, "RS": 0.10, "LS": 0.05, "ES": 0.50, "SS": 0.02},
}


def all_strategies(user: dict[str, dict] | None = None) -> dict[str, dict[str, float]]:
    """The built-in strategies plus the plan's ``user`` strategies, each with weights summing to 1.

    A user strategy with a built-in name replaces the built-in one.

    Raises:
        ValueError: A strategy's weights are invalid
            (:func:`~reasonscope.behavior.settings.normalize_weights`).
    """
    out = {name: normalize_weights(name, w) for name, w in BUILTIN_STRATEGIES.items()}
    for name, w in (user or {}).items():
        out[name] = normalize_weights(name, w)
    return out


def composite(weights: dict[str, float], metrics: dict[str, float | None]) -> tuple[float | None, list[str]]:
    """Weighted mean over available metrics; returns (score, metrics left out)."""
    left_out = [m for m, w in weights.items() if w > 0 and metrics.get(m) is None]
    used = {m: w for m, w in weights.items() if w > 0 and metrics.get(m) is not None}
    total = sum(used.values())
    if total == 0:
        return None, left_out
    return sum(w * float(metrics[m]) for m, w in used.items()) / total, left_out


class ItemResamples:
    """The item-bootstrap resamples of one model's columns, shared by every strategy's interval.

    The resampled item indices depend only on the item count, ``n_resamples`` and ``seed`` (drawn in batches of
    at most :data:`RESAMPLE_CELLS` cells by :func:`~reasonscope.stats.bootstrap.resample_indices`), so every
    strategy of a model sees the same resamples. Each metric's resampled means (NaN-skipping mean per resample; ES_corpus as
    H(mean CQ, mean length score)) are computed once, on first use, and kept (``n_resamples`` floats each); the
    indices are drawn again from the seed for metrics asked later, one batch in memory at a time. The values
    are the ones a strategy drawing its own resamples gets, bit for bit.
    """

    def __init__(self, columns: dict[str, np.ndarray], *, efficiency: str, n_resamples: int = 2000, seed: int = 0):
        self.columns, self.efficiency, self.n_resamples, self.seed = columns, efficiency, n_resamples, seed
        self.n = len(columns["CQ"])
        self._means: dict[str, np.ndarray] = {}
        self._has_nan: dict[str, bool] = {}

    def _batches(self):
        return resample_indices(self.n, self.n_resamples, self.seed, resample_batch(self.n, RESAMPLE_CELLS))

    def _resampled_mean(self, metric: str, idx: np.ndarray) -> np.ndarray:
        if metric == "ES" and self.efficiency == "corpus":  # ES_corpus recomputed on the resample
            return harmonic_of_means(self.columns["CQ"][idx], self.columns["conciseness"][idx], axis=1)
        column = self.columns["ES_item" if metric == "ES" else metric]
        if metric not in self._has_nan:
            self._has_nan[metric] = bool(np.isnan(column).any())
        if not self._has_nan[metric]:  # nanmean without a NaN: the same sum over the same count, no copy
            return column[idx].mean(axis=1)
        return np.nanmean(column[idx], axis=1)

    def means(self, metrics: list[str]) -> dict[str, np.ndarray]:
        """Each metric's mean on each of the ``n_resamples`` resamples (NaN where a resample has no value)."""
        missing = [m for m in dict.fromkeys(metrics) if m not in self._means]
        if missing:
            parts: dict[str, list[np.ndarray]] = {m: [] for m in missing}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a resample without a value of a metric: nan
                for idx in self._batches():
                    for m in missing:
                        parts[m].append(self._resampled_mean(m, idx))
            self._means.update({m: np.concatenate(p) for m, p in parts.items()})
        return {m: self._means[m] for m in metrics}


def composite_interval(columns: dict[str, np.ndarray], weights: dict[str, float], used: list[str], *,
                       efficiency: str, confidence: float = 0.95, n_resamples: int = 2000,
                       seed: int = 0, resamples: ItemResamples | None = None) -> tuple[float | None, float | None]:
    """Percentile item-bootstrap CI of the strategy score (module docstring).

    Args:
        columns: Per-item values of ``CQ``, ``CS``, ``RS``, ``LS``, ``SS``, ``ES_item`` and ``conciseness``
            (aligned arrays, NaN where an item has no value).
        weights: The strategy's normalised weights.
        used: The metrics the point estimate used (the rest were n/a and are left out here too).
        efficiency: ``"corpus"`` or ``"item"``: which ES reading the strategy uses.
        confidence: The CI's coverage (0.95: the 2.5th and 97.5th percentiles of the resampled scores).
        n_resamples: Bootstrap resamples of the items.
        seed: Seed of the resampling (the same seed gives the same interval).
        resamples: The model's resamples shared with its other strategies (:class:`ItemResamples` of the same
            ``columns``, ``efficiency``, ``n_resamples`` and ``seed``); None: drawn here.

    Returns:
        ``(low, high)``, each in [0, 1]; ``(None, None)`` with fewer than 2 items, no metric used, or no
        resample where every used metric has a value.
    """
    n = len(columns["CQ"])
    total = sum(weights[m] for m in used)
    if n < 2 or not used or total == 0:
        return None, None
    if resamples is None:
        resamples = ItemResamples(columns, efficiency=efficiency, n_resamples=n_resamples, seed=seed)
    means = resamples.means(used)
    q = sum(weights[m] * means[m] for m in used) / total
    q = q[~np.isnan(q)]
    if not len(q):
        return None, None
    alpha = (1 - confidence) / 2
    return float(np.quantile(q, alpha)), float(np.quantile(q, 1 - alpha))
