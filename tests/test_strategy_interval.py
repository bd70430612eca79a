"""The weighted strategy score's item-bootstrap CI (reasonscope.behavior.strategies.composite_interval)."""

from __future__ import annotations

import numpy as np
import pytest

from reasonscope.behavior.strategies import composite, composite_interval

NAN = float("nan")


def cols(**given):
    n = len(next(iter(given.values())))
    base = {m: np.full(n, NAN) for m in ("CQ", "CS", "RS", "LS", "SS", "ES_item", "conciseness")}
    return {**base, **{k: np.array(v, dtype=float) for k, v in given.items()}}


def test_two_items_give_the_whole_range_of_resample_means():
    # resamples of (0, 1): mean 0 (p 1/4), 0.5 (p 1/2), 1 (p 1/4): the 2.5% and 97.5% quantiles are 0 and 1
    low, high = composite_interval(cols(CQ=[0, 1]), {"CQ": 1.0}, ["CQ"], efficiency="item", n_resamples=4000)
    assert (low, high) == (0.0, 1.0)


def test_constant_metrics_give_a_point_interval_and_corpus_es_is_the_harmonic_mean():
    c = cols(CQ=[1, 1, 1], conciseness=[0.5, 0.5, 0.5], CS=[0.2, 0.2, 0.2])
    w = {"CQ": 0.5, "ES": 0.25, "CS": 0.25}
    value, left_out = composite(w, {"CQ": 1.0, "ES": 2 * 0.5 / 1.5, "CS": 0.2})
    low, high = composite_interval(c, w, ["CQ", "ES", "CS"], efficiency="corpus", n_resamples=200)
    expected = 0.5 * 1 + 0.25 * (2 / 3) + 0.25 * 0.2  # 0.71667
    assert left_out == [] and value == pytest.approx(expected)
    assert low == pytest.approx(expected) and high == pytest.approx(expected)


def test_left_out_metrics_stay_out_and_too_few_items_give_none():
    c = cols(CQ=[1, 0, 1, 1], RS=[NAN, NAN, NAN, NAN])
    low, high = composite_interval(c, {"CQ": 0.5, "RS": 0.5}, ["CQ"], efficiency="item", n_resamples=500)
    assert 0.0 <= low <= 0.75 <= high <= 1.0
    assert composite_interval(cols(CQ=[1]), {"CQ": 1.0}, ["CQ"], efficiency="item") == (None, None)
    assert composite_interval(c, {"CQ": 1.0}, [], efficiency="item") == (None, None)
