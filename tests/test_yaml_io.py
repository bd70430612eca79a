"""Plan files: YAML 1.2, duplicate keys, recursive aliases, alias bombs, tags, deep nesting; every
error names file and line, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.plan import PlanError, load_plan
from reasonscope.report.build import write_config
from reasonscope.storage.yaml_io import MAX_NODES, dump_yaml, read_yaml

runner = CliRunner()

TAIL = "datasets:\n  - {name: syn, format: synthetic}\n"


def write(tmp_path, text):
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    return p


def validate(path):
    res = runner.invoke(app, ["validate", str(path)])
    assert "Traceback" not in res.output
    return res


@pytest.mark.parametrize("text,expected", [
    ("experiment: {name: t}\nmodels:\n  - spec: mock/reasoner\n" + TAIL + "models:\n  - spec: mock/judge\n",
     r"plan.yaml:6: duplicate key 'models' \(first given at line 2\)"),
    ("models:\n  - spec: mock/reasoner\n    temperature: 0.2\n    max_tokens: 9\n    temperature: 0.9\n" + TAIL,
     r"plan.yaml:5: duplicate key 'temperature' \(first given at line 3\)"),
    ("models: [{spec: mock/reasoner, spec: mock/judge}]\n" + TAIL, r"plan.yaml:1: duplicate key 'spec'"),
])
def test_duplicate_keys_name_both_lines(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(PlanError, match=expected):
        load_plan(path)
    res = validate(path)
    assert res.exit_code == 2 and "duplicate key" in res.output


def test_yaml_1_2_words_stay_strings(tmp_path):
    path = write(tmp_path, "experiment: {name: t}\nmodels:\n  - spec: mock/reasoner\n    name: no\n"
                           "    options: {flag: yes, mode: off}\ndatasets:\n"
                           "  - {name: syn, format: jsonl, path: d.jsonl, split: on}\n  - {name: n, format: synthetic}\n")
    plan = load_plan(path)
    assert plan.models[0].name == "no" and plan.models[0].options == {"flag": "yes", "mode": "off"}
    assert plan.datasets[0].split == "on"
    (tmp_path / "d.jsonl").write_text('{"question": "What is 1 + 1?", "answer": "2"}\n')  # validate reads it
    assert validate(path).exit_code == 0
    # true/false are booleans; a document asking for YAML 1.1 gets its rules
    assert read_yaml("a: true\nb: no\n")[0] == {"a": True, "b": "no"}
    assert read_yaml("%YAML 1.1\n---\nb: no\n")[0] == {"b": False}


@pytest.mark.parametrize("text,expected", [
    ("models: &m\n  - spec: mock/reasoner\n    options: {again: *m}\n" + TAIL, r"plan.yaml:\d: a recursive alias"),
    ("models: &m [*m]\n" + TAIL, r"plan.yaml:1: a recursive alias"),
    ("models:\n  - spec: !!python/object/apply:os.system ['echo owned']\n" + TAIL,
     r"plan.yaml:2: unsupported YAML tag tag:yaml.org,2002:python/object/apply:os.system"),
    ("models:\n  - spec: !custom mock/reasoner\n" + TAIL, r"plan.yaml:2: unsupported YAML tag !custom"),
    ("models: " + "[" * 150 + "]" * 150 + "\n", r"plan.yaml:1: nesting deeper than 100 levels"),
    ("models:\n  - spec: mock/reasoner\n? [a, b]\n: 1\n", r"plan.yaml:3: a mapping key must be a plain value"),
])
def test_hostile_yaml_is_a_plan_error(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(PlanError, match=expected):
        load_plan(path)
    assert validate(path).exit_code == 2


def billion_laughs() -> str:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return "experiment: {name: t}\nmodels:\n  - spec: mock/reasoner\n    options:\n" + \
        "".join(f"      {line}\n" for line in lines) + TAIL


def test_billion_laughs_is_refused_at_once(tmp_path):
    path = write(tmp_path, billion_laughs())  # 10**10 values once expanded
    # a child process with a deadline: before, validate kept busy for minutes
    res = subprocess.run([sys.executable, "-m", "reasonscope.cli", "validate", str(path)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2 and f"expands to more than {MAX_NODES:,} values" in res.stderr, res.stderr


def test_anchors_and_merge_keys_still_work(tmp_path):
    text = ("experiment: {name: t}\nmodels:\n  - &d {spec: mock/reasoner, name: a, temperature: 0.2}\n"
            "  - <<: *d\n    name: b\n    temperature: 0.9\n    colour: red\n" + TAIL)
    with pytest.raises(PlanError, match=r"plan.yaml:7: models.1.colour: unknown key"):
        load_plan(write(tmp_path, text))  # errors under a merge still name their line
    plan = load_plan(write(tmp_path, text.replace("    colour: red\n", "")))
    assert [(m.name, m.temperature, m.spec) for m in plan.models] == [("a", 0.2, "mock/reasoner"),
                                                                       ("b", 0.9, "mock/reasoner")]


def test_resolved_config_reads_back_as_the_same_plan(tmp_path):
    text = ("experiment: {name: t, output_dir: " + str(tmp_path) + "}\nmodels:\n  - spec: mock/reasoner\n"
            "    name: '1e3'\n    system_prompt: 'no'\n    options: {x: '0o17', y: 'on', z: '2024-01-01'}\n" + TAIL)
    plan = load_plan(write(tmp_path, text))
    config = write_config(tmp_path, plan.model_dump(mode="json"))
    assert load_plan(config) == plan
    assert read_yaml(dump_yaml({"b": 1, "a": ["no", "1e3"]}))[0] == {"b": 1, "a": ["no", "1e3"]}
