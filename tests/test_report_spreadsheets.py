"""results.xlsx and tables/*.csv: third-party text is never a formula, and any character is stored."""

from __future__ import annotations

import csv
import json
import re

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.report.spreadsheets import CSV_TRIGGERS, write_csvs, write_xlsx

runner = CliRunner()

HOSTILE = ["=cmd|' /C calc'!A0", "=HYPERLINK(\"http://evil.example\",\"click\")", "+1+1", "-5", "-2+3", "@SUM(A1)",
           "\t=1", "\r=1", "http://evil.example/x"]
C0 = [chr(i) for i in range(32)]


def ooxml_text(value: str) -> str:
    """The text an ``_xHHHH_``-escaped cell string stands for (the file format's escape)."""
    return re.sub(r"_x([0-9A-Fa-f]{4})_", lambda m: chr(int(m.group(1), 16)), value)


def cells(path):
    wb = load_workbook(path)
    return [(ws.title, c) for ws in wb.worksheets for row in ws.iter_rows() for c in row if c.value is not None]


def test_no_text_becomes_a_formula_and_every_control_character_is_kept(tmp_path):
    texts = HOSTILE + [f"a{ch}b" for ch in C0] + ["".join(C0), "_x0041_ literal"]
    rows = [{"model": t, "text": t, "n": i, "x": -0.5, "ok": i % 2 == 0, "missing": None, "nan": float("nan"),
             "obj": {"k": t}} for i, t in enumerate(texts)]
    path = write_xlsx(tmp_path / "r.xlsx", {"hostile": rows, "empty": []}, {"note": "=1+1", "cfg": {"a": [1, 2]}})
    found = cells(path)
    assert not [c.coordinate for _, c in found if c.data_type == "f"], "a cell became a formula"
    sheet = load_workbook(path)["hostile"]
    header = [c.value for c in sheet[1]]
    got = [dict(zip(header, (c.value for c in row), strict=True)) for row in sheet.iter_rows(min_row=2)]
    assert [ooxml_text(r["text"]) for r in got] == texts  # every text kept, as text
    assert all(sheet.cell(row=i + 2, column=1).data_type == "s" for i in range(len(texts)))
    assert [r["n"] for r in got] == list(range(len(texts)))  # numbers stay numbers
    assert {r["x"] for r in got} == {-0.5} and got[0]["ok"] is True and got[1]["ok"] is False
    assert got[0]["missing"] is None and got[0]["nan"] == "nan"
    assert json.loads(ooxml_text(got[0]["obj"])) == {"k": texts[0]}
    meta = {r[0].value: r[1].value for r in load_workbook(path)["metadata"].iter_rows()}
    assert meta == {"key": "value", "note": "=1+1", "cfg.a": "1, 2", "tables without rows (no sheet)": "empty"}


def test_workbook_layout_freezes_filters_sizes_and_formats(tmp_path):
    rows = [{"model": "mock-a", "value": 0.123456, "n": 12, "p_value": 3e-07, "note": "x" * 200},
            {"model": "b", "value": 1.0, "n": 3, "p_value": 0.25, "note": "short"}]
    meta = {"run_id": "r1", "config": {"models": [{"name": "m", "spec": "mock/reasoner"}], "stats": {"seed": 7}},
            "notes": {"phase_seconds": {}}}
    wb = load_workbook(write_xlsx(tmp_path / "r.xlsx", {"scores": rows, "hostile": [], "transfer": []}, meta))
    assert wb.sheetnames == ["scores", "metadata"]  # no sheet holds only "(no rows)"
    ws = wb["scores"]
    assert ws.freeze_panes == "B2" and ws.auto_filter.ref == "A1:E3"
    assert [c.value for c in ws[1]] == ["model", "value", "n", "p_value", "note"] and ws["A1"].font.b
    assert ws["B2"].number_format == "0.0000" and ws["B2"].value == 0.123456  # shown with 4 decimals, kept whole
    # one format per column: the whole 1.0 beside 0.1235 reads 1.0000, never General "1"; counts are whole
    assert ws["B3"].number_format == "0.0000" and ws["C2"].number_format == "0"
    assert ws["D2"].number_format == "General" and ws["D2"].value == 3e-07  # a p-value never reads 0.0000
    widths = {k: ws.column_dimensions[k].width for k in "ABCDE"}
    assert widths["A"] == pytest.approx(8, abs=1) and widths["E"] == pytest.approx(60, abs=1)  # capped at 60
    kv = {r[0]: r[1] for r in wb["metadata"].iter_rows(min_row=2, values_only=True)}
    assert kv == {"run_id": "r1", "config.models[0].name": "m", "config.models[0].spec": "mock/reasoner",
                  "config.stats.seed": 7, "notes.phase_seconds": "(none)",
                  "tables without rows (no sheet)": "hostile, transfer"}
    assert wb["metadata"].freeze_panes == "A2"


def test_csv_cells_starting_like_a_formula_get_a_quote(tmp_path):
    rows = [{"text": t, "n": -5, "x": -0.25} for t in HOSTILE + ["plain", "'quoted", "a=b"]]
    paths = write_csvs(tmp_path / "tables", {"t": rows})
    with paths["t"].open(newline="", encoding="utf-8") as fh:
        back = list(csv.DictReader(fh))
    for row, original in zip(back, rows, strict=True):
        expected = "'" + original["text"] if original["text"].startswith(CSV_TRIGGERS) else original["text"]
        assert row["text"] == expected
        assert (row["n"], row["x"]) == ("-5", "-0.25")  # numbers are not prefixed
    assert back[3]["text"] == "'-5"  # a numeric-looking *string* is text, so it is neutralised too


@pytest.fixture()
def hostile_predictions(tmp_path):
    path = tmp_path / "preds.jsonl"
    names = ["=cmd|' /C calc'!A0", "m\x1b[31mred\x1b[0m", "=HYPERLINK(\"http://x\")", "ctl" + "".join(C0[1:])]
    with path.open("w", encoding="utf-8") as fh:
        for m in names:
            for i in range(3):
                fh.write(json.dumps({"id": f"q{i}", "input": f"What is {i}+1?", "target": i + 1, "model": m,
                                     "prediction": f"=1+{i}\x1b[0m Answer: {i + 1}"}) + "\n")
    return path, names


def test_score_writes_inert_workbook_and_tables(tmp_path, hostile_predictions):
    path, names = hostile_predictions
    res = runner.invoke(app, ["score", "--input", str(path), "--output-dir", str(tmp_path), "--name", "hostile"])
    assert res.exit_code == 0, res.output
    run_dir = tmp_path / "hostile"
    found = cells(run_dir / "results.xlsx")
    assert found and not [(s, c.coordinate) for s, c in found if c.data_type == "f"]
    models = {ooxml_text(c.value) for s, c in found if s == "raw_metrics" and c.column == 1 and c.row > 1}
    assert models == set(names)
    with (run_dir / "tables" / "raw_metrics.csv").open(newline="", encoding="utf-8") as fh:
        csv_models = {r["model"] for r in csv.DictReader(fh)}
    assert csv_models == {("'" + n if n.startswith(CSV_TRIGGERS) else n) for n in names}
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text(encoding="utf-8").split("\n")
               if line]
    assert {r["model"] for r in samples} == set(names)  # the JSONL keeps every text exactly
