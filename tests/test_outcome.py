"""Honest outcomes through the CLI and the API: a run that measured nothing does not exit 0, failed
generations are not wrong answers unless asked, no pairwise metric compares a failed generation,
pending requests are sent by the next run, and --max-failed gates CI."""

from __future__ import annotations

import json
import re
import socket
import threading

import pytest
import yaml
from typer.testing import CliRunner

from reasonscope.behavior.scoring import NOTHING_TO_COMPARE, score_behavior
from reasonscope.cli import app
from reasonscope.pipeline.run_outcome import FailedLimit, ModelTally, decide
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import BehaviorConfig, StatsConfig, parse_plan
from reasonscope.storage.run_data import RunData, interpret
from reasonscope.storage.store import Store
from reasonscope.testing import FakeOpenAIServer
from reasonscope.types import Item

runner = CliRunner()
MODEL = "openai-compatible/fake"
REFUSAL = {"content": None, "refusal": "I can't help with that."}


def _plan(tmp_path, url: str, name: str, *, samples: int = 2, paraphrases: int = 1, stats: dict | None = None,
          similarity: str = "embedding"):
    plan = {"experiment": {"name": name, "output_dir": str(tmp_path / "runs")},
            "models": [{"spec": MODEL, "base_url": url, "max_retries": 0}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
            "families": {"behavior": {"samples": samples, "paraphrases": paraphrases, "nli": {"backend": "none"},
                                      "similarity": {"method": similarity}}},
            "stats": {"n_resamples": 200, **(stats or {})}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def _run(path, *args):
    res = runner.invoke(app, ["run", str(path), *args], env={"COLUMNS": "300"})
    lines = [x for x in res.output.strip().splitlines() if x.strip()]
    return res.exit_code, lines[-1] if lines else "", res.output


def _summary(tmp_path, name):
    return json.loads((tmp_path / "runs" / name / "summary.json").read_text())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_down_exits_3_with_the_reason_and_scores_nothing(tmp_path):
    path = _plan(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1", "down", samples=1, paraphrases=0)
    code, last, output = _run(path)
    assert code == 3, output
    assert last.startswith("error: ") and "no successful generation yet, 6 of 6 requests pending" in \
        " ".join(output.split())
    summary = _summary(tmp_path, "down")
    assert summary["behavior"] is None  # no CQ 0.000 [0.00, 0.00] made up from nothing
    assert summary["notes"]["outcome"]["code"] == 3 and summary["generations"]["missing"] == 6
    store = Store(tmp_path / "runs" / "down")
    assert store.cached_keys([r["key"] for r in store.run_generations(store.run()["run_id"])]) == set()
    store.close()


def test_every_request_refused_exits_1_and_no_metric_is_made_up(tmp_path):
    with FakeOpenAIServer(reply=lambda body: REFUSAL) as srv:
        code, last, output = _run(_plan(tmp_path, srv.base_url, "refused"))
    assert code == 1, output
    flat = " ".join(output.split())
    assert "no successful generation, all 18 requests failed (e.g. refusal: I can't help with that.)" in flat
    assert last.startswith("error: ")
    beh = _summary(tmp_path, "refused")["behavior"]
    m = beh["metrics"][MODEL]
    assert all(m[k]["value"] is None for k in ("CQ", "CS", "RS", "LS", "ES", "SS"))
    assert m["CQ"]["failed"] == 6 and m["CS"]["failed"] == 12 and m["SS"]["failed"] == 12
    assert m["SS"]["reason"] == NOTHING_TO_COMPARE == m["CS"]["reason"]  # two failed traces are not "stable"
    assert beh["counts"][MODEL]["failed"] == 18 and beh["settings"]["failed_generations"] == "exclude"
    html = (tmp_path / "runs" / "refused" / "report.html").read_text()
    assert "stats.failed_generations: exclude" in html and NOTHING_TO_COMPARE in html and "exit code 1" in html

    # counted as wrong when asked: CQ and ES are 0 over all items, pairwise metrics still compare nothing
    with FakeOpenAIServer(reply=lambda body: REFUSAL) as srv:
        code, _, output = _run(_plan(tmp_path, srv.base_url, "wrong", stats={"failed_generations": "wrong"}))
    assert code == 1, output
    assert "failed generations: wrong" in " ".join(output.split())
    m = _summary(tmp_path, "wrong")["behavior"]["metrics"][MODEL]
    assert (m["CQ"]["value"], m["CQ"]["n"], m["CQ"]["failed"]) == (0.0, 6, 6)
    assert (m["ES_item"]["value"], m["ES_item"]["n"]) == (0.0, 6)
    # the corpus reading H(CQ, mean L) has no length score to average: n/a, not a made-up 0
    assert m["ES"]["reading"] == "ES_corpus" and m["ES"]["value"] is None and m["ES"]["n"] == 0
    assert m["CS"]["value"] is None and m["SS"]["value"] is None and m["RS"]["value"] is None


def test_pending_requests_are_reported_and_sent_by_the_next_run(tmp_path):
    limited = {"on": True}
    with FakeOpenAIServer(fault_for=lambda n, body: {"status": 429, "headers": {"Retry-After": "0"}}
                          if limited["on"] else None) as srv:
        path = _plan(tmp_path, srv.base_url, "limited", samples=1, paraphrases=0)
        code, last, output = _run(path)
        assert code == 3, output
        assert "6 of 6 requests pending" in " ".join(output.split()) and "run the same command again" in last
        assert srv.served == 0
        limited["on"] = False
        code, last, output = _run(path)
    assert code == 0, output
    assert "6 model calls, 0 from the store, 0 failed, 0 pending" in " ".join(output.split())
    assert srv.served == 6
    assert _summary(tmp_path, "limited")["behavior"]["metrics"][MODEL]["CQ"]["n"] == 6


def test_max_failed_gates_the_exit_code(tmp_path):
    first = threading.Lock()
    refused = []

    def reply(body):  # the first request is refused, the others answered
        with first:
            refused.append(1)
            return REFUSAL if len(refused) == 1 else "Answer: 42"

    with FakeOpenAIServer(reply=reply) as srv:
        path = _plan(tmp_path, srv.base_url, "gate", samples=1, paraphrases=0)
        code, last, output = _run(path, "--max-failed", "10%")
        assert code == 1, output
        assert re.search(r"1 of 6 generations failed \(16\.7%\), more than --max-failed 10%", " ".join(output.split()))
        for limit in ("20%", "1"):
            code, _, output = _run(path, "--max-failed", limit)  # the same run again: from the store
            assert code == 0, output
        code, _, output = _run(path)
        assert code == 0, output
        assert srv.count == 6
    assert "n=5, 1 failed" in output  # next to CQ in the table
    cq = _summary(tmp_path, "gate")["behavior"]["metrics"][MODEL]["CQ"]
    assert (cq["n"], cq["failed"]) == (5, 1)
    code, last, _ = _run(path, "--max-failed", "lots")
    assert code == 2 and "expected a percentage such as 5% or a count such as 3" in last


def test_decide_exit_codes():
    ok = ModelTally(requested=4, answered=4)
    assert decide({"a": ok}).code == 0
    assert decide({"a": ok}, skipped={"b": "b: environment variable K is not set"}).code == 1
    assert decide({"a": ModelTally(requested=4, failed=4, failed_example="refusal")}).code == 1
    assert decide({"a": ModelTally(requested=4, pending=4)}).code == 3
    both = decide({"a": ModelTally(requested=4, failed=4), "b": ModelTally(requested=4, answered=2, pending=2)})
    assert both.code == 1 and "b: 2 of 4 requests pending" in both.message
    assert decide({"a": ModelTally(requested=20, answered=19, failed=1)}, FailedLimit.parse("5%")).code == 0
    assert decide({"a": ModelTally(requested=20, answered=18, failed=2)}, FailedLimit.parse("5%")).code == 1
    assert decide({"a": ModelTally(requested=20, answered=18, failed=2)}, FailedLimit.parse("2")).code == 0
    with pytest.raises(ValueError):
        FailedLimit.parse("150%")


def _gen(item, text, sample=0, variant="original", error=None):
    return interpret({"model": "m", "variant": variant, "sample": sample, "text": text, "finish_reason": "stop",
                      "completion_tokens": 10, "max_tokens": 100, "error": error}, item)


def test_pairwise_metrics_use_the_successful_samples_only():
    """q1: samples 8, <failed>, 8 and paraphrases 8, <failed>; q2: samples <failed>, 4, 5."""
    q1 = Item(id="q1", input="3+5?", target=8, answer_type="number", group="d", perturbations=["p", "p"])
    q2 = Item(id="q2", input="2+2?", target=4, answer_type="number", group="d")
    gens = [_gen(q1, "Add.\nAnswer: 8"), _gen(q1, "", 1, error="refusal: no"), _gen(q1, "Answer: 8", 2),
            _gen(q1, "Answer: 8", variant="p0"), _gen(q1, "", variant="p1", error="refusal: no"),
            _gen(q2, "", error="refusal: no"), _gen(q2, "Answer: 4", 1), _gen(q2, "Answer: 5", 2)]
    data = RunData(run={}, items={"d/q1": q1, "d/q2": q2}, generations=gens)
    scores, tables = score_behavior(data, BehaviorConfig(samples=3, paraphrases=2), StatsConfig(n_resamples=200))
    item = {(s.item_id, s.metric): s for s in scores if s.item_id}
    assert item[("d/q1", "CS")].value == 1.0  # (8, 8): the failed sample is not a disagreement
    assert item[("d/q1", "RS")].value == 1.0  # p0 agrees; the failed p1 is left out
    assert item[("d/q2", "CS")].value == 0.0  # (4, 5) only
    assert item[("d/q2", "CQ")].value is None and item[("d/q2", "CQ")].reason.startswith("generation failed")
    m = tables["metrics"]["m"]
    assert (m["CQ"]["value"], m["CQ"]["n"], m["CQ"]["failed"]) == (1.0, 1, 1)
    assert (m["CS"]["value"], m["CS"]["n"], m["CS"]["failed"]) == (0.5, 2, 2)
    assert (m["RS"]["n"], m["RS"]["failed"]) == (1, 2)  # q1's failed paraphrase, q2's failed primary
    assert m["ES"]["n"] == 1 and m["ES"]["failed"] == 1


def _evidence_reply(body):
    """Refuse the text about the first topic item, else answer the first label offered, as JSON."""
    prompt = body["messages"][0]["content"]
    labels = re.search(r"exactly one of these labels: (.*)\.\n", prompt).group(1).split(", ")
    return REFUSAL if prompt.endswith(_evidence_reply.refused) else json.dumps(
        {"label": labels[0], "rationale": "The text names it."})


@pytest.mark.parametrize("policy, n, unparseable", [("exclude", 11, 0), ("wrong", 12, 0)])
def test_evidence_leaves_failed_predictions_out_unless_counted_as_wrong(tmp_path, policy, n, unparseable):
    plan = parse_plan({
        "experiment": {"name": f"ev-{policy}", "output_dir": str(tmp_path)},
        "models": [{"spec": MODEL, "base_url": "http://unused", "max_retries": 0}],
        "families": {"behavior": None, "evidence": {
            "train": {"name": "tr", "format": "topics", "size": 40, "split": "train"},
            "test": {"name": "te", "format": "topics", "size": 12, "split": "test"},
            "sweep_k": [3], "sweep_delta": [0.2], "n_permutations": 100}},
        "stats": {"n_resamples": 100, "failed_generations": policy},
    })
    from reasonscope.data.loaders import load_dataset

    test_items = load_dataset(plan.families.evidence.test).items
    _evidence_reply.refused = test_items[0].input
    with FakeOpenAIServer(reply=_evidence_reply) as srv:
        plan.models[0].base_url = srv.base_url
        summary = Runner(plan, show_progress=False).run()
    assert summary.calls_made == 12 and summary.outcome.code == 0
    llm = json.loads((tmp_path / f"ev-{policy}" / "summary.json").read_text())["evidence"][MODEL]["llm"]
    assert (llm["n"], llm["failed"], llm["unparseable"]) == (n, 1, unparseable)


@pytest.mark.parametrize("policy", ["exclude", "wrong"])
def test_attack_transfer_does_not_score_a_failed_generation_as_a_changed_answer(tmp_path, policy):
    from rich.console import Console

    from reasonscope.attack.transfer import run_transfer
    from reasonscope.plan import AttackConfig

    item = Item(id="a", input="Ana has 3 apples and gets 5 more. How many?", target=8, answer_type="number")

    def reply(body):  # the clean question is answered, the perturbed one refused
        return REFUSAL if "zebra" in body["messages"][0]["content"] else "Answer: 8\nReasoning: 3 + 5 = 8."

    with FakeOpenAIServer(reply=reply) as srv:
        cfg = AttackConfig(transfer=[{"spec": MODEL, "name": "api", "base_url": srv.base_url, "max_retries": 0}])
        out = run_transfer(cfg, [("m|token|ds/a", "ds/a", item, "token", "Ana has 3 apples zebra and gets 5 more. How many?")],
                           Store(tmp_path), StatsConfig(n_resamples=200, failed_generations=policy), seed=0,
                           console=Console(stderr=True))
    api = out["api"]
    if policy == "exclude":
        assert api["rates"] == {} and api["rows"][0]["outcome"] is None
        assert api["rows"][0]["why"] == "generation failed: refusal: I can't help with that."
    else:
        assert api["rates"]["token"]["n"] == 1 and api["rates"]["token"]["wrong"]["value"] == 1.0
