"""inspect-ai both ways: an inspect task over local samples, run with inspect's mock model (mockllm/model)
and reasonscope's scorers (reasonscope.integrations.inspect_scorers); its log read by `reasonscope score
--from inspect` (reasonscope.data.adapters.inspect_logs). The scorer values are checked by hand, the log's
scores equal the scorers' and the same outputs given to `--map`; malformed and truncated logs."""

from __future__ import annotations

import json
import math
import shutil
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.data.loaders import DatasetError

inspect_ai = pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install 'reasonscope[inspect]')")

runner = CliRunner()
MODEL = "mockllm/model"
SAMPLES = {  # id -> (input, target, choices, the outputs of epochs 1, 2, 3)
    "q1": ("Tom has 3 apples and buys 4 more. How many apples does he have?", "7", None,
           ["3 + 4 = 7.\nSo Tom has 7 apples.\nAnswer: 7", "3 + 4 = 8.\nAnswer: 8",
            "Tom ends with 7 apples.\nAnswer: 7"]),
    "q2": ("Is 9 larger than 4?", "yes", None,
           ["9 is more than 4.\nAnswer: yes", "Answer: no", "Nine exceeds four.\nSo the answer is yes."]),
    "q3": ("Which one is a fruit?", "B", ["carrot", "apple"],
           ["A carrot is a vegetable.\nAn apple is a fruit.\nAnswer: B", "Answer: (B)", "It is the apple.\nAnswer: A"]),
    "q4": ("Sam has 10 pens and gives away 4. How many are left?", "6", None,
           ["10 - 4 = 5.\nAnswer: 5", "10 - 4 = 6 pens remain and", "I think 6.\nAnswer: 6"]),
}
TRUNCATED = {("q4", 2)}  # stop_reason max_tokens
EPOCH1_WRONG = "q4"  # the only sample answered wrongly in epoch 1


def _mock_model(script: dict):
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def respond(messages, tools, tool_choice, config):
        question = messages[-1].text
        sample_id = next(k for k, v in script.items() if v[0] == question)
        epoch = config.seed  # the solver below passes the epoch as the seed
        out = ModelOutput.from_content(MODEL, script[sample_id][3][epoch - 1],
                                       stop_reason="max_tokens" if (sample_id, epoch) in TRUNCATED else "stop")
        n = len(out.completion.split())
        out.usage = ModelUsage(input_tokens=10, output_tokens=n, total_tokens=10 + n)  # no tiktoken download
        return out

    return get_model(MODEL, custom_outputs=respond)


@pytest.fixture(scope="module")
def inspect_run(tmp_path_factory, tiny_nli):
    """The task run once with reasonscope's scorers; returns (log path, EvalLog, NLI model path)."""
    from inspect_ai import Epochs, Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import solver

    from reasonscope.integrations.inspect_scorers import (
        answer_correctness,
        first_epoch,
        logical_coherence,
        trace_stability,
    )

    @solver
    def generate_with_epoch_seed():
        async def solve(state, generate):
            return await generate(state, seed=state.epoch)

        return solve

    log_dir = tmp_path_factory.mktemp("inspect-logs")
    task = Task(dataset=[Sample(id=k, input=v[0], target=v[1], choices=v[2]) for k, v in SAMPLES.items()],
                solver=generate_with_epoch_seed(), name="rs_mixed", epochs=Epochs(3, ["mean", first_epoch()]),
                scorer=[answer_correctness(), logical_coherence(nli=f"hf:{tiny_nli}"),
                        trace_stability(similarity="embedding")])
    log = eval(task, model=_mock_model(SAMPLES), log_dir=str(log_dir), display="none", max_tokens=40,
               temperature=0.5)[0]
    assert log.status == "success", log.error
    return Path(log.location), log, tiny_nli


def _metric(log, scorer: str, name: str, reducer: str | None = None) -> float:
    for s in log.results.scores:
        if s.name == scorer and name in s.metrics and (reducer is None or s.reducer == reducer):
            return s.metrics[name].value
    raise KeyError((scorer, name, reducer))


