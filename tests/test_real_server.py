"""The openai-compatible provider against a real OpenAI-compatible server: llama.cpp's server
(``python -m llama_cpp.server``, ``pip install 'reasonscope[server]'``) serving the embedded SmolLM2-135M GGUF
on 127.0.0.1. Slow (the server loads the model, SmolLM2 decodes on the CPU); skipped with the reason when
llama-cpp-python or the GGUF is missing.

* a behaviour plan end to end through ``reasonscope run``, then again from the store with no call;
* structured outputs through ``response_format`` json_schema: every answer validates against its schema;
* label log-probabilities from ``logprobs``/``top_logprobs``: reasonscope's reading equals the server's raw
  reply, and an evidence plan reads its labels by likelihood end to end;
* the server killed mid-run: the run exits 3 with the unanswered requests pending, and after a restart the
  same command sends exactly those (the server's access log counts them) and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from reasonscope.llama_server import MODEL_ALIAS, LlamaCppServer, llama_cpp_missing
from reasonscope.models.base import GenerationRequest
from reasonscope.models.registry import create_model
from reasonscope.plan import ModelConfig
from reasonscope.storage.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.skipif(llama_cpp_missing() is not None,
                                                   reason=str(llama_cpp_missing()))]

SPEC = f"openai-compatible/{MODEL_ALIAS}"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DONE = re.compile(r"(\d+) model calls, (\d+) from the store, (\d+) failed, (\d+) pending")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = LlamaCppServer(tmp_path_factory.mktemp("llama") / "server.log")
    with srv:
        yield srv


def _model(url: str, **kw):
    return create_model(ModelConfig(spec=SPEC, base_url=url, max_retries=1, timeout_s=120,
                                    options={"retry_base_s": 0.05}, **kw))


def _generate(url: str, requests: list[GenerationRequest]):
    model = _model(url)

    async def go():
        try:
            return await model.generate(requests)
        finally:
            await model.aclose()

    return asyncio.run(go())


def _cli(*args: str, cwd: Path) -> tuple[int, str]:
    """``reasonscope ARGS`` in a child process (its own event loop and store connections, as a user runs it)."""
    proc = subprocess.run([sys.executable, "-m", "reasonscope.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900, env=_env())
    return proc.returncode, proc.stdout + proc.stderr


def _env() -> dict:
    return {**os.environ, "COLUMNS": "300", "NO_COLOR": "1"}


def _done(output: str) -> tuple[int, int, int, int]:
    """(calls, from the store, failed, pending) of the run's ``done`` line."""
    m = DONE.search(" ".join(output.split()))
    assert m, output
    return tuple(int(x) for x in m.groups())


def _behaviour_plan(tmp_path: Path, url: str, name: str, **model) -> Path:
    plan = {"experiment": {"name": name, "seed": 3, "output_dir": str(tmp_path / "runs")},
            "models": [{"spec": SPEC, "base_url": url, "temperature": 0.7, "max_tokens": 48, "timeout_s": 120,
                        **model}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 1}],
            "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                                      "similarity": {"method": "embedding", "model": "embedded-minilm"}}},
            "stats": {"n_resamples": 200}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def test_behaviour_plan_end_to_end_then_from_the_store(server, tmp_path):
    path = _behaviour_plan(tmp_path, server.base_url, "behaviour")
    before = server.answered
    code, output = _cli("run", str(path), cwd=tmp_path)
    assert code == 0, output
    # 3 synthetic items x (2 samples + 1 paraphrase) = 9 requests, all answered by the server
    assert _done(output) == (9, 0, 0, 0)
    assert server.answered - before == 9
    summary = json.loads((tmp_path / "runs" / "behaviour" / "summary.json").read_text())
    cq = summary["behavior"]["metrics"][SPEC]["CQ"]
    assert cq["n"] == 3 and cq["failed"] == 0 and 0.0 <= cq["value"] <= 1.0
    assert summary["notes"]["outcome"]["code"] == 0 and summary["generations"]["missing"] == 0
    samples = [json.loads(line) for line in (tmp_path / "runs" / "behaviour" / "samples.jsonl").open()]
    assert len(samples) == 9 and all(s["prediction"] and s["error"] is None for s in samples)
    assert all(s["prompt_tokens"] > 0 and 0 < s["completion_tokens"] <= 48 for s in samples)  # the server's usage

    code, output = _cli("run", str(path), cwd=tmp_path)  # the same plan again: every answer from the store
    assert code == 0, output
    assert "0 model calls" in " ".join(output.split())
    assert server.answered - before == 9  # the server saw no new request


