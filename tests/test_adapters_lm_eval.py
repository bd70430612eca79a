"""`reasonscope score --from lm-eval`: logs written by lm-evaluation-harness itself (a local YAML task over a
local JSONL file, run with a scripted LM through lm-eval's evaluator and its EvaluationTracker), read,
scored, and compared with the same outputs given to `--map`; malformed and truncated logs."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.data.adapters import read_lm_eval
from reasonscope.data.loaders import DatasetError

runner = CliRunner()
MODEL = "scripted/reasoner"

ARITH = {  # question -> (gold solution, the scripted outputs of the 3 repeats)
    "Tom has 3 apples and buys 4 more. How many apples does he have?":
        ("Tom has 3 + 4 = 7 apples.\n#### 7",
         ["3 + 4 = 7.\nHe has 7 apples.\n#### 7", "3 + 4 = 8.\n#### 8", "Tom ends with 7.\nThe answer is 7."]),
    "A box holds 12 eggs. How many eggs are in 2 boxes?":
        ("2 * 12 = 24.\n#### 24", ["2 * 12 = 24.\n#### 24", "Two boxes of 12.\n#### 24", "I am not sure."]),
    "Sara reads 5 pages a day for 6 days. How many pages does she read?":
        ("5 * 6 = 30.\n#### 30", ["5 * 6 = 35.\n#### 35", "5 * 6 = 30.\n#### 30", "#### 30"]),
}
YESNO = {"Is 9 larger than 4?": ("yes", ["9 is more than 4.\nAnswer: yes"]),
         "Is 2 larger than 5?": ("no", ["2 is less than 5.\nAnswer: yes"])}

ARITH_YAML = """task: rs_arith
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
repeats: 3
generation_kwargs:
  until: ["Question:"]
  max_gen_toks: 64
  do_sample: true
  temperature: 0.7
filter_list:
  - name: score-first
    filter:
      - function: regex
        regex_pattern: "#### (\\\\-?[0-9\\\\.\\\\,]+)"
      - function: take_first
  - name: maj
    filter:
      - function: regex
        regex_pattern: "#### (\\\\-?[0-9\\\\.\\\\,]+)"
      - function: majority_vote
      - function: take_first
metric_list:
  - metric: exact_match
metadata:
  version: 1.0
"""
YESNO_YAML = """task: rs_yesno
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["Question:"]
  max_gen_toks: 32
metric_list:
  - metric: exact_match
metadata:
  version: 1.0
"""
CHOICE_YAML = """task: rs_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_choice: ["yes", "no"]
doc_to_target: "{{{{answer}}}}"
metric_list:
  - metric: acc
metadata:
  version: 1.0
"""


def _write_task(folder: Path, yaml_text: str, name: str, docs: dict) -> None:
    data = folder / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"question": q, "answer": gold}) + "\n" for q, (gold, _) in docs.items()))
    (folder / f"{name}.yaml").write_text(yaml_text.format(data=data))


def _run_lm_eval(task_dir: Path, tasks: list[str], out_dir: Path) -> None:
    """What `lm_eval --log_samples --output_path OUT` does, with a scripted model object."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    script = {q: outs for docs in (ARITH, YESNO) for q, (_, outs) in docs.items()}

    class ScriptedLM(LM):
        def __init__(self):
            super().__init__()
            self.calls: Counter = Counter()

        def generate_until(self, requests, disable_tqdm=False):
            out = []
            for req in requests:
                question = req.args[0].removeprefix("Question: ").removesuffix("\nAnswer:")
                out.append(script[question][self.calls[question]])
                self.calls[question] += 1
            return out

        def loglikelihood(self, requests, disable_tqdm=False):
            return [(-1.0 - i, False) for i, _ in enumerate(requests)]

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            return [-1.0 for _ in requests]

    tracker = EvaluationTracker(output_path=str(out_dir))
    results = simple_evaluate(model=ScriptedLM(), model_args=f"pretrained={MODEL}", tasks=tasks, log_samples=True,
                              evaluation_tracker=tracker,
                              task_manager=TaskManager(include_path=str(task_dir), include_defaults=False))
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])


