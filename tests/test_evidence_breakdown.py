"""reasonscope.evidence.breakdown: hand-computed label shares, per-class asymmetry, stratified test, clusters, nulls."""

from __future__ import annotations

import pytest

from reasonscope.evidence import breakdown as b

CLASSES = ["contradiction", "entailment", "neutral"]


def _row(item_id, gold, predicted, support, contradict):
    return {"item_id": item_id, "gold": [gold], "predicted": predicted, "correct": predicted == gold,
            "evaluated": predicted, "coverage": {"exact": {"support": support, "contradict": contradict}}}


# correct: a, c; incorrect: b, d, e; f has no label (not scored)
ROWS = [_row("a", "entailment", "entailment", 1.0, 0.0), _row("b", "entailment", "neutral", 0.5, 0.5),
        _row("c", "neutral", "neutral", 0.5, 0.25), _row("d", "neutral", "entailment", 0.0, 1.0),
        _row("e", "contradiction", "entailment", None, 0.5), _row("f", "contradiction", None, None, None)]


def test_label_distribution_counts_unparseable_and_the_constant_predictor():
    d = b.label_distribution(ROWS, CLASSES)
    assert d["predicted"] == {"contradiction": 0, "entailment": 3, "neutral": 2, "(unparseable)": 1}
    assert d["predicted_share"]["entailment"] == pytest.approx(0.5)
    assert d["gold"] == {"contradiction": 2, "entailment": 2, "neutral": 2}
    assert d["accuracy"] == pytest.approx(2 / 6)
    assert (d["majority_label"], d["majority_accuracy"]) == ("contradiction", pytest.approx(2 / 6))  # tie: first


def test_by_gold_class_separates_the_classes():
    rows = {r["gold"]: r for r in b.by_gold_class(ROWS, "exact")}
    assert rows["entailment"]["difference"] == pytest.approx(1.0)  # A(a) = 1 - 0, A(b) = 0.5 - 0.5
    assert rows["neutral"]["difference"] == pytest.approx(1.25)  # A(c) = 0.25, A(d) = -1
    assert rows["contradiction"]["n"] == 1 and rows["contradiction"]["difference"] is None  # no correct one
    assert rows["neutral"]["asymmetry_all"] == pytest.approx(0.25 - 0.625)


def test_overall_halves_and_the_stratified_difference():
    ci = b.cluster_intervals(ROWS, "exact", n_resamples=200)
    assert ci["support_difference"]["value"] == pytest.approx(0.75 - 0.25)
    assert ci["contradict_difference"]["value"] == pytest.approx(0.125 - 2 / 3)
    assert ci["difference"]["value"] == pytest.approx(0.625 + 5 / 12)
    # weights n_k / sum n_k over the classes where D_k is defined: entailment 2, neutral 2
    assert b.stratified_difference(ROWS, "exact") == pytest.approx((2 * 1.0 + 2 * 1.25) / 4)


def test_stratified_permutation_only_swaps_within_a_class():
    # four equally likely within-class relabellings: D_strat 1.125, 0.125, -0.125, -1.125; two as extreme
    st = b.stratified_permutation_test(ROWS, "exact", n_permutations=4000, seed=1)
    assert st["value"] == pytest.approx(1.125)
    assert st["classes_used"] == ["entailment", "neutral"]
    assert st["p_value"] == pytest.approx(0.5, abs=0.03)


def _many(n_items: int, copies: int) -> tuple[list[dict], dict[str, str]]:
    rows, clusters = [], {}
    for i in range(n_items):
        gold = CLASSES[i % 3]
        pred = gold if i % 2 else CLASSES[(i + 1) % 3]
        for c in range(copies):
            rows.append(_row(f"{i}-{c}", gold, pred, (i * 7 % 10) / 10, (i * 3 % 10) / 10))
            clusters[f"{i}-{c}"] = f"premise {i}"
    return rows, clusters


def test_clusters_are_resampled_whole():
    base, _ = _many(60, 1)
    copied, clusters = _many(60, 3)
    alone = b.cluster_intervals(base, "exact", n_resamples=400, seed=3)
    whole = b.cluster_intervals(copied, "exact", clusters, n_resamples=400, seed=3)
    naive = b.cluster_intervals(copied, "exact", n_resamples=400, seed=3)
    assert (whole["n"], whole["n_clusters"]) == (180, 60)
    # three copies of each item in one cluster carry no more information than the item once
    assert (whole["difference"]["low"], whole["difference"]["high"]) == pytest.approx(
        (alone["difference"]["low"], alone["difference"]["high"]))
    width = whole["difference"]["high"] - whole["difference"]["low"]
    assert naive["difference"]["high"] - naive["difference"]["low"] < 0.75 * width  # copies taken as independent


def _predictions():
    return [{"id": f"p{i}", "label": CLASSES[i % 3], "rationale": f"r{i}", "model": "m"} for i in range(9)] + [
        {"id": "bad", "output": "", "model": "m"}]


def test_shuffle_rationales_moves_each_rationale_to_another_cluster():
    preds = _predictions()
    clusters = {f"p{i}": f"P{i // 3}" for i in range(9)}
    out = b.shuffle_rationales(preds, clusters, seed=2)
    assert [p.get("label") for p in out] == [p.get("label") for p in preds]
    assert sorted(p["rationale"] for p in out[:9]) == sorted(p["rationale"] for p in preds[:9])
    origin = {p["rationale"]: p["id"] for p in preds[:9]}
    assert all(clusters[origin[p["rationale"]]] != clusters[p["id"]] for p in out[:9])
    assert out[9] == preds[9]
    with pytest.raises(ValueError, match="a cluster holds 5 of 9 rows"):
        b.shuffle_rationales(preds, {f"p{i}": "P" if i < 5 else f"Q{i}" for i in range(9)})


def test_shuffle_labels_keeps_the_distribution_and_the_rationales():
    preds = _predictions()
    out = b.shuffle_labels(preds, seed=5)
    assert sorted(p["label"] for p in out[:9]) == sorted(p["label"] for p in preds[:9])
    assert [p["label"] for p in out[:9]] != [p["label"] for p in preds[:9]]
    assert [p.get("rationale") for p in out] == [p.get("rationale") for p in preds]