SCHEMA = {"type": "object",
          "properties": {"label": {"type": "string", "enum": ["entailment", "neutral", "contradiction"]},
                         "rationale": {"type": "string", "minLength": 1, "maxLength": 80}},
          "required": ["label", "rationale"], "additionalProperties": False}


def test_structured_outputs_follow_the_schema(server):
    import jsonschema

    ask = "Premise: A boy rides a horse. Hypothesis: A child is on an animal. Label and explain."
    requests = [GenerationRequest(messages=[{"role": "user", "content": ask}], max_tokens=96, temperature=0.0,
                                  structured={"json_schema": SCHEMA}),
                GenerationRequest(messages=[{"role": "user", "content": "Is a robin a bird?"}], max_tokens=24,
                                  temperature=0.0, structured={"choice": ["yes", "no"]}),
                GenerationRequest(messages=[{"role": "user", "content": "What is 2 plus 3?"}], max_tokens=32,
                                  temperature=0.0, structured={"regex": "Answer: [0-9]{1,3}"})]
    obj, choice, regex = _generate(server.base_url, requests)
    # llama-cpp-python's server refuses the json_schema form (a 500 naming response_format) and reads the
    # schema from {"type": "json_object", "schema": ...}: the provider falls back to that form, not to the prompt
    assert [c.constraint for c in (obj, choice, regex)] == ["response_format:json_object"] * 3, (obj, choice, regex)
    assert all(c.error is None for c in (obj, choice, regex))
    jsonschema.validate(json.loads(obj.text), SCHEMA)  # the server constrained the answer to the schema
    assert choice.text in ("yes", "no")  # unwrapped from {"value": ...}
    assert re.fullmatch(r"Answer: [0-9]{1,3}", regex.text), regex.text  # anchored: the whole answer


def test_label_logprobs_equal_the_servers_top_logprobs(server):
    import openai

    prompt = "Is the sky blue? Answer yes or no."
    labels = ["yes", "no", "Yes", "No", "banana"]
    model = _model(server.base_url)

    async def go():
        try:
            return await model.logprobs(prompt, labels)
        finally:
            await model.aclose()

    got = asyncio.run(go())
    # the raw reply to the same request, read by hand: first token's top_logprobs, leading spaces ignored
    raw = openai.OpenAI(base_url=server.base_url, api_key="EMPTY").chat.completions.create(
        model=MODEL_ALIAS, messages=[{"role": "user", "content": prompt}], max_tokens=1, temperature=0.0,
        logprobs=True, top_logprobs=20)
    first = raw.choices[0].logprobs.content[0]
    top: dict[str, float] = {}
    for alt in first.top_logprobs:
        top.setdefault(alt.token.strip(), alt.logprob)
    assert len(first.top_logprobs) == 20
    assert got == pytest.approx([top.get(x, -math.inf) for x in labels], abs=1e-4)
    assert sum(math.isfinite(x) for x in got) >= 2 and all(x <= 0 for x in got)
    # greedy decoding takes the most likely token: the one generated is the top alternative
    assert first.logprob == pytest.approx(max(a.logprob for a in first.top_logprobs), abs=1e-4)