@pytest.fixture(scope="module")
def lm_eval_logs(tmp_path_factory):
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install 'reasonscope[lm-eval]')")
    root = tmp_path_factory.mktemp("lm-eval")
    tasks = root / "tasks"
    tasks.mkdir()
    _write_task(tasks, ARITH_YAML, "rs_arith", ARITH)
    _write_task(tasks, YESNO_YAML, "rs_yesno", YESNO)
    _write_task(tasks, CHOICE_YAML, "rs_choice", YESNO)
    _run_lm_eval(tasks, ["rs_arith", "rs_yesno"], root / "generative")
    _run_lm_eval(tasks, ["rs_choice"], root / "choice")
    return root


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())["behavior"]


def test_reads_what_lm_eval_wrote(lm_eval_logs):
    folder = lm_eval_logs / "generative"
    files = sorted(folder.rglob("samples_*.jsonl"))
    assert [f.parent.name for f in files] == ["scripted__reasoner"] * 2
    result = read_lm_eval(folder)
    assert sorted(result.items) == ["rs_arith", "rs_yesno"]
    arith = {it.id: it for it in result.items["rs_arith"]}
    assert [(arith[i].target, arith[i].answer_type) for i in "012"] == [("7", "number"), ("24", "number"),
                                                                       ("30", "number")]
    assert arith["0"].input.startswith("Question: Tom has 3 apples")
    assert {it.id: it.answer_type for it in result.items["rs_yesno"]} == {"0": "boolean", "1": "boolean"}
    gens = {(g.dataset, g.item_id, g.sample): g for g in result.generations}
    assert len(gens) == 3 * 3 + 2  # repeats are samples; the rows of the second filter are not read twice
    assert gens[("rs_arith", "0", 1)].completion.text == "3 + 4 = 8.\n#### 8"
    assert {g.model for g in result.generations} == {MODEL}
    assert {g.max_tokens for g in result.generations if g.dataset == "rs_arith"} == {64}
    assert gens[("rs_arith", "2", 0)].line.startswith("scripted__reasoner/samples_rs_arith_")
    assert result.temperatures == {MODEL: 0.7}
    assert any("'maj'" in n or "'score-first'" in n for n in result.notes)


def _score_log_and_map(folder: Path, model: str, out: Path) -> tuple[dict, dict]:
    """Score the folder with --from lm-eval, and the same outputs flattened by hand into a predictions
    file with --map; returns both behaviour summaries."""
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(folder), "--output-dir", str(out),
                              "--name", "from-log", "--similarity", "embedding"])
    assert res.exit_code == 0, res.output
    rows = []
    for f in sorted(folder.rglob("samples_*.jsonl")):
        task = f.stem.removeprefix("samples_").rsplit("_", 1)[0]
        seen = set()
        for line in f.read_text().splitlines():
            row = json.loads(line)
            if row["doc_id"] in seen:
                continue
            seen.add(row["doc_id"])
            req = row["arguments"]["gen_args_0"]
            for k, text in enumerate(row["resps"][0]):
                rows.append({"doc": row["doc_id"], "prompt": req["arg_0"], "gold": row["target"].split("####")[-1].strip(),
                             "out": text, "k": k, "who": model, "task": task, "budget": req["arg_1"]["max_gen_toks"]})
    mapped = out / "mapped.jsonl"
    mapped.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["score", "-i", str(mapped), "--map", "id=doc,input=prompt,target=gold,prediction=out,"
                              "sample=k,model=who,dataset=task,max_tokens=budget", "--output-dir", str(out),
                              "--name", "from-map", "--similarity", "embedding"])
    assert res.exit_code == 0, res.output
    return _summary(out / "from-log"), _summary(out / "from-map")


def test_scores_equal_the_same_outputs_given_to_map(lm_eval_logs, tmp_path):
    from_log, from_map = _score_log_and_map(lm_eval_logs / "generative", MODEL, tmp_path)
    assert from_log["metrics"] == from_map["metrics"]
    assert from_log["per_dataset"] == from_map["per_dataset"]
    metrics = from_log["metrics"][MODEL]
    # by hand: first repeats 7 (right), 24 (right), 35 (wrong); yes (right), yes (gold no)
    assert metrics["CQ"]["value"] == pytest.approx(3 / 5)
    # answers per repeat: [7, 8, 7], [24, 24, unparseable], [35, 30, 30] -> one agreeing pair of three each
    assert metrics["CS"]["value"] == pytest.approx(1 / 3) and metrics["CS"]["n"] == 3
    assert from_log["per_dataset"][MODEL]["rs_yesno"]["CQ"]["value"] == pytest.approx(0.5)
    samples = [json.loads(x) for x in (tmp_path / "from-log" / "samples.jsonl").read_text().splitlines()]
    assert all(s["source"].startswith("imported:generative:scripted__reasoner/samples_rs_") for s in samples)