def _by_epoch(log, scorer: str) -> dict[tuple[str, int], object]:
    return {(s.id, s.epoch): s.scores[scorer] for s in log.samples}


def test_scorers_inside_eval_by_hand(inspect_run):
    from reasonscope.scorers.nli import HFCrossEncoderNLI
    from reasonscope.scorers.similarity import EmbeddingCosine
    from reasonscope.text.answers import extract_answer
    from reasonscope.text.steps import split_steps

    _, log, nli_path = inspect_run
    correct = {k: v.value for k, v in _by_epoch(log, "answer_correctness").items()}
    assert correct == {("q1", 1): 1, ("q1", 2): 0, ("q1", 3): 1, ("q2", 1): 1, ("q2", 2): 0, ("q2", 3): 1,
                       ("q3", 1): 1, ("q3", 2): 1, ("q3", 3): 0, ("q4", 1): 0, ("q4", 2): 0, ("q4", 3): 1}
    assert _by_epoch(log, "answer_correctness")[("q4", 2)].explanation == "truncated before a final answer"
    # accuracy over epochs reduced by mean, and by the first epoch (reasonscope's CQ)
    assert _metric(log, "answer_correctness", "accuracy", "mean") == pytest.approx((2 / 3 * 3 + 1 / 3) / 4)
    assert _metric(log, "answer_correctness", "accuracy", "first_epoch") == pytest.approx(3 / 4)
    # CS: answers [7, 8, 7], [yes, no, yes], [B, B, A] agree on one pair of three; [5, none, 6] on none
    assert _metric(log, "answer_correctness", "consistency") == pytest.approx((1 / 3 * 3 + 0) / 4)
    # LS per epoch: 1 - mean p(contradiction) over consecutive steps; one step -> 1; no step -> unscored
    nli = HFCrossEncoderNLI(str(nli_path))
    coherence = _by_epoch(log, "logical_coherence")
    for (sid, epoch), score in coherence.items():
        steps = split_steps(extract_answer(SAMPLES[sid][3][epoch - 1], "text").trace)
        if not steps:
            assert math.isnan(score.value)
        elif len(steps) == 1:
            assert score.value == 1.0
        else:
            probs = nli.contradiction(list(zip(steps, steps[1:], strict=False)))
            assert score.value == pytest.approx(1 - sum(probs) / len(probs), abs=1e-6)
    assert math.isnan(coherence[("q2", 2)].value) and coherence[("q1", 2)].value == 1.0
    first = [coherence[(sid, 1)].value for sid in SAMPLES]
    assert _metric(log, "logical_coherence", "mean", "first_epoch") == pytest.approx(sum(first) / 4, abs=1e-6)
    # SS: mean cosine of the epochs' traces (the answer line cut off; the raw text when nothing is left)
    sim = EmbeddingCosine("embedded-minilm")
    per_sample = []
    for _, _, _, outs in SAMPLES.values():
        traces = [extract_answer(o, "text").trace or o for o in outs]
        pairs = [(traces[i], traces[j]) for i in range(3) for j in range(i + 1, 3)]
        per_sample.append(sum(sim.pairwise([a for a, _ in pairs], [b for _, b in pairs])) / 3)
    assert _metric(log, "trace_stability", "stability") == pytest.approx(sum(per_sample) / 4, abs=1e-6)


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())["behavior"]


