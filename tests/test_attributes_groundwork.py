"""Groundwork of the attributes family (issue 6): attribute definitions, strict judge parsing,
Elo / Bradley-Terry ratings, judge agreement. Hand-computed values."""

from __future__ import annotations

import math

import pytest

from reasonscope.judge.attributes import ATTRIBUTES, attribute_key
from reasonscope.judge.parse import parse_judgement
from reasonscope.stats.agreement import krippendorff_alpha, mean_spearman
from reasonscope.stats.ratings import bootstrap_bradley_terry, bootstrap_ratings, bradley_terry, online_elo


def test_twelve_attributes_and_key_matching():
    assert len(ATTRIBUTES) == 12
    assert attribute_key("Self-Consistency") == "self_consistency"
    assert attribute_key("arithmetic accuracy") == "arithmetic_accuracy"
    assert attribute_key("fluency") is None


def test_parse_json_literal_scales_and_unscored():
    text = ('Here you go: {"Correctness": {"score": 0.8, "explanation": "fine"}, "grammar": 1, '
            '"conciseness": 1.5, "completeness": true, "plausibility": "high"}')
    r = parse_judgement(text, ["correctness", "grammar", "conciseness", "completeness", "plausibility", "repetition"])
    assert r.scores == {"correctness": 0.8, "grammar": 1.0}
    assert r.explanations == {"correctness": "fine"}
    assert r.unscored["conciseness"] == "score 1.5 outside [0, 1]"
    assert r.unscored["completeness"].startswith("score is not a number")
    assert r.unscored["plausibility"].startswith("score is not a number")
    assert r.unscored["repetition"] == "missing from the judge's answer"
    ten = parse_judgement("{'scores': {'correctness': 7, 'grammar': {'score': 10}}}", ["correctness", "grammar"],
                          scale_max=10)
    assert ten.scores == {"correctness": 0.7, "grammar": 1.0} and not ten.unscored


def test_parse_never_evaluates_and_reports_unreadable_answers(tmp_path):
    marker = tmp_path / "pwned"
    code = '{"correctness": __import__("pathlib").Path(' + repr(str(marker)) + ').touch()}'
    r = parse_judgement(code, ["correctness"])
    assert r.error and r.unscored["correctness"].startswith("the judge's object is neither") and not marker.exists()
    assert parse_judgement("I rate it highly.", ["grammar"]).unscored == {"grammar": "no JSON object in the judge's answer"}


def test_online_elo_by_hand():
    r = online_elo([("A", "B", 1.0)])
    assert r == {"A": 1002.0, "B": 998.0}
    r = online_elo([("A", "B", 1.0), ("B", "A", 1.0)])
    eb = 1 / (1 + 10 ** ((1002 - 998) / 400))
    assert r["B"] == pytest.approx(998 + 4 * (1 - eb)) and r["A"] == pytest.approx(1002 - 4 * (1 - eb))
    assert online_elo([("A", "B", 0.5)]) == {"A": 1000.0, "B": 1000.0}


def test_bradley_terry_by_hand():
    battles = [("A", "B", 1.0)] * 3 + [("B", "A", 1.0)]
    r = bradley_terry(battles)
    gap = 400 * math.log10(3)  # P(A beats B) = 3/4 -> logit ln 3 -> Elo scale
    assert r["A"] - r["B"] == pytest.approx(gap, rel=1e-3)
    assert (r["A"] + r["B"]) / 2 == pytest.approx(1000)
    ties = bradley_terry([("A", "B", 0.5), ("A", "B", 1.0), ("B", "A", 1.0)])
    assert ties["A"] - ties["B"] == pytest.approx(400 * math.log10(1.5 / 1.5), abs=1e-3)
    # a model that wins every battle ranks first; symmetric results give equal ratings
    sweep = bradley_terry([("A", "B", 1.0), ("A", "C", 1.0), ("B", "C", 1.0), ("C", "B", 1.0)])
    assert sweep["A"] > sweep["B"] and sweep["B"] == pytest.approx(sweep["C"], rel=1e-4)