@pytest.mark.slow
def test_lm_eval_command_line_with_a_tiny_local_model(tmp_path, tiny_causal_lm):
    """The `lm_eval` command itself (hf backend, a tiny local Llama): slow because the command line indexes
    every built-in lm-eval task first (about 30 s of CPU)."""
    import subprocess
    import sys

    pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install 'reasonscope[lm-eval]')")
    _write_task(tmp_path, ARITH_YAML, "rs_arith", ARITH)
    out = tmp_path / "logs"
    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
           "--tasks", "rs_arith", "--include_path", str(tmp_path), "--device", "cpu", "--batch_size", "1",
           "--gen_kwargs", "max_gen_toks=24", "--log_samples", "--output_path", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = read_lm_eval(out)
    assert {g.model for g in result.generations} == {str(tiny_causal_lm)}
    assert len(result.generations) == 3 * 3 and {g.max_tokens for g in result.generations} == {24}
    from_log, from_map = _score_log_and_map(out, str(tiny_causal_lm), tmp_path)
    assert from_log["metrics"] == from_map["metrics"]


def test_log_likelihood_tasks_are_refused_per_task(lm_eval_logs, tmp_path):
    folder = lm_eval_logs / "choice"
    with pytest.raises(DatasetError, match=r"task 'rs_choice' is scored by log-likelihood .*multiple_choice"):
        read_lm_eval(folder)
    # without the results file, the rows themselves say it (their request has no generation settings)
    samples = next(folder.rglob("samples_*.jsonl"))
    alone = tmp_path / "samples.jsonl"
    alone.write_text(samples.read_text())
    with pytest.raises(DatasetError, match=r"samples.jsonl:1: field 'arguments': this document is scored by "
                                           r"log-likelihood"):
        read_lm_eval(alone)
    # a folder with both: --skip-bad-rows scores the generative tasks and counts the refused one
    both = tmp_path / "both"
    for sub in ("generative", "choice"):
        for f in (lm_eval_logs / sub).rglob("*.json*"):
            dest = both / sub / f.relative_to(lm_eval_logs / sub)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(f.read_text())
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(both), "--skip-bad-rows", "--output-dir",
                              str(tmp_path), "--name", "both", "--similarity", "embedding"])
    assert res.exit_code == 0, res.output
    assert "1 bad rows skipped" in res.output and "rs_choice" in res.output


# ----------------------------------------------------------------------------------------------
# Malformed and truncated logs (written in lm-eval's format by hand: no lm-eval needed)


def _row(doc_id=0, **changes) -> dict:
    row = {"doc_id": doc_id, "doc": {"question": "q", "answer": "#### 4"}, "target": "2 + 2 = 4\n#### 4",
           "arguments": {"gen_args_0": {"arg_0": f"Question: what is 2 + 2? ({doc_id})\nAnswer:",
                                        "arg_1": {"until": ["Question:"], "max_gen_toks": 32}}},
           "resps": [["2 + 2 = 4.\n#### 4", "#### 5"]], "filtered_resps": ["4"], "filter": "none",
           "metrics": ["exact_match"], "exact_match": 1.0}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not ...}


def _write(tmp_path: Path, rows: list, tail: str = "") -> Path:
    path = tmp_path / "samples_arith_2024-01-01T00-00-00.000001.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


