"""Ratings from pairwise battles.

Online Elo and Bradley-Terry at the maximum-likelihood optimum, with bootstrap intervals and rank bounds.

A battle is ``(model_a, model_b, outcome)`` with outcome 1 (a wins), 0 (b wins) or 0.5 (tie); records
are validated by :mod:`reasonscope.stats.battles` (bad outcomes, names that are not strings and
self-battles are errors naming the record).

Online Elo (:func:`online_elo`)
    Battles in their given order; E_a = 1 / (1 + 10^((R_b - R_a) / 400)); R_a += K (S_a - E_a) and
    R_b -= K (S_a - E_a), K = 4, initial rating 1000: the settings of FastChat's ``compute_elo``
    (Chatbot Arena), whose ratings it reproduces. Order-dependent by construction.

Bradley-Terry (:func:`fit_bradley_terry`)
    P(i beats j) = 1 / (1 + e^(b_j - b_i)); a tie is half a win for each side. Battles are aggregated
    into the win matrix W (``W[i, j]`` wins of i over j), and the log-likelihood
    LL(b) = sum_ij W_ij ln sigma(b_i - b_j) is maximised by Newton trust-region steps with its analytic
    gradient dLL/db_k = sum_j W_kj sigma(b_j - b_k) - W_jk sigma(b_k - b_j) and Hessian
    (``scipy.optimize.minimize``, ``trust-exact``) on the per-battle objective -LL / N, until the
    largest gradient component is below 1e-10 (5 to 10 iterations; measured error against an
    independent Newton solver on the raw battles about 1e-9 Elo points on 50,000 battles, see
    ``benchmarks/ratings_mle.py``). The likelihood only sees differences, so a term
    (sum of b over each connected group)^2 / 2 fixes each group's offset without moving the
    differences. No regularisation is added when the maximum exists, so the ratings are the MLE.
    Reported on the Elo scale, ``1000 + b * 400 / ln 10``, each connected group centred on 1000.

    The MLE is finite only when every group of models that met is strongly connected by wins (see
    :func:`reasonscope.stats.battles.comparison_graph`): a model that never lost has rating +infinity.
    Then, and only then, the fit adds the stated penalty ``UNBOUNDED_L2 / 2 * sum b_i^2`` (a Gaussian
    prior with standard deviation 10 on b, i.e. 1,737 Elo points), records it (``l2``) and names the
    unbounded models: their rank (first or last) is right, their gap to the others is set by the
    penalty, not by the data. ``l2=0`` refuses such data; any ``l2 > 0`` is applied always.

Bootstrap (:func:`bootstrap_bradley_terry`)
    Battle-level bootstrap: each round draws N battles with replacement, done as one multinomial draw
    of the counts of the distinct (a, b, outcome) cells (the same distribution, without touching N
    records), and refits exactly (warm-started at the point estimate). Intervals are percentiles of
    the draws (95% by default); a model absent from a draw has no rating in it and the draws that
    hold it are used. Rank bounds are percentiles of the rank draws taken outward (the lower bound
    rounds down, the upper bound up: ``numpy.percentile`` methods ``lower`` and ``higher``), so the
    interval holds at least the stated share of draws. Each model reports in how many draws it played
    and in how many its rating was unbounded; a warning names models whose interval rests on
    unbounded draws.

Ranks are competition ranks ("1224"): 1 + the number of models rated higher by more than 1e-3 Elo
points, so equal ratings share a rank.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .battles import (
    Battle,
    BattleError,
    ComparisonGraph,
    WinMatrix,
    comparison_graph,
    count_battles,
    elo_scale,
    win_matrix,
)

__all__ = ["Battle", "BattleError", "BradleyTerryFit", "bootstrap_bradley_terry", "bootstrap_ratings",
           "bradley_terry", "fit_bradley_terry", "online_elo", "rate_battles"]

UNBOUNDED_L2 = 0.01
GTOL = 1e-10
RANK_TOLERANCE = 1e-3


def online_elo(battles: Sequence[Battle], *, k: float = 4.0, base: float = 10.0, scale: float = 400.0,
               initial: float = 1000.0) -> dict[str, float]:
    """Online Elo ratings after playing ``battles`` in order (see the module docstring)."""
    count_battles(battles)
    ratings: dict[str, float] = {}
    for a, b, s in battles:
        ra, rb = ratings.setdefault(a, initial), ratings.setdefault(b, initial)
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        ratings[a] = ra + k * (s - ea)
        ratings[b] = rb - k * (s - ea)
    return ratings


@dataclass
class BradleyTerryFit:
    """A Bradley-Terry fit: ratings on the Elo scale and how they were obtained.

    ``log_likelihood`` is sum_ij W_ij ln sigma(b_i - b_j) (natural log, ties as half wins) at the
    returned ratings; ``gradient`` the largest |d(-LL/N)/db| there; ``l2`` the penalty applied (0 =
    the exact MLE).
    """

    ratings: dict[str, float]
    log_likelihood: float
    l2: float
    graph: ComparisonGraph
    iterations: int
    gradient: float
    converged: bool
    strengths: np.ndarray

    def as_dict(self) -> dict:
        """The fit's diagnostics as a JSON-ready dict (ratings and strengths excluded)."""
        return {"log_likelihood": self.log_likelihood, "l2": self.l2, "iterations": self.iterations,
                "gradient": self.gradient, "converged": self.converged, "solver": "trust-exact Newton, gtol 1e-10",
                "graph": self.graph.as_dict()}


