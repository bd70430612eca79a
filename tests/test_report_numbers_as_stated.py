"""Every printed number as the statistics say: n = 1 intervals in every output, Holm over distinct tests,
one rounding rule per column across terminal, page, workbook, csv, markdown and LaTeX, the cards' cautions,
left-out models, and the compact end-of-run summary."""

from __future__ import annotations

import csv
import io

import pytest
from rich.console import Console

from reasonscope.attack.printer import print_summary as print_attack
from reasonscope.attack.report_view import REPORT as ATTACK
from reasonscope.attack.report_view import attack_card, attack_sheets
from reasonscope.attributes.report_view import attributes_card
from reasonscope.behavior.printer import print_summary as print_behavior
from reasonscope.behavior.report_view import REPORT as BEHAVIOR
from reasonscope.report.cards import family_cards
from reasonscope.report.columns import round_columns
from reasonscope.report.compact import compact_lines
from reasonscope.report.html_tables import table_view
from reasonscope.report.numbers import column_decimals, format_column
from reasonscope.report.paper import latex_table, markdown_table
from reasonscope.report.spreadsheets import number_format, write_csvs
from reasonscope.stats.bootstrap import bootstrap_mean


def _share(values):
    return bootstrap_mean(values).as_dict()


def _attack(success_values):
    decided = len(success_values)
    rate = {"attacked": decided, "n": decided, "counts": {"clean_wrong": 0, "not_judged": 0, "invalid": 0},
            "success": _share(success_values), "wrong": _share([0.0] * decided),
            "unattackable": _share([1.0 - v for v in success_values])}
    return {"reasoning_check": "arithmetic", "direction": "higher success = more fragile reasoning",
            "models": {"m": {"items": 3, "answered_correctly": 1, "rates": {"embedding": rate},
                             "seconds_per_item": {"embedding": 2.0}, "insertion": {}, "rows": []}},
            "skipped_models": {"api-model": "api-model: attacks need a white-box model (hf/... or smollm2)"},
            "warnings": []}


def test_a_share_of_one_item_has_its_exact_interval_in_every_output():
    t = _attack([1.0])
    assert t["models"]["m"]["rates"]["embedding"]["success"]["low"] == pytest.approx(0.025)
    # terminal
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    print_attack(t, out, err)
    assert "1.0 [0.03, 1.0]" in out.export_text()  # never "1.000 n=1" without its interval, nor [0.0, ...]
    # the card
    card = family_cards({"attack": t}, [ATTACK])[0]
    assert "[" in card.lines[0].value and card.lines[0].n == "n=1"
    # workbook / csv rows, and the page's, markdown's and LaTeX's cell (one text for all)
    rows = round_columns(attack_sheets(t)["attack_rates"])
    assert rows[0]["success_low"] == 0.03 and rows[0]["success_high"] == 1.0
    text = rows[0]["success_text"]
    assert text == "1.0 [0.03, 1.0]"
    view = table_view("attack_rates", rows, ATTACK, "Outcome rates")
    assert text in [c.text for c in view.rows[0]]
    assert text in markdown_table(view) and text in latex_table(view)


def test_left_out_models_reach_the_card_and_the_compact_summary():
    t = _attack([1.0, 0.0])
    card = attack_card(t)
    cards = family_cards({"attack": t}, [ATTACK])
    assert cards[0].warnings[0] == "left out api-model: attacks need a white-box model (hf/... or smollm2)"
    assert not card.warnings  # the plain card builder has none: family_cards adds them
    lines = compact_lines({"attack": t, "left_out": {"attack": t["skipped_models"]}}, [ATTACK])
    assert any("api-model" in line and "left out" in line and "white-box" in line for line in lines)
    row = next(line for line in lines if "| m · embedding" in line)
    assert "↓" in row and "| 2 |" in row  # attack success: lower is better, n = decided attacks


