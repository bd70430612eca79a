"""Holm's adjustment by hand, and where it is applied: the behaviour comparison table (model pairs x metrics)."""

from __future__ import annotations

import pytest

from reasonscope.behavior.scoring import score_behavior
from reasonscope.plan import BehaviorConfig, StatsConfig
from reasonscope.stats.multiple import adjust, adjust_rows, holm
from reasonscope.storage.run_data import RunData, interpret
from reasonscope.types import Item


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.5 (m = 4): 4 x 0.01, max(.04, 3 x .02), max(.06, 2 x .03), max(.06, .5)
    assert holm([0.03, 0.5, 0.01, 0.02]) == pytest.approx([0.06, 0.5, 0.04, 0.06])
    assert holm([0.01, None, 0.04]) == [pytest.approx(0.02), None, pytest.approx(0.04)]  # None is not a test
    assert holm([0.4, 0.6]) == [pytest.approx(0.8), pytest.approx(0.8)]  # monotone, capped at 1
    assert holm([0.9, 0.8]) == [1.0, 1.0]
    assert holm([]) == [] and holm([0.3]) == [0.3]
    assert adjust([0.01, 0.02], "none") == [0.01, 0.02]
    with pytest.raises(ValueError, match="unknown p-value adjustment"):
        adjust([0.1], "bonferroni")


def test_adjust_rows_records_the_method():
    rows = [{"p_value": 0.01}, {"p_value": None}, {"p_value": 0.03}]
    applied = adjust_rows(rows, "holm")
    assert [r["p_adjusted"] for r in rows] == [pytest.approx(0.02), None, pytest.approx(0.03)]
    assert applied["method"] == "holm" and applied["m"] == 2 and "Holm" in applied["description"]
    # the evidence row "exact = token = edit = edit_chars" is one test shown once: m = 1, 0.068 stays 0.068
    merged = [{"p_value": 0.068, "id": "same"} for _ in range(4)] + [{"p_value": 0.5, "id": "other"}]
    applied = adjust_rows(merged, "holm", same=lambda r: r["id"])
    assert applied["m"] == 2 and applied["rows"] == 5
    assert [r["p_adjusted"] for r in merged] == [pytest.approx(0.136)] * 4 + [pytest.approx(0.5)]
    plain = [{"p_value": 0.01}]
    assert adjust_rows(plain, "none")["method"] == "none" and plain[0]["p_adjusted"] == 0.01


def _run(correct: dict[str, list[int]]) -> RunData:
    items = {f"ds/q{i}": Item(id=f"q{i}", input=f"{i}+1?", target=i + 1, answer_type="number", group="ds")
             for i in range(len(next(iter(correct.values()))))}
    gens = []
    for model, flags in correct.items():
        for item, ok in zip(items.values(), flags, strict=True):
            text = f"Answer: {item.target if ok else item.target + 1}"
            gens.append(interpret({"model": model, "variant": "original", "sample": 0, "text": text,
                                   "finish_reason": "stop", "completion_tokens": 5, "max_tokens": 100}, item))
    return RunData(run={"run_id": "r"}, items=items, generations=gens, datasets=["ds"])


def test_behavior_comparison_table_is_holm_adjusted_and_labelled():
    data = _run({"a": [1] * 10, "b": [0] * 10, "c": [1] * 9 + [0]})
    _, tables = score_behavior(data, BehaviorConfig(), StatsConfig(n_resamples=200), nli=None, sim=None)
    cq = {(r["model_a"], r["model_b"]): r for r in tables["paired"] if r["metric"] == "CQ"}
    # a vs b: 10 of 10 discordant pairs favour a: exact sign test 2 / 1024
    assert cq[("a", "b")]["p_value"] == pytest.approx(2 / 1024)
    assert "sign-flip" in cq[("a", "b")]["test"] and cq[("a", "b")]["null"].startswith("differences symmetric")
    assert tables["p_adjust"]["method"] == "holm"
    tested = [r for r in tables["paired"] if r["p_value"] is not None]
    # ES repeats the ES_corpus row (the reading it names): one test, so m is the distinct tests shown
    distinct = [r for r in tested if r["metric"] != "ES"]
    assert {r["metric"] for r in tested if r["metric"] == "ES"} and tables["p_adjust"]["m"] == len(distinct)
    assert tables["p_adjust"]["rows"] == len(tested) and "distinct tests" in tables["p_adjust"]["description"]
    assert cq[("a", "b")]["p_adjusted"] == pytest.approx(
        holm([r["p_value"] for r in distinct])[distinct.index(cq[("a", "b")])])
    same = {(r["model_a"], r["model_b"]): r["p_adjusted"] for r in tested if r["metric"] == "ES_corpus"}
    assert all(r["p_adjusted"] == same[(r["model_a"], r["model_b"])] for r in tested if r["metric"] == "ES")
    _, plain = score_behavior(data, BehaviorConfig(), StatsConfig(n_resamples=200, p_adjust="none"), nli=None, sim=None)
    assert plain["p_adjust"]["method"] == "none"
    assert all(r["p_adjusted"] == r["p_value"] for r in plain["paired"])