def test_log_scores_equal_the_scorers_and_map(inspect_run, tmp_path):
    from inspect_ai.log import read_eval_log

    path, log, nli_path = inspect_run
    opts = ["--nli", f"hf:{nli_path}", "--similarity", "embedding", "--output-dir", str(tmp_path)]
    res = runner.invoke(app, ["score", "--from", "inspect", str(path), "--name", "from-log", *opts])
    assert res.exit_code == 0, res.output
    from_log = _summary(tmp_path / "from-log")
    metrics = from_log["metrics"][MODEL]
    # reasonscope's CQ and LS read the first sample: inspect's first_epoch reduction; CS and SS over epochs
    assert metrics["CQ"]["value"] == pytest.approx(_metric(log, "answer_correctness", "accuracy", "first_epoch"))
    assert metrics["CS"]["value"] == pytest.approx(_metric(log, "answer_correctness", "consistency"))
    assert metrics["LS"]["value"] == pytest.approx(_metric(log, "logical_coherence", "mean", "first_epoch"))
    assert metrics["SS"]["value"] == pytest.approx(_metric(log, "trace_stability", "stability"))
    # ES from the log's token usage (the mock counts words) and max_tokens 40: H(CQ, 1 - tokens / 40)
    # ES_item = mean_i H(CQ_i, L_i); ES (= ES_corpus by default) = H(CQ, mean_i L_i)
    lengths = {sid: 1 - len(v[3][0].split()) / 40 for sid, v in SAMPLES.items()}
    es = [0.0 if EPOCH1_WRONG == sid else 2 * L / (1 + L) for sid, L in lengths.items()]
    assert metrics["ES_item"]["value"] == pytest.approx(sum(es) / 4)
    cq, mean_l = 3 / 4, sum(lengths.values()) / 4
    assert metrics["ES"]["value"] == pytest.approx(2 * cq * mean_l / (cq + mean_l))
    assert metrics["ES_corpus"]["value"] == metrics["ES"]["value"]
    # the same outputs, flattened from the log by hand, through --map
    rows = [{"id": s.id, "question": s.input, "gold": s.target, "options": s.choices, "out": s.output.completion,
             "k": s.epoch - 1, "who": MODEL, "task": "rs_mixed", "tokens": s.output.usage.output_tokens,
             "budget": 40, "finish": s.output.choices[0].stop_reason.replace("max_tokens", "length")}
            for s in read_eval_log(str(path)).samples]
    mapped = tmp_path / "mapped.jsonl"
    mapped.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["score", "-i", str(mapped), "--map", "input=question,target=gold,choices=options,"
                              "prediction=out,sample=k,model=who,dataset=task,completion_tokens=tokens,"
                              "max_tokens=budget,finish_reason=finish", "--name", "from-map", *opts])
    assert res.exit_code == 0, res.output
    from_map = _summary(tmp_path / "from-map")
    assert from_log["metrics"] == from_map["metrics"] and from_log["per_type"] == from_map["per_type"]
    rows = [json.loads(x) for x in (tmp_path / "from-log" / "samples.jsonl").read_text().splitlines()]
    assert {r["source"].split(":", 2)[2] for r in rows} == {f"sample={s},epoch={e}" for s in SAMPLES for e in (1, 2, 3)}


def test_reader_mapping_and_settings(inspect_run):
    from reasonscope.data.adapters import read_inspect_log

    path, _, _ = inspect_run
    result = read_inspect_log(path)
    items = {it.id: it for it in result.items["rs_mixed"]}
    assert {k: (it.target, it.answer_type, it.choices) for k, it in items.items()} == {
        "q1": ("7", "number", None), "q2": ("yes", "boolean", None), "q3": ("B", "choice", ["carrot", "apple"]),
        "q4": ("6", "number", None)}
    gens = {(g.item_id, g.sample): g for g in result.generations}
    assert len(gens) == 12 and gens[("q4", 1)].completion.finish_reason == "length"
    assert gens[("q1", 0)].completion.completion_tokens == 12 and gens[("q1", 0)].max_tokens == 40
    assert result.temperatures == {MODEL: 0.5}


