"""Judge agreement: the vectorised Krippendorff's alpha equals the ``krippendorff`` package, and its
permutation p-value is exact on small hand cases (checked by enumeration with the package)."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pytest

from reasonscope.stats.agreement import alpha_permutation_test, interval_alpha, krippendorff_alpha


def _scores(matrix) -> dict[str, dict[str, float | None]]:
    return {f"j{j}": {f"u{u}": (None if np.isnan(v) else float(v)) for u, v in enumerate(row)}
            for j, row in enumerate(np.asarray(matrix, dtype=float))}


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_alpha_equals_the_package(seed):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(int(rng.integers(2, 5)), int(rng.integers(3, 25)))).round(1)
    data[rng.random(data.shape) < 0.25] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert float(interval_alpha(data)) == pytest.approx(expected, abs=1e-12)
    assert krippendorff_alpha(_scores(data)) == pytest.approx(expected, abs=1e-12)


def test_alpha_by_hand():
    # two judges, units (1, 1), (2, 3): D_o = (2 x 1) / 4, D_e = 2 (4 x 15 - 49) / 12 = 11 / 6
    assert krippendorff_alpha(_scores([[1, 2], [1, 3]])) == pytest.approx(1 - 0.5 / (11 / 6))


def _enumerated_p(matrix) -> float:
    """Share of the arrangements of the second judge's scores with alpha >= the observed (the package's alpha)."""
    data = np.asarray(matrix, dtype=float)
    observed = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    null = [krippendorff.alpha(reliability_data=np.vstack([data[0], data[1][list(order)]]),
                               level_of_measurement="interval")
            for order in itertools.permutations(range(data.shape[1]))]
    return float(np.mean(np.array(null) >= observed - 1e-12))


@pytest.mark.parametrize("matrix", [[[1, 2, 3], [1, 2, 3]], [[1, 2, 3, 4], [1, 2, 4, 3]],
                                    [[0.2, 0.9, 0.4, 0.7, 0.1], [0.3, 0.8, 0.1, 0.9, 0.2]]])
def test_alpha_p_value_exact_on_small_cases(matrix):
    res = alpha_permutation_test(_scores(matrix))
    assert res.p_value == pytest.approx(_enumerated_p(matrix))
    assert res.method.startswith("exact") and res.alternative == "greater"
    assert "independently" in res.null


def test_alpha_p_value_hand_case_and_monte_carlo():
    # perfect agreement on 3 distinct values: only the identity arrangement reaches alpha = 1 -> 1 / 3!
    assert alpha_permutation_test(_scores([[1, 2, 3], [1, 2, 3]])).p_value == pytest.approx(1 / 6)
    rng = np.random.default_rng(1)
    agree = rng.normal(size=30)
    data = np.vstack([agree + rng.normal(0, 0.3, 30), agree + rng.normal(0, 0.3, 30), agree])
    data[0, 3] = np.nan  # a missing score: Monte Carlo, each judge permuted among the units it scored
    res = alpha_permutation_test(_scores(data), n_resamples=999, seed=0)
    assert res.method.startswith("Monte Carlo") and res.p_value == pytest.approx(1 / 1000)
    assert res.p_value == alpha_permutation_test(_scores(data), n_resamples=999, seed=0).p_value
    assert alpha_permutation_test({"j": {"u": 1.0}}).p_value is None