def test_evidence_plan_generates_structured_predictions_and_reads_labels_by_likelihood(server, tmp_path):
    for name in ("evidence_pairs_train.csv", "evidence_pairs_test.csv"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    plan = {"experiment": {"name": "evidence", "seed": 0, "output_dir": str(tmp_path / "runs")},
            "models": [{"spec": SPEC, "base_url": server.base_url, "temperature": 0.0, "max_tokens": 160,
                        "timeout_s": 120}],
            "families": {"behavior": None, "evidence": {
                "train": {"name": "pairs-train", "format": "esnli", "path": "evidence_pairs_train.csv"},
                "test": {"name": "pairs-test", "format": "esnli", "path": "evidence_pairs_test.csv"},
                "label_reading": "likelihood", "k": 5, "n_permutations": 100}}}
    path = tmp_path / "evidence.yaml"
    path.write_text(yaml.safe_dump(plan))
    code, output = _cli("run", str(path), cwd=tmp_path)
    assert code == 0, output
    summary = json.loads((tmp_path / "runs" / "evidence" / "summary.json").read_text())
    llm = summary["evidence"][SPEC]["llm"]
    # six predictions, each one JSON object the server constrained to the prediction schema: none unparseable
    assert (llm["n"], llm["failed"], llm["unparseable"]) == (6, 0, 0), llm
    assert "top_logprobs" in llm["label_method"], llm
    probs = llm["label_probabilities"]
    assert len(probs) == 6
    classes = {"entailment", "neutral", "contradiction"}
    read = {i: p for i, p in probs.items() if p}  # SmolLM2 often starts with "The", "A", ...: no label there
    for p in read.values():  # renormalised over the classes whose first token is among the 20 alternatives
        assert set(p) <= classes and sum(p.values()) == pytest.approx(1.0), probs
    lines = [json.loads(x) for x in (tmp_path / "runs" / "evidence" / "evidence_instances.jsonl").open()]
    predicted = {x["item_id"]: x["predicted"] for x in lines}
    assert all(predicted[i] == max(p, key=p.get) for i, p in read.items()), (predicted, probs)
    print(f"evidence: labels read by likelihood on {len(read)} of 6 items: {probs}")
    store = Store(tmp_path / "runs" / "evidence")
    rows = store.run_generations(store.run()["run_id"])
    constraints = {store.get_completion(r["key"]).constraint for r in rows}
    store.close()
    assert len(rows) == 6 and constraints == {"response_format:json_object"}


def test_server_killed_mid_run_leaves_requests_pending_and_the_rerun_sends_only_them(tmp_path):
    srv = LlamaCppServer(tmp_path / "server.log")
    path = _behaviour_plan(tmp_path, srv.base_url, "killed", concurrency=1, max_retries=1,
                           options={"retry_base_s": 0.05, "retry_cap_s": 0.1})
    with srv:
        child = subprocess.Popen([sys.executable, "-m", "reasonscope.cli", "run", str(path)], cwd=tmp_path,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env())
        deadline = time.monotonic() + 300
        while srv.answered < 3 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        answered = srv.answered
        srv.kill()  # mid-run: 3 or 4 answered, one in flight, the rest not sent
        output, _ = child.communicate(timeout=300)
    assert child.returncode == 3, output  # exit 3: finished, outputs written, requests pending
    calls, cached, failed, pending = _done(output)
    assert 3 <= answered < 9 and (calls, cached, failed) == (9, 0, 0), (answered, output)
    stored = 9 - pending
    assert stored in (answered, answered + 1) and pending >= 1, (answered, output)  # one may land after the count
    assert "run the same command again" in output
    summary = json.loads((tmp_path / "runs" / "killed" / "summary.json").read_text())
    assert summary["notes"]["outcome"]["code"] == 3 and summary["generations"]["missing"] == pending

    with srv:  # the same port, so the same base_url and cache keys
        code, output = _cli("run", str(path), cwd=tmp_path)
        sent = srv.answered
    assert code == 0, output
    assert _done(output) == (pending, stored, 0, 0)
    assert sent == pending  # no answered item was asked again
    print(f"server killed after {answered} answered: first run {stored} stored, {pending} pending (exit 3); "
          f"after the restart {sent} sent, {stored} from the store (exit 0)")