@pytest.fixture(scope="module")
def error_log(tmp_path_factory):
    """A log with a failed sample (its solver raised; fail_on_error=False), a sample with two targets and
    a chat input with a system message."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.solver import solver

    script = {"e1": ("What is 2 + 2?", "4", None, ["2 + 2 = 4.\nAnswer: 4"]),
              "e3": ("What is 3 + 3?", "6", None, ["Answer: 6"])}

    @solver
    def fail_on_e2():
        async def solve(state, generate):
            if state.sample_id == "e2":
                raise RuntimeError("provider refused the request")
            return await generate(state, seed=state.epoch)

        return solve

    dataset = [Sample(id="e1", input=[ChatMessageSystem(content="Be brief."), ChatMessageUser(content="What is 2 + 2?")],
                      target="4"),
               Sample(id="e2", input="What is 5 + 5?", target="10"),
               Sample(id="e3", input="What is 3 + 3?", target=["6", "six"])]
    log = eval(Task(dataset=dataset, solver=fail_on_e2(), name="rs_errors"), model=_mock_model(script),
               log_dir=str(tmp_path_factory.mktemp("inspect-errors")), display="none", fail_on_error=False,
               log_format="json")[0]
    return Path(log.location)


def test_failed_samples_are_left_out_and_several_targets_are_refused(error_log, tmp_path):
    from reasonscope.data.adapters import read_inspect_log

    with pytest.raises(DatasetError, match=r"\.json:sample=e3,epoch=1: field 'target': expected one target, got 2"):
        read_inspect_log(error_log)
    result = read_inspect_log(error_log, skip_bad_rows=True)
    assert [(b.line, b.field) for b in result.bad_rows] == [("sample=e3,epoch=1", "target")]
    gens = {g.item_id: g for g in result.generations}
    assert gens["e2"].completion.error == "RuntimeError('provider refused the request')"
    assert {it.id: it.input for it in result.items["rs_errors"]}["e1"] == "What is 2 + 2?"
    res = runner.invoke(app, ["score", "--from", "inspect", str(error_log), "--skip-bad-rows", "--similarity",
                              "embedding", "--output-dir", str(tmp_path), "--name", "errs"])
    assert res.exit_code == 0, res.output
    summary = _summary(tmp_path / "errs")
    # the refused sample is a failed generation: left out by default (stats.failed_generations: exclude)
    cq = summary["metrics"][MODEL]["CQ"]
    assert summary["counts"][MODEL]["failed"] == 1 and (cq["value"], cq["n"]) == (1.0, 1)


# ----------------------------------------------------------------------------------------------
# Truncated and malformed logs


def test_truncated_and_foreign_files_are_clear_errors(inspect_run, tmp_path):
    from reasonscope.data.adapters import read_inspect_log

    path, _, _ = inspect_run
    cut = tmp_path / path.name
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DatasetError, match=r"not a readable inspect-ai log .*truncated"):
        read_inspect_log(cut)
    other = tmp_path / "notes.eval"
    other.write_text("not a log")
    with pytest.raises(DatasetError, match=r"notes\.eval: not a readable inspect-ai log"):
        read_inspect_log(other)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="no inspect-ai logs"):
        read_inspect_log(empty)
    res = runner.invoke(app, ["score", "--from", "inspect", str(cut), "--output-dir", str(tmp_path), "--name", "x"])
    assert res.exit_code == 2 and "Traceback" not in res.output and "not a readable inspect-ai log" in res.output


def _json_log(inspect_run, tmp_path: Path, edit) -> Path:
    from inspect_ai.log import read_eval_log, write_eval_log

    path, _, _ = inspect_run
    out = tmp_path / "log.json"
    write_eval_log(read_eval_log(str(path)), str(out), format="json")
    data = json.loads(out.read_text())
    edit(data["samples"])
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s[1].update(epoch="two"), r"field 'samples\[1\]\.epoch': Input should be a valid integer"),
    (lambda s: s[0].pop("id"), r"field 'samples\[0\]\.id': Field required"),
    (lambda s: s[2].update(target=5), r"field 'samples\[2\]\.target"),
])
def test_malformed_json_log_names_sample_and_field(inspect_run, tmp_path, edit, message):
    from reasonscope.data.adapters import read_inspect_log

    with pytest.raises(DatasetError, match=r"log\.json: not a readable inspect-ai log \(" + message):
        read_inspect_log(_json_log(inspect_run, tmp_path, edit))


def test_malformed_sample_in_eval_log_is_named_and_skippable(inspect_run, tmp_path):
    from reasonscope.data.adapters import read_inspect_log

    path, _, _ = inspect_run
    broken = tmp_path / path.name
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(broken, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "samples/q2_epoch_2.json":
                sample = json.loads(data)
                sample["output"] = {"choices": "not a list"}
                data = json.dumps(sample).encode()
            dst.writestr(info.filename, data)
    with pytest.raises(DatasetError, match=r"\.eval:sample=q2,epoch=2: field 'output\.choices': unreadable sample"):
        read_inspect_log(broken)
    result = read_inspect_log(broken, skip_bad_rows=True)
    assert len(result.generations) == 11 and [b.line for b in result.bad_rows] == ["sample=q2,epoch=2"]
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(broken, folder / broken.name)
    res = runner.invoke(app, ["score", "--from", "inspect", str(folder), "--output-dir", str(tmp_path), "--name", "f"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"{broken.name}:sample=q2,epoch=2: field 'output.choices'" in res.output.replace("\n", "")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["id", "epoch", "input", "target", "choices", "output", "metadata", "error"]),
       value=st.none() | st.integers(-2, 2) | st.text(max_size=6) | st.lists(st.text(max_size=4), max_size=2)
       | st.dictionaries(st.sampled_from(["choices", "completion", "usage", "message"]), st.integers(0, 2), max_size=2))
def test_fuzzed_json_log_is_read_or_refused_with_a_named_error(inspect_run, tmp_path_factory, field, value):
    """Any value in any field of a sample of a .json log: a result or a DatasetError naming the log."""
    from reasonscope.data.adapters import read_inspect_log

    log = _json_log(inspect_run, tmp_path_factory.mktemp("fuzz"), lambda s: s[3].update({field: value}))
    try:
        result = read_inspect_log(log)
    except DatasetError as err:
        assert str(err).startswith(str(log))
    else:
        assert len(result.generations) == 12


# ----------------------------------------------------------------------------------------------
# Framework users' friction: re-runs into one log folder, the wrong file, every generation failed,
# the registry entry point, the ES message


def _scripted_eval(log_dir: Path, answers: dict[str, str], name: str = "rs_rerun", fail: bool = False,
                   log_format: str = "eval"):
    """One eval of a two-sample task with inspect's mock model answering ``answers`` (or a solver that
    raises for every sample: every generation failed)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import solver

    script = {sid: (f"What is {sid}?", "4", None, [text]) for sid, text in answers.items()}

    @solver
    def answer_or_fail():
        async def solve(state, generate):
            if fail:
                raise RuntimeError("provider refused the request")
            return await generate(state, seed=state.epoch)

        return solve

    log = eval(Task(dataset=[Sample(id=sid, input=v[0], target=v[1]) for sid, v in script.items()],
                    solver=answer_or_fail(), name=name), model=_mock_model(script), log_dir=str(log_dir),
               display="none", fail_on_error=False, log_format=log_format)[0]
    return log