@pytest.mark.parametrize(("bad", "message"), [
    (_row(1, resps=...), r":2: field 'resps': missing field 'resps'"),
    (_row(1, resps="2 + 2 = 4"), r":2: field 'resps': expected \[\[output text, \.\.\.\]\]"),
    (_row(1, resps=[[4]]), r":2: field 'resps': expected \[\[output text"),
    (_row("one"), r":2: field 'doc_id': expected a non-negative integer, got 'one'"),
    (_row(1, target=None), r":2: field 'target': expected the gold answer"),
    (_row(1, target="the work\n####  "), r":2: field 'target': no gold answer after '####'"),
    (_row(1, arguments=...), r":2: field 'arguments': missing field 'arguments'"),
    (_row(1, arguments={"gen_args_0": {"arg_0": "", "arg_1": {}}}), r":2: field 'arguments.gen_args_0.arg_0': expected the prompt text"),
    (_row(1, arguments={"gen_args_0": {"arg_0": "Q", "arg_1": {"max_gen_toks": "many"}}}),
     r":2: field 'arguments.gen_args_0.arg_1.max_gen_toks': expected a positive integer"),
])
def test_malformed_rows_name_file_line_and_field(tmp_path, bad, message):
    path = _write(tmp_path, [_row(0), bad, _row(2)])
    with pytest.raises(DatasetError, match=r"samples_arith_.*\.jsonl" + message):
        read_lm_eval(path)
    skipped = read_lm_eval(path, skip_bad_rows=True)
    assert [b.line for b in skipped.bad_rows] == [2]
    assert sorted({g.item_id for g in skipped.generations}) == ["0", "2"]


def test_truncated_log_and_cli_errors_without_traceback(tmp_path):
    path = _write(tmp_path, [_row(0), _row(1)], tail=json.dumps(_row(2))[:70])
    with pytest.raises(DatasetError, match=r"\.jsonl:3: invalid JSON .*truncated line\?"):
        read_lm_eval(path)
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(path), "--output-dir", str(tmp_path), "--name", "x"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert ".jsonl:3: invalid JSON" in res.output
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(path), "--skip-bad-rows", "--similarity", "embedding",
                              "--output-dir", str(tmp_path), "--name", "y"])
    assert res.exit_code == 0, res.output
    assert "1 bad rows skipped" in res.output
    notes = json.loads((tmp_path / "y" / "summary.json").read_text())
    assert "line 3" in json.dumps(notes)
    for args, expected in ((["--from", "lm-eval", str(tmp_path / "nothing")], "no such file or folder"),
                           (["--from", "lm-eval", str(tmp_path / "y")], "no lm-eval samples files"),
                           (["--from", "lm-eval", str(path), "--map", "input=q"], "mapping applies to predictions"),
                           ([str(path)], "needs --from lm-eval|inspect")):
        res = runner.invoke(app, ["score", *args, "--output-dir", str(tmp_path), "--name", "z"])
        assert res.exit_code == 2 and expected in res.output and "Traceback" not in res.output, res.output


def test_greedy_repeats_are_flagged_and_token_budget_comes_from_the_request(tmp_path):
    path = _write(tmp_path, [_row(0, arguments={"gen_args_0": {"arg_0": "Q0", "arg_1": {"max_gen_toks": 16,
                                                                                        "do_sample": False}}})])
    result = read_lm_eval(path)
    assert result.temperatures == {"lm-eval": 0.0}  # no results file: the model name falls back to "lm-eval"
    assert {g.max_tokens for g in result.generations} == {16}
    assert [g.sample for g in result.generations] == [0, 1]


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["doc_id", "target", "arguments", "resps", "filter", "doc"]), value=JSON_VALUES,
       cut=st.integers(0, 400))
def test_fuzzed_rows_are_read_or_refused_with_a_named_error(tmp_path, field, value, cut):
    """Any value in any field, and a file cut anywhere: a result or a DatasetError, never another exception."""
    text = json.dumps(_row(0)) + "\n" + json.dumps(_row(1) | {field: value}) + "\n"
    path = tmp_path / "samples_arith_2024-01-01T00-00-00.000001.jsonl"
    path.write_text(text[: len(text) - cut] if cut < len(text) else text)
    try:
        result = read_lm_eval(path)
    except DatasetError as err:
        assert str(err).startswith(str(path))
    else:
        assert {g.item_id for g in result.generations} <= {"0", "1"}


# ----------------------------------------------------------------------------------------------
# Framework users' friction: re-runs into one --output_path, the wrong file, max_gen_toks, a cut file


def _copy(src: Path, dest: Path) -> Path:
    for f in src.rglob("*.json*"):
        target = dest / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.read_text())
    return dest


