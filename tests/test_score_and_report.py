"""`reasonscope score` round trip, mapping errors, bad rows; report outputs and the CLI."""

from __future__ import annotations

import csv
import json

import pytest
import yaml
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.data.loaders import DatasetError
from reasonscope.data.predictions import parse_mapping, read_predictions
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan

runner = CliRunner()


def make_run(tmp_path, name="gen", **behavior):
    plan = parse_plan({
        "experiment": {"name": name, "seed": 2, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "a", "max_tokens": 40, "options": {"accuracy": 0.6}},
                   {"spec": "mock/reasoner", "name": "b", "max_tokens": 40, "options": {"accuracy": 0.9}}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 3}],
        "families": {"behavior": {"samples": 3, "paraphrases": 2, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}, **behavior}},
        "stats": {"n_resamples": 300},
    })
    Runner(plan, show_progress=False).run()
    return tmp_path / name


def test_score_round_trip_gives_the_same_metrics(tmp_path):
    run_dir = make_run(tmp_path)
    res = runner.invoke(app, ["score", "--input", str(run_dir / "samples.jsonl"), "--output-dir", str(tmp_path),
                              "--name", "rescored"])
    assert res.exit_code == 0, res.output
    original = json.loads((run_dir / "summary.json").read_text())["behavior"]
    rescored = json.loads((tmp_path / "rescored" / "summary.json").read_text())["behavior"]
    for model, mets in original["metrics"].items():
        assert {m: (e["value"], e["n"]) for m, e in mets.items()} == \
            {m: (e["value"], e["n"]) for m, e in rescored["metrics"][model].items()}
    def points(strategies):  # the CIs depend on the resamples, which this rescoring does not share
        return {m: {s: {k: v for k, v in r.items() if k not in ("low", "high")} for s, r in rows.items()}
                for m, rows in strategies.items()}

    assert points(rescored["strategies"]) == points(original["strategies"])
    # with the same seed and resamples (a score plan), the CIs are identical too
    plan = tmp_path / "score.yaml"
    plan.write_text(yaml.safe_dump({
        "experiment": {"name": "rescored2", "seed": 2, "output_dir": str(tmp_path)},
        "input": {"path": str(run_dir / "samples.jsonl")},
        "families": {"behavior": {"nli": {"backend": "none"}, "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 300}}))
    res = runner.invoke(app, ["score", "--plan", str(plan)])
    assert res.exit_code == 0, res.output
    again = json.loads((tmp_path / "rescored2" / "summary.json").read_text())["behavior"]
    assert again["metrics"] == original["metrics"] and again["paired"] == original["paired"]
    for name in ("samples.jsonl", "results.xlsx", "report.html", "summary.json"):
        assert (tmp_path / "rescored" / name).is_file()
    summary = json.loads((tmp_path / "rescored" / "summary.json").read_text())
    assert summary["generations"]["imported"] == 2 * 9 * 5
    row = json.loads((tmp_path / "rescored" / "samples.jsonl").read_text().splitlines()[0])
    assert row["source"].startswith("imported:samples.jsonl:")


def test_score_csv_with_mapping_and_not_applicable_reasons(tmp_path):
    path = tmp_path / "preds.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "gold", "output", "who"])
        w.writerow(["What is 2+3?", "5", "2 + 3 = 5\nAnswer: 5", "m1"])
        w.writerow(["What is 4+4?", "8", "Answer: 9", "m1"])
    res = runner.invoke(app, ["score", "-i", str(path), "--map", "input=question,target=gold,prediction=output,model=who",
                              "--output-dir", str(tmp_path), "--name", "csv"])
    assert res.exit_code == 0, res.output
    beh = json.loads((tmp_path / "csv" / "summary.json").read_text())["behavior"]
    m = beh["metrics"]["m1"]
    assert m["CQ"]["value"] == 0.5
    assert m["CS"]["value"] is None and m["CS"]["reason"] == "CS needs 2+ samples per item"
    assert m["ES"]["value"] is None and m["ES"]["reason"].startswith("ES needs completion token counts")
    assert m["RS"]["value"] is None


def test_score_budget_and_token_counts(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "1", "input": "2+2?", "target": 4, "prediction": "Answer: 4",
                                "completion_tokens": 25}) + "\n")
    res = runner.invoke(app, ["score", "-i", str(path), "--budget", "100", "--output-dir", str(tmp_path), "--name", "b"])
    assert res.exit_code == 0, res.output
    es = json.loads((tmp_path / "b" / "summary.json").read_text())["behavior"]["metrics"]["imported"]["ES"]
    assert es["value"] == pytest.approx(2 * 0.75 / 1.75)


def test_mapping_errors():
    with pytest.raises(ValueError, match="unknown field 'answr'"):
        parse_mapping("answr=x")
    with pytest.raises(ValueError, match="expected field=column, got 'input'"):
        parse_mapping("input")


def test_bad_rows_error_or_skip(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join([
        json.dumps({"input": "Q1", "target": 1, "prediction": "Answer: 1"}),
        json.dumps({"input": "Q2", "prediction": "Answer: 1"}),
        json.dumps({"input": "Q3", "target": 1, "prediction": "x", "sample": "two"}),
        '{"input": "Q4", "target"',
        json.dumps({"input": "Q5", "target": 1, "prediction": "x", "variant": "para1"}),
    ]) + "\n")
    with pytest.raises(DatasetError, match=r"p.jsonl:2: field 'target': missing field 'target'"):
        read_predictions(path)
    res = read_predictions(path, skip_bad_rows=True)
    assert [(b.line, b.field) for b in res.bad_rows] == [(2, "target"), (3, "sample"), (4, None), (5, "id")]
    assert len(res.generations) == 1
    with pytest.raises(DatasetError, match=r"p.jsonl:1: field 'question': mapped column 'question' is not in this row"):
        read_predictions(path, {"input": "question"})
    cli = runner.invoke(app, ["score", "-i", str(path), "--skip-bad-rows", "--output-dir", str(tmp_path), "--name", "s"])
    assert cli.exit_code == 0 and "4 bad rows skipped" in cli.output
    html = (tmp_path / "s" / "report.html").read_text()
    assert "Skipped input rows" in html and "line 3, field &#39;sample&#39;" in html
    cli = runner.invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "t"])
    assert cli.exit_code == 2 and "p.jsonl:2: field 'target'" in cli.output


def test_paraphrase_rows_link_to_their_item(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [{"id": "q", "input": "3+5?", "target": 8, "prediction": "Answer: 8"},
            {"id": "q", "input": "Five plus three?", "target": 8, "prediction": "Answer: 8", "variant": "alt-1"},
            {"id": "q", "input": "Sum 3 and 5", "target": 8, "prediction": "Answer: 7", "variant": "alt-2"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = read_predictions(path)
    [item] = res.items["p"]
    assert item.input == "3+5?" and item.perturbations == ["Five plus three?", "Sum 3 and 5"]
    assert sorted(g.variant for g in res.generations) == ["original", "p0", "p1"]


def test_report_escapes_model_text_and_rebuilds_from_store(tmp_path):
    path = tmp_path / "p.jsonl"
    evil = "<script>alert('x')</script>\nAnswer: 4"
    path.write_text(json.dumps({"id": "1", "input": "<b>2+2?</b>", "target": 4, "prediction": evil}) + "\n")
    assert runner.invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "x"]).exit_code == 0
    html = (tmp_path / "x" / "report.html").read_text()
    assert html.count("<script>") == 1  # the report's own expand/collapse script, nothing else
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert "&lt;b&gt;2+2?&lt;/b&gt;" in html
    for name in ("report.html", "summary.json", "samples.jsonl", "results.xlsx"):
        (tmp_path / "x" / name).unlink()
    res = runner.invoke(app, ["report", str(tmp_path / "x")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x" / "report.html").read_text() == html


def test_xlsx_has_one_sheet_per_table(tmp_path):
    from openpyxl import load_workbook

    run_dir = make_run(tmp_path, strategies={"mine": {"CQ": 1, "RS": 1}})
    wb = load_workbook(run_dir / "results.xlsx")
    assert {"raw_metrics", "strategies", "strategy_weights", "per_dataset", "per_type", "paired_differences",
            "items", "metadata"} <= set(wb.sheetnames)
    header = [c.value for c in wb["strategies"][1]]
    assert {"balanced", "safety_priority", "accuracy_priority", "efficiency_priority", "medical_triage",
            "legal_compliance", "edge_device", "mine"} <= set(header)
    assert (run_dir / "behavior_bars.png").stat().st_size > 1000
    assert (run_dir / "tables" / "raw_metrics.csv").is_file()


def test_cli_help_schema_validate_cache(tmp_path):
    res = runner.invoke(app, ["--help"])
    for cmd in ("run", "demo", "score", "report", "schema", "validate", "cache", "providers"):
        assert cmd in res.output
    schema = json.loads(runner.invoke(app, ["schema"]).output)
    assert "models" in schema["properties"] and schema["additionalProperties"] is False
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  - spec: mock/reasoner\n    temprature: 1\ndatasets:\n  - {name: s, format: synthetic}\n")
    res = runner.invoke(app, ["validate", str(bad)])
    assert res.exit_code == 2 and "bad.yaml:3: models.0.temprature: unknown key" in res.output
    run_dir = make_run(tmp_path, name="c")
    res = runner.invoke(app, ["cache", "ls", str(run_dir)])
    assert res.exit_code == 0 and "reasoner" in res.output
    res = runner.invoke(app, ["cache", "clear", str(run_dir), "--yes"])
    assert "deleted 90 cached completions" in res.output


def test_score_with_evidence_training_split(tmp_path):
    from reasonscope.data.synthetic_topics import topic_items

    items = topic_items(16, seed=5, prefix="t")
    path = tmp_path / "preds.jsonl"
    with path.open("w") as fh:
        for i, it in enumerate(items):
            words = [w.strip(".,") for w in it.input.split() if len(w) > 4][:3]
            wrong = i % 4 == 1  # business items answered "sports"
            fh.write(json.dumps({"id": it.id, "input": it.input, "target": it.target, "answer_type": "label",
                                 "choices": it.choices, "rationale": "It mentions " + ", ".join(words) + ".",
                                 "prediction": f"Answer: {'sports' if wrong else it.target}"}) + "\n")
    res = runner.invoke(app, ["score", "-i", str(path), "--evidence-train", "topics", "--output-dir", str(tmp_path),
                              "--name", "ev"])
    assert res.exit_code == 0, res.output
    ev = json.loads((tmp_path / "ev" / "summary.json").read_text())["evidence"]["imported"]
    assert ev["llm"]["n"] == 16 and ev["llm"]["accuracy"] == 0.75
    assert ev["coverage"]["exact"]["correct"]["n"] == 12 and ev["coverage"]["exact"]["incorrect"]["n"] == 4
    inst = [json.loads(x) for x in (tmp_path / "ev" / "evidence_instances.jsonl").read_text().splitlines()]
    assert all(i["rationale"].startswith("It mentions") for i in inst)