def _gauge(wm: WinMatrix, graph: ComparisonGraph) -> np.ndarray:
    """The gauge matrix G that fixes each group's free offset.

    G with b' G b = sum over connected groups of (sum of b in the group)^2 / size, plus b_i^2 for a model
    without battles: it fixes each group's free offset (the likelihood only sees differences) and leaves the
    differences at their optimum, where every group's gradient sums to zero.
    """
    index = {m: i for i, m in enumerate(wm.models)}
    g = np.zeros((len(wm.models), len(wm.models)))
    for group in graph.components:
        idx = np.array([index[m] for m in group])
        g[np.ix_(idx, idx)] = 1.0 / idx.size
    for m in graph.absent:
        g[index[m], index[m]] = 1.0
    return g


def _objective(wins: np.ndarray, l2: float, gauge: np.ndarray):
    """-LL / N + l2 / (2 N) |b|^2 + b' G b / 2 with its gradient and Hessian (N = number of battles)."""
    from scipy.special import expit, log_expit

    total = max(float(wins.sum()), 1.0)
    w = wins / total
    games = w + w.T
    lam = l2 / total

    def fun(b: np.ndarray) -> tuple[float, np.ndarray]:
        d = b[:, None] - b[None, :]
        a = w * expit(-d)  # a[k, j] = W_kj sigma(b_j - b_k): the share of k's wins over j not yet explained
        gb = gauge @ b
        grad = a.sum(axis=0) - a.sum(axis=1) + lam * b + gb
        return float(-(w * log_expit(d)).sum() + 0.5 * lam * b @ b + 0.5 * b @ gb), grad

    def hess(b: np.ndarray) -> np.ndarray:
        p = expit(b[:, None] - b[None, :])
        c = games * p * (1.0 - p)
        h = np.diag(c.sum(axis=1)) - c
        return h + lam * np.eye(len(b)) + gauge

    return fun, hess


def _log_likelihood(wins: np.ndarray, b: np.ndarray) -> float:
    from scipy.special import log_expit

    return float((wins * log_expit(b[:, None] - b[None, :])).sum())


def _solve(wm: WinMatrix, graph: ComparisonGraph, l2: float, start: np.ndarray | None = None
           ) -> tuple[np.ndarray, int, float]:
    """Newton trust-region steps (``scipy.optimize.minimize``, ``trust-exact``) to a gradient below 1e-10."""
    from scipy.optimize import minimize

    fun, hess = _objective(wm.wins, l2, _gauge(wm, graph))
    b0 = np.zeros(len(wm.models)) if start is None else start.copy()
    res = minimize(fun, b0, jac=True, hess=hess, method="trust-exact", options={"gtol": GTOL, "maxiter": 1000})
    grad = float(np.abs(fun(res.x)[1]).max()) if len(b0) else 0.0
    return res.x, int(res.nit), grad


def _centre(b: np.ndarray, wm: WinMatrix, graph: ComparisonGraph) -> np.ndarray:
    """Each connected group centred on 0; models without battles NaN."""
    out = np.full(len(b), np.nan)
    index = {m: i for i, m in enumerate(wm.models)}
    for group in graph.components:
        idx = [index[m] for m in group]
        out[idx] = b[idx] - b[idx].mean()
    return out


def _penalty(l2: float | None, graph: ComparisonGraph) -> float:
    if l2 is None:
        return 0.0 if graph.mle_exists else UNBOUNDED_L2
    if l2 < 0:
        raise ValueError(f"l2 must be >= 0, got {l2}")
    if l2 == 0 and not graph.mle_exists:
        raise ValueError("no finite maximum-likelihood ratings: " + "; ".join(graph.warnings())
                         + " (use l2 > 0 or l2=None for the stated penalty)")
    return l2