def test_one_rounding_rule_per_column_everywhere():
    wide = {"value": 0.9, "low": 0.6, "high": 1.0, "n": 10}  # half-width 0.2: 1 decimal alone
    tight = {"value": 0.7712, "low": 0.6833, "high": 0.8211, "n": 100}  # 0.069: 2 decimals
    assert column_decimals([(0.9, 0.6, 1.0), (0.7712, 0.6833, 0.8211)]) == 2
    assert format_column([wide, tight]) == ["0.90 [0.60, 1.00]", "0.77 [0.68, 0.82]"]
    assert column_decimals([(1007.4, None, None), (986.1, None, None)]) == 0  # Elo: 1007 beside 986, not 986.1
    # the behaviour terminal table and the page show the same text for the same column
    metrics = {m: {k: {"value": None, "low": None, "high": None, "n": 0, "reason": "x"} for k in
                   ("CQ", "CS", "RS", "LS", "ES", "SS")} for m in ("a", "b")}
    metrics["a"]["CQ"], metrics["b"]["CQ"] = wide, tight
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    print_behavior({"metrics": metrics, "settings": {}}, out, err)
    terminal = out.export_text()
    assert "0.90 [0.60, 1.00]" in terminal and "0.9 [0.6, 1.0]" not in terminal
    rows = round_columns([{"model": "a", "CQ": 0.9, "CQ_low": 0.6, "CQ_high": 1.0},
                          {"model": "b", "CQ": 0.7712, "CQ_low": 0.6833, "CQ_high": 0.8211}])
    assert [r["CQ_text"] for r in rows] == ["0.90 [0.60, 1.00]", "0.77 [0.68, 0.82]"]
    assert rows[0]["CQ"] == 0.9 and rows[1]["CQ_low"] == 0.68
    # the workbook: one format per column, whole values too (1.00 beside 0.60)
    assert number_format("CQ", [r["CQ_high"] for r in rows]) == "0.00"
    assert number_format("items", [3, 15]) == "0" and number_format("p_value", [0.01]) is None


def test_empty_tables_get_no_csv_but_are_listed(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "attributes_hostile.csv").write_text("\n")  # a previous run's newline-only file
    write_csvs(tmp_path / "tables", {"attributes_hostile": [], "scores": [{"a": 1}]})
    assert not (tmp_path / "tables" / "attributes_hostile.csv").exists()
    index = list(csv.DictReader(io.StringIO((tmp_path / "tables" / "index.csv").read_text())))
    assert index == [{"table": "attributes_hostile", "rows": "0", "file": ""},
                     {"table": "scores", "rows": "1", "file": "scores.csv"}]


def _attributes(alpha: dict[str, float]) -> dict:
    score = lambda v, n: {"value": v, "low": v - 0.1, "high": v + 0.1, "n": n}  # noqa: E731
    return {"scores": {"m1": {"correctness": score(0.5, 13)}, "m2": {"correctness": score(0.6, 15)}},
            "judges": ["j1", "j2"], "scale": "0-10", "n_targets": 28, "warnings": [],
            "agreement": {a: {"krippendorff_alpha": v} for a, v in alpha.items()}}


def test_attributes_card_cautions_on_its_own_n_and_on_judges_that_disagree():
    card = attributes_card(_attributes({"correctness": 0.9}))
    # n=13 and 15 per line: few items, whatever the 28 judged answers of both models together
    assert any("only 13 judged answers per model" in c for c in card.caveats)
    assert not any("disagree" in c for c in card.caveats)
    card = attributes_card(_attributes({"correctness": -0.30, "grammar": 0.29, "plausibility": 0.8}))
    disagree = next(c for c in card.caveats if "disagree" in c)
    assert "alpha -0.30 to 0.29 on 2 of 3 attributes" in disagree and "0.667" in disagree


