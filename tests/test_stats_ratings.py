"""Ratings: Bradley-Terry at the maximum-likelihood optimum against an independent solver on a balanced and a
leaderboard-shaped battle set, hand cases, input errors naming the record, the comparison graph and its
warnings, online Elo, and bootstrap intervals and rank bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reasonscope.stats.battles import BattleError, comparison_graph, count_battles, win_matrix
from reasonscope.stats.ratings import (
    UNBOUNDED_L2,
    bootstrap_bradley_terry,
    bradley_terry,
    fit_bradley_terry,
    online_elo,
    rate_battles,
)
from reasonscope.stats.simulate import balanced_battles, leaderboard_battles

ELO = 400 / math.log(10)


def independent_mle(battles) -> tuple[dict[str, float], float]:
    """Newton's method with the full Hessian on the raw battle list (not the win matrix), ties as half wins;
    returns Elo-scale ratings (mean 1000) and the log-likelihood."""
    names = sorted({m for a, b, _ in battles for m in (a, b)})
    ix = {m: i for i, m in enumerate(names)}
    a = np.array([ix[x] for x, _, _ in battles])
    b = np.array([ix[y] for _, y, _ in battles])
    s = np.array([o for *_, o in battles], dtype=float)
    k = len(names)
    x = np.zeros(k)
    for _ in range(100):
        p = 1 / (1 + np.exp(x[b] - x[a]))
        g = np.bincount(a, s - p, k) - np.bincount(b, s - p, k)
        w = p * (1 - p)
        off = np.bincount(a * k + b, w, k * k).reshape(k, k)
        off = off + off.T
        step = np.linalg.pinv(np.diag(off.sum(axis=1)) - off) @ g
        x += step
        if np.abs(step).max() < 1e-13:
            break
    x -= x.mean()
    d = x[a] - x[b]
    ll = float(np.sum(-s * np.logaddexp(0, -d) - (1 - s) * np.logaddexp(0, d)))
    return {m: 1000 + ELO * x[i] for i, m in enumerate(names)}, ll


@pytest.mark.parametrize("battles", [
    pytest.param(lambda: balanced_battles(50_000, 12, ties=0.10, seed=7), id="balanced-12-models-10pct-ties"),
    pytest.param(lambda: leaderboard_battles(50_000, 40, spread=1100, ties=0.15, seed=7),
                 id="leaderboard-40-models-1100-elo-power-law-15pct-ties"),
])
def test_bradley_terry_reaches_the_mle(battles):
    battles = battles()
    ref, ll = independent_mle(battles)
    fit = fit_bradley_terry(battles)
    assert fit.l2 == 0 and fit.converged and fit.graph.mle_exists
    assert max(abs(fit.ratings[m] - ref[m]) for m in ref) < 0.01
    assert fit.log_likelihood == pytest.approx(ll, abs=1e-6)
    assert sum(fit.ratings.values()) / len(ref) == pytest.approx(1000)


def test_bradley_terry_by_hand():
    r = bradley_terry([("A", "B", 1.0)] * 3 + [("B", "A", 1.0)])
    assert r["A"] - r["B"] == pytest.approx(400 * math.log10(3), abs=1e-6)  # P(A beats B) = 3/4
    assert (r["A"] + r["B"]) / 2 == pytest.approx(1000)
    # ties are half wins: A has 1 + 0.5 wins over B, B has 1 + 0.5 over A
    ties = bradley_terry([("A", "B", 0.5), ("A", "B", 1.0), ("B", "A", 1.0)])
    assert ties["A"] == pytest.approx(ties["B"], abs=1e-9)
    # a tie and a win: 1.5 wins to 0.5 -> odds 3
    r = bradley_terry([("A", "B", 1.0), ("B", "A", 0.5)])
    assert r["A"] - r["B"] == pytest.approx(400 * math.log10(3), abs=1e-6)


def test_battles_given_as_lists_and_numpy_outcomes():
    r = bradley_terry([["A", "B", np.float64(1.0)], ["B", "A", 1], ["A", "B", 1]])
    assert r["A"] - r["B"] == pytest.approx(400 * math.log10(2), abs=1e-6)


@pytest.mark.parametrize(("records", "index", "words"), [
    ([("A", "B", 1.0), ("A", "B", 2.0)], 1, "outcome must be 1 (model_a wins), 0 (model_b wins) or 0.5"),
    ([("A", "B", "1")], 0, "outcome must be"),
    ([("A", "B", True)], 0, "outcome must be"),
    ([("A", "B", float("nan"))], 0, "outcome must be"),
    ([("A", "B", 1.0), (3, "B", 1.0)], 1, "model_a must be a model name (a string), got int 3"),
    ([("A", ["B"], 1.0)], 0, "model_b must be a model name"),
    ([("A", "B", 0.0), ("C", "C", 1.0)], 1, "model 'C' plays itself"),
    ([("A", "B")], 0, "expected a (model_a, model_b, outcome) triple"),
])
def test_bad_battles_name_the_record(records, index, words):
    for fn in (bradley_terry, online_elo, count_battles):
        with pytest.raises(BattleError, match=f"battle record {index} ") as err:
            fn(records)
        assert words in str(err.value)


def test_online_elo_matches_the_fastchat_update_and_rejects_self_battles():
    r = online_elo([("A", "B", 1.0), ("B", "A", 0.5)])
    e_b = 1 / (1 + 10 ** ((1002 - 998) / 400))  # second battle: B (998) against A (1002), a tie
    assert r["B"] == pytest.approx(998 + 4 * (0.5 - e_b), abs=1e-12)
    assert r["A"] == pytest.approx(1002 - 4 * (0.5 - e_b), abs=1e-12)
    with pytest.raises(BattleError, match="plays itself"):
        online_elo([("A", "B", 1.0), ("A", "A", 1.0), ("B", "A", 1.0)])


def test_never_lost_and_never_won_are_named_and_the_penalty_is_stated():
    battles = [("A", "B", 1.0)] * 3 + [("B", "C", 1.0), ("C", "B", 1.0), ("A", "C", 1.0)]
    graph = comparison_graph(win_matrix(battles))
    assert graph.connected and not graph.mle_exists
    assert graph.never_lost == ["A"] and graph.never_won == []
    assert graph.unbounded_groups == [["A"], ["B", "C"]]  # B and C never beat anyone outside their pair
    fit = fit_bradley_terry(battles)
    assert fit.l2 == UNBOUNDED_L2 and fit.ratings["A"] > max(fit.ratings["B"], fit.ratings["C"]) + 400
    assert fit.converged
    with pytest.raises(ValueError, match="never lost: A"):
        fit_bradley_terry(battles, l2=0)
    rated = rate_battles(battles, n_resamples=20)
    assert any("never lost: A (rating unbounded above)" in w for w in rated["warnings"])
    assert any(f"stated L2 penalty {UNBOUNDED_L2}" in w for w in rated["warnings"])
    loser = comparison_graph(win_matrix([("A", "B", 1.0), ("A", "B", 1.0)]))
    assert loser.never_lost == ["A"] and loser.never_won == ["B"]


def test_a_group_that_never_lost_to_the_rest():
    # A and B beat each other; both beat C and D, which beat each other: no finite MLE, no single culprit
    battles = [("A", "B", 1.0), ("B", "A", 1.0), ("C", "D", 1.0), ("D", "C", 1.0), ("A", "C", 1.0), ("B", "D", 1.0)]
    graph = comparison_graph(win_matrix(battles))
    assert graph.unbounded_groups == [["A", "B"], ["C", "D"]] and not graph.never_lost
    assert any("{A, B} | {C, D}" in w for w in graph.warnings())


def test_disconnected_groups_are_centred_separately_and_named():
    battles = [("A", "B", 1.0)] * 3 + [("B", "A", 1.0)] + [("C", "D", 1.0), ("D", "C", 1.0), ("D", "C", 0.5)]
    fit = fit_bradley_terry(battles)
    assert fit.graph.components == [["A", "B"], ["C", "D"]] and fit.graph.mle_exists and fit.l2 == 0
    assert (fit.ratings["A"] + fit.ratings["B"]) / 2 == pytest.approx(1000)
    assert fit.ratings["C"] == pytest.approx(1000) == pytest.approx(fit.ratings["D"])
    assert fit.ratings["A"] - fit.ratings["B"] == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert "2 disconnected groups ({A, B} | {C, D})" in fit.graph.warnings()[0]


def test_rank_bounds_are_outward_percentiles_of_the_rank_draws():
    # B and C are nearly equal: their ranks swap between draws; A is far ahead
    battles = [("A", "B", 1.0)] * 40 + [("B", "A", 1.0)] * 4 + [("A", "C", 1.0)] * 40 + [("C", "A", 1.0)] * 4
    battles += [("B", "C", 1.0)] * 21 + [("C", "B", 1.0)] * 20
    out = bootstrap_bradley_terry(battles, n_resamples=200, seed=3)
    assert out["A"]["rank"] == 1 and out["A"]["rank_low"] == 1
    assert (out["B"]["rank_low"], out["B"]["rank_high"]) == (2, 3)  # a truncated 97.5th percentile gave 2
    assert (out["C"]["rank_low"], out["C"]["rank_high"]) == (2, 3)
    assert out["B"]["low"] < out["B"]["rating"] < out["B"]["high"]
    assert all(v["draws"] == 200 for v in out.values())
    assert out == bootstrap_bradley_terry(battles, n_resamples=200, seed=3)  # seeded


def test_rarely_played_model_absent_from_draws_and_bootstrap_width_matches_battle_level():
    battles = balanced_battles(3_000, 5, ties=0.1, seed=2) + [("model-00", "rare", 1.0), ("rare", "model-01", 1.0),
                                                             ("model-02", "rare", 0.5)]
    out = bootstrap_bradley_terry(battles, n_resamples=300, seed=0)
    assert out["rare"]["draws"] < 300 and out["rare"]["draws_unbounded"] > 0
    # battle-level bootstrap of independent exact fits on the common models
    rng = np.random.default_rng(5)
    common = [m for m in out if m != "rare"]
    draws = {m: [] for m in common}
    core = [b for b in battles if "rare" not in b[:2]]
    for _ in range(300):
        ref, _ = independent_mle([core[i] for i in rng.integers(0, len(core), len(core))])
        for m in common:
            draws[m].append(ref[m])
    core_out = bootstrap_bradley_terry(core, n_resamples=300, seed=0)
    for m in common:
        width = np.percentile(draws[m], 97.5) - np.percentile(draws[m], 2.5)
        assert core_out[m]["high"] - core_out[m]["low"] == pytest.approx(width, rel=0.25)


def test_rate_battles_reports_counts_fit_and_absent_models():
    battles = [("A", "B", 1.0), ("B", "A", 1.0), ("A", "B", 0.5), ("B", "C", 1.0), ("C", "B", 1.0)]
    r = rate_battles(battles, n_resamples=50, seed=0)
    assert r["battles"] == 5 and r["ties"] == 1 and set(r["elo"]) == {"A", "B", "C"}
    assert r["fit"]["l2"] == 0 and r["fit"]["converged"] and r["fit"]["graph"]["mle_exists"]
    assert r["bradley_terry"]["A"]["rating"] == pytest.approx(r["bradley_terry"]["B"]["rating"], abs=1e-6)
    wm = win_matrix(battles, models=["A", "B", "C", "D"])
    assert comparison_graph(wm).absent == ["D"]
    assert "D" not in fit_bradley_terry(wm).ratings