def test_bootstrap_ratings_bracket_the_point():
    battles = [("A", "B", 1.0)] * 30 + [("B", "A", 1.0)] * 10 + [("A", "C", 1.0)] * 7 + [("C", "A", 1.0)] * 3
    out = bootstrap_ratings(battles, bradley_terry, n_resamples=100, seed=1)
    for m, v in out.items():
        assert v["low"] <= v["rating"] <= v["high"], m
    assert out["A"]["rating"] > out["B"]["rating"] and out["A"]["rank"] == 1
    multi = bootstrap_bradley_terry(battles, n_resamples=100, seed=1)
    assert multi["A"]["rating"] == pytest.approx(out["A"]["rating"])
    assert multi["A"]["low"] <= multi["A"]["rating"] <= multi["A"]["high"] and multi["A"]["rank_low"] == 1
    assert multi == bootstrap_bradley_terry(battles, n_resamples=100, seed=1)  # seeded
    elo = bootstrap_ratings(battles, online_elo, n_resamples=50, seed=2)
    assert elo["A"]["rating"] > 1000 > elo["B"]["rating"]


def test_agreement():
    scores = {"j1": {"a": 1, "b": 2, "c": 3, "d": 3}, "j2": {"a": 1, "b": 2, "c": 3, "d": 4}}
    assert krippendorff_alpha(scores) == pytest.approx(8 / 9)
    with_missing = {"j1": {"a": 1, "b": 2, "c": None}, "j2": {"a": 1, "b": 2, "c": 3}}
    assert krippendorff_alpha(with_missing) == pytest.approx(1.0)
    assert krippendorff_alpha({"j1": {"a": 1}}) is None
    assert mean_spearman({"j1": {"a": 1, "b": 2, "c": 3}, "j2": {"a": 10, "b": 20, "c": 30}}) == pytest.approx(1.0)
    assert mean_spearman({"j1": {"a": 1, "b": 2, "c": 3}, "j2": {"a": 3, "b": 2, "c": 1}}) == pytest.approx(-1.0)


def test_judge_prompt_lists_attributes_and_scale():
    from reasonscope.judge.prompts import judge_messages

    msgs = judge_messages("What is 2+3?", "2 + 3 = 5.", scale="0-10", attributes=["correctness", "grammar"])
    assert msgs[0]["role"] == "system" and "single JSON object" in msgs[0]["content"]
    user = msgs[1]["content"]
    assert "a whole number from 0 to 10" in user and "- correctness:" in user and "- grammar:" in user
    assert "repetition" not in user
    with pytest.raises(ValueError, match="unknown scale"):
        judge_messages("q", "r", scale="1-5")
    with pytest.raises(ValueError, match="unknown attributes"):
        judge_messages("q", "r", attributes=["fluency"])


def test_arithmetic_accuracy_asks_only_whether_the_calculations_are_correct():
    """The publication's rubric asks whether the calculations are correct and says nothing of a rationale without
    one; template v2 added "0 if it performs no calculation", v3 removed it (a new version: no cached score of
    the old wording is reused)."""
    from reasonscope.attributes.expected_scores import EXPECTED_VERSION, expected_messages
    from reasonscope.judge.prompts import TEMPLATE_VERSION, judge_messages

    user = judge_messages("q", "r", attributes=["arithmetic_accuracy"])[1]["content"]
    assert "- arithmetic_accuracy: The calculations in the reasoning are carried out correctly.\n" in user
    assert "no calculation" not in user and "0 if" not in user
    assert (TEMPLATE_VERSION, EXPECTED_VERSION) == ("judge-attributes-v3", "judge-expected-v3")
    other = expected_messages("q", "r", "arithmetic_accuracy", definition="Sums are right.")[1]["content"]
    assert other.endswith("arithmetic_accuracy: Sums are right.\n\nScore (0-10):")


