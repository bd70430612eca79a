"""Evidence (RACE): contributions by hand, matchers, coverage rules, parsing, end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from reasonscope.data.loaders import DatasetError
from reasonscope.evidence.classifier import EvidenceClassifier, split_sets
from reasonscope.evidence.matchers import Rationale, edit_match, exact_match, token_match
from reasonscope.evidence.scoring import (
    InstanceResult,
    Prediction,
    aggregate,
    parse_prediction,
    read_prediction_file,
    run_evidence,
)
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan
from reasonscope.types import Item


def test_contributions_and_top_k_by_hand():
    clf = EvidenceClassifier().fit(["alpha beta", "alpha gamma"], ["x", "y"])
    names = list(clf.vectorizer.get_feature_names_out())
    assert names == ["alpha", "alpha beta", "alpha gamma", "beta", "gamma"]
    # known weights for class x (the fitted ones are replaced to make the answer computable by hand)
    clf.coef = np.array([[2.0, 0.5, -4.0, -1.0, 3.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    row = clf.transform(["alpha beta"])
    # smooth idf: alpha ln(3/3)+1 = 1; beta and "alpha beta" ln(3/2)+1; L2-normalised
    idf = math.log(1.5) + 1
    norm = math.sqrt(1 + 2 * idf**2)
    tf_alpha, tf_beta = 1 / norm, idf / norm
    feats = clf.top_features(row, "x", 3)
    assert [f.text for f in feats] == ["alpha", "beta", "alpha beta"]
    assert feats[0].contribution == pytest.approx(2 * tf_alpha)      # 0.8988
    assert feats[1].contribution == pytest.approx(-1 * tf_beta)      # -0.6317
    assert feats[2].contribution == pytest.approx(0.5 * tf_beta)     # 0.3158
    support, contradict = split_sets(clf.top_features(row, "x", 2))
    assert [f.text for f in support] == ["alpha"] and [f.text for f in contradict] == ["beta"]
    # features absent from the text never appear, whatever their weight (gamma: 3.0, alpha gamma: -4.0)
    assert {f.text for f in clf.top_features(row, "x", 10)} == {"alpha", "beta", "alpha beta"}


def test_binary_weights_are_signed_per_class():
    clf = EvidenceClassifier().fit(["great fun", "great movie", "boring plot", "boring movie"],
                                   ["pos", "pos", "neg", "neg"])
    assert clf.classes == ["neg", "pos"]
    assert np.allclose(clf.coef[0], -clf.coef[1])
    row = clf.transform(["great movie"])
    pos = {f.text: f.contribution for f in clf.top_features(row, "pos", 5)}
    neg = {f.text: f.contribution for f in clf.top_features(row, "neg", 5)}
    assert pos["great"] > 0 and neg["great"] == pytest.approx(-pos["great"])


def test_multilabel_one_vs_rest():
    texts = ["happy joy fun", "sad tears", "happy surprise wow", "angry shout", "joy fun"]
    labels = [["joy"], ["sadness"], ["joy", "surprise"], ["anger"], ["joy"]]
    clf = EvidenceClassifier().fit(texts, labels)
    assert clf.multilabel and clf.classes == ["anger", "joy", "sadness", "surprise"]
    feats = clf.top_features(clf.transform(["happy joy"]), "joy", 3)
    assert feats and all(f.contribution > 0 for f in feats)


@pytest.mark.parametrize("feature,text,expected", [
    ("stock", "The stock rose.", "stock"),
    ("stock", "Stocks rose.", None),                 # no partial words
    ("stock", "the livestock grew", None),           # word-boundary trap
    ("stock market", "the Stock  Market fell", "Stock  Market"),
    ("stock market", "stock-market news", "stock-market"),
    ("stock market", "stockmarket news", None),
    ("art", "a smart cart", None),
    ("2020", "in 20201 units", None),
])
def test_exact_matcher(feature, text, expected):
    m = exact_match(feature, Rationale(text))
    assert (m.text if m else None) == expected
    if m:
        assert text[m.start:m.end] == m.text


@pytest.mark.parametrize("feature,text,expected", [
    ("share", "investors sold their shares", "shares"),
    ("run", "the team ran hard", "ran"),
    ("study", "two studies found", "studies"),
    ("score goal", "they scored a big goal", None),  # not contiguous
    ("score goal", "they scored the goal", "scored the goal"),  # "the" is not in the stream (function word)
    ("score goal", "they scored goals", "scored goals"),
    ("stock", "livestock", None),
])
def test_token_matcher_uses_lemmas(feature, text, expected):
    m = token_match(feature, Rationale(text))
    assert (m.text if m else None) == expected


@pytest.mark.parametrize("feature,text,delta,expected", [
    ("economy", "the econmy grew", 0.2, "econmy"),            # 1 edit / 7 = 0.143
    ("economy", "the ecnmy grew", 0.2, None),                 # 2 edits / 7 = 0.286
    ("economy", "the ecnmy grew", 0.3, "ecnmy"),
    ("stock market", "the stok market fell", 0.2, "stok market"),
    ("team", "the teams won", 0.2, "teams"),                  # 1 / 5 = 0.2, within delta
    ("team", "a tame game", 0.2, None),
    ("economy", "economy", 0.0, "economy"),
])
def test_edit_matcher_window_and_delta(feature, text, delta, expected):
    m = edit_match(feature, Rationale(text), delta)
    assert (m.text if m else None) == expected
    if m:
        assert m.distance <= delta


def _inst(correct, s, c):
    return InstanceResult(item_id="i", gold=["a"], predicted="a" if correct else "b", correct=correct,
                          evaluated="a", coverage={"exact": {"support": s, "contradict": c}})


def test_coverage_aggregation_and_empty_set_rule():
    results = [_inst(True, 1.0, None), _inst(True, 0.5, 0.0), _inst(False, 0.0, 1.0), _inst(False, None, 0.5)]
    agg = aggregate(results, ("exact",), n_resamples=200, n_permutations=200)["exact"]
    # empty sets (None) are left out of the means, not counted as 0
    assert agg["correct"]["support"]["value"] == 0.75 and agg["correct"]["support"]["n"] == 2
    assert agg["correct"]["contradict"]["value"] == 0.0 and agg["correct"]["contradict"]["n"] == 1
    assert agg["incorrect"]["support"]["value"] == 0.0 and agg["incorrect"]["contradict"]["value"] == 0.75
    assert agg["correct"]["asymmetry"] == 0.75 and agg["incorrect"]["asymmetry"] == -0.75
    assert agg["asymmetry_difference"]["value"] == 1.5
    assert 0 < agg["asymmetry_difference"]["p_value"] <= 1


def test_run_evidence_coverage_per_instance():
    train = [Item(id=f"t{i}", input=t, target=y, answer_type="label") for i, (t, y) in enumerate([
        ("goal match team", "sports"), ("team coach goal", "sports"), ("market shares profit", "business"),
        ("profit bank market", "business")] * 3)]
    test = [Item(id="a", input="the team scored a goal", target="sports", answer_type="label"),
            Item(id="b", input="market profit fell", target="business", answer_type="label"),
            Item(id="c", input="team bank", target="sports", answer_type="label")]
    preds = {"a": Prediction("sports", "A goal by the team."), "b": Prediction("sports", "Nothing about sport."),
             "c": Prediction(None, "", "unparseable: no JSON object in the output")}
    scores, tables = run_evidence(train, test, preds, k=5, n_resamples=200, n_permutations=200,
                                  sweep_k=(1, 5), sweep_delta=(0.0, 0.2))
    inst = {i["item_id"]: i for i in tables["instances"]}
    assert inst["a"]["correct"] and inst["a"]["coverage"]["exact"]["support"] == 1.0
    assert not inst["b"]["correct"] and inst["b"]["evaluated"] == "sports"
    assert inst["c"]["evaluated"] is None and inst["c"]["coverage"] == {}
    assert tables["llm"] == {"model": "llm", "n": 3, "accuracy": 1 / 3, "unparseable": 1, "no_rationale": 0}
    assert tables["classifier"]["test_accuracy"] == pytest.approx(2 / 3) or tables["classifier"]["test_accuracy"] == 1.0
    assert {r["k"] for r in tables["sweep_k"]} == {1, 5} and len(tables["sweep_delta"]) == 2
    sup = [s for s in scores if s.metric == "coverage_support:exact" and s.item_id == "c"][0]
    assert sup.value is None and sup.reason.startswith("unparseable")


@pytest.mark.parametrize("text,label,reason", [
    ('{"label": "Sports", "rationale": "goal"}', "sports", None),
    ("Sure! {'label': 'business', 'rationale': 'profit'} hope that helps", "business", None),
    ('{"label": "weather", "rationale": "rain"}', None, "unparseable: label 'weather' is not one of"),
    ("The label is sports.", None, "unparseable: no JSON object"),
    ('{"label": __import__("os").getcwd(), "rationale": "x"}', None, "unparseable: the object is neither"),
    ('{"rationale": "x"}', None, "unparseable: no string 'label'"),
    ('{"label": "sports"}', "sports", "no rationale"),
])
def test_strict_prediction_parsing(text, label, reason):
    p = parse_prediction(text, ["business", "sports"])
    assert p.label == label
    assert (p.reason or None) == reason or (reason and p.reason.startswith(reason))


def test_prediction_file_errors(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "a", "label": "x", "rationale": "r"}) + "\n" + json.dumps({"label": "x"}) + "\n")
    with pytest.raises(DatasetError, match=r"p.jsonl:2: field 'id': missing field 'id'"):
        read_prediction_file(str(path))
    path.write_text(json.dumps({"id": "a", "why": "r"}) + "\n")
    with pytest.raises(DatasetError, match=r"p.jsonl:1: field 'label'"):
        read_prediction_file(str(path))


def test_end_to_end_with_mock_model_and_with_predictions_file(tmp_path):
    plan = parse_plan({
        "experiment": {"name": "ev", "seed": 3, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "mock", "options": {"accuracy": 0.7}}],
        "families": {"behavior": None, "evidence": {
            "train": {"name": "tr", "format": "topics", "size": 80, "split": "train"},
            "test": {"name": "te", "format": "topics", "size": 20, "split": "test"},
            "sweep_k": [3, 5], "sweep_delta": [0.1, 0.2], "n_permutations": 200}},
        "stats": {"n_resamples": 200},
    })
    summary = Runner(plan, show_progress=False).run()
    assert summary.calls_made == 20
    out = json.loads((tmp_path / "ev" / "summary.json").read_text())["evidence"]["mock"]
    assert out["llm"]["n"] == 20 and out["classifier"]["test_accuracy"] > 0.7
    assert set(out["coverage"]) == {"exact", "token", "edit", "edit_chars"}
    assert out["coverage"]["edit_chars"]["threshold"] == "absolute Levenshtein <= 1 character"
    assert out["settings"]["text_fields"] == ["input"] and out["settings"]["stop_words"] == "function_words"
    assert [r["delta_chars"] for r in out["sweep_delta_chars"]] == [1, 2, 3, 4, 5]
    html = (tmp_path / "ev" / "report.html").read_text()
    assert 'class="hl-support"' in html or 'class="hl-contradict"' in html
    lines = (tmp_path / "ev" / "evidence_instances.jsonl").read_text().splitlines()
    assert len(lines) == 20
    # the same predictions, given as a file, give the same coverage
    preds = tmp_path / "preds.jsonl"
    with preds.open("w") as fh:
        for line in lines:
            inst = json.loads(line)
            fh.write(json.dumps({"id": inst["item_id"], "label": inst["predicted"], "rationale": inst["rationale"],
                                 "model": "mock"}) + "\n")
    plan2 = plan.model_copy(deep=True)
    plan2.experiment.name = "ev2"
    plan2.families.evidence.predictions = str(preds)
    plan2.models = []
    assert Runner(plan2, show_progress=False).run().calls_made == 0
    out2 = json.loads((tmp_path / "ev2" / "summary.json").read_text())["evidence"]["mock"]
    assert out2["coverage"] == out["coverage"]