def _dates(folder: Path) -> list[str]:
    return sorted(f.stem.removeprefix("results_") for f in folder.rglob("results_*.json"))


def test_reruns_into_one_output_path_read_the_latest_run_or_the_one_picked(lm_eval_logs, tmp_path):
    """lm_eval run twice with the same --output_path: two samples files of rs_arith (two dates), read as
    one run each, the latest by default; --log-run picks the other. (Both runs used to be read together
    and refused as 'duplicate record'.)"""
    folder = _copy(lm_eval_logs / "generative", tmp_path / "out")
    first = _dates(folder)[0]
    # the earlier run answered differently: every output of its rs_arith file says 0
    old = next(folder.rglob(f"samples_rs_arith_{first}.jsonl"))
    rows = [json.loads(x) for x in old.read_text().splitlines()]
    old.write_text("".join(json.dumps(r | {"resps": [["#### 0"] * 3]}) + "\n" for r in rows))
    _run_lm_eval(lm_eval_logs / "tasks", ["rs_arith"], folder)  # the second run: rs_arith only
    first, second = _dates(folder)
    assert len(list(folder.rglob("samples_rs_arith_*.jsonl"))) == 2
    result = read_lm_eval(folder)
    arith = [g for g in result.generations if g.dataset == "rs_arith"]
    assert len(arith) == 9 and {g.line.split(":")[0] for g in arith} == {
        f"scripted__reasoner/samples_rs_arith_{second}.jsonl"}
    assert "#### 0" not in {g.completion.text for g in arith}
    # rs_yesno ran once (in the first run): read from it
    assert {g.line.split(":")[0] for g in result.generations if g.dataset == "rs_yesno"} == {
        f"scripted__reasoner/samples_rs_yesno_{first}.jsonl"}
    note = next(n for n in result.notes if "runs in the folder" in n)
    assert note.startswith("scripted__reasoner / rs_arith: 2 runs in the folder; read the latest, run of "
                           f"{second} (samples_rs_arith_{second}.jsonl); set aside {first}")
    # pick the first run by its date (as in results_<date>.json) or by a file name
    for pick in (first, f"results_{first}.json", f"samples_rs_arith_{first}.jsonl"):
        picked = read_lm_eval(folder, log_run=pick)
        texts = {g.completion.text for g in picked.generations if g.dataset == "rs_arith"}
        assert texts == {"#### 0"}, pick
    assert sorted(read_lm_eval(folder, log_run=first).items) == ["rs_arith", "rs_yesno"]
    assert sorted(read_lm_eval(folder, log_run=second).items) == ["rs_arith"]
    with pytest.raises(DatasetError, match=rf"--log-run '2020-01-01' names no log here; .*runs here are from "
                                           rf"{first}, {second}"):
        read_lm_eval(folder, log_run="2020-01-01")
    # the command line: latest by default (CQ of the second run's first repeats: 7, 24, 35 -> 2/3 on arith),
    # the note on the console and in the run; --log-run reads the first (every arith answer 0: CQ 0)
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(folder), "--output-dir", str(tmp_path), "--name",
                              "latest", "--similarity", "embedding"])
    assert res.exit_code == 0, res.output
    assert "read the latest" in res.output.replace("\n", " ")
    per_dataset = _summary(tmp_path / "latest")["per_dataset"][MODEL]
    assert per_dataset["rs_arith"]["CQ"]["value"] == pytest.approx(2 / 3)
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(folder), "--log-run", first, "--output-dir",
                              str(tmp_path), "--name", "first", "--similarity", "embedding"])
    assert res.exit_code == 0, res.output
    assert _summary(tmp_path / "first")["per_dataset"][MODEL]["rs_arith"]["CQ"]["value"] == 0.0
    notes = json.loads((tmp_path / "first" / "summary.json").read_text())
    assert f"--log-run '{first}': 2 of 3 log file(s) read" in json.dumps(notes)


