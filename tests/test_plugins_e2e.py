"""The example plugin family (``examples/trace-length-family``) end to end, as a user installs and runs it.

A plan with the plugin's family goes through ``reasonscope run``, ``report``, ``score`` and ``view``; its
numbers, computed here by hand, appear in the terminal, summary.json (valid against the published schema,
which now has the family's section), results.xlsx, report.html and the viewer's pages. Each command runs in
a child process with plugin autoload on: the plan's and the summary's models are assembled at import, from
the families installed then.

The distribution is the one pip installed (``.ci/run``: ``pip install --no-deps --no-build-isolation -e
examples/trace-length-family``); when it is not installed, the test writes what pip would (a ``*.dist-info``
folder with the entry points of the example's ``pyproject.toml``) into a temporary folder and puts it and
the example's source on ``PYTHONPATH``, so :mod:`importlib.metadata` finds the plugin without pip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from reasonscope.registry import DISABLE_ENV, ENTRY_POINT_GROUP

# Seven child processes, each importing reasonscope, scipy and matplotlib afresh: about 12 s of CPU, a minute
# on a busy 2-core machine. Marked slow; .ci/run installs the example and runs this file.
pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trace-length-family"
PROJECT = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]

# Four questions; two answers show no reasoning, one two steps, one three. By hand, with min_steps 2:
# steps = (0 + 0 + 2 + 3) / 4 = 1.25; unexplained = 2 of 4 = 0.5, exact 95% Clopper-Pearson [0.0676, 0.9324].
ANSWERS = {"q1": "Answer: 3", "q2": "Answer: 4", "q3": "We start from 3. Adding 2 gives 5.\nAnswer: 5",
           "q4": "We start from 4. We add 2. That makes 6.\nAnswer: 6"}
QUESTIONS = {"q1": ("What is 1 + 2?", 3), "q2": ("What is 2 + 2?", 4), "q3": ("What is 3 + 2?", 5),
             "q4": ("What is 4 + 2?", 6)}


def plugin_environment(tmp: Path) -> dict[str, str]:
    """The child processes' environment: autoload on, and the plugin installed or put on PYTHONPATH."""
    env = {**os.environ, DISABLE_ENV: "0"}
    try:
        distribution(PROJECT["name"])
        return env  # pip installed it (.ci/run)
    except PackageNotFoundError:
        pass
    info = tmp / "site" / f"{PROJECT['name'].replace('-', '_')}-{PROJECT['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PROJECT['name']}\nVersion: {PROJECT['version']}\n",
                                   encoding="utf-8")
    points = PROJECT["entry-points"][ENTRY_POINT_GROUP]
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()),
                                           encoding="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(info.parent), str(EXAMPLE / "src"), env.get("PYTHONPATH")]))
    return env


