"""The HTML report: rounding to what the CI supports, human column labels, table views with merged CIs,
summary cards, plots that are not drawn when there is nothing to draw, and escaping."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from reasonscope.attack.report_view import attack_card, attack_plot
from reasonscope.behavior.report_view import behavior_card, behavior_plots
from reasonscope.cli import app
from reasonscope.evidence.report_view import evidence_card
from reasonscope.information.report_view import information_card
from reasonscope.metric_specs import Catalogue
from reasonscope.registry import all_families
from reasonscope.report.html_tables import table_view
from reasonscope.report.labels import column_label, has_label, humanise
from reasonscope.report.numbers import ci_decimals, format_estimate, format_number, format_p

REPORTS = {f.name: f.report for f in all_families("summary")}
CATALOGUE = Catalogue.of(all_families())
FAMILIES = CATALOGUE.families

runner = CliRunner()


@pytest.mark.parametrize(("low", "high", "decimals"), [
    (0.79, 0.85, 2),        # half-width 0.03
    (0.5, 1.1, 1),          # 0.3
    (0.496, 0.504, 3),      # 0.004
    (990.0, 1030.0, 0),     # 20 (an Elo interval)
    (0.5, 0.5000001, 4),    # capped at 4
    (0.5, 0.5, None),       # degenerate: no information on precision
    (None, 0.5, None),
    (0.1, float("nan"), None),
])
def test_ci_decimals_follow_the_first_significant_digit_of_the_half_width(low, high, decimals):
    assert ci_decimals(low, high) == decimals


def test_format_estimate_rounds_value_and_bounds_alike():
    assert format_estimate(0.8234, 0.7912, 0.8511) == "0.82 [0.79, 0.85]"
    assert format_estimate(1012.3, 990.1, 1030.5, "Elo") == "1012 [990, 1030] Elo"
    assert format_estimate(-0.1234, -0.4, 0.2) == "-0.1 [-0.4, 0.2]"
    assert format_estimate(0.5, 0.5, 0.5) == "0.500 [0.500, 0.500]"  # degenerate CI: default decimals
    assert format_estimate(2, 1, 3) == "2 [1, 3]"  # a rank and its rank bounds stay whole
    assert format_estimate(0.25) == "0.250"
    assert format_estimate(None, 0.1, 0.2) == "n/a"
    assert format_estimate(-0.0001, -0.001, 0.001) == "0.000 [-0.001, 0.001]"  # never "-0.000"


def test_format_number_and_p():
    assert format_number(1234.567) == "1235" and format_number(12.345) == "12.3" and format_number(0.12345) == "0.123"
    assert format_number(7) == "7" and format_number(True) == "yes" and format_number(None) == "n/a"
    assert format_p(0.04567) == "0.046" and format_p(3e-7) == "3.0e-07" and format_p(None) == "n/a"


def test_catalogue_declares_every_family_once_with_labels_ranges_and_descriptions():
    keys = [(s.family, s.key) for s in CATALOGUE]
    assert len(keys) == len(set(keys)) and {s.family for s in CATALOGUE} == set(FAMILIES)
    for s in CATALOGUE:
        assert s.label and s.description and "_" not in s.label.split("(")[0], s
        assert s.range is None or s.range[0] < s.range[1]
    assert CATALOGUE.spec("attack", "success").higher_is_better is False  # more fragile reasoning
    assert CATALOGUE.spec("information", "REV").unit == "nats" and CATALOGUE.spec("information", "REV").range is None
    assert CATALOGUE.spec("attributes", "bt").unit == "Elo"
    with pytest.raises(KeyError, match="known: CQ, CS"):
        CATALOGUE.spec("behavior", "XX")
    with pytest.raises(KeyError, match="no metric 'XX' in family 'attack'"):
        REPORTS["attack"].spec("XX")


def test_column_labels():
    assert column_label("CQ", REPORTS["behavior"]) == "Correctness (CQ)"
    assert column_label("setting_max_features", REPORTS["evidence"]) == "Setting: max features"
    assert column_label("score", REPORTS["information"]) == "Score (nats)"
    assert column_label("bt", REPORTS["attributes"]) == "Bradley-Terry rating (Elo)"
    assert column_label("success", REPORTS["attack"]) == "Attack success rate"
    assert column_label("CQ") == "CQ"  # without its family a metric key has no catalogue label
    assert column_label("some_new_field") == "Some new field" == humanise("some_new_field")
    assert not has_label("some_new_field") and has_label("mean_mock-a", REPORTS["attributes"])


def test_table_view_merges_cis_counts_and_reasons_and_moves_settings_out():
    rows = [{"model": "a", "CQ": 0.8234, "CQ_low": 0.7912, "CQ_high": 0.8511, "CQ_n": 40, "CQ_failed": 2,
             "RS": None, "RS_low": None, "RS_high": None, "RS_n": 0, "RS_reason": "no paraphrases",
             "empty": None, "setting_k": 5, "p_value": 0.0123},
            {"model": "b", "CQ": 0.5, "CQ_low": 0.2, "CQ_high": 0.8, "CQ_n": 40, "CQ_failed": 0,
             "RS": 0.9, "RS_low": 0.85, "RS_high": 0.95, "RS_n": 10, "empty": None, "setting_k": 5, "p_value": 1.0}]
    v = table_view("t", rows, REPORTS["behavior"], "T", "Note.")
    assert v.headers == ["Model", "Correctness (CQ) [95% CI]", "Robustness (RS) [95% CI]", "p"]
    a, b = ([(c.text, c.sub) for c in row] for row in v.rows)
    assert a == [("a", ""), ("0.82 [0.79, 0.85]", "n=40; 2 failed"), ("n/a", "no paraphrases; n=0"), ("0.012", "")]
    # one rule per column: the CQ column is at 2 decimals (what a's CI supports), so b reads 0.50, not 0.5
    assert b[1:3] == [("0.50 [0.20, 0.80]", "n=40"), ("0.90 [0.85, 0.95]", "n=10")]
    assert v.settings == [("k", "5")]
    assert v.note.startswith("Note. Correctness (CQ): share of items") and "Robustness (RS):" in v.note
    assert table_view("t", [], REPORTS["behavior"], "T") is None


def test_plain_low_high_columns_belong_to_the_value_column():
    v = table_view("s", [{"model": "m", "attribute": "grammar", "value": 0.61, "low": 0.52, "high": 0.7, "n": 9}],
                   REPORTS["attributes"], "S")
    assert v.headers == ["Model", "Attribute", "Mean score [95% CI]", "n"]
    assert v.rows[0][2].text == "0.61 [0.52, 0.70]"  # half-width 0.09: 2 decimals


def _estimate(value, low=None, high=None, n=10, **kw):
    return {"value": value, "low": low, "high": high, "n": n, **kw}


def test_cards_show_the_headline_with_ci_n_backend_and_first_warnings():
    beh = {"metrics": {"m": {"CQ": _estimate(0.8234, 0.7912, 0.8511, 40)},
                       "z": {"CQ": _estimate(None, n=0, reason="no item answered")}},
           "backends": {"answer_matching": "typed", "nli": "none", "similarity": "embedding"},
           "warnings": ["w1", "w2 " + "x" * 300, "w3"]}
    c = behavior_card(beh)
    assert [(x.name, x.value, x.n) for x in c.lines] == [("m", "0.82 [0.79, 0.85]", "n=40"),
                                                         ("z", "n/a (no item answered)", "n=0")]
    assert "typed" in c.backend and len(c.warnings) == 3 and len(c.first_warnings) == 2
    assert c.first_warnings[1] == "w2 " + "x" * 300 and c.more_warnings == ["w3"]  # in full, never cut
    assert c.caveats == []  # 40 items: above FEW_ITEMS
    info = information_card({"absolute": {"rev": {"gold": _estimate(-0.5, -0.6, -0.4, 9)}}, "labels": ["a", "b"],
                             "accuracy": {"rev": {"gold": 0.0}}, "n_test": 9})
    assert info.caveats[0].startswith("these scores cannot mean much") and "REV 0.00" in info.caveats[0]
    assert "(chance 0.50)" in info.caveats[0] and info.caveats[1].startswith("only 9 test items")
    # a collapsed Phi_LA beside a working Phi: the LAREV numbers are named, the REV ones stay readable
    both = information_card({"absolute": {}, "labels": ["a", "b", "c"], "n_test": 300,
                             "accuracy": {"rev": {"gold": 0.83}, "larev": {"gold": 0.31}}})
    assert len(both.caveats) == 1 and both.caveats[0].startswith("the LAREV scores cannot mean much")
    assert "LAREV 0.31 of the test items (chance 0.33)" in both.caveats[0] and "REV 0.83" not in both.caveats[0]
    group = {"n": 5, "support": _estimate(0.4, 0.1, 0.7), "contradict": _estimate(0.1)}
    ev = evidence_card({"m": {"coverage": {"exact": {"correct": group}, "token": {"correct": group}}, "warnings": []}})
    assert ev.lines[0].value == "0.4 [0.1, 0.7]" and ev.lines[0].n == "n=5" and "matcher: token" in ev.backend
    rate = {"n": 0, "attacked": 2, "success": _estimate(None, n=0)}
    at = attack_card({"models": {"m": {"rates": {"token": rate}}}, "reasoning_check": "arithmetic only"})
    assert at.lines[0].value == "n/a (no decided attack)" and at.direction == "higher = more fragile reasoning"


def test_plots_with_nothing_to_draw_are_not_drawn_and_say_why(tmp_path):
    gaps: list[str] = []
    metrics = {"m": {k: _estimate(None, n=0, reason="r") for k in ("CQ", "CS", "RS", "LS", "ES", "SS")}}
    assert behavior_plots(metrics, tmp_path, gaps) == {} and "every metric is n/a" in gaps[0]
    rate = {"n": 0, "attacked": 1, "counts": {}}
    assert attack_plot({"models": {"m": {"rates": {"token": rate}}}}, tmp_path, gaps) == {}
    assert "no decided attack" in gaps[1] and not list(tmp_path.iterdir())


def test_every_sheet_shown_has_a_title_and_note_and_one_family():
    owners = [(key, r.name) for r in REPORTS.values() for key in r.tables]
    assert len({k for k, _ in owners}) == len(owners) == 32  # a sheet key belongs to one family
    for r in REPORTS.values():
        for key, table in r.tables.items():
            assert table.title and table.note.endswith("."), key


def test_report_page_has_cards_human_headers_and_escapes_every_value(tmp_path):
    evil_model = "<img src=x onerror=alert(1)>"
    path = tmp_path / "p.jsonl"
    rows = [{"id": str(i), "input": f"{i}+2?", "target": i + 2, "model": evil_model,
             "prediction": f"<script>alert('x')</script>\nAnswer: {i + 2 if i % 3 else i}"} for i in range(6)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = runner.invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "x"])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "x" / "report.html").read_text()
    assert html.count("<script>") == 1 and "<img src=x" not in html
    assert html.count("&lt;img src=x onerror=alert(1)&gt;") >= 3  # card, table, drill-down: all escaped
    assert html.count('class="card"') == 1 and "Correctness (CQ) · 95% CI · higher is better" in html
    headers = [re.sub(r" <span class=\"dir\".*", "", h) for h in re.findall(r"<th>(.*?)</th>", html)]
    assert '<span class="dir" title="higher is better">↑</span>' in html  # each metric header names its direction
    assert "Correctness (CQ) [95% CI]" in headers
    assert not [h for h in headers if re.search(r"[a-z]_[a-z]", h) and "ES_" not in h], headers
    assert "How computed." in html and "n=6" in html
    summary = json.loads((tmp_path / "x" / "summary.json").read_text())
    cq = summary["behavior"]["metrics"][evil_model]["CQ"]
    assert format_estimate(cq["value"], cq["low"], cq["high"]) in html


@pytest.mark.slow
def test_every_column_of_a_five_family_report_has_a_declared_label(five_family_run):
    from reasonscope.storage.run_data import load_run_data
    from reasonscope.storage.store import Store

    store = Store.open_existing(five_family_run)
    try:
        run_id = load_run_data(store, store.runs()[0]["run_id"]).run["run_id"]
        sheets = _sheets(store, run_id)
    finally:
        store.close()
    owner = {key: r for r in REPORTS.values() for key in r.tables}
    shown = {key: rows for key, rows in sheets.items() if key in owner and rows}
    assert {owner[k].name for k in shown} == set(FAMILIES)
    missing = sorted({(owner[k].name, col) for k, rows in shown.items() for row in rows for col in row
                      if not has_label(col, owner[k]) and not col.endswith(("_low", "_high", "_n", "_failed",
                                                                                    "_reason", "_left_out"))
                      and col not in ("low", "high")})
    strategies = {r["strategy"] for r in sheets["strategy_weights"]}  # columns named after the strategies
    assert [m for m in missing if m[1] not in strategies] == []
    html = (five_family_run / "report.html").read_text()
    assert html.count('class="card"') == 5 and "setting_" not in html.split('<section class="cards">')[1].split(
        "<h2 id=\"items\">")[0]


def _sheets(store, run_id):
    def art(name):
        return json.loads(store.artefact(run_id, f"{name}.json"))

    return {k: v for r in REPORTS.values() for k, v in r.sheets(art(r.name)).items()}


def test_a_family_without_a_template_gets_the_generic_section_card_and_table():
    """The page names no family: a report part with no partial template shows a heading, its table, its card."""
    import io

    from reasonscope.metric_specs import declare
    from reasonscope.report.cards import Card, estimate_line, family_cards
    from reasonscope.report.html import family_tables, stream_html
    from reasonscope.report.view import FamilyReport, Table

    class ToyReport(FamilyReport):
        name, title = "toy", "Toy <family>"
        metrics = declare("toy", ("share", "Toy share", "share of toy items", {"higher_is_better": False}))
        tables = {"toy_rows": Table("Toy rows", "One row per model.")}

        def sheets(self, t):
            return {"toy_rows": [{"model": m, "share": v} for m, v in t["share"].items()]}

        def card(self, t):
            lines = [estimate_line(m, {"value": v, "low": None, "high": None, "n": 4}) for m, v in t["share"].items()]
            return Card(self.name, self.title, self.name, self.spec("share").label, self.direction("share"), lines, "")

    toy, t = ToyReport(), {"share": {"m1": 0.25}}
    sheets = toy.sheets(t)
    assert [v.title for v in family_tables(sheets, [toy])["toy"]] == ["Toy rows"]
    (card,) = family_cards({"toy": t, "other": t}, [toy])  # a family not given has no card
    assert (card.headline, card.direction, card.lines[0].value) == ("Toy share", "lower is better", "0.250")
    out = io.StringIO()
    run = {"run_id": "r", "kind": "run", "status": "finished", "seed": 0, "git_hash": None, "versions": {}}
    stream_html(out, run, {"toy": t}, iter(()), sheets, {}, reports=[toy])
    page = out.getvalue()
    assert '<h2 id="toy">Toy &lt;family&gt;</h2>' in page and 'id="card-toy"' in page
    assert '<table id="tab-toy_rows">' in page and "Toy share <span class=\"dir\" title=\"lower is better\">" in page
    assert 'id="behavior"' not in page  # no section for a family that is not given