def test_reruns_into_one_log_folder_read_the_latest_run_or_the_one_picked(tmp_path):
    """The same task evaluated twice into one --log-dir: two logs of (rs_rerun, mockllm/model), read as two
    runs, the latest (eval.created, then completion) by default; --log-run picks the other by file name,
    run_id or eval_id. (Both used to be read together and refused as 'duplicate record'.)"""
    from reasonscope.data.adapters import read_inspect_log

    logs = tmp_path / "logs"
    first = _scripted_eval(logs, {"a": "Answer: 5", "b": "Answer: 5"})
    second = _scripted_eval(logs, {"a": "Answer: 4", "b": "Answer: 4"}, log_format="json")
    other = _scripted_eval(logs, {"a": "Answer: 4", "b": "Answer: 5"}, name="rs_other")  # another task: kept
    result = read_inspect_log(logs)
    by_task = {(g.dataset, g.item_id): g.completion.text for g in result.generations}
    assert by_task == {("rs_rerun", "a"): "Answer: 4", ("rs_rerun", "b"): "Answer: 4",
                       ("rs_other", "a"): "Answer: 4", ("rs_other", "b"): "Answer: 5"}
    first_name, second_name = Path(first.location).name, Path(second.location).name
    note = next(n for n in result.notes if "runs in the folder" in n)
    assert note.startswith(f"rs_rerun / {MODEL}: 2 runs in the folder; read the latest, run of ")
    assert f"({second_name}); set aside " in note and note.count(first_name) == 1
    for pick in (first_name, first.eval.run_id, first.eval.eval_id):
        picked = read_inspect_log(logs, log_run=pick)
        assert {g.completion.text for g in picked.generations} == {"Answer: 5"}, pick
        assert sorted(picked.items) == ["rs_rerun"]
    with pytest.raises(DatasetError, match=r"--log-run 'nope' names no log here; expected a log file name, an eval's "
                                           r"run_id or eval_id, or its created time"):
        read_inspect_log(logs, log_run="nope")
    res = runner.invoke(app, ["score", "--from", "inspect", str(logs), "--similarity", "embedding", "--output-dir",
                              str(tmp_path), "--name", "latest"])
    assert res.exit_code == 0, res.output
    assert _summary(tmp_path / "latest")["per_dataset"][MODEL]["rs_rerun"]["CQ"]["value"] == 1.0
    res = runner.invoke(app, ["score", "--from", "inspect", str(logs), "--log-run", Path(other.location).name,
                              "--similarity", "embedding", "--output-dir", str(tmp_path), "--name", "other"])
    assert res.exit_code == 0, res.output
    assert _summary(tmp_path / "other")["metrics"][MODEL]["CQ"]["value"] == 0.5
    res = runner.invoke(app, ["score", "-i", str(Path(first.location)), "--log-run", "x", "--output-dir",
                              str(tmp_path), "--name", "bad"])
    assert res.exit_code == 2 and "log_run (--log-run) applies to lm-eval and inspect logs" in res.output


