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