def test_preference_loaders(tmp_path):
    import json

    from reasonscope.data.loaders import DatasetError
    from reasonscope.data.preferences import load_preferences

    conv = lambda q, a, q2, a2: [{"role": "user", "content": q}, {"role": "assistant", "content": a},  # noqa: E731
                                 {"role": "user", "content": q2}, {"role": "assistant", "content": a2}]
    mt = tmp_path / "mt.json"
    mt.write_text(json.dumps([
        {"question_id": 81, "model_a": "gpt-4", "model_b": "llama-13b", "winner": "model_a", "judge": "expert_0",
         "turn": 2, "conversation_a": conv("Q1", "A1", "Q2", "A2"), "conversation_b": conv("Q1", "B1", "Q2", "B2")},
        {"question_id": 82, "model_a": "x", "model_b": "y", "winner": "tie (bothbad)", "turn": 1,
         "conversation_a": conv("Qx", "Ax", "Qy", "Ay"), "conversation_b": conv("Qx", "Bx", "Qy", "By")}]))
    recs = load_preferences(mt)
    assert (recs[0].question, recs[0].response_a, recs[0].response_b, recs[0].winner, recs[0].turn) == \
        ("Q2", "A2", "B2", "a", 2)
    assert recs[1].winner == "tie" and recs[1].question == "Qx"
    plain = tmp_path / "p.jsonl"
    plain.write_text(json.dumps({"question": "q", "response_a": "ra", "response_b": "rb", "model_a": "m1",
                                 "model_b": "m2", "winner": "b"}) + "\n"
                     + json.dumps({"question": "q", "response_a": "ra", "response_b": "rb", "model_a": "m1",
                                   "model_b": "m2", "winner": "maybe"}) + "\n")
    with pytest.raises(DatasetError, match=r"p.jsonl:2: field 'winner': expected model_a, model_b, tie"):
        load_preferences(plain)
    [rec] = load_preferences(plain, skip_bad_rows=True)
    assert rec.winner == "b" and rec.id.startswith("h-") and rec.id == load_preferences(plain, skip_bad_rows=True)[0].id


# ---------------------------------------------------------------- ROSCOE-style metrics on crafted chains

def fake_embed(texts):
    """Deterministic unit vectors: texts starting with the same word point the same way."""
    import numpy as np

    table = {"cats": [1.0, 0.0, 0.0], "dogs": [0.0, 1.0, 0.0], "fish": [0.0, 0.0, 1.0], "pets": [0.6, 0.8, 0.0]}
    return np.array([table[t.split()[0].lower()] for t in texts])


def test_roscoe_alignment_metrics_by_hand():
    from reasonscope.attributes import roscoe

    source = ["Cats purr.", "Dogs bark."]
    # step 1 aligns with a source sentence (cos 1), step 2 only partly (pets: cos 0.8 with dogs)
    steps = ["cats are mentioned", "pets are mentioned"]
    assert roscoe.faithfulness(steps, source, fake_embed) == pytest.approx(((1 + 1) / 2 + (1 + 0.8) / 2) / 2)
    # source -> steps: cats 1.0, dogs 0.8 (pets); steps -> source: 1.0, 0.9
    info = ((1.0 + 0.9) / 2 + (1.0 + 0.9) / 2) / 2
    assert roscoe.informativeness(steps, source, fake_embed) == pytest.approx(info)
    # an unrelated step lowers faithfulness: fish has cos 0 with both sources -> r-align 0.5
    assert roscoe.faithfulness(["fish swim"], source, fake_embed) == pytest.approx(0.5)


def test_roscoe_repetition_by_hand():
    from reasonscope.attributes import roscoe

    assert roscoe.repetition_step(["cats a", "dogs b", "cats c"], fake_embed) == pytest.approx(0.0)  # repeats
    assert roscoe.repetition_step(["cats a", "dogs b"], fake_embed) == pytest.approx(0.5)  # orthogonal
    assert roscoe.repetition_step(["cats a"], fake_embed) == 1.0
    # word level: step 2 shares 2 of its 4 words with step 1
    assert roscoe.repetition_word(["add three and five", "add five to three"]) == pytest.approx(1 - 3 / 4)
    assert roscoe.repetition_word(["one two", "three four"]) == 1.0
    assert roscoe.repetition_word([]) is None


def test_roscoe_consistency_and_perplexity():
    import math as m

    from reasonscope.attributes import roscoe

    contra = lambda pairs: [0.9 if "not" in b else 0.05 for _, b in pairs]  # noqa: E731
    assert roscoe.self_consistency(["the sky is blue", "grass is green", "the sky is not blue"], contra) == \
        pytest.approx(0.1)
    assert roscoe.self_consistency(["one step"], contra) == 1.0
    assert roscoe.source_consistency(["Ana has 3 apples"], ["Ana has not 3 apples"], contra) == pytest.approx(0.95)
    assert roscoe.perplexity_chain(["a b"], lambda text: [m.log(0.5)] * 4) == pytest.approx(0.5)
    # per step: PPL("a") = 2, PPL("b c") = 1 / sqrt(0.5 * 0.125) = 4 -> mean of 1/2 and 1/4, and the worse 1/4
    lps = {"a": [m.log(0.5)], "b c": [m.log(0.5), m.log(0.125)], "": []}
    assert roscoe.perplexity_step(["a", "b c", ""], lps.get) == pytest.approx(0.375)
    assert roscoe.perplexity_step_max(["a", "b c", ""], lps.get) == pytest.approx(0.25)
    assert roscoe.perplexity_step([""], lps.get) is None and roscoe.perplexity_step_max([], lps.get) is None