def test_lm_eval_files_given_to_from_inspect_name_from_lm_eval(tmp_path):
    """lm-eval's files (written in its format) given to --from inspect: the error names --from lm-eval."""
    from reasonscope.data.adapters import read_inspect_log

    folder = tmp_path / "lm-eval" / "model"
    folder.mkdir(parents=True)
    samples = folder / "samples_arith_2024-01-01T00-00-00.000001.jsonl"
    samples.write_text(json.dumps({"doc_id": 0, "doc": {}, "target": "#### 4", "arguments": {"gen_args_0": {
        "arg_0": "Q", "arg_1": {"max_gen_toks": 8}}}, "resps": [["#### 4"]], "filtered_resps": ["4"],
        "filter": "none"}) + "\n")
    results = folder / "results_2024-01-01T00-00-00.000001.json"
    results.write_text(json.dumps({"results": {"arith": {}}, "configs": {"arith": {}}, "n-samples": {
        "arith": {"original": 1, "effective": 1}}}, indent=2))
    with pytest.raises(DatasetError, match=r"an lm-eval samples file \(--log_samples\), not an inspect-ai log: read it "
                                           r"with --from lm-eval"):
        read_inspect_log(samples)
    with pytest.raises(DatasetError, match=r"lm-eval's results file .*: read the samples files of its run with "
                                           r"--from lm-eval"):
        read_inspect_log(results)
    with pytest.raises(DatasetError, match=r"no inspect-ai logs .* it holds lm-eval samples files: read them with "
                                           r"--from lm-eval"):
        read_inspect_log(tmp_path / "lm-eval")


def test_score_exits_1_when_every_imported_generation_failed(tmp_path, error_log):
    """`score` follows run's exit rule (docs/outcomes.md): a model with no successful generation exits 1
    with the reason on the last line and in summary.json; --max-failed as for run."""
    failed = _scripted_eval(tmp_path / "failed", {"a": "Answer: 4", "b": "Answer: 4"}, fail=True)
    res = runner.invoke(app, ["score", "--from", "inspect", str(Path(failed.location)), "--similarity", "embedding",
                              "--output-dir", str(tmp_path), "--name", "all-failed"])
    assert res.exit_code == 1, res.output
    last = res.output.strip().replace("\n", " ").rsplit("error: ", 1)[1]
    assert last.startswith(f"{MODEL}: no successful generation, all 2 requests failed (e.g. RuntimeError(")
    outcome = json.loads((tmp_path / "all-failed" / "summary.json").read_text())["notes"]["outcome"]
    assert outcome["code"] == 1 and outcome["models"][MODEL] == {
        "requested": 2, "answered": 0, "failed": 2, "pending": 0,
        "failed_example": "RuntimeError('provider refused the request')", "pending_example": None}
    # one failed of two: 0 by default, 1 past --max-failed
    opts = ["--from", "inspect", str(error_log), "--skip-bad-rows", "--similarity", "embedding", "--output-dir",
            str(tmp_path)]
    assert runner.invoke(app, ["score", *opts, "--name", "one"]).exit_code == 0
    res = runner.invoke(app, ["score", *opts, "--name", "limit", "--max-failed", "0"])
    assert res.exit_code == 1 and "1 of 2 generations failed (50.0%), more than --max-failed 0" in res.output.replace(
        "\n", " ")
    res = runner.invoke(app, ["score", *opts, "--name", "bad", "--max-failed", "lots"])
    assert res.exit_code == 2 and "expected a percentage such as 5% or a count such as 3" in res.output


