"""behavior.efficiency: both readings of ES computed by hand, the selected one in the strategies."""

from __future__ import annotations

import pytest

from reasonscope.behavior import metrics as M
from reasonscope.behavior.efficiency import corpus_efficiency, paired_corpus_efficiency
from reasonscope.behavior.scoring import score_behavior
from reasonscope.plan import BehaviorConfig, NLIConfig, StatsConfig, parse_plan
from reasonscope.storage.run_data import RunData, interpret
from reasonscope.types import Item


def H(a, b):
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def rows(cq, length):
    return [{"CQ": c, "conciseness": L} for c, L in zip(cq, length, strict=True)]


def test_both_readings_by_hand():
    est = corpus_efficiency(rows([1, 0, 1], [0.8, 0.5, 0.2]), n_resamples=500)
    # H(CQ = 2/3, mean L = 0.5) = (2/3) / (7/6) = 4/7
    assert est["value"] == pytest.approx(4 / 7) and est["n"] == 3
    assert est["low"] <= est["value"] <= est["high"]
    # per item: (H(1, .8) + H(0, .5) + H(1, .2)) / 3 = (8/9 + 0 + 1/3) / 3 = 0.4074, below CQ
    per_item = [M.efficiency(c, t, 100) for c, t in ((1, 20), (0, 50), (1, 80))]
    assert sum(per_item) / 3 == pytest.approx((8 / 9 + 1 / 3) / 3)
    assert [M.length_score(t, 100) for t in (20, 50, 80, 150)] == pytest.approx([0.8, 0.5, 0.2, 0.0])
    assert M.length_score(None, 100) is None and M.efficiency(1, 10, None) is None


def test_item_without_length_counts_in_cq_only():
    est = corpus_efficiency(rows([1, 0, 0], [0.6, None, 0.2]), n_resamples=200)
    assert est["value"] == pytest.approx(H(1 / 3, 0.4)) and est["n"] == 2
    assert corpus_efficiency(rows([1, 0], [None, None]))["value"] is None
    single = corpus_efficiency(rows([1], [0.5]))
    # one item: H at the ends of CQ's exact 97.5% interval (1 of 1: [0.0125, 1]) and L's ([0.00625, 0.99375])
    assert single["value"] == pytest.approx(2 / 3)
    assert (single["low"], single["high"]) == pytest.approx((H(0.0125, 0.5 * 0.0125), H(1.0, 0.5 + 0.5 * 0.9875)))
    constant = corpus_efficiency(rows([1, 1, 1], [0.5, 0.5, 0.5]), method="BCa", n_resamples=200)
    # three equal items: no resample differs, but CQ's exact interval does (never the zero-width 2/3 it was)
    u = 1 - 0.0125 ** (1 / 3)
    assert (constant["low"], constant["high"]) == pytest.approx((H(0.0125 ** (1 / 3), 0.5 - 0.5 * u), H(1.0, 0.5 + 0.5 * u)))


def test_paired_corpus_difference_with_exact_permutation_p():
    a = rows([1, 1], [0.8, 0.6])
    b = rows([0, 0], [0.5, 0.5])
    d = paired_corpus_efficiency(a, b, n_resamples=2000)
    # observed H(1, .7) - H(0, .5) = 1.4/1.7; the four swaps give +-0.8235 and +-0.0414: two-sided p = 2/4
    assert d["difference"] == pytest.approx(1.4 / 1.7) and d["n"] == 2
    assert d["p_value"] == pytest.approx(0.5)
    same = paired_corpus_efficiency(a, a)
    assert same["difference"] == 0.0 and same["p_value"] == 1.0


def _data(lengths, answers, budget=100):
    items, gens = {}, []
    for n, (tokens, answer) in enumerate(zip(lengths, answers, strict=True)):
        item = Item(id=f"q{n}", input=f"{n}+0?", target=n, answer_type="number", group="d")
        items[f"d/q{n}"] = item
        gens.append(interpret({"model": "m", "variant": "original", "sample": 0, "text": f"Answer: {answer}",
                               "finish_reason": "stop", "completion_tokens": tokens, "max_tokens": budget}, item))
    return RunData(run={}, items=items, generations=gens)


@pytest.mark.parametrize("reading", ["corpus", "item"])
def test_strategies_use_the_stated_reading(reading):
    # CQ_i = 1, 0, 1, 0 (answers n, wrong, n, wrong); L_i = 0.9, 0.9, 0.5, 0.1
    data = _data([10, 10, 50, 90], [0, 9, 2, 9])
    _, tables = score_behavior(data, BehaviorConfig(samples=1, paraphrases=0, efficiency=reading),
                               StatsConfig(n_resamples=200))
    m = tables["metrics"]["m"]
    es_item = (H(1, 0.9) + 0 + H(1, 0.5) + 0) / 4
    es_corpus = H(0.5, 0.6)
    assert m["ES_item"]["value"] == pytest.approx(es_item)       # 0.3709: never above CQ = 0.5
    assert m["ES_corpus"]["value"] == pytest.approx(es_corpus)   # 0.5455: above CQ
    assert m["conciseness"]["value"] == pytest.approx(0.6)
    selected = es_corpus if reading == "corpus" else es_item
    assert m["ES"]["value"] == pytest.approx(selected) and m["ES"]["reading"] == f"ES_{reading}"
    # edge_device (CQ .30, CS .03, RS .10, LS .05, ES .50, SS .02): CS, RS, LS, SS not applicable here
    edge = tables["strategies"]["m"]["edge_device"]
    assert edge["ES"] == f"ES_{reading}"
    assert edge["value"] == pytest.approx((0.30 * 0.5 + 0.50 * selected) / 0.80)
    assert tables["settings"]["efficiency"] == reading


def test_paired_table_names_both_readings():
    data = _data([10, 10, 50, 90], [0, 9, 2, 9])
    data.generations += [g.model_copy(update={"model": "n", "completion_tokens": 50}) for g in data.generations]
    _, tables = score_behavior(data, BehaviorConfig(samples=1, paraphrases=0), StatsConfig(n_resamples=200))
    paired = {p["metric"]: p for p in tables["paired"]}
    # same answers, m shorter: L_m = (.9, .9, .5, .1), L_n = .5 each
    assert paired["ES"]["difference"] == pytest.approx(H(0.5, 0.6) - H(0.5, 0.5))
    assert paired["ES"]["test"].startswith("paired permutation")
    assert {**paired["ES_corpus"], "metric": "ES"} == paired["ES"]
    assert paired["ES_item"]["difference"] == pytest.approx((H(1, 0.9) + H(1, 0.5)) / 4 - 2 * H(1, 0.5) / 4)
    assert paired["conciseness"]["difference"] == pytest.approx(0.1)


def test_plan_rejects_an_unknown_reading():
    with pytest.raises(ValueError, match="efficiency"):
        parse_plan({"experiment": {"name": "x"}, "datasets": [{"name": "s", "format": "synthetic"}],
                    "families": {"behavior": {"efficiency": "median", "nli": NLIConfig(backend="none").model_dump()}}})
