"""Behaviour metrics computed by hand, strategies, statistics, scoring backends, steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reasonscope.behavior.scoring import score_behavior
from reasonscope.behavior.strategies import BUILTIN_STRATEGIES, all_strategies, composite
from reasonscope.plan import BehaviorConfig, ModelConfig, NLIConfig, SimilarityConfig, StatsConfig
from reasonscope.scorers.nli import HFCrossEncoderNLI, LLMJudgeNLI, make_nli
from reasonscope.scorers.similarity import make_similarity
from reasonscope.stats.bootstrap import bootstrap_mean, paired_difference
from reasonscope.storage.run_data import RunData, interpret
from reasonscope.text.steps import split_steps
from reasonscope.types import Item


class FixedNLI:
    """p(contradiction) = 0.9 when the hypothesis contains 'not', else 0.1 (a test double, not a heuristic in
    the product)."""

    description = "fixed-test-nli"

    def contradiction(self, pairs):
        return [0.9 if " not " in f" {h} " else 0.1 for _, h in pairs]


class FixedSim:
    description = "fixed-test-sim"

    def pairwise(self, a, b):
        return [1.0 if x == y else 0.5 for x, y in zip(a, b, strict=True)]


def gen(model, item, text, variant="original", sample=0, tokens=10, budget=100, error=None):
    row = {"model": model, "variant": variant, "sample": sample, "text": text, "finish_reason": "stop",
           "completion_tokens": tokens, "max_tokens": budget, "error": error}
    return interpret(row, item)


def fixture_run():
    q1 = Item(id="q1", input="3+5?", target=8, answer_type="number", group="ds", metadata={"type": "arith"},
              perturbations=["p", "p", "p"])
    q2 = Item(id="q2", input="Sky blue?", target="yes", answer_type="boolean", group="ds", metadata={"type": "logic"},
              perturbations=["p"])
    q3 = Item(id="q3", input="2+2?", target=4, answer_type="number", group="ds2", metadata={"type": "arith"})
    items = {"ds/q1": q1, "ds/q2": q2, "ds2/q3": q3}
    g = [
        # q1: K=3 answers 8, 8, 9 -> CS = 1/3; correct; paraphrases 8, 7, 8 -> RS = 2/3
        gen("m", q1, "Add them.\nThree plus five is eight.\nAnswer: 8", tokens=20),
        gen("m", q1, "Add them.\nThree plus five is eight.\nAnswer: 8", sample=1),
        gen("m", q1, "Count.\nAnswer: 9", sample=2),
        gen("m", q1, "Answer: 8", variant="p0"), gen("m", q1, "Answer: 7", variant="p1"),
        gen("m", q1, "Answer: 8", variant="p2"),
        # q2: wrong (no) -> RS not applicable; steps: 2 with 'not' in the 2nd -> LS = 1 - 0.9 = 0.1
        gen("m", q2, "The sky is grey today.\nIt is not blue.\nAnswer: no", tokens=50),
        gen("m", q2, "The sky is blue.\nAnswer: yes", sample=1), gen("m", q2, "Answer: maybe", sample=2),
        gen("m", q2, "Answer: yes", variant="p0"),
        # q3: failed generation -> CQ 0, ES 0, LS not applicable
        gen("m", q3, "", error="failed after 5 attempts: RateLimitError 429"),
        gen("m", q3, "Answer: 4", sample=1), gen("m", q3, "Answer: 4", sample=2),
    ]
    return RunData(run={"run_id": "r"}, items=items, generations=g, datasets=["ds", "ds2"])


def test_each_metric_by_hand():
    scores, tables = score_behavior(fixture_run(), BehaviorConfig(),
                                    StatsConfig(n_resamples=500, failed_generations="wrong"),
                                    nli=FixedNLI(), sim=FixedSim(), temperatures={"m": 0.7})
    item = {(s.item_id, s.metric): s for s in scores if s.item_id}
    # CQ: q1 correct, q2 wrong, q3 failed -> 1/3 over ALL items (failed counts as wrong under this setting)
    assert [item[(i, "CQ")].value for i in ("ds/q1", "ds/q2", "ds2/q3")] == [1.0, 0.0, 0.0]
    assert item[("ds2/q3", "CQ")].details["failed"] is True
    # CS: q1 pairs (8,8)(8,9)(8,9) -> 1/3; q2 (no,yes)(no,None)(yes,None) -> 0; q3: the failed sample is never
    # compared, so only (4,4) -> 1
    assert item[("ds/q1", "CS")].value == pytest.approx(1 / 3)
    assert item[("ds/q2", "CS")].value == 0.0
    assert item[("ds2/q3", "CS")].value == 1.0
    # RS: only q1 qualifies (correct, with paraphrases): 2/3 agree with the original answer 8
    assert item[("ds/q1", "RS")].value == pytest.approx(2 / 3)
    assert item[("ds/q2", "RS")].value is None and item[("ds/q2", "RS")].reason == "original answer incorrect"
    assert item[("ds2/q3", "RS")].reason == "no paraphrases"
    # LS: q1 steps ["Add them.", "Three plus five is eight."] -> 1 - 0.1 = 0.9; q2 -> 1 - 0.9 = 0.1
    assert item[("ds/q1", "LS")].value == pytest.approx(0.9)
    assert item[("ds/q2", "LS")].value == pytest.approx(0.1)
    assert item[("ds2/q3", "LS")].value is None
    # ES per item: q1 H(1, 1 - 20/100) = 2*0.8/1.8; q2 H(0, .) = 0; q3 failed -> 0; length scores .8, .5, none
    assert item[("ds/q1", "ES_item")].value == pytest.approx(2 * 0.8 / 1.8)
    assert item[("ds/q2", "ES_item")].value == 0.0 and item[("ds2/q3", "ES_item")].value == 0.0
    assert [item[(i, "conciseness")].value for i in ("ds/q1", "ds/q2", "ds2/q3")] == [0.8, 0.5, None]
    # SS: q1 traces: t0 == t1, t2 differs -> (1 + 0.5 + 0.5)/3
    assert item[("ds/q1", "SS")].value == pytest.approx(2 / 3)
    m = tables["metrics"]["m"]
    assert m["CQ"]["value"] == pytest.approx(1 / 3) and m["CQ"]["n"] == 3
    assert m["CS"]["value"] == pytest.approx((1 / 3 + 0 + 1) / 3)
    assert m["RS"]["value"] == pytest.approx(2 / 3) and m["RS"]["n"] == 1 and m["RS"]["low"] == pytest.approx(2 / 3 * 0.025)  # one value: the equal-values bound
    assert m["LS"]["value"] == pytest.approx(0.5) and m["LS"]["n"] == 2
    assert m["ES_item"]["value"] == pytest.approx((2 * 0.8 / 1.8) / 3)
    # ES (the corpus reading by default) = H(CQ, mean L) = H(1/3, 0.65)
    assert m["ES"]["value"] == m["ES_corpus"]["value"] == pytest.approx(2 * (1 / 3) * 0.65 / (1 / 3 + 0.65))
    assert m["ES"]["reading"] == "ES_corpus" and m["ES_corpus"]["n"] == 2
    assert tables["counts"]["m"] == {"items": 3, "generations": 13, "failed": 1, "unparseable": 1, "truncated": 0,
                                     "pending": 0}
    assert any("1 of 13 generations failed; counted as wrong in CQ and ES" in w for w in tables["warnings"])
    assert tables["per_dataset"]["m"]["ds2"]["CQ"]["value"] == 0.0
    assert tables["per_type"]["m"]["arith"]["CQ"]["value"] == 0.5
    # balanced strategy: mean of the six corpus values
    six = [m[k]["value"] for k in ("CQ", "CS", "RS", "LS", "ES", "SS")]
    assert tables["strategies"]["m"]["balanced"]["value"] == pytest.approx(sum(six) / 6)


def test_single_step_is_coherent_by_convention_and_rs_not_applicable():
    q = Item(id="q", input="?", target=1, answer_type="number", group="d")
    data = RunData(run={}, items={"d/q": q}, generations=[gen("m", q, "One plus nothing is one.\nAnswer: 2")])
    scores, tables = score_behavior(data, BehaviorConfig(samples=1, paraphrases=0), StatsConfig(n_resamples=200),
                                    nli=FixedNLI(), sim=FixedSim(), temperatures={"m": 0.0})
    ls = next(s for s in scores if s.item_id and s.metric == "LS")
    assert ls.value == 1.0 and ls.details["convention"] == "one step -> 1.0"
    assert tables["metrics"]["m"]["RS"]["value"] is None
    assert tables["metrics"]["m"]["RS"]["reason"] == "no paraphrases"
    assert tables["metrics"]["m"]["CS"]["reason"] == "CS needs 2+ samples per item"
    assert any("temperature 0" in w for w in tables["warnings"])
    # RS, CS and SS are left out of the balanced strategy and the rest renormalised
    res = tables["strategies"]["m"]["balanced"]
    assert set(res["left_out"]) == {"CS", "RS", "SS"}
    m = tables["metrics"]["m"]
    assert res["value"] == pytest.approx((m["CQ"]["value"] + m["LS"]["value"] + m["ES"]["value"]) / 3)


def test_ls_not_computed_without_nli_backend():
    scores, tables = score_behavior(fixture_run(), BehaviorConfig(), StatsConfig(n_resamples=200), nli=None,
                                    nli_reason="no NLI backend configured", sim=None, sim_reason="none configured")
    ls = [s for s in scores if s.metric == "LS" and s.item_id]
    assert all(s.value is None and s.reason == "not computed: no NLI backend configured" for s in ls)
    assert tables["metrics"]["m"]["LS"]["value"] is None and tables["metrics"]["m"]["SS"]["value"] is None
    assert tables["backends"]["nli"] == "none (no NLI backend configured)"


def test_paired_model_differences():
    data = fixture_run()
    other = [g.model_copy(update={"model": "n"}) for g in data.generations]
    data.generations += other
    _, tables = score_behavior(data, BehaviorConfig(), StatsConfig(n_resamples=200, failed_generations="wrong"),
                               nli=FixedNLI(), sim=FixedSim())
    cq = next(p for p in tables["paired"] if p["metric"] == "CQ")
    assert (cq["model_a"], cq["model_b"], cq["difference"], cq["n"], cq["p_value"]) == ("m", "n", 0.0, 3, 1.0)


# ------------------------------------------------------------------------------------------- strategies


def test_seven_builtin_strategies_normalised():
    s = all_strategies()
    assert len(BUILTIN_STRATEGIES) == 7 and set(s) == set(BUILTIN_STRATEGIES)
    assert all(math.isclose(sum(w.values()), 1.0) for w in s.values())
    assert s["edge_device"]["ES"] == pytest.approx(0.5)
    user = all_strategies({"mine": {"correctness": 2, "LS": 2}})
    assert user["mine"] == {"CQ": 0.5, "CS": 0.0, "RS": 0.0, "LS": 0.5, "ES": 0.0, "SS": 0.0}


def test_composite_renormalises():
    value, left = composite({"CQ": 0.5, "RS": 0.5, "CS": 0.0}, {"CQ": 0.8, "RS": None, "CS": 0.1})
    assert (value, left) == (0.8, ["RS"])
    assert composite({"RS": 1.0}, {"RS": None}) == (None, ["RS"])


# ------------------------------------------------------------------------------------------- statistics


def test_bootstrap_mean_ci():
    vals = [0, 1] * 50
    est = bootstrap_mean(vals, n_resamples=2000, seed=1)
    assert est.value == 0.5 and est.n == 100
    assert 0.38 < est.low < 0.45 and 0.55 < est.high < 0.62  # ~ 0.5 -/+ 1.96 * 0.05
    # 3 of 3 correct: the exact share interval, never zero-width; lower bound 0.025^(1/3)
    assert bootstrap_mean([1, 1, 1]).low == pytest.approx(0.025 ** (1 / 3)) and bootstrap_mean([1, 1, 1]).high == 1.0
    assert bootstrap_mean([None, 0.5]).low == pytest.approx(0.0125) and bootstrap_mean([]).value is None  # one value
    assert bootstrap_mean(vals, seed=1).low == est.low  # seeded


def test_paired_difference_detects_a_real_gap():
    a = [1] * 40 + [0] * 10
    b = [0] * 40 + [1] * 10
    d = paired_difference(a, b, n_resamples=2000, seed=0)
    assert d.value == pytest.approx(0.6) and d.low > 0.3 and d.p_value < 0.01


# ------------------------------------------------------------------------------------------- steps


@pytest.mark.parametrize("text,expected", [
    ("It costs $3.50 per item. So 2 items cost $7.00.", ["It costs $3.50 per item.", "So 2 items cost $7.00."]),
    ("Dr. Smith has 3 cats. Mr. Jones has 2.", ["Dr. Smith has 3 cats.", "Mr. Jones has 2."]),
    ("1. First, 3 + 4 = 7.\n2. Then 7 x 2 = 14.", ["First, 3 + 4 = 7.", "Then 7 x 2 = 14."]),
    ("Step 1: add.\nStep 2: multiply.", ["add.", "multiply."]),
    ("- a point\n* another point\n\n", ["a point", "another point"]),
    ("We use e.g. the rule 2.5 x 4 = 10. Done.", ["We use e.g. the rule 2.5 x 4 = 10.", "Done."]),
    ("", []),
])
def test_split_steps(text, expected):
    assert split_steps(text) == expected


# ------------------------------------------------------------------------------------------- backends


def test_hf_cross_encoder_nli_on_tiny_model(tiny_nli):
    nli = HFCrossEncoderNLI(str(tiny_nli), batch_size=2)
    assert nli.index == 2 and nli.description == f"hf-cross-encoder:{tiny_nli}"
    probs = nli.contradiction([("the sky is blue", "the sky is not blue"), ("a robin is a bird", "yes"),
                               ("ana has 3 apples", "ana has 8 apples")])
    assert len(probs) == 3 and all(0 < p < 1 for p in probs)
    # batched and single calls agree
    assert nli.contradiction([("a robin is a bird", "yes")])[0] == pytest.approx(probs[1], abs=1e-5)


def test_make_nli_reports_unloadable_model(tmp_path):
    nli, reason = make_nli(NLIConfig(backend="hf", model=str(tmp_path / "no-model")))
    assert nli is None and "could not be loaded" in reason
    assert make_nli(NLIConfig(backend="none")) == (None, "no NLI backend configured (families.behavior.nli.backend: none)")


def test_llm_judge_nli_uses_label_logprobs():
    from reasonscope.models.registry import create_model

    model = create_model(ModelConfig(spec="mock/reasoner", options={
        "logprobs": {"entailment": math.log(0.2), "neutral": math.log(0.2), "contradiction": math.log(0.6)}}))
    nli = LLMJudgeNLI(model)
    assert nli.contradiction([("a", "b")]) == [pytest.approx(0.6)]
    assert nli.description == "llm-judge-logprobs:mock/reasoner"


def test_embedding_similarity_with_embedded_minilm():
    sim, reason = make_similarity(SimilarityConfig(method="embedding", model="embedded-minilm"))
    assert reason is None
    s = sim.pairwise(["The cat sat on the mat.", "The cat sat on the mat."],
                     ["The cat sat on the mat.", "Stock prices fell sharply."])
    assert s[0] == pytest.approx(1.0, abs=1e-5) and s[1] < 0.5


def test_bertscore_with_embedded_minilm():
    sim, reason = make_similarity(SimilarityConfig(method="bertscore", model="embedded-minilm", num_layers=6))
    assert reason is None and sim.description == "bertscore-f1:embedded-minilm:layer6"
    s = sim.pairwise(["Add three and five to get eight.", "Add three and five to get eight."],
                     ["Add three and five to get eight.", "The weather in Oslo is cold."])
    assert s[0] == pytest.approx(1.0, abs=1e-4) and s[1] < s[0] - 0.1


def test_a_bucket_holding_every_item_reuses_the_corpus_estimates(monkeypatch):
    from reasonscope.behavior import scoring
    from reasonscope.behavior.item_table import ItemTable

    table = ItemTable(scoring.ITEM_METRICS)
    for k in range(8):
        table.add(f"i{k}", {"CQ": float(k % 2), "CS": 1.0, "RS": None, "LS": 0.5 + k / 20, "SS": 0.9,
                            "ES_item": 0.4, "conciseness": 0.7}, {}, "gsm8k", "arithmetic" if k < 5 else "logic")
    calls = []
    real = scoring._estimates
    monkeypatch.setattr(scoring, "_estimates", lambda t, *a, rows=None, **k: calls.append(
        len(t) if rows is None else len(rows)) or real(t, *a, rows=rows, **k))
    stats = StatsConfig(n_resamples=200)
    tables = scoring._aggregate({"m": table}, BehaviorConfig(), stats, seed=3)
    assert calls == [8, 5, 3]  # the corpus, then the two types; the one dataset is the corpus
    whole = tables["metrics"]["m"]
    assert tables["per_dataset"]["m"]["gsm8k"] == whole
    assert tables["per_dataset"]["m"]["gsm8k"] is not whole  # a copy: a reason added to one stays there
    assert whole == real(table, stats, 3, BehaviorConfig().efficiency, rows=np.arange(8))  # resampled again
    assert tables["per_type"]["m"]["logic"]["CQ"]["value"] == pytest.approx(2 / 3)  # i5, i6, i7: 1, 0, 1