def test_results_file_and_inspect_logs_name_the_right_input(lm_eval_logs, tmp_path):
    """lm-eval's results file, or an inspect-ai log, given to --from lm-eval: an error naming the right
    file or flag (they used to read as 'invalid JSON ... truncated line?' or 'not valid UTF-8')."""
    results = next((lm_eval_logs / "generative").rglob("results_*.json"))
    date = results.stem.removeprefix("results_")
    with pytest.raises(DatasetError, match=rf"results_{date}\.json: lm-eval's results file \(aggregate scores of one "
                                           rf"run\), not its per-sample log; give its run's samples files "
                                           rf"\(samples_rs_arith_{date}\.jsonl, samples_rs_yesno_{date}\.jsonl\)"):
        read_lm_eval(results)
    alone = tmp_path / results.name
    alone.write_text(results.read_text())
    with pytest.raises(DatasetError, match=r"none are beside it: run lm_eval with --log_samples"):
        read_lm_eval(alone)
    # an inspect-ai log in both formats, written by inspect-ai's own writer
    inspect_log = pytest.importorskip("inspect_ai.log")
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec

    log = EvalLog(eval=EvalSpec(created="2026-01-01T00:00:00+00:00", task="t", dataset=EvalDataset(),
                                model="mockllm/model", config=EvalConfig()), status="success")
    for fmt in ("eval", "json"):
        path = tmp_path / f"2026-01-01T00-00-00+00-00_t_abc.{fmt}"
        inspect_log.write_eval_log(log, str(path), format=fmt)
        with pytest.raises(DatasetError, match=rf"an inspect-ai eval log \(\.{fmt}\), not an lm-eval samples file: "
                                               r"read it with --from inspect"):
            read_lm_eval(path)
        res = runner.invoke(app, ["score", "--from", "lm-eval", str(path), "--output-dir", str(tmp_path), "--name", "x"])
        assert res.exit_code == 2 and "--from inspect" in res.output and "Traceback" not in res.output
        # and as a predictions file
        res = runner.invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "x"])
        assert res.exit_code == 2 and "not a predictions file: read it with --from inspect" in res.output.replace(
            "\n", "")
    folder = tmp_path / "inspect-folder"
    folder.mkdir()
    (tmp_path / "2026-01-01T00-00-00+00-00_t_abc.eval").rename(folder / "2026-01-01T00-00-00+00-00_t_abc.eval")
    with pytest.raises(DatasetError, match=r"no lm-eval samples files .* it holds inspect-ai logs .*--from inspect"):
        read_lm_eval(folder)
    samples = next((lm_eval_logs / "generative").rglob("samples_rs_arith_*.jsonl"))
    res = runner.invoke(app, ["score", "-i", str(samples), "--output-dir", str(tmp_path), "--name", "x"])
    assert res.exit_code == 2 and "not a predictions file: read it with --from lm-eval" in res.output.replace("\n", "")


def test_outputs_that_reach_max_gen_toks_are_truncated_when_counted(tmp_path):
    """lm-eval logs no finish reason: an output that used all max_gen_toks read as finished. Counted with
    --tokenizer (here a word counter), one that reaches max_gen_toks is truncated; uncounted, the notes say
    that it cannot be known."""
    req = {"gen_args_0": {"arg_0": "Q", "arg_1": {"until": ["Question:"], "max_gen_toks": 4}}}
    path = _write(tmp_path, [_row(0, arguments=req | {"gen_args_0": req["gen_args_0"] | {"arg_0": "Q0"}},
                                  resps=[["so 2 + 2", "#### 4"]]),
                             _row(1, arguments=req | {"gen_args_0": req["gen_args_0"] | {"arg_0": "Q1"}},
                                  resps=[["one two three four five", "#### 4"]])])
    counted = read_lm_eval(path, token_counter=lambda text: len(text.split()))
    finish = {(g.item_id, g.sample): (g.completion.completion_tokens, g.completion.finish_reason)
              for g in counted.generations}
    assert finish == {("0", 0): (4, "length"), ("0", 1): (2, "stop"), ("1", 0): (5, "length"), ("1", 1): (2, "stop")}
    assert any("2 output(s) reach max_gen_toks" in n for n in counted.notes)
    assert not any("cannot be told" in n for n in counted.notes)
    uncounted = read_lm_eval(path)
    assert {g.completion.finish_reason for g in uncounted.generations} == {"stop"}
    assert any("an output that used all max_gen_toks cannot be told from a finished one" in n for n in uncounted.notes)


