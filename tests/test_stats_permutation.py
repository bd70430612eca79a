"""The permutation tests behind every printed p-value: exact p-values on hand cases, equality with scipy's
definitions and with brute-force enumeration, Monte Carlo behaviour, and the paired difference."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from reasonscope.stats.bootstrap import bootstrap_mean, paired_difference
from reasonscope.stats.permutation import asymmetry_permutation_test, sign_flip_test


@pytest.mark.parametrize(("d", "p"), [
    ([1, 1], 0.5),                # 2 of the 4 sign patterns reach |mean| = 1
    ([0, 0], 1.0),                # all differences 0
    ([0], 1.0),
    ([3], 1.0),                   # one pair: both signs equally extreme
    ([1, 2, 3], 0.25),            # only +++ and --- reach |sum| = 6: 2 / 8
    ([1, 1, 1, 1, 1], 2 / 32),
    ([1, -1, 1, 1, 1, 1, 0, 1], 0.125),  # sign test: 6 of 7 non-zero positive -> 2 * 8 / 128
    ([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0], 2 / 4096),  # zeros do not count
])
def test_sign_flip_exact_hand_cases(d, p):
    res = sign_flip_test(d)
    assert res.p_value == pytest.approx(p, rel=1e-12)
    assert res.alternative == "two-sided" and res.method.startswith("exact")
    assert "symmetric about 0" in res.null and "sign-flip" in res.test


def test_sign_flip_one_sided_and_missing_values():
    assert sign_flip_test([1, 1], alternative="greater").p_value == pytest.approx(0.25)
    assert sign_flip_test([1, 1], alternative="less").p_value == pytest.approx(1.0)
    assert sign_flip_test([None, float("nan"), 1, 1]).p_value == pytest.approx(0.5)
    empty = sign_flip_test([])
    assert empty.p_value is None and empty.statistic is None


@pytest.mark.parametrize("n", [2, 5, 9, 13])
def test_sign_flip_equals_scipy_enumeration_on_continuous_data(n):
    d = np.random.default_rng(n).normal(0.4, 1.0, n)
    for alternative in ("two-sided", "greater", "less"):
        ref = stats.permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                                     n_resamples=9999, alternative=alternative).pvalue
        ours = sign_flip_test(d, alternative=alternative)
        assert ours.p_value == pytest.approx(ref, abs=1e-12)
        assert ours.method == f"exact (all 2^{n} sign patterns)" and ours.resamples == 2 ** n


def test_lattice_data_is_exact_at_any_n():
    rng = np.random.default_rng(0)
    d = rng.integers(-1, 2, 300).astype(float)  # 0/1 correctness of two models: the exact sign test
    k, pos = int(np.sum(d != 0)), int(np.sum(d > 0))
    assert sign_flip_test(d).p_value == pytest.approx(stats.binomtest(pos, k, 0.5).pvalue, rel=1e-9)
    thirds = rng.integers(-3, 4, 11) / 3  # agreement shares of 3 samples: several magnitudes on a lattice
    ref = stats.permutation_test((thirds,), np.mean, permutation_type="samples", vectorized=True,
                                 n_resamples=9999).pvalue
    res = sign_flip_test(thirds)
    assert res.p_value == pytest.approx(ref, rel=1e-9) and "lattice" in res.method


def test_monte_carlo_is_seeded_never_zero_and_close_to_the_exact_value():
    d = np.random.default_rng(3).normal(0.0, 1.0, 40)
    res = sign_flip_test(d, n_resamples=20_000, seed=1)
    assert res.method.startswith("Monte Carlo") and res.resamples == 20_000
    assert res.p_value == sign_flip_test(d, n_resamples=20_000, seed=1).p_value
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                                 n_resamples=200_000, random_state=0).pvalue
    tail = ref / 2  # two-sided p = 2 x a one-sided share estimated from 20,000 draws
    assert abs(res.p_value - ref) < 4 * 2 * math.sqrt(tail * (1 - tail) / 20_000)
    extreme = np.random.default_rng(4).normal(5.0, 0.1, 40)
    assert sign_flip_test(extreme, n_resamples=999).p_value == pytest.approx(2 / 1000)  # (1 + 0) / (1 + 999), x2


def test_paired_difference_bootstrap_interval_and_permutation_p():
    a, b = [1] * 40 + [0] * 10, [0] * 40 + [1] * 10
    d = paired_difference(a, b, n_resamples=2000, seed=0)
    assert d.value == pytest.approx(0.6) and d.low > 0.3
    # 0/1 pairs: Newcombe's hybrid score interval (continuity-corrected). Here phi = -1 (only discordant
    # pairs) and the Wilson limits of 40/50 and 10/50 mirror each other, so low = 2 l1 - 1 and high = 2 u1 - 1
    # with (l1, u1) the continuity-corrected Wilson interval of 40 of 50: l1 = 0.658568
    z = stats.norm.ppf(0.975)
    l1 = (80 + z * z - 1 - z * math.sqrt(z * z - 2 - 1 / 50 + 4 * 0.8 * (50 * 0.2 + 1))) / (2 * (50 + z * z))
    u1 = (80 + z * z + 1 + z * math.sqrt(z * z + 2 - 1 / 50 + 4 * 0.8 * (50 * 0.2 - 1))) / (2 * (50 + z * z))
    assert (d.low, d.high) == pytest.approx((2 * l1 - 1, 2 * u1 - 1)) and d.low == pytest.approx(0.3171, abs=1e-4)
    assert d.method == "paired-newcombe-score-cc"
    # other values: the interval of the mean of the differences, within [-1, 1]
    x, y = np.array([0.9, 0.7, 0.4, 0.8]), np.array([0.2, 0.3, 0.5, 0.1])
    assert paired_difference(x, y).low == bootstrap_mean(x - y, bounds=(-1, 1)).low
    assert d.p_value == pytest.approx(stats.binomtest(40, 50).pvalue, rel=1e-9)
    assert d.test["null"].startswith("differences symmetric") and "two-sided" in d.test_label
    same = paired_difference([1, 1], [0, 0])
    assert same.p_value == pytest.approx(0.5) and same.high == 1.0 and same.low < 0  # not p = 0, not zero-width
    assert paired_difference([0.2, None], [0.1, 0.5]).n == 1
    assert paired_difference([None], [1]).p_value is None


def _brute_force_asymmetry(s, c, g):
    def a(idx):
        ss = [s[i] for i in idx if s[i] is not None]
        cc = [c[i] for i in idx if c[i] is not None]
        return (np.mean(ss) if ss else np.nan) - (np.mean(cc) if cc else np.nan)

    n = len(g)
    first = [i for i in range(n) if g[i]]
    observed = a(first) - a([i for i in range(n) if not g[i]])
    hits = total = 0
    for combo in itertools.combinations(range(n), len(first)):
        d = a(combo) - a([i for i in range(n) if i not in combo])
        total += 1
        hits += bool(not np.isnan(d) and abs(d) >= abs(observed) - 1e-12)
    return observed, hits / total


def test_asymmetry_test_exact_by_enumeration():
    s = [0.5, 1.0, None, 0.2, 0.9, 0.1, 0.4]
    c = [0.1, 0.0, 0.3, 0.5, None, 0.7, 0.2]
    g = [True, True, True, False, False, False, False]
    res = asymmetry_permutation_test(s, c, g)
    observed, p = _brute_force_asymmetry(s, c, g)
    assert res.statistic == pytest.approx(observed) and res.p_value == pytest.approx(p)
    assert res.method == "exact (all 35 relabellings)" and res.alternative == "two-sided"
    # two instances, one per group: both relabellings are as extreme
    assert asymmetry_permutation_test([0.5, 0.2], [0.1, 0.3], [True, False]).p_value == 1.0


def test_asymmetry_test_monte_carlo_and_undefined():
    rng = np.random.default_rng(0)
    s, c = rng.random(40).tolist(), rng.random(40).tolist()
    g = (rng.random(40) < 0.5).tolist()
    res = asymmetry_permutation_test(s, c, g, n_permutations=500, seed=2)
    assert res.method.startswith("Monte Carlo") and 0 < res.p_value <= 1
    assert res.p_value == asymmetry_permutation_test(s, c, g, n_permutations=500, seed=2).p_value
    assert (res.p_value * 501) == pytest.approx(round(res.p_value * 501))  # (1 + hits) / (1 + 500)
    none = asymmetry_permutation_test([None, None, 0.5], [0.1, 0.2, 0.3], [True, True, False])
    assert none.p_value is None and none.statistic is None


def test_sign_flip_differences_within_float_noise_are_ties():
    # 0.1 + 0.2 - 0.3 is 5.6e-17, not 0: it used to give a lattice step of 0 and crash the exact pmf.
    from reasonscope.stats.permutation import sign_flip_test

    result = sign_flip_test([0.1 + 0.2 - 0.3, 1.0, 1.0, 0.5])
    # Three non-zero differences (1, 1, 0.5): only +++ reaches the observed sum 2.5, so p = 2 * 1/8.
    assert result.p_value == 0.25
    assert sign_flip_test([0.1 + 0.2 - 0.3]).p_value == 1.0
