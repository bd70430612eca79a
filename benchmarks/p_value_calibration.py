"""Benchmark: do the printed p-values hold their nominal level? False-positive rates under a true null.

For n = 6, 12 and 30 items and two kinds of data (normal scores and 0/1 scores), ``--sims`` data sets
are drawn under the null hypothesis of each test (seeded), the test is run on each, and the share of
p-values <= alpha (0.05) is printed with its 95% Clopper-Pearson interval. A valid test rejects at
most alpha of the time up to binomial error; a discrete test (few items, 0/1 data) can only reject
less often: its exact size, when it can be computed, is printed beside the measured rate.

Tests (the ones the report prints):

* paired model-vs-model difference (behavior's comparison table, information's separations):
  a_i and b_i drawn independently from the same distribution (N(0, 1), or Bernoulli(0.6) for 0/1);
  before = the previous reasonscope p-value, re-implemented here: a bootstrap percentile p,
  2 x the smaller share of 2,000 resampled means on either side of 0 (0 when all differences are
  equal and non-zero); after = :func:`reasonscope.stats.permutation.sign_flip_test`.
* RACE asymmetry difference A(correct) - A(incorrect): coverages independent of correctness
  (support and contradiction coverages U(0, 1), or 0/1 with probability 0.5, each missing with
  probability 0.2; an instance is correct with probability 0.6); before = the previous Monte Carlo
  test (|D*| >= |D|, 2,000 relabellings), after =
  :func:`reasonscope.stats.permutation.asymmetry_permutation_test`.
* judge agreement (Krippendorff's alpha > 0): three judges scoring n units independently (N(0, 1), or
  0/1); after only (no p-value was printed before): :func:`reasonscope.stats.agreement.alpha_permutation_test`
  with 199 permutations (p = (1 + hits) / 200: its level is exactly 10 / 200 = 0.05 for continuous
  data whatever the number of permutations; the report uses 9,999).

    python benchmarks/p_value_calibration.py [--sims 2000] [--alpha 0.05]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

SIZES = (6, 12, 30)
KINDS = ("normal", "0/1")


def old_bootstrap_p(d: np.ndarray, rng, n_resamples: int = 2000) -> float:
    """The previous paired p-value: bootstrap percentile p around 0."""
    if np.all(d == d[0]):
        return 1.0 if d[0] == 0 else 0.0
    means = d[rng.integers(0, d.size, size=(n_resamples, d.size))].mean(axis=1)
    return float(min(1.0, 2 * min((means <= 0).mean(), (means >= 0).mean())))


def old_asymmetry_p(s, c, g, rng, n_permutations: int = 2000) -> float | None:
    """The previous RACE test: |D*| >= |D| over random relabellings, p = (1 + hits) / (1 + n)."""
    def asym(mask):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nanmean(np.where(mask, s, np.nan), -1) - np.nanmean(np.where(mask, c, np.nan), -1)

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        observed = asym(g) - asym(~g)
        if np.isnan(observed):
            return None
        perms = np.stack([rng.permutation(g) for _ in range(n_permutations)])
        d = asym(perms) - asym(~perms)
    return (1 + int(np.sum(np.abs(d) >= abs(observed) - 1e-12))) / (1 + n_permutations)


def paired_size(n: int, kind: str, alpha: float, q: float = 0.6) -> float | None:
    """Exact size of the sign-flip test: continuous data with all 2^n patterns enumerated, or 0/1 data."""
    from scipy.stats import binom, binomtest

    if kind == "normal":
        return 2 * math.floor(alpha * 2 ** n / 2) / 2 ** n if 2 ** n <= 9999 else None
    nonzero = 2 * q * (1 - q)  # P(a_i != b_i)
    size = 0.0
    for k in range(1, n + 1):
        reject = sum(binom.pmf(j, k, 0.5) for j in range(k + 1) if binomtest(j, k).pvalue <= alpha)
        size += binom.pmf(k, n, nonzero) * reject
    return size


def rate(ps: list[float | None], alpha: float) -> tuple[float, float, float, int]:
    from scipy.stats import binomtest

    valid = [p for p in ps if p is not None]
    k = sum(p <= alpha for p in valid)
    ci = binomtest(k, len(valid)).proportion_ci()
    return k / len(valid), ci.low, ci.high, len(valid)


def row(label: str, n: int, kind: str, ps, alpha: float, size: float | None, seconds: float) -> None:
    fpr, low, high, m = rate(ps, alpha)
    verdict = "ok" if low <= alpha else "TOO HIGH"
    exact = "" if size is None else f"{size:.4f}"
    print(f"{label:<34}{n:>4}  {kind:<7}{fpr:>8.4f}  [{low:.4f}, {high:.4f}]{exact:>10}  {verdict:<9}{m:>6}{seconds:>8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=2000, help="null data sets per cell (paired test)")
    ap.add_argument("--other-sims", type=int, default=2000, help="null data sets per cell (asymmetry, agreement)")
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()

    from reasonscope.stats.agreement import alpha_permutation_test
    from reasonscope.stats.permutation import asymmetry_permutation_test, sign_flip_test

    alpha = args.alpha
    print(f"false-positive rate at alpha = {alpha} under a true null (95% Clopper-Pearson interval); "
          "'ok' = the interval reaches alpha or below")
    print(f"{'test':<34}{'n':>4}  {'data':<7}{'FPR':>8}  {'95% interval':<18}{'exact size':>10}  "
          f"{'verdict':<9}{'sims':>6}{'secs':>8}")
    rng = np.random.default_rng(12345)
    for n in SIZES:
        for kind in KINDS:
            draws = [(rng.normal(size=n), rng.normal(size=n)) if kind == "normal" else
                     ((rng.random(n) < 0.6).astype(float), (rng.random(n) < 0.6).astype(float))
                     for _ in range(args.sims)]
            boot = np.random.default_rng(1)
            t = time.perf_counter()
            before = [old_bootstrap_p(a - b, boot) for a, b in draws]
            row("paired, before (bootstrap p)", n, kind, before, alpha, None, time.perf_counter() - t)
            t = time.perf_counter()
            after = [sign_flip_test(a - b, seed=i).p_value for i, (a, b) in enumerate(draws)]
            row("paired, after (sign-flip)", n, kind, after, alpha, paired_size(n, kind, alpha),
                time.perf_counter() - t)
    for n in SIZES:
        for kind in KINDS:
            sets = []
            for _ in range(args.other_sims):
                cov = rng.random((2, n)) if kind == "normal" else (rng.random((2, n)) < 0.5).astype(float)
                cov[rng.random((2, n)) < 0.2] = np.nan
                g = rng.random(n) < 0.6
                sets.append((cov[0], cov[1], g))
            old = np.random.default_rng(2)
            t = time.perf_counter()
            before = [old_asymmetry_p(s, c, g, old) for s, c, g in sets]
            row("RACE asymmetry, before", n, kind, before, alpha, None, time.perf_counter() - t)
            t = time.perf_counter()
            after = [asymmetry_permutation_test([None if np.isnan(x) else x for x in s],
                                                [None if np.isnan(x) else x for x in c], g, seed=i).p_value
                     for i, (s, c, g) in enumerate(sets)]
            row("RACE asymmetry, after", n, kind, after, alpha, None, time.perf_counter() - t)
    for n in SIZES:
        for kind in KINDS:
            t = time.perf_counter()
            ps = []
            for i in range(args.other_sims):
                x = rng.normal(size=(3, n)) if kind == "normal" else (rng.random((3, n)) < 0.5).astype(float)
                scores = {f"j{j}": {f"u{u}": float(x[j, u]) for u in range(n)} for j in range(3)}
                ps.append(alpha_permutation_test(scores, n_resamples=199, seed=i).p_value)
            row("judge agreement alpha > 0", n, kind, ps, alpha, None, time.perf_counter() - t)


if __name__ == "__main__":
    main()