def test_tokenizer_marks_truncated_outputs_in_the_scored_run(tmp_path, tiny_causal_lm):
    """The same through `score --tokenizer` with a real tokenizer: the truncated output is counted as
    truncated in summary.json and has no answer (a truncated text has no final answer)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    long = "one two three four five six seven eight nine ten #### 4"
    budget = len(tok(long, add_special_tokens=False)["input_ids"])  # the long output used all max_gen_toks
    req = {"gen_args_0": {"arg_0": "Q0", "arg_1": {"until": ["Question:"], "max_gen_toks": budget}}}
    path = _write(tmp_path, [_row(0, arguments=req, resps=[[long, "#### 4"]])])
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(path), "--tokenizer", str(tiny_causal_lm),
                              "--output-dir", str(tmp_path), "--name", "tok", "--similarity", "embedding"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (tmp_path / "tok" / "samples.jsonl").read_text().splitlines()]
    assert sorted(r["finish_reason"] for r in rows) == ["length", "stop"]
    assert "1 output(s) reach max_gen_toks" in res.output.replace("\n", " ")


def test_samples_file_cut_at_a_line_boundary_is_read_with_a_warning(lm_eval_logs, tmp_path):
    """A samples file that lost its last lines (a copy cut short): the run's results file says how many
    documents the task had (n-samples); the shortfall is a warning on the console and in the run."""
    folder = _copy(lm_eval_logs / "generative", tmp_path / "cut")
    arith = next(folder.rglob("samples_rs_arith_*.jsonl"))
    arith.write_text("".join(arith.read_text().splitlines(keepends=True)[:2]))  # docs 0 and 1 of 3 (score-first)
    result = read_lm_eval(folder)
    assert sorted({g.item_id for g in result.generations if g.dataset == "rs_arith"}) == ["0", "1"]
    assert result.warnings == [f"{arith.name}: 2 of the 3 documents of task 'rs_arith' that the run's results file "
                               "counts (n-samples) are in the samples file: the file is cut short or copied in part, "
                               "and the metrics cover the 2 read"]
    assert read_lm_eval(lm_eval_logs / "generative").warnings == []
    res = runner.invoke(app, ["score", "--from", "lm-eval", str(folder), "--output-dir", str(tmp_path), "--name", "cut",
                              "--similarity", "embedding"])
    assert res.exit_code == 0, res.output
    assert "warning: " in res.output and "2 of the 3 documents" in res.output.replace("\n", " ")
    run = json.loads((tmp_path / "cut" / "summary.json").read_text())
    assert "2 of the 3 documents of task 'rs_arith'" in json.dumps(run)


def test_run_stamps_compare_in_utc_and_sniffing_spares_predictions_files(tmp_path):
    from reasonscope.data.adapters.common import LogRun, choose_runs, sniff_log, utc_stamp

    # 10:30 at +02:00 is 08:30 UTC: earlier than 09:00 UTC although it sorts later as text
    assert utc_stamp("2026-01-01T10:30:00+02:00") == "2026-01-01T08:30:00.000000+00:00"
    assert utc_stamp("2026-01-01T09:00:00") == "2026-01-01T09:00:00.000000+00:00"  # no zone: UTC
    assert utc_stamp("not a time") == "not a time"
    runs = [LogRun(tmp_path / name, ("t", "m"), utc_stamp(when), frozenset({name}))
            for name, when in (("a.eval", "2026-01-01T10:30:00+02:00"), ("b.eval", "2026-01-01T09:00:00+00:00"))]
    chosen, notes = choose_runs(runs, None, tmp_path, "a file name")
    assert [r.path.name for r in chosen] == ["b.eval"] and "set aside 2026-01-01T08:30:00.000000+00:00 (a.eval)" in notes[0]
    # a predictions file whose columns happen to be named like a log's keys is not taken for a log
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"version": 1, "status": "ok", "eval": "x", "results": 1, "configs": 2,
                                 "input": "q", "target": "4", "prediction": "4"}) + "\n"
                     + json.dumps({"doc_id": 1, "input": "q", "target": "4", "prediction": "4"}) + "\n")
    assert sniff_log(preds) is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert sniff_log(fifo) is None  # not opened: a FIFO would block
    # a zip file that is not an inspect log (its first entry is something else) is not taken for one
    import zipfile

    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("data.csv", "a,b\n")
    assert sniff_log(other) is None