def reasonscope(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``reasonscope ARGS`` in a child process (wide terminal, so that table cells are not folded)."""
    return subprocess.run([sys.executable, "-m", "reasonscope.cli", *args], cwd=cwd, env={**env, "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """Run, rebuild the report, score a predictions file and export the viewer, once; the results by step."""
    tmp = tmp_path_factory.mktemp("plugin-e2e")
    env = plugin_environment(tmp)
    with (tmp / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for qid, (question, target) in QUESTIONS.items():
            fh.write(json.dumps({"id": qid, "input": question, "target": target, "answer_type": "number"}) + "\n")
    with (tmp / "predictions.jsonl").open("w", encoding="utf-8") as fh:
        for qid, (question, target) in QUESTIONS.items():
            fh.write(json.dumps({"id": qid, "question": question, "gold": target, "output": ANSWERS[qid],
                                 "model_name": "m"}) + "\n")
    (tmp / "plan.yaml").write_text(
        "experiment: {name: tl, output_dir: runs}\n"
        "models:\n  - spec: mock/scripted\n    name: m\n    options:\n      responses: "  # keyed "<dataset>/<item id>"
        + json.dumps({f"questions/{qid}": text for qid, text in ANSWERS.items()}) + "\n"
        "datasets:\n  - {name: questions, format: jsonl, path: questions.jsonl}\n"
        "families:\n  trace_length: {min_steps: 2}\n", encoding="utf-8")
    (tmp / "score.yaml").write_text(
        "experiment: {name: scored, output_dir: runs}\n"
        "input:\n  path: predictions.jsonl\n  answer_type: number\n"
        "  mapping: {input: question, target: gold, prediction: output, model: model_name}\n"
        "families:\n  trace_length: {min_steps: 2}\n", encoding="utf-8")
    steps = {"families": reasonscope(env, tmp, "families"),
             "command": reasonscope(env, tmp, "trace-length", "steps", ANSWERS["q3"]),
             "run": reasonscope(env, tmp, "run", "plan.yaml")}
    steps["summary_after_run"] = json.loads((tmp / "runs" / "tl" / "summary.json").read_text())
    (tmp / "runs" / "tl" / "report.html").unlink()
    steps["report"] = reasonscope(env, tmp, "report", "runs/tl")
    steps["score"] = reasonscope(env, tmp, "score", "--plan", "score.yaml")
    steps["view"] = reasonscope(env, tmp, "view", "runs", "--export", "site")
    steps["schema"] = reasonscope(env, tmp, "output-schema")
    (tmp / "bad.yaml").write_text("datasets: [{name: q, format: synthetic}]\nmodels: [{spec: mock/reasoner}]\n"
                                  "families:\n  trace_length:\n    min_steps: 0\n", encoding="utf-8")
    steps["bad_plan"] = reasonscope(env, tmp, "validate", "bad.yaml")
    # a second, broken plugin beside it: an entry point whose module does not exist
    broken = tmp / "broken-site" / "broken_family-2.0.dist-info"
    broken.mkdir(parents=True)
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-family\nVersion: 2.0\n", encoding="utf-8")
    (broken / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nbroken = no_such_module_anywhere:FAMILY\n",
                                             encoding="utf-8")
    with_broken = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(broken.parent), env.get("PYTHONPATH")]))}
    (tmp / "again.yaml").write_text((tmp / "score.yaml").read_text().replace("name: scored", "name: again"))
    steps["with_broken"] = reasonscope(with_broken, tmp, "score", "--plan", "again.yaml")
    return tmp, steps


def _ok(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_the_plugin_is_listed_by_reasonscope_families(done):
    _, steps = done
    rows = [line.split() for line in _ok(steps["families"]).splitlines()]
    assert rows[-1] == ["trace_length", PROJECT["name"], PROJECT["version"], "plugin", "ok"]


def test_the_plugin_command_group_is_mounted(done):
    _, steps = done
    assert _ok(steps["command"]).splitlines() == ["1. We start from 3.", "2. Adding 2 gives 5.",
                                                  "2 steps: explained (min_steps 2)"]


def test_run_prints_and_writes_the_hand_computed_numbers(done):
    tmp, steps = done
    out = _ok(steps["run"])
    assert "trace length (mean [95% CI]; unexplained: fewer than 2 steps)" in out
    row = next(line for line in out.splitlines() if line.startswith("│ m "))
    assert [c.strip() for c in row.strip("│").split("│")] == ["m", "1 [0, 4]", "0.5 [0.1, 0.9]", "4", "0"]
    t = steps["summary_after_run"]["trace_length"]
    assert t["min_steps"] == 2 and t["models"]["m"]["answers"] == 4 and t["models"]["m"]["failed"] == 0
    assert t["models"]["m"]["steps"]["value"] == pytest.approx(1.25)
    assert t["models"]["m"]["steps"]["low"] == 0.0  # clipped: a mean of counts is never negative
    unexplained = t["models"]["m"]["unexplained"]
    assert (unexplained["value"], unexplained["n"], unexplained["method"]) == (0.5, 4, "clopper-pearson")
    assert unexplained["low"] == pytest.approx(0.067586, abs=1e-6)
    assert unexplained["high"] == pytest.approx(0.932414, abs=1e-6)
    scores = {}
    for line in (tmp / "runs" / "tl" / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        scores[row["item_id"]] = (row["scores"]["trace_length.steps"]["value"],
                                  row["scores"]["trace_length.unexplained"]["value"])
    assert scores == {"q1": (0.0, 1.0), "q2": (0.0, 1.0), "q3": (2.0, 0.0), "q4": (3.0, 0.0)}


def test_summary_json_is_valid_against_the_published_schema_with_the_plugin_section(done):
    import jsonschema

    tmp, steps = done
    schema = json.loads(_ok(steps["schema"]))
    summary_schema = schema.get("summary", schema)
    assert "trace_length" in json.dumps(summary_schema)
    jsonschema.validate(steps["summary_after_run"], summary_schema)
    jsonschema.validate(json.loads((tmp / "runs" / "scored" / "summary.json").read_text()), summary_schema)


def test_report_rebuilds_report_html_and_results_xlsx_with_the_plugin(done):
    import openpyxl

    tmp, steps = done
    _ok(steps["report"])
    page = (tmp / "runs" / "tl" / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="trace_length">Trace length: how much reasoning does each answer show?</h2>' in page
    assert "Reasoning steps and unexplained answers per model" in page and "0.5 [0.1, 0.9]" in page
    sheet = openpyxl.load_workbook(tmp / "runs" / "tl" / "results.xlsx")["trace_length_models"]
    rows = [[c.value for c in r] for r in sheet.iter_rows()]
    header = rows[0]
    m = dict(zip(header, rows[1], strict=True))
    assert (m["model"], m["unexplained"], m["answers"], m["failed"]) == ("m", 0.5, 4, 0)


def test_score_measures_imported_outputs_with_the_plugin(done):
    tmp, steps = done
    out = _ok(steps["score"])
    assert "0.5 [0.1, 0.9]" in out
    t = json.loads((tmp / "runs" / "scored" / "summary.json").read_text())["trace_length"]
    assert t["models"]["m"]["steps"]["value"] == pytest.approx(1.25)
    assert t["models"]["m"]["unexplained"]["value"] == 0.5


def test_the_viewer_shows_the_plugin_numbers(done):
    tmp, steps = done
    _ok(steps["view"])
    page = (tmp / "site" / "runs" / "tl" / "index.html").read_text(encoding="utf-8")
    assert "trace_length.unexplained" in page and "trace_length.steps" in page
    assert (tmp / "site" / "runs" / "tl" / "items-trace_length.unexplained-m-1.html").exists()


def test_a_broken_plugin_beside_it_is_named_once_and_the_others_run(done):
    tmp, steps = done
    res = steps["with_broken"]
    assert res.returncode == 0, res.stderr
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: family plugin")]
    assert warnings == ["warning: family plugin 'broken' from distribution broken-family 2.0 "
                        "(no_such_module_anywhere:FAMILY) was not loaded: import failed: ModuleNotFoundError: "
                        "No module named 'no_such_module_anywhere'; the other families are unaffected"]
    assert "0.5 [0.1, 0.9]" in res.stdout  # the example family ran


def test_the_plugin_settings_are_validated_with_file_line_and_key(done):
    _, steps = done
    res = steps["bad_plan"]
    assert res.returncode == 2
    assert "bad.yaml:5: families.trace_length.min_steps: Input should be greater than or equal to 1 (got 0)" in \
        res.stderr.replace("\n", " ")
