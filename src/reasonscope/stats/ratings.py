"""Ratings from pairwise battles: online Elo and Bradley-Terry, with bootstrap CIs.

A battle is (model_a, model_b, outcome) with outcome 1 (a wins), 0 (b wins) or 0.5 (tie).

* :func:`online_elo`: battles in order; E_a = 1 / (1 + 10^((R_b - R_a) / 400)); R_a += K (S_a - E_a),
  R_b -= K (S_a - E_a); K = 4, initial rating 1000 (FastChat's settings). Order-dependent.
* :func:`bradley_terry`: order-free maximum likelihood of P(a beats b) = 1 / (1 + e^(b_b - b_a)),
  fitted by logistic regression on +1/-1 design rows (a tie counts as half a win each way, as two
  rows of weight 0.5; every row also enters mirrored), reported on the Elo scale (400 / ln 10 per unit, anchored so the mean is
  1000), with a small L2 penalty (C = 1e6) for numerical stability.
* :func:`bootstrap_ratings`: battles resampled with replacement, 95% percentile intervals.
"""

from __future__ import annotations

import math
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


def bradley_terry(battles: Sequence[Battle], *, scale: float = 400.0, initial: float = 1000.0) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression

    models = sorted({m for a, b, _ in battles for m in (a, b)})
    if len(models) < 2:
        return {m: initial for m in models}
    index = {m: i for i, m in enumerate(models)}
    wins = {m: 0.0 for m in models}
    losses = {m: 0.0 for m in models}
    rows, ys, weights = [], [], []
    for a, b, s in battles:
        wins[a] += s
        losses[a] += 1 - s
        wins[b] += 1 - s
        losses[b] += s
        x = np.zeros(len(models))
        x[index[a]], x[index[b]] = 1.0, -1.0
        # each battle also enters mirrored (-x with the opposite label): the same likelihood, both classes present
        for row, y, w in ((x, 1, s), (x, 0, 1.0 - s), (-x, 0, s), (-x, 1, 1.0 - s)):
            if w > 0:
                rows.append(row)
                ys.append(y)
                weights.append(w)
    unbounded = sorted(m for m in models if wins[m] == 0 or losses[m] == 0)
    if unbounded:  # a model that never wins (or never loses) has no finite maximum-likelihood rating
        raise ValueError(f"Bradley-Terry needs at least one win and one loss (or a tie) for every model; "
                         f"not so for {unbounded}")
    lr = LogisticRegression(fit_intercept=False, C=1e6, max_iter=10_000)
    lr.fit(np.vstack(rows), np.array(ys), sample_weight=np.array(weights))
    beta = lr.coef_[0] * scale / math.log(10)
    beta = beta - beta.mean() + initial
    return {m: float(beta[index[m]]) for m in models}


def bootstrap_ratings(battles: Sequence[Battle], fit: Callable[[Sequence[Battle]], dict[str, float]], *,
                      n_resamples: int = 200, seed: int = 0,
                      confidence: float = 0.95) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    point = fit(battles)
    draws: dict[str, list[float]] = {m: [] for m in point}
    n = len(battles)
    for _ in range(n_resamples):
        sample = [battles[i] for i in rng.integers(0, n, size=n)]
        try:
            r = fit(sample)
        except ValueError:
            continue
        for m in point:
            if m in r:
                draws[m].append(r[m])
    lo, hi = (1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100
    return {m: {"rating": point[m],
                "low": float(np.percentile(draws[m], lo)) if draws[m] else None,
                "high": float(np.percentile(draws[m], hi)) if draws[m] else None} for m in point}
