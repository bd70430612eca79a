"""What a researcher pastes from: merged identical matchers, the relabellings a test drew, p-values and
small numbers as text, placeholder rationales, catalogue labels, help text, the items sheet's variants."""

from __future__ import annotations

from reasonscope.attributes.catalogue import attribute_label
from reasonscope.cli.root import unwrap_help
from reasonscope.evidence.report_view import merged_matchers, merged_sweep, relabellings
from reasonscope.evidence.scoring import echoes_placeholder, parse_prediction
from reasonscope.report.item_sheet import ItemScoreSheet
from reasonscope.report.numbers import format_number, format_p
from reasonscope.report.plots import text_colour
from reasonscope.report.spreadsheets import flatten


def _tab(support, threshold=""):
    est = {"value": support, "low": None, "high": None, "n": 3}
    group = {"n": 3, "support": est, "contradict": est, "asymmetry": 0.0}
    return {"correct": group, "incorrect": group, "asymmetry_difference": {"p_value": 0.5}, "threshold": threshold}


def test_identical_matchers_are_one_entry_with_their_thresholds():
    cov = {"exact": _tab(0.2), "token": _tab(0.2), "edit": _tab(0.2, "<= 0.2"), "edit_chars": _tab(0.4, "<= 1")}
    merged = merged_matchers(cov)
    assert list(merged) == ["exact = token = edit", "edit_chars"]
    assert merged["exact = token = edit"]["threshold"] == "edit: <= 0.2" and merged["edit_chars"]["threshold"] == "<= 1"
    rows = [{"k": k, "matcher": m, "threshold": "", "support_correct": v}
            for k in (5, 3) for m, v in (("exact", 0.1 * k), ("token", 0.1 * k), ("edit", 0.2))]
    assert [(r["k"], r["matcher"]) for r in merged_sweep(rows, "k")] == [(3, "exact = token"), (3, "edit"),
                                                                         (5, "exact = token"), (5, "edit")]


def test_the_relabellings_column_says_what_the_test_drew():
    exact = {"test": "two-group label permutation test, two-sided, exact (all 792 relabellings)", "n_permutations": 2000,
             "p_value": 0.5}
    assert relabellings(exact) == "exact: all 792"
    assert relabellings({"test": "two-group label permutation test, Monte Carlo", "n_permutations": 2000,
                         "p_value": 0.3}) == "Monte Carlo: 2000"
    assert relabellings({"test": "undefined (a group has no coverage)", "n_permutations": 200, "p_value": None}) == \
        "none (test undefined)"


def test_p_values_never_show_a_bare_one_and_small_numbers_keep_their_digit():
    assert [format_p(p) for p in (1.0, 0.5, 0.046, 3e-07)] == ["1.0", "0.50", "0.046", "3.0e-07"]
    assert [format_number(x) for x in (0.0005, 0.00012, 0.0, 0.5)] == ["0.0005", "0.0001", "0.000", "0.500"]


def test_a_rationale_echoing_the_prompt_placeholder_is_no_rationale():
    labels = ["sports", "politics"]
    echo = parse_prediction('{"label": "sports", "rationale": "<one or two sentences on which words…>"}', labels)
    assert (echo.label, echo.rationale) == ("sports", "") and "placeholder" in echo.reason
    bare = parse_prediction('{"label": "sports", "rationale": "<rationale>"}', labels)
    assert bare.rationale == "" and bare.reason.startswith("no rationale")
    real = parse_prediction('{"label": "sports", "rationale": "The words goal and match point to sports."}', labels)
    assert real.rationale and real.reason is None
    assert echoes_placeholder("One or two sentences on which words of the text led to the label")
    assert not echoes_placeholder("It is one of the labels given: sports")  # a 4-word placeholder never matches


def test_labels_help_colours_and_metadata_are_readable():
    assert attribute_label("self_consistency") == "Self-consistency"
    assert attribute_label("hallucination") == "No hallucination (1 = none)"
    assert attribute_label("auto.perplexity_chain").startswith("Fluency (automatic")
    assert attribute_label("judge.new_thing") == "New thing"
    assert unwrap_help("First line.\n\nIt holds the lock\nwhile it writes.\n\n- a\n- b") == \
        "First line.\n\nIt holds the lock while it writes.\n\n- a\n- b"
    assert text_colour((0.03, 0.19, 0.42, 1)) == "white" and text_colour((0.97, 0.98, 1.0, 1)) == "black"
    assert flatten({"a": {"b": [1, 2], "c": [{"d": None}]}, "e": {}}) == [("a.b", "1, 2"), ("a.c[0].d", None),
                                                                          ("e", "(none)")]


def test_the_items_sheet_keeps_variants_out_of_the_model_column():
    scores = [("behavior", "CQ", "m1", "i1", 1.0), ("information", "rev", "gold", "t1", 0.5)]
    rows = list(ItemScoreSheet(scores, models=["m1"]))
    assert rows == [{"model": "m1", "variant": None, "item": "i1", "behavior.CQ": 1.0},
                    {"model": None, "variant": "gold", "item": "t1", "information.rev": 0.5}]


def test_the_demo_report_carries_its_caveats_and_other_runs_do_not():
    from reasonscope.report.build import demo_caveats

    summary = {"information": {"absolute": {}}}
    demo = {"config": {"experiment": {"name": "demo"}, "models": [{"spec": "smollm2"}]}}
    assert demo_caveats(demo, summary) == [
        "information: REV and LAREV on a MiniLM encoder-decoder trained for a few epochs on 60 synthetic items: a "
        "smoke test that the training and the variant tables run, not a valid REV estimate."]
    other = {"config": {"experiment": {"name": "demo"}, "models": [{"spec": "mock/reasoner"}]}}
    assert demo_caveats(other, summary) == []
