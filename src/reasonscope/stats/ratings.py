"""Ratings from pairwise battles: online Elo and Bradley-Terry, with bootstrap CIs.

A battle is (model_a, model_b, outcome) with outcome 1 (a wins), 0 (b wins) or 0.5 (tie).

* :func:`online_elo`: battles in order; E_a = 1 / (1 + 10^((R_b - R_a) / 400)); R_a += K (S_a - E_a),
  R_b -= K (S_a - E_a); K = 4, initial rating 1000 (FastChat's settings). Order-dependent.
* :func:`bradley_terry`: order-free maximum likelihood of P(a beats b) = 1 / (1 + e^(b_b - b_a)).
  Battles are first aggregated into cells (a, b, outcome) with counts, so the fit costs the same
  for a thousand or a million battles; logistic regression without intercept on +1/-1 design rows
  weighted by the counts (a tie is half a win each way; each row also enters mirrored), with a
  small L2 penalty (C = 1e6). Reported on the Elo scale (400 / ln 10 per unit), mean 1000. A model
  that never loses (or never wins) has no finite MLE: the penalty bounds it, so its rank is right
  (first, or last) but its gap to the others is not meaningful.
* :func:`bootstrap_bradley_terry`: multinomial resampling of the battle counts over the cells
  (seeded), refit, 95% percentile intervals and the rank of each model in each draw.
* :func:`bootstrap_ratings`: generic row resampling for any fit (used for online Elo).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

Battle = tuple[str, str, float]


def online_elo(battles: Sequence[Battle], *, k: float = 4.0, base: float = 10.0, scale: float = 400.0,
               initial: float = 1000.0) -> dict[str, float]:
    ratings: dict[str, float] = {}
    for a, b, s in battles:
        ra, rb = ratings.setdefault(a, initial), ratings.setdefault(b, initial)
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        ratings[a] = ra + k * (s - ea)
        ratings[b] = rb - k * (s - ea)
    return ratings


def aggregate_battles(battles: Sequence[Battle]) -> tuple[list[str], list[Battle], np.ndarray]:
    """(models, cells (a, b, outcome), counts)."""
    counts = Counter((a, b, float(s)) for a, b, s in battles)
    cells = sorted(counts)
    models = sorted({m for a, b, _ in cells for m in (a, b)})
    return models, cells, np.array([counts[c] for c in cells], dtype=float)


def _fit_cells(models: list[str], cells: list[Battle], counts: np.ndarray, *, scale: float,
               initial: float) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression

    index = {m: i for i, m in enumerate(models)}
    rows, ys, weights = [], [], []
    for (a, b, s), n in zip(cells, counts, strict=True):
        if n == 0:
            continue
        x = np.zeros(len(models))
        x[index[a]], x[index[b]] = 1.0, -1.0
        for row, y, w in ((x, 1, s), (x, 0, 1.0 - s), (-x, 0, s), (-x, 1, 1.0 - s)):
            if w > 0:
                rows.append(row)
                ys.append(y)
                weights.append(w * n)
    lr = LogisticRegression(fit_intercept=False, C=1e6, max_iter=10_000)
    lr.fit(np.vstack(rows), np.array(ys), sample_weight=np.array(weights))
    beta = lr.coef_[0] * scale / math.log(10)
    beta = beta - beta.mean() + initial
    return {m: float(beta[index[m]]) for m in models}


def bradley_terry(battles: Sequence[Battle], *, scale: float = 400.0, initial: float = 1000.0) -> dict[str, float]:
    models, cells, counts = aggregate_battles(battles)
    if len(models) < 2:
        return {m: initial for m in models}
    return _fit_cells(models, cells, counts, scale=scale, initial=initial)


def _ranks(ratings: dict[str, float], tol: float = 1e-6) -> dict[str, int]:
    """Competition ranks ("1224"): 1 + the number of models rated higher by more than ``tol``, so
    equal ratings share a rank."""
    return {m: 1 + sum(1 for o in ratings.values() if o > r + tol) for m, r in ratings.items()}


def _intervals(point: dict[str, float], draws: dict[str, list[float]], ranks: dict[str, list[int]],
               confidence: float) -> dict[str, dict[str, float | int | None]]:
    lo, hi = (1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100
    point_ranks = _ranks(point)
    return {m: {"rating": point[m], "low": float(np.percentile(draws[m], lo)) if draws[m] else None,
                "high": float(np.percentile(draws[m], hi)) if draws[m] else None, "rank": point_ranks[m],
                "rank_low": int(np.percentile(ranks[m], lo)) if ranks[m] else None,
                "rank_high": int(np.percentile(ranks[m], hi)) if ranks[m] else None} for m in point}


def bootstrap_bradley_terry(battles: Sequence[Battle], *, n_resamples: int = 100, seed: int = 0,
                            confidence: float = 0.95) -> dict[str, dict[str, float | int | None]]:
    models, cells, counts = aggregate_battles(battles)
    point = _fit_cells(models, cells, counts, scale=400.0, initial=1000.0)
    rng = np.random.default_rng(seed)
    total = int(counts.sum())
    draws: dict[str, list[float]] = {m: [] for m in models}
    ranks: dict[str, list[int]] = {m: [] for m in models}
    for _ in range(n_resamples):
        sample = rng.multinomial(total, counts / total).astype(float)
        r = _fit_cells(models, cells, sample, scale=400.0, initial=1000.0)
        rk = _ranks(r)
        for m in models:
            draws[m].append(r[m])
            ranks[m].append(rk[m])
    return _intervals(point, draws, ranks, confidence)


def bootstrap_ratings(battles: Sequence[Battle], fit: Callable[[Sequence[Battle]], dict[str, float]], *,
                      n_resamples: int = 200, seed: int = 0,
                      confidence: float = 0.95) -> dict[str, dict[str, float | int | None]]:
    rng = np.random.default_rng(seed)
    point = fit(battles)
    draws: dict[str, list[float]] = {m: [] for m in point}
    ranks: dict[str, list[int]] = {m: [] for m in point}
    n = len(battles)
    for _ in range(n_resamples):
        r = fit([battles[i] for i in rng.integers(0, n, size=n)])
        rk = _ranks(r)
        for m in point:
            if m in r:
                draws[m].append(r[m])
                ranks[m].append(rk[m])
    return _intervals(point, draws, ranks, confidence)