def test_markdown_and_latex_tables_name_direction_and_n():
    rows = [{"model": "a", "CQ": 0.5, "CQ_low": 0.3, "CQ_high": 0.8, "CQ_n": 15},
            {"model": "b_x", "CQ": 0.9, "CQ_low": 0.6, "CQ_high": 1.0, "CQ_n": 15}]
    view = table_view("raw_metrics", rows, BEHAVIOR, "Behaviour & metrics")
    md = markdown_table(view)
    header = md.splitlines()[2]
    assert "Correctness (CQ) [95% CI] ↑, n=15" in header
    assert "|:----" in md.splitlines()[3] and "---:|" in md.splitlines()[3]  # text left, numbers right
    assert len({len(line) for line in md.splitlines()[2:6]}) == 1  # aligned
    tex = latex_table(view)
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex and r"$\uparrow$" in tex
    assert r"Behaviour \& metrics" in tex and r"b\_x" in tex and r"\begin{tabular}{lr}" in tex


def test_holm_counts_identical_evidence_matchers_once():
    from reasonscope.evidence.scoring import InstanceResult, aggregate

    def inst(correct, s, c, other):
        return InstanceResult(item_id="i", gold=["a"], predicted="a" if correct else "b", correct=correct,
                              evaluated="a", coverage={"exact": {"support": s, "contradict": c},
                                                       "token": {"support": s, "contradict": c},
                                                       "edit": {"support": other, "contradict": c}})

    results = [inst(True, 1.0, 0.0, 0.5), inst(True, 0.5, 0.0, 1.0), inst(False, 0.0, 1.0, 0.0),
               inst(False, 0.0, 0.5, 0.5)]
    agg = aggregate(results, ("exact", "token", "edit"), n_resamples=100, n_permutations=200)
    p = {m: agg[m]["asymmetry_difference"]["p_value"] for m in agg}
    adjusted = {m: agg[m]["asymmetry_difference"]["p_adjusted"] for m in agg}
    assert p["exact"] == p["token"] and adjusted["exact"] == adjusted["token"]
    # exact = token is one test (one merged row): m = 2 distinct tests, not 3
    assert "over the 2 distinct tests" in agg["exact"]["asymmetry_difference"]["p_adjust"]
    low, high = sorted((p["exact"], p["edit"]))
    expected = {p["exact"]: min(1.0, 2 * low) if p["exact"] == low else max(min(1.0, 2 * low), high)}
    assert adjusted["exact"] == pytest.approx(expected[p["exact"]])


def test_plots_never_clip_text_and_keep_the_two_widths(tmp_path):
    from PIL import Image

    from reasonscope.attributes.catalogue import attribute_label
    from reasonscope.behavior.report_view import grouped_bars
    from reasonscope.report.plots import CLIPPED, FULL, ci_bars, clipped_texts, pyplot, save, tall

    plt = pyplot()
    attrs = ["hallucination", "repetition", "self_consistency", "auto.faithfulness", "auto.word_repetition"]
    series = {m: {a: {"value": 0.5, "low": 0.4, "high": 0.6} for a in attrs} for m in ("mock-70", "mock-90")}
    fig, ax = plt.subplots(figsize=tall(len(attrs), 2))
    ci_bars(ax, attrs, series, horizontal=True, labels=[attribute_label(a) for a in attrs])
    ax.set_xlabel("mean score (0-1, higher is better; 95% CI) " * 2)
    ax.set_title("Per-attribute ratings of every model, with their intervals (higher is better)")
    ax.legend()
    fig.canvas.draw()
    assert clipped_texts(fig)  # as drawn before save: the long label crosses the edge
    save(fig, tmp_path / "a.png")
    assert CLIPPED["a.png"] == [] and Image.open(tmp_path / "a.png").size[0] == 560
    wide, ax = plt.subplots(figsize=(8, 6))  # a third-party plot's own size (SHAP: 800 px)
    ax.plot([0, 1], [0, 1])
    save(wide, tmp_path / "shap.png")
    assert Image.open(tmp_path / "shap.png").size[0] == FULL[0] * 100
    metrics = {"m": {k: {"value": 0.0 if k == "CQ" else None, "low": 0.0, "high": 0.3} for k in
                     ("CQ", "CS", "RS", "LS", "ES", "SS")}}
    fig_path = grouped_bars(metrics, tmp_path / "bars.png")
    assert CLIPPED[fig_path.name] == []