def test_roscoe_chain_and_token_level_alignment():
    import numpy as np

    from reasonscope.attributes import roscoe

    unit = {"x": [1.0, 0.0], "y": [0.0, 1.0], "d": [0.6, 0.8]}
    embed = lambda texts: np.array([unit.get(t, unit["d"]) for t in texts])  # noqa: E731
    # Info-Chain: the joined chain "x y" is embedded as d = (0.6, 0.8), the source "x" as (1, 0): (1 + 0.6) / 2
    assert roscoe.informativeness_chain(["x", "y"], ["x"], embed) == pytest.approx(0.8)
    assert roscoe.informativeness_chain([], ["x"], embed) is None
    # Faithfulness-Token: steps x, y align to source x with 1 and 0.5; the three chain tokens (x, x from step x,
    # y from step y) align to the source tokens {x} with 1, 1, 0.5: (1 + 0.5 + 1 + 1 + 0.5) / (2 + 3) = 0.8
    tokens = lambda texts: [np.array([unit[t]] * (2 if t == "x" else 1)) for t in texts]  # noqa: E731
    assert roscoe.faithfulness_ww(["x", "y"], ["x"], embed, tokens) == pytest.approx(0.8)
    # a step-only embedder (no token vectors) falls back to the step alignment
    assert roscoe.faithfulness_ww(["x", "y"], ["x"], embed, lambda t: [np.zeros((0, 2))] * len(t)) == \
        pytest.approx(0.75)


def test_shap_ranks_the_deciding_attribute_first(tmp_path):
    import numpy as np

    from reasonscope.attributes.explain import explain_preferences
    from reasonscope.attributes.report_view import shap_plots

    rng = np.random.default_rng(0)
    n = 300
    attrs = ["correctness", "grammar", "conciseness", "repetition"]
    X = rng.normal(size=(n, len(attrs)))
    y = (X[:, 0] > 0).astype(int)  # correctness(A) - correctness(B) alone decides the human winner
    exp = explain_preferences(X, y, attrs, folds=5, seed=0, n_estimators=100)
    assert exp.importance[0]["attribute"] == "correctness" and exp.importance[0]["direction"] == "+"
    assert exp.importance[0]["mean_abs_shap"] > 3 * exp.importance[1]["mean_abs_shap"]
    assert exp.cv_accuracy > 0.9 and exp.cv_auc > 0.95
    plots = shap_plots(exp.shap_values, exp.features, exp.attributes, tmp_path)
    assert all(p.stat().st_size > 5000 for p in plots.values())


def test_attribute_battles_with_margin():
    from reasonscope.attributes.elo import attribute_battles

    scores = {"q1": {"m1": {"correctness": 0.9, "grammar": 0.5}, "m2": {"correctness": 0.2, "grammar": 0.55},
                     "m3": {"correctness": None, "grammar": 0.1}},
              "q2": {"m1": {"correctness": 0.4}, "m2": {"correctness": 0.8}}}
    b = attribute_battles(scores, margin=0.1)
    assert b["correctness"] == [("m1", "m2", 1.0), ("m1", "m2", 0.0)]  # m3 unscored: no battle
    assert b["grammar"] == [("m1", "m2", 0.5), ("m1", "m3", 1.0), ("m2", "m3", 1.0)]
    ratings = bradley_terry(b["grammar"] + b["correctness"])
    assert ratings["m3"] < min(ratings["m1"], ratings["m2"])


def test_docs_list_every_definition_beside_the_publications():
    """The departures table of the attributes page shows each of our twelve definitions as the code has it."""
    from pathlib import Path

    from reasonscope.judge.attributes import ATTRIBUTES

    page = (Path(__file__).resolve().parents[1] / "docs" / "families" / "attributes.md").read_text()
    rows = {cells[1].strip(): cells[3].strip() for line in page.splitlines()
            if line.startswith("| ") and len(cells := line.split("|")) == 5 and cells[1].strip() in ATTRIBUTES}
    assert set(rows) == set(ATTRIBUTES)
    for name, text in ATTRIBUTES.items():
        assert rows[name].startswith(text), name
