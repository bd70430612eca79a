"""Agreement between judges on one attribute.

* :func:`krippendorff_alpha`: Krippendorff's alpha (``krippendorff`` package, interval level by
  default, missing scores allowed): 1 - D_o / D_e, with D_o the mean squared difference between two
  scores of the same unit and D_e the same over any two scores. 1 = perfect agreement, 0 = what
  independent judges give, < 0 = systematic disagreement. None with fewer than 2 judges or no variation.
* :func:`alpha_permutation_test`: is the agreement above chance? H0: the judges score independently
  (each judge's scores are exchangeable across the units it scored); statistic: interval alpha;
  one-sided (greater). Each judge's scores are permuted among the units it scored, keeping every
  judge's set of units and so the missing-score pattern. Exact when every judge scored every unit and
  the arrangements of all judges but the first, (n!)^(J - 1), number at most ``n_resamples`` (the
  first judge can stay fixed: alpha does not change when the units are relabelled); otherwise Monte
  Carlo with p = (1 + hits) / (1 + n_resamples). Alpha is computed vectorised over the permutations
  (the formula above; equal to the ``krippendorff`` package's value, tested).
* :func:`mean_spearman`: the mean pairwise Spearman rho over the items both judges scored
  (descriptive; no test).
"""

from __future__ import annotations

import math
from itertools import combinations, permutations, product

import numpy as np

from .permutation import Significance


def _matrix(scores: dict[str, dict[str, float | None]]) -> np.ndarray:
    judges = sorted(scores)
    items = sorted({i for j in judges for i in scores[j]})
    return np.array([[np.nan if scores[j].get(i) is None else scores[j][i] for i in items] for j in judges],
                    dtype=float).reshape(len(judges), len(items))


def krippendorff_alpha(scores: dict[str, dict[str, float | None]], level: str = "interval") -> float | None:
    """``scores[judge][item]`` -> alpha over the items, None when fewer than 2 judges or no variation."""
    import krippendorff

    data = _matrix(scores)
    if data.shape[0] < 2 or data.shape[1] == 0:
        return None
    values = data[~np.isnan(data)]
    if values.size < 2 or np.all(values == values[0]):
        return None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def interval_alpha(data: np.ndarray) -> np.ndarray:
    """Interval Krippendorff's alpha of each ``(..., judges, units)`` array (NaN = missing), vectorised."""
    ok = ~np.isnan(data)
    x = np.where(ok, data, 0.0)
    m = ok.sum(axis=-2)
    pairable = m >= 2
    s1, s2 = x.sum(axis=-2), (x * x).sum(axis=-2)
    n = np.where(pairable, m, 0).sum(axis=-1)
    within = np.where(pairable, 2 * (m * s2 - s1 ** 2) / np.maximum(m - 1, 1), 0.0).sum(axis=-1)
    t1, t2 = np.where(pairable, s1, 0.0).sum(axis=-1), np.where(pairable, s2, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d_o = within / n
        d_e = 2 * (n * t2 - t1 ** 2) / (n * (n - 1))
        return 1 - d_o / d_e


ALPHA_TEST = "permutation test of Krippendorff's alpha (interval)"
ALPHA_NULL = "judges score independently (each judge's scores exchangeable across the units it scored)"


def alpha_permutation_test(scores: dict[str, dict[str, float | None]], *, n_resamples: int = 9999,
                           seed: int = 0) -> Significance:
    """One-sided test that the judges agree more than chance (module docstring)."""
    data = _matrix(scores)
    batch = max(1, min(500, 2_000_000 // max(data.size, 1)))  # about 16 MB of permuted tables at a time
    observed = float(interval_alpha(data)) if data.shape[0] >= 2 and data.shape[1] else float("nan")
    if math.isnan(observed):
        return Significance(None, None, ALPHA_TEST, ALPHA_NULL, "greater", "undefined (no pairable variation)")
    tol = 1e-12 * max(1.0, abs(observed))
    rows = [np.flatnonzero(~np.isnan(r)) for r in data]
    complete = all(r.size == data.shape[1] for r in rows)
    n = data.shape[1]
    arrangements = math.factorial(n) ** (data.shape[0] - 1) if complete and n <= 20 else None
    if arrangements is not None and arrangements <= n_resamples:
        orders = [np.array(p) for p in permutations(range(n))]
        stack = np.array([np.vstack([data[0]] + [data[j][o] for j, o in enumerate(combo, start=1)])
                          for combo in product(orders, repeat=data.shape[0] - 1)])
        null = interval_alpha(stack)
        p = float(np.sum(null >= observed - tol) / null.size)
        return Significance(observed, p, ALPHA_TEST, ALPHA_NULL, "greater",
                            f"exact (all {arrangements:,} arrangements)", arrangements)
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_resamples:
        b = min(batch, n_resamples - done)
        stack = np.repeat(data[None], b, axis=0)
        for j, cols in enumerate(rows):
            stack[:, j, cols] = rng.permuted(np.repeat(data[j, cols][None], b, axis=0), axis=1)
        hits += int(np.sum(interval_alpha(stack) >= observed - tol))  # NaN (no variation) is not extreme
        done += b
    return Significance(observed, (1 + hits) / (1 + n_resamples), ALPHA_TEST, ALPHA_NULL, "greater",
                        f"Monte Carlo ({n_resamples:,} permutations, p = (1 + hits) / (1 + {n_resamples:,}))",
                        n_resamples)


def mean_spearman(scores: dict[str, dict[str, float | None]]) -> float | None:
    """The mean pairwise Spearman rho between raters.

    For every pair of raters, rho over the units both scored; a pair with fewer than 3 common units, or
    constant scores on either side, is left out. Range [-1, 1], higher is more agreement.

    Args:
        scores: rater -> unit -> score (None: not scored).

    Returns:
        The mean rho over the pairs kept; None when no pair qualifies (fewer than two raters included).
    """
    from scipy.stats import spearmanr

    rhos = []
    for a, b in combinations(sorted(scores), 2):
        common = [i for i in scores[a] if scores[a][i] is not None and scores[b].get(i) is not None]
        if len(common) < 3:
            continue
        x, y = [scores[a][i] for i in common], [scores[b][i] for i in common]
        if len(set(x)) < 2 or len(set(y)) < 2:
            continue
        rhos.append(float(spearmanr(x, y).statistic))
    return sum(rhos) / len(rhos) if rhos else None