def fit_bradley_terry(battles: Sequence[Battle] | Counter | WinMatrix, *, l2: float | None = None,
                      scale: float = 400.0, base: float = 10.0, initial: float = 1000.0,
                      start: np.ndarray | None = None) -> BradleyTerryFit:
    """Bradley-Terry ratings at the maximum of the likelihood (module docstring).

    Args:
        battles: Battle records, counted cells (:func:`~reasonscope.stats.battles.count_battles`) or a win
            matrix.
        l2: None (default): no penalty when the MLE exists, ``UNBOUNDED_L2`` when it does not (recorded);
            0: exact MLE or a ``ValueError``; > 0: that penalty always.
        scale: The Elo scale: rating = initial + b * scale / ln(base).
        base: The base of the Elo scale's logarithm.
        initial: The rating each connected group is centred on.
        start: Starting strengths (natural-log scale, one per model), e.g. a previous fit's ``strengths``.

    Returns:
        The fit: a rating per model (Elo scale, unbounded, higher is stronger), the log-likelihood, the
        penalty used, the comparison graph and the convergence record.
    """
    wm = battles if isinstance(battles, WinMatrix) else win_matrix(battles)
    graph = comparison_graph(wm)
    lam = _penalty(l2, graph)
    if len(wm.models) == 0:
        return BradleyTerryFit({}, 0.0, lam, graph, 0, 0.0, True, np.zeros(0))
    b, iterations, grad = _solve(wm, graph, lam, start)
    centred = _centre(b, wm, graph)
    unit = elo_scale(scale, base)
    ratings = {m: float(initial + unit * centred[i]) for i, m in enumerate(wm.models) if not np.isnan(centred[i])}
    return BradleyTerryFit(ratings, _log_likelihood(wm.wins, np.nan_to_num(centred)), lam, graph, iterations, grad,
                           grad <= 10 * GTOL, centred)


def bradley_terry(battles: Sequence[Battle], *, scale: float = 400.0, initial: float = 1000.0,
                  l2: float | None = None) -> dict[str, float]:
    """The ratings of :func:`fit_bradley_terry` as ``{model: rating}``."""
    return fit_bradley_terry(battles, l2=l2, scale=scale, initial=initial).ratings


def _ranks(ratings: dict[str, float], tol: float = RANK_TOLERANCE) -> dict[str, int]:
    """Competition ranks ("1224"): 1 + the number of models rated higher by more than ``tol``."""
    values = np.array(list(ratings.values()))
    return {m: 1 + int(np.sum(values > r + tol)) for m, r in ratings.items()}


def _rank_rows(draws: np.ndarray) -> np.ndarray:
    """Competition ranks of each row of ``draws`` (NaN = absent, rank NaN)."""
    present = ~np.isnan(draws)
    filled = np.where(present, draws, -np.inf)
    higher = (filled[:, None, :] > filled[:, :, None] + RANK_TOLERANCE).sum(axis=2)
    return np.where(present, 1.0 + higher, np.nan)