def test_es_reason_asks_for_the_budget_when_tokens_are_known(tmp_path, error_log):
    """A log with token usage but no max_tokens (inspect eval without --max-tokens): ES is n/a, and the reason
    asks for --budget, not for token counts the log (or --tokenizer) already gave."""
    from reasonscope.behavior.efficiency import NEEDS_BUDGET

    opts = ["--from", "inspect", str(error_log), "--skip-bad-rows", "--similarity", "embedding", "--output-dir",
            str(tmp_path)]
    res = runner.invoke(app, ["score", *opts, "--name", "no-budget"])
    assert res.exit_code == 0, res.output
    metrics = _summary(tmp_path / "no-budget")["metrics"][MODEL]
    # e1 has usage but no budget; e2 failed (left out)
    for name in ("ES", "ES_corpus", "ES_item"):
        assert metrics[name]["value"] is None, name
        assert metrics[name]["reason"] == f"{NEEDS_BUDGET}; generation failed (left out: stats.failed_generations is " \
                                          "exclude)", name
    assert "give --budget" in res.output.replace("\n", " ")
    res = runner.invoke(app, ["score", *opts, "--name", "budget", "--budget", "40"])
    assert res.exit_code == 0, res.output
    # e1 answers "2 + 2 = 4.\nAnswer: 4", 7 words (the mock counts words), rightly: L = 1 - 7/40; ES = H(1, L)
    length = 1 - 7 / 40
    assert _summary(tmp_path / "budget")["metrics"][MODEL]["ES"]["value"] == pytest.approx(2 * length / (1 + length))


def test_inspect_registry_finds_the_scorers_through_the_entry_point():
    """A fresh interpreter, as `inspect score LOG --scorer reasonscope/...` starts: inspect-ai's own registry
    lookup finds the scorers, metrics and reducer by the package's `inspect_ai` entry point, nothing imported
    by hand."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from inspect_ai._util.registry import registry_lookup\n"
            "assert 'reasonscope' not in sys.modules\n"
            "found = [registry_lookup(kind, name) is not None for kind, name in [('scorer', 'reasonscope/answer_correctness'),"
            " ('scorer', 'reasonscope/logical_coherence'), ('scorer', 'reasonscope/trace_stability'),"
            " ('metric', 'reasonscope/consistency'), ('metric', 'reasonscope/stability')]]\n"
            "print(found, registry_lookup('score_reducer', 'first_epoch') is not None)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[True, True, True, True, True] True"


@pytest.mark.slow
def test_inspect_score_command_loads_the_scorer(inspect_run, tmp_path):
    """`inspect score LOG --scorer reasonscope/answer_correctness` (inspect's command line, offline): the log
    is re-scored with reasonscope's scorer, the same values as inside the eval."""
    import subprocess
    import sys

    from inspect_ai.log import read_eval_log

    path, log, _ = inspect_run
    out = tmp_path / "rescored.eval"
    proc = subprocess.run([sys.executable, "-m", "inspect_ai", "score", str(path), "--scorer",
                           "reasonscope/answer_correctness", "--action", "overwrite", "--output-file", str(out),
                           "--display", "none"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rescored = read_eval_log(str(out))
    assert {(s.id, s.epoch): s.scores["answer_correctness"].value for s in rescored.samples} == {
        k: v.value for k, v in _by_epoch(log, "answer_correctness").items()}
