"""Permutation tests behind every p-value reasonscope prints.

Each test returns a :class:`Significance`: the statistic, the p-value, and the test's name, null
hypothesis, sidedness and how the null distribution was obtained, so that the tables can state them
next to the number.

Paired sign-flip test (:func:`sign_flip_test`)
    For paired differences d_i = a_i - b_i (model A vs model B on the same items, Gold vs a degraded
    rationale on the same items). H0: each d_i is symmetric about 0 (A and B exchangeable on every
    item), tested with the statistic mean(d); two-sided p = min(1, 2 min(P(T* <= t), P(T* >= t)))
    over the sign patterns T* = mean(eps_i d_i), eps_i = +/-1. The null distribution is

    * exact on a lattice: when the |d_i| are multiples of a common step (0/1 correctness, agreement
      shares, any value k / q with q <= 1,000), the distribution of sum eps_i |d_i| is computed exactly
      by convolution (for one magnitude this is the exact two-sided sign test, McNemar's exact test
      for 0/1 outcomes), at any n;
    * exact by enumeration of all 2^n patterns when 2^n <= ``n_resamples``;
    * Monte Carlo otherwise: ``n_resamples`` random patterns (seeded), one-sided p = (1 + hits) /
      (1 + n_resamples), so a p-value is never 0 and the test keeps its level.

    These are the definitions of ``scipy.stats.permutation_test(..., permutation_type="samples")``
    (the tests check equality on exact cases); the null distribution is computed here as one matrix
    product of the sign patterns with d, 25 times faster than through scipy's general routine
    (3 ms vs 76 ms per test at n = 12 on this project's machine), which matters for tables of
    hundreds of comparisons. Comparisons allow a relative tolerance of 1e-12 for floating-point ties.

    All differences 0 give p = 1; no pair gives p = None. ``[1, 1]`` gives 0.5 (2 of the 4 patterns
    are as extreme).

Two-group label permutation (:func:`asymmetry_permutation_test`)
    RACE's asymmetry difference D = A(correct) - A(incorrect), A(g) = mean of the defined support
    coverages in g - mean of the defined contradiction coverages in g. H0: the (support, contradiction)
    coverage pair of an instance is independent of whether its prediction was correct (the labels are
    exchangeable). Two-sided: p = share of relabellings (group sizes kept) with |D*| >= |D|, exact
    over all C(n, n_correct) relabellings when there are at most ``n_permutations`` of them, else
    Monte Carlo with p = (1 + hits) / (1 + n_permutations). A relabelling in which a group has no
    defined coverage counts as not extreme.

The calibration of these tests under the null is measured by ``benchmarks/p_value_calibration.py``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from functools import reduce
from itertools import combinations, islice

import numpy as np

MAX_LATTICE = 2_000_000
MAX_DENOMINATOR = 1000


@dataclass(frozen=True)
class Significance:
    """A p-value with the test that produced it."""

    statistic: float | None
    p_value: float | None
    test: str
    null: str
    alternative: str
    method: str
    resamples: int | None = None

    def as_dict(self) -> dict:
        """The fields as a dict."""
        return asdict(self)

    @property
    def label(self) -> str:
        """``test, sidedness, how`` in one line, e.g. for a table cell."""
        return f"{self.test}, {self.alternative}, {self.method}"


SIGN_FLIP = "paired sign-flip permutation test of the mean difference"
SIGN_FLIP_NULL = "differences symmetric about 0 (the two sides are exchangeable on every item)"


def _clean(values) -> np.ndarray:
    return np.asarray([v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))],
                      dtype=float)


def _two_sided(p_less: float, p_greater: float) -> float:
    return float(min(1.0, 2.0 * min(p_less, p_greater)))


def _lattice(magnitudes: np.ndarray) -> np.ndarray | None:
    """Integers m_i with |d_i| = m_i * step for a common step, or None when there is no small lattice."""
    values, inverse = np.unique(magnitudes, return_inverse=True)
    fractions = [Fraction(float(v)).limit_denominator(MAX_DENOMINATOR) for v in values]
    if any(abs(float(f) - v) > 1e-9 * max(1.0, v) for f, v in zip(fractions, values, strict=True)):
        return None
    common = reduce(math.lcm, (f.denominator for f in fractions), 1)
    steps = [int(f * common) for f in fractions]
    if 0 in steps:  # a non-zero magnitude below the lattice's resolution: enumerate instead
        return None
    g = reduce(math.gcd, steps)
    ints = np.array([s // g for s in steps], dtype=np.int64)[inverse]
    return ints if int(ints.sum()) <= MAX_LATTICE else None


def _sign_flip_pmf(ints: np.ndarray) -> np.ndarray:
    """P(sum eps_i m_i = k - sum m_i) for k = 0 .. 2 sum m_i, eps_i = +/-1 independent and fair."""
    from scipy.signal import fftconvolve
    from scipy.stats import binom

    pmf = np.ones(1)
    values, counts = np.unique(ints, return_counts=True)
    for m, c in zip(values.tolist(), counts.tolist(), strict=True):
        part = np.zeros(2 * m * c + 1)
        part[::2 * m] = binom.pmf(np.arange(c + 1), c, 0.5)  # c signs, j of them +: sum = m (2j - c)
        pmf = np.convolve(pmf, part) if pmf.size * part.size <= 5_000_000 else np.clip(fftconvolve(pmf, part), 0, None)
    return pmf


def sign_flip_test(differences, *, n_resamples: int = 9999, seed: int = 0,
                   alternative: str = "two-sided") -> Significance:
    """Paired sign-flip permutation test of mean(d) = 0 (see the module docstring).

    Args:
        differences (Sequence[float | None]): The paired differences; None and NaN are left out.
        n_resamples: The largest number of sign patterns enumerated exactly, and the number drawn otherwise.
        seed: Seeds the Monte Carlo draws.
        alternative: ``two-sided``, ``greater`` (mean > 0) or ``less``.

    Returns:
        The observed mean difference and its p-value in [0, 1] (lower: stronger evidence against the
        null), with the test, null and method in words. No pair: statistic and p-value None; every
        difference 0: p-value 1.0.
    """
    d = _clean(differences)
    name = SIGN_FLIP
    if d.size == 0:
        return Significance(None, None, name, SIGN_FLIP_NULL, alternative, "no pairs")
    observed = float(d.mean())
    # Differences within floating-point noise of 0 (0.1 + 0.2 - 0.3) are ties, as exact arithmetic has them.
    d = np.where(np.abs(d) <= 1e-12 * max(1.0, float(np.abs(d).max())), 0.0, d)
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return Significance(observed, 1.0, name, SIGN_FLIP_NULL, alternative, "exact (all differences 0)", 1)
    ints = _lattice(np.abs(nonzero))
    if ints is not None:
        pmf = _sign_flip_pmf(ints)
        offset = int(ints.sum())
        k = int(np.sum(np.sign(nonzero).astype(np.int64) * ints)) + offset
        p_less, p_greater = float(pmf[:k + 1].sum()), float(pmf[k:].sum())
        p = {"less": p_less, "greater": p_greater}.get(alternative) if alternative != "two-sided" \
            else _two_sided(p_less, p_greater)
        return Significance(observed, float(f"{min(1.0, p):.14g}"), name, SIGN_FLIP_NULL, alternative,
                            f"exact (all 2^{d.size} sign patterns, lattice distribution)", None)
    exact = d.size < 63 and 2 ** d.size <= n_resamples
    total = float(d.sum())
    tol = 1e-12 * float(np.abs(d).sum())
    less = greater = 0
    for signs in _sign_patterns(d.size, exact, n_resamples, seed):
        null = signs @ d
        less += int(np.sum(null <= total + tol))
        greater += int(np.sum(null >= total - tol))
    if exact:
        count = 2 ** d.size
        p_less, p_greater = less / count, greater / count
        how = f"exact (all 2^{d.size} sign patterns)"
    else:
        count = n_resamples
        p_less, p_greater = (1 + less) / (1 + count), (1 + greater) / (1 + count)
        how = f"Monte Carlo ({count:,} random sign patterns, p = (1 + hits) / (1 + {count:,}))"
    p = {"less": p_less, "greater": p_greater}.get(alternative) if alternative != "two-sided" \
        else _two_sided(p_less, p_greater)
    return Significance(observed, min(1.0, p), name, SIGN_FLIP_NULL, alternative, how, count)


def _sign_patterns(n: int, exact: bool, n_resamples: int, seed: int, chunk_cells: int = 2_000_000):
    """Batches of +/-1 sign patterns (rows): all 2^n in order, or ``n_resamples`` random ones (seeded)."""
    rows = max(1, chunk_cells // max(n, 1))
    if exact:
        codes = np.arange(2 ** n, dtype=np.int64)
        for start in range(0, codes.size, rows):
            bits = (codes[start:start + rows, None] >> np.arange(n)) & 1
            yield (2 * bits - 1).astype(float)
        return
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, rows):
        yield (2 * rng.integers(0, 2, size=(min(rows, n_resamples - start), n), dtype=np.int8) - 1).astype(float)


ASYMMETRY = "two-group label permutation test of A(correct) - A(incorrect)"
ASYMMETRY_NULL = "coverage pairs independent of correctness (correct/incorrect labels exchangeable)"


def _group_asymmetry(mask: np.ndarray, s: np.ndarray, s_ok: np.ndarray, c: np.ndarray, c_ok: np.ndarray):
    """A for each row of ``mask`` (P x n booleans); NaN where a mean is undefined."""
    m = mask.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (m @ s) / (m @ s_ok) - (m @ c) / (m @ c_ok)


def _relabellings(g: np.ndarray, exact: bool, n_permutations: int, seed: int, chunk: int = 256):
    """Batches of relabellings (rows of booleans with as many True as ``g``): all of them, or random ones."""
    if exact:
        combos = combinations(range(g.size), int(g.sum()))
        while batch := list(islice(combos, chunk)):
            mask = np.zeros((len(batch), g.size), dtype=bool)
            mask[np.repeat(np.arange(len(batch)), g.sum()), np.array(batch).ravel()] = True
            yield mask
        return
    rng = np.random.default_rng(seed)
    for start in range(0, n_permutations, chunk):
        yield np.stack([rng.permutation(g) for _ in range(min(chunk, n_permutations - start))])


def asymmetry_permutation_test(support, contradict, groups, *, n_permutations: int = 2000,
                               seed: int = 0) -> Significance:
    """RACE asymmetry difference between the instances where ``groups`` is True and the others.

    ``support`` / ``contradict``: per-instance coverages (None = empty set, left out of that mean).
    Returns the observed D and its two-sided p-value (module docstring); both None when D is undefined.
    """
    s_raw = np.asarray([np.nan if v is None else v for v in support], dtype=float)
    c_raw = np.asarray([np.nan if v is None else v for v in contradict], dtype=float)
    g = np.asarray(groups, dtype=bool)
    s_ok, c_ok = (~np.isnan(s_raw)).astype(float), (~np.isnan(c_raw)).astype(float)
    s, c = np.nan_to_num(s_raw), np.nan_to_num(c_raw)

    def difference(mask: np.ndarray) -> np.ndarray:
        return _group_asymmetry(mask, s, s_ok, c, c_ok) - _group_asymmetry(~mask, s, s_ok, c, c_ok)

    observed = float(difference(g[None])[0]) if g.size else float("nan")
    if math.isnan(observed):
        return Significance(None, None, ASYMMETRY, ASYMMETRY_NULL, "two-sided", "undefined (a group has no coverage)")
    total = math.comb(g.size, int(g.sum()))
    exact = total <= n_permutations
    hits = 0
    for mask in _relabellings(g, exact, n_permutations, seed):
        hits += int(np.sum(np.abs(difference(mask)) >= abs(observed) - 1e-12))  # NaN compares False: not extreme
    if exact:
        return Significance(observed, hits / total, ASYMMETRY, ASYMMETRY_NULL, "two-sided",
                            f"exact (all {total:,} relabellings)", total)
    return Significance(observed, (1 + hits) / (1 + n_permutations), ASYMMETRY, ASYMMETRY_NULL, "two-sided",
                        f"Monte Carlo ({n_permutations:,} random relabellings, p = (1 + hits) / (1 + "
                        f"{n_permutations:,}))", n_permutations)