def _intervals(point: dict[str, float], models: list[str], draws: np.ndarray, unbounded: np.ndarray,
               confidence: float) -> dict[str, dict[str, float | int | None]]:
    lo, hi = (1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100
    point_ranks = _ranks(point)
    ranks = _rank_rows(draws)
    out = {}
    for j, m in enumerate(models):
        if m not in point:
            continue
        col = draws[:, j]
        ok = ~np.isnan(col)
        have = bool(ok.any())
        out[m] = {"rating": point[m],
                  "low": float(np.percentile(col[ok], lo)) if have else None,
                  "high": float(np.percentile(col[ok], hi)) if have else None,
                  "rank": point_ranks[m],
                  "rank_low": int(np.percentile(ranks[ok, j], lo, method="lower")) if have else None,
                  "rank_high": int(np.percentile(ranks[ok, j], hi, method="higher")) if have else None,
                  "draws": int(ok.sum()), "draws_unbounded": int(unbounded[:, j].sum())}
    return out


def _bootstrap_draws(cells: Counter, wm: WinMatrix, point: BradleyTerryFit, *, n_resamples: int, seed: int,
                     l2: float | None, scale: float, initial: float) -> tuple[np.ndarray, np.ndarray]:
    keys = list(cells)
    counts = np.array([cells[c] for c in keys], dtype=float)
    index = {m: i for i, m in enumerate(wm.models)}
    k = len(wm.models)
    ia = np.array([index[a] for a, _, _ in keys])
    ib = np.array([index[b] for _, b, _ in keys])
    s = np.array([o for _, _, o in keys])
    forward, backward = ia * k + ib, ib * k + ia
    total = int(counts.sum())
    rng = np.random.default_rng(seed)
    draws = np.full((n_resamples, k), np.nan)
    unbounded = np.zeros((n_resamples, k), dtype=bool)
    start = np.nan_to_num(point.strengths)
    for r in range(n_resamples):
        n = rng.multinomial(total, counts / total).astype(float)
        wins = (np.bincount(forward, weights=s * n, minlength=k * k)
                + np.bincount(backward, weights=(1 - s) * n, minlength=k * k)).reshape(k, k)
        fit = fit_bradley_terry(WinMatrix(wm.models, wins, total, 0), l2=l2, scale=scale, initial=initial,
                                start=start)
        for m, v in fit.ratings.items():
            draws[r, index[m]] = v
        for m in fit.graph.unbounded:
            unbounded[r, index[m]] = True
    return draws, unbounded


def bootstrap_bradley_terry(battles: Sequence[Battle], *, n_resamples: int = 100, seed: int = 0,
                            confidence: float = 0.95, l2: float | None = None
                            ) -> dict[str, dict[str, float | int | None]]:
    """Point ratings with battle-level bootstrap intervals and rank bounds (module docstring).

    Returns ``{model: {rating, low, high, rank, rank_low, rank_high, draws, draws_unbounded}}``.
    """
    return _rated(count_battles(battles), n_resamples=n_resamples, seed=seed, confidence=confidence, l2=l2)[0]


def _rated(cells: Counter, *, n_resamples: int, seed: int, confidence: float, l2: float | None,
           scale: float = 400.0, initial: float = 1000.0) -> tuple[dict, BradleyTerryFit]:
    wm = win_matrix(cells)
    point = fit_bradley_terry(wm, l2=l2, scale=scale, initial=initial)
    if len(point.ratings) < 2:
        return {m: {"rating": r, "low": None, "high": None, "rank": 1, "rank_low": None, "rank_high": None,
                    "draws": 0, "draws_unbounded": 0} for m, r in point.ratings.items()}, point
    draws, unbounded = _bootstrap_draws(cells, wm, point, n_resamples=n_resamples, seed=seed, l2=l2, scale=scale,
                                        initial=initial)
    return _intervals(point.ratings, wm.models, draws, unbounded, confidence), point


def bootstrap_ratings(battles: Sequence[Battle], fit: Callable[[Sequence[Battle]], dict[str, float]], *,
                      n_resamples: int = 200, seed: int = 0,
                      confidence: float = 0.95) -> dict[str, dict[str, float | int | None]]:
    """Bootstrap of any rating function by resampling battle records (used for online Elo)."""
    rng = np.random.default_rng(seed)
    point = fit(battles)
    models = list(point)
    index = {m: i for i, m in enumerate(models)}
    draws = np.full((n_resamples, len(models)), np.nan)
    n = len(battles)
    for r in range(n_resamples):
        for m, v in fit([battles[i] for i in rng.integers(0, n, size=n)]).items():
            draws[r, index[m]] = v
    return _intervals(point, models, draws, np.zeros_like(draws, dtype=bool), confidence)


def rate_battles(battles: Sequence[Battle], *, n_resamples: int = 100, seed: int = 0, confidence: float = 0.95,
                 l2: float | None = None) -> dict:
    """Everything the report shows for one set of battles.

    Counts, online Elo, bootstrapped Bradley-Terry, the fit's diagnostics and warnings naming the models
    concerned.
    """
    cells = count_battles(battles)
    bt, fit = _rated(cells, n_resamples=n_resamples, seed=seed, confidence=confidence, l2=l2)
    warnings = fit.graph.warnings()
    if fit.l2 and not fit.graph.mle_exists and l2 is None:
        warnings.append(f"ratings of the unbounded models use the stated L2 penalty {fit.l2} (their rank is "
                        "meaningful, their distance to the others is not)")
    tail = (1 - confidence) / 2
    shaky = sorted(m for m, v in bt.items() if v["draws"] and v["draws_unbounded"] > tail * v["draws"])
    if shaky:
        warnings.append(f"interval rests on bootstrap draws where the rating is unbounded: {', '.join(shaky)}")
    rare = sorted(m for m, v in bt.items() if n_resamples and v["draws"] < (1 - tail) * n_resamples
                  and len(bt) > 1)
    if rare:
        warnings.append(f"absent from more than {tail:.1%} of the bootstrap draws (rarely played): {', '.join(rare)}")
    return {"battles": int(sum(cells.values())), "ties": int(sum(n for (_, _, s), n in cells.items() if s == 0.5)),
            "elo": online_elo(battles), "bradley_terry": bt, "fit": fit.as_dict(), "warnings": warnings}
