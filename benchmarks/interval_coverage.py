"""Benchmark: do the printed 95% intervals cover the true value 95% of the time?

For every interval kind the report prints, n in {6, 18, 50, 200} items and several true values,
``--sims`` data sets are drawn with a known true mean (seeded), the interval is computed on each, and
the share of intervals holding the true value is printed (its Monte Carlo standard error is about
0.007 at 1,000 data sets), side by side with the previous method and with the mean width of the new
interval.

Kinds (the new interval is always the library's, :func:`reasonscope.stats.bootstrap.bootstrap_mean`
or :func:`~reasonscope.stats.bootstrap.paired_difference` with their defaults):

* ``share``: 0/1 item scores, Bernoulli(p) (CQ, attack success, evidence accuracy).
* ``bounded mean``: skewed [0, 1] item scores (SS, CS, LS, judge scores, coverage): Beta(0.5, 3),
  Beta(5, 1), 60% zeros and 40% Beta(2, 2), 70% ones / 10% zeros / 20% U(0, 1), and an item-level
  share of K = 5 samples per item (Binomial(5, 0.1) / 5: what a clustered input becomes once
  averaged per item).
* ``paired share difference``: two models' 0/1 scores on the same items, drawn from a 2 x 2 table
  (both right, only A, only B, neither).
* ``paired mean difference``: two models' [0, 1] scores on the same items.
* ``unbounded mean``: values without a known range (the information family's log-probability
  separations): a shifted log-normal, exp(N(0, 1)) - e^(1/2), true mean 0, interval Student t.

Previous method (re-implemented here): the percentile bootstrap of the mean (``--resamples``
resamples, 500 by default against the plan's 2,000: the percentile interval's coverage does not
depend on it beyond Monte Carlo error), with a zero-width interval when every value is equal.

    python benchmarks/interval_coverage.py [--sims 1000] [--resamples 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from reasonscope.stats.bootstrap import bootstrap_mean, paired_difference

SIZES = (6, 18, 50, 200)
Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray | None]]


def _mixture(rng, n, p0, p1, rest):
    u = rng.random(n)
    return np.where(u < p0, 0.0, np.where(u < p0 + p1, 1.0, rest(rng, n)))


def _table(cells):
    """Paired 0/1 draws from a 2 x 2 table (both, only a, only b, neither)."""
    def draw(rng, n):
        k = rng.choice(4, size=n, p=cells)
        return (k <= 1).astype(float), ((k == 0) | (k == 2)).astype(float)
    return draw


def _bernoulli(p: float) -> Draw:
    return lambda rng, n: ((rng.random(n) < p).astype(float), None)


SHARES = {f"p = {p}": (_bernoulli(p), p) for p in (0.02, 0.1, 0.3, 0.5)}
BOUNDED = {
    "Beta(0.5, 3)": (lambda rng, n: (rng.beta(0.5, 3, n), None), 0.5 / 3.5),
    "Beta(5, 1)": (lambda rng, n: (rng.beta(5, 1, n), None), 5 / 6),
    "60% 0 + Beta(2, 2)": (lambda rng, n: (_mixture(rng, n, 0.6, 0.0, lambda r, m: r.beta(2, 2, m)), None), 0.2),
    "70% 1, 10% 0, U(0, 1)": (lambda rng, n: (_mixture(rng, n, 0.1, 0.7, lambda r, m: r.random(m)), None), 0.8),
    "K = 5 samples, p = 0.1": (lambda rng, n: (rng.binomial(5, 0.1, n) / 5, None), 0.1),
}
PAIRED_SHARES = {
    "0.90 vs 0.80, correlated": (_table([0.75, 0.15, 0.05, 0.05]), 0.10),
    "0.50 vs 0.50, independent": (_table([0.25, 0.25, 0.25, 0.25]), 0.0),
    "0.10 vs 0.05": (_table([0.03, 0.07, 0.02, 0.88]), 0.05),
    "0.02 vs 0.02, rare": (_table([0.01, 0.01, 0.01, 0.97]), 0.0),
}


def _correlated(rng, n):
    u = rng.beta(5, 1, n)
    return u, u * rng.beta(4, 1, n)


PAIRED_MEANS = {
    "Beta(2, 5) vs Beta(0.5, 3)": (lambda rng, n: (rng.beta(2, 5, n), rng.beta(0.5, 3, n)), 2 / 7 - 0.5 / 3.5),
    "U vs U x Beta(4, 1), correlated": (_correlated, 5 / 6 / 5),
    "point masses, equal": (lambda rng, n: (_mixture(rng, n, 0.1, 0.7, lambda r, m: r.random(m)),
                                            _mixture(rng, n, 0.1, 0.7, lambda r, m: r.random(m))), 0.0),
}
UNBOUNDED = {"exp(N(0, 1)) - e^0.5": (lambda rng, n: (np.exp(rng.normal(0, 1, n)) - np.exp(0.5), None), 0.0)}


def old_coverage(data: list[np.ndarray], truth: float, rng, resamples: int, chunk: int = 25) -> float:
    """Coverage of the previous interval: percentile bootstrap, zero-width when every value is equal
    (data sets resampled ``chunk`` at a time)."""
    x = np.stack(data)
    hits = 0
    for start in range(0, x.shape[0], chunk):
        part = x[start:start + chunk]
        idx = rng.integers(0, part.shape[1], size=(part.shape[0], resamples, part.shape[1]), dtype=np.int32)
        means = np.take_along_axis(part[:, None, :], idx, axis=2).mean(axis=2)
        lo, hi = np.quantile(means, [0.025, 0.975], axis=1)
        equal = np.all(part == part[:, :1], axis=1)
        lo, hi = np.where(equal, part[:, 0], lo), np.where(equal, part[:, 0], hi)
        hits += int(np.sum((lo <= truth) & (truth <= hi)))
    return hits / x.shape[0]


def new_interval(a: np.ndarray, b: np.ndarray | None, bounds) -> tuple[float, float]:
    if b is None:
        e = bootstrap_mean(a, bounds=bounds)
    else:
        e = paired_difference(a, b, n_permutations=99)
    return e.low, e.high


def cell(draw: Draw, truth: float, n: int, sims: int, resamples: int, seed: int, bounds="infer"):
    rng = np.random.default_rng(seed)
    new = 0
    width = 0.0
    diffs = []
    for _ in range(sims):
        a, b = draw(rng, n)
        diffs.append(a if b is None else a - b)
        lo, hi = new_interval(a, b, bounds)
        new += lo is not None and lo <= truth <= hi
        width += (hi - lo) if lo is not None else float("nan")
    old = old_coverage(diffs, truth, np.random.default_rng(seed + 1), resamples)
    return old, new / sims, width / sims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    groups = [("share", SHARES, "infer"),
              ("bounded mean", BOUNDED, "infer"), ("paired share difference", PAIRED_SHARES, "infer"),
              ("paired mean difference", PAIRED_MEANS, "infer"), ("unbounded mean", UNBOUNDED, None)]
    start = time.perf_counter()
    print(f"coverage of 95% intervals, {args.sims} data sets per cell; old = percentile bootstrap "
          f"({args.resamples} resamples), new = reasonscope; width = mean width of the new interval\n")
    print("| kind | truth | " + " | ".join(f"n = {n} old / new (width)" for n in SIZES) + " |")
    print("|---|---|" + "---|" * len(SIZES))
    worst: dict[str, float] = {}
    for g, (kind, cases, bounds) in enumerate(groups):
        for c, (name, (draw, truth)) in enumerate(cases.items()):
            cells = []
            for i, n in enumerate(SIZES):
                old, new, width = cell(draw, truth, n, args.sims, args.resamples,
                                       args.seed + 1000 * g + 100 * c + i, bounds)
                worst[kind] = min(worst.get(kind, 1.0), new)
                flag = "**" if new < 0.93 else ""
                cells.append(f"{old:.3f} / {flag}{new:.3f}{flag} ({width:.3f})")
            print(f"| {kind} | {name} | " + " | ".join(cells) + " |", flush=True)
    print("\nlowest new coverage per kind: " + ", ".join(f"{k} {v:.3f}" for k, v in worst.items()))
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
