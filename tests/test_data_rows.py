"""Reading rows: JSONL split on \\n only, numeric fields and targets checked, errors naming file, line, field."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.data.loaders import DatasetError, load_dataset
from reasonscope.data.predictions import read_predictions
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import DatasetConfig, parse_plan

runner = CliRunner()
SEPARATORS = "\u2028\u2029\x85"  # line breaks for str.splitlines, ordinary characters inside JSON strings


def _rows(path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_jsonl_with_unicode_line_separators_in_strings_is_two_rows(tmp_path):
    path = tmp_path / "p.jsonl"
    _rows(path, [{"input": f"Q{SEPARATORS}one", "target": 8, "prediction": f"3 + 5{SEPARATORS}= 8\nAnswer: 8"},
                 {"input": "Q two", "target": 3, "prediction": "Answer: 3"}])
    raw = path.read_text(encoding="utf-8")
    assert len(raw.splitlines()) > 2  # what the old reader split on
    res = read_predictions(path)
    assert len(res.generations) == 2 and not res.bad_rows
    assert res.generations[0].completion.text == f"3 + 5{SEPARATORS}= 8\nAnswer: 8"
    items = load_dataset(DatasetConfig(name="d", format="jsonl", path=str(path))).items
    assert [i.input for i in items] == [f"Q{SEPARATORS}one", "Q two"]
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(b'{"input": "a", "target": 1, "prediction": "Answer: 1"}\r\n'
                     b'{"input": "b", "target": 2, "prediction": "Answer: 2"}\r\n')
    assert len(read_predictions(crlf).generations) == 2


def test_a_run_whose_outputs_hold_separators_is_scored_again_from_samples_jsonl(tmp_path):
    data = tmp_path / "math.jsonl"
    _rows(data, [{"id": "q1", "input": f"What is 3/4 as a fraction?{SEPARATORS}", "target": "\\frac{3}{4}",
                  "answer_type": "number"},
                 {"id": "q2", "input": "Twice 3?", "target": 6, "answer_type": "number"}])
    plan = parse_plan({
        "experiment": {"name": "sep", "seed": 1, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/scripted", "name": "m", "options": {"responses": {
            "d/q1": f"Three quarters{SEPARATORS}\nso \\boxed{{\\frac{{3}}{{4}}}}",
            "d/q2": f"Double it:{SEPARATORS}\x1b[1mAnswer: 6\x1b[0m"}}}],
        "datasets": [{"name": "d", "format": "jsonl", "path": str(data)}],
        "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 100},
    })
    Runner(plan, show_progress=False).run()
    samples = tmp_path / "sep" / "samples.jsonl"
    assert any(c in samples.read_text(encoding="utf-8") for c in SEPARATORS)
    exported = [json.loads(line) for line in samples.read_text(encoding="utf-8").split("\n") if line]
    assert [r["answer"] for r in exported] == [0.75, 6.0]
    res = runner.invoke(app, ["score", "--input", str(samples), "--output-dir", str(tmp_path), "--name", "again"])
    assert res.exit_code == 0, res.output
    first = json.loads((tmp_path / "sep" / "summary.json").read_text())["behavior"]["metrics"]["m"]["CQ"]
    again = json.loads((tmp_path / "again" / "summary.json").read_text())["behavior"]["metrics"]["m"]["CQ"]
    assert first["value"] == again["value"] == 1.0 and again["n"] == 2


# (field, the value as written in the JSONL file)
NUMERIC_FIELDS = [
    ("completion_tokens", "NaN"), ("completion_tokens", "Infinity"), ("completion_tokens", "-3"),
    ("completion_tokens", "2.5"), ("completion_tokens", "true"), ("completion_tokens", '"NaN"'),
    ("completion_tokens", "9" * 5000), ("sample", "NaN"), ("sample", "-1"), ("sample", '"Infinity"'),
    ("sample", str(2**40)), ("max_tokens", "-Infinity"), ("max_tokens", "0"), ("max_tokens", "1.5"),
    ("max_tokens", '"1e400"'), ("max_tokens", "1e400"),
]


@pytest.mark.parametrize("field,raw", NUMERIC_FIELDS, ids=lambda v: v[:12])
def test_every_numeric_field_names_file_line_and_field(tmp_path, field, raw):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"input": "ok", "target": 2, "prediction": "Answer: 2"}) + "\n"
                    + '{"input": "Q", "target": 1, "prediction": "Answer: 1", "' + field + '": ' + raw + "}\n")
    with pytest.raises(DatasetError, match=rf"p.jsonl:2: field '{field}': expected a whole number from [01] to"):
        read_predictions(path)


def test_the_cli_names_the_field_of_a_nan_token_count(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"input": "Q", "target": 5, "prediction": "Answer: 5", "completion_tokens": NaN}\n')
    res = runner.invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "n"])
    assert res.exit_code == 2 and "p.jsonl:1: field 'completion_tokens': expected a whole number" in res.output
    assert "cannot convert" not in res.output


@pytest.mark.parametrize("row,message", [
    ({"target": float("nan"), "answer_type": "number"}, "finite number"),
    ({"target": "Infinity", "answer_type": "number"}, "numeric target expected"),
    ({"target": "many", "answer_type": "number"}, "numeric target expected"),
    ({"target": "9" * 5000, "answer_type": "number"}, "double-precision range"),
    ({"target": "maybe", "answer_type": "boolean"}, "boolean target expected"),
    ({"target": "E", "answer_type": "choice", "choices": ["a", "b"]}, "choice target expected"),
    ({"target": 7, "answer_type": "choice", "choices": ["a", "b"]}, "outside the 2 options"),
])
def test_targets_are_read_as_their_type_when_loading(tmp_path, row, message):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"input": "Q", "prediction": "Answer: 1", **row}) + "\n")
    with pytest.raises(DatasetError, match=rf"p.jsonl:1: field 'target': .*{message}"):
        read_predictions(path)
    with pytest.raises(DatasetError, match=rf"p.jsonl:1: field 'target': .*{message}"):
        load_dataset(DatasetConfig(name="d", format="jsonl", path=str(path)))


@pytest.mark.parametrize("fmt,name,content,field", [
    ("gsm8k", "g.jsonl", json.dumps({"question": "Q", "answer": "so\n#### NaN"}) + "\n", "answer"),
    ("gsm8k", "g.jsonl", json.dumps({"question": "Q", "answer": "so\n#### " + "9" * 5000}) + "\n", "answer"),
    ("agnews", "a.csv", "Class Index,Title,Description\n0,t,d\n", "Class Index"),
    ("agnews", "a.jsonl", json.dumps({"text": "t", "label": -1}) + "\n", "label"),
    ("agnews", "a.jsonl", '{"text": "t", "label": Infinity}\n', "label"),
    ("goemotions", "e.jsonl", json.dumps({"text": "t", "labels": "-1"}) + "\n", "labels"),
    ("mmlu", "m.csv", "question,A,B,C,D,answer\nQ,a,b,c,d," + "9" * 5000 + "\n", "answer"),
])
def test_real_format_fields_are_checked(tmp_path, fmt, name, content, field):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DatasetError, match=rf"{name}:[12]: field '{field}'"):
        load_dataset(DatasetConfig(name="d", format=fmt, path=str(path)))


def test_hostile_json_values_are_bad_rows(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"input": ' + "[" * 50_000 + "]" * 50_000 + "}\n"
                    + '{"input": "q", "extra": ' + "[" * 150 + "]" * 150 + "}\n"
                    + json.dumps({"input": "ok", "target": "1"}) + "\n"
                    + '{"input": "c", "choices": "' + "[" * 5000 + '", "target": "a"}\n')
    res = load_dataset(DatasetConfig(name="d", format="jsonl", path=str(path), skip_bad_rows=True))
    assert len(res.items) == 1
    assert [(b.line, b.field) for b in res.bad_rows] == [(1, None), (2, None), (4, "choices")]
    assert res.bad_rows[0].message == "invalid JSON value: nested deeper than 100 levels"
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50_000 + "]" * 50_000)
    with pytest.raises(DatasetError, match="deep.json: invalid JSON value: nested deeper"):
        load_dataset(DatasetConfig(name="d", format="json", path=str(deep)))


def test_a_csv_field_longer_than_the_csv_default_limit_is_read(tmp_path):
    path = tmp_path / "long.csv"
    long = "word " * 60_000  # 300,000 characters, above csv's default 131,072
    path.write_text(f"input,target\n\"{long}\",1\n")
    [item] = load_dataset(DatasetConfig(name="d", format="csv", path=str(path))).items
    assert item.input == long and item.target == "1"
