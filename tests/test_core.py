"""Core: config errors, store round trip, cache keys, runner, retries against a local fake server."""

from __future__ import annotations

import asyncio
import json

import pytest

from reasonscope.models.base import GenerationRequest
from reasonscope.models.registry import create_model
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import ModelConfig, PlanError, load_plan, parse_plan
from reasonscope.storage.store import Store, cache_key
from reasonscope.testing import FakeOpenAIServer
from reasonscope.types import Completion, Item, Score

# ---------------------------------------------------------------------------------------------- config

GOOD = """
experiment: {name: t1, seed: 1, output_dir: OUT}
models:
  - spec: mock/reasoner
datasets:
  - {name: syn, format: synthetic, size: 2}
"""


def write(tmp_path, text, name="plan.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_plan_loads_with_defaults(tmp_path):
    plan = load_plan(write(tmp_path, GOOD))
    assert plan.models[0].temperature == 0.7
    assert plan.families.behavior.samples == 3
    assert plan.run_dir.name == "t1"


@pytest.mark.parametrize("fragment,expected", [
    ("models:\n  - spec: mock/reasoner\n    temprature: 0.5\n", r"plan.yaml:\d+: models.0.temprature: unknown key"),
    ("models:\n  - spec: mock/reasoner\n    temperature: hot\n", r"models.0.temperature: Input should be a valid number"),
    ("models:\n  - spec: mock/reasoner\n    temperature: 5\n", r"models.0.temperature: Input should be less than or equal to 2"),
    ("models:\n  - spec: mock/reasoner\n    max_tokens: 0\n", r"models.0.max_tokens: Input should be greater than 0"),
    ("models: []\n", r"models: List should have at least 1 item"),
    ("models:\n  - spec: mock/reasoner\nfamilies:\n  behavior:\n    strategies:\n      s: {correctnes: 1}\n",
     r"unknown metric 'correctnes'"),
    ("models:\n  - spec: mock/reasoner\nfamilies:\n  behavior:\n    strategies:\n      s: {correctness: 0, robustness: 0}\n",
     r"weights sum to 0"),
    ("models:\n  - spec: mock/reasoner\nfamilies:\n  behavior:\n    strategies:\n      s: {correctness: -1}\n",
     r"must be finite and >= 0"),
    ("models:\n  - spec: mock/reasoner\nfamilies:\n  behavior:\n    strategies:\n      s: {correctness: high}\n",
     r"must be a number"),
    ("models:\n  - spec: mock/reasoner\n  - spec: mock/reasoner\n", r"model names must be unique"),
    ("models:\n  - spec: mock/reasoner\nfamilies:\n  evidence:\n    train: {name: syn, format: topics}\n"
     "    test: {name: te, format: topics, split: test}\n",
     r"dataset name 'syn' names two different datasets \(datasets\[0\] and families.evidence.train\)"),
    ("models:\n  - spec: mock/reasoner\nfamilies:\n  evidence:\n    train: {name: tr, format: topics, size: 40}\n"
     "    test: {name: tr, format: topics, size: 8}\n",
     r"dataset name 'tr' names two different datasets \(families.evidence.train and families.evidence.test\)"),
    ("models:\n  - spec: mock/reasoner\nfamilies:\n  information:\n    train: {name: syn, format: topics}\n",
     r"dataset name 'syn' names two different datasets \(datasets\[0\] and families.information.train\)"),
])
def test_config_errors_name_file_line_key(tmp_path, fragment, expected):
    text = "experiment: {name: t1}\ndatasets:\n  - {name: syn, format: synthetic}\n" + fragment
    with pytest.raises(PlanError, match=expected):
        load_plan(write(tmp_path, text))


def test_a_dataset_may_be_named_again_with_the_same_settings():
    # the same dataset named by the behaviour and evidence families is one dataset: accepted
    plan = parse_plan({"models": [{"spec": "mock/reasoner"}],
                       "datasets": [{"name": "te", "format": "topics", "split": "test"}],
                       "families": {"behavior": {}, "evidence": {
                           "train": {"name": "tr", "format": "topics"},
                           "test": {"name": "te", "format": "topics", "split": "test"}}}})
    assert plan.families.evidence.test == plan.datasets[0]


def test_config_error_line_number(tmp_path):
    text = "experiment: {name: t1}\nmodels:\n  - spec: mock/reasoner\n    colour: red\ndatasets:\n  - {name: s, format: synthetic}\n"
    with pytest.raises(PlanError) as err:
        load_plan(write(tmp_path, text))
    assert "plan.yaml:4: models.0.colour: unknown key" in str(err.value)


def test_config_yaml_syntax_and_dataset_source(tmp_path):
    with pytest.raises(PlanError, match=r"plan.yaml:\d+: YAML syntax error"):
        load_plan(write(tmp_path, "models: [\n  - a\n"))
    with pytest.raises(PlanError, match="needs `path` or `hf_id`"):
        parse_plan({"models": [{"spec": "mock/reasoner"}], "datasets": [{"name": "g", "format": "gsm8k"}]})
    with pytest.raises(PlanError, match="no such plan file"):
        load_plan(tmp_path / "missing.yaml")
    with pytest.raises(PlanError, match="the plan is empty"):
        load_plan(write(tmp_path, ""))


# ---------------------------------------------------------------------------------------------- store


def test_cache_key_is_stable_and_sensitive():
    base = dict(provider="openai", model_id="m", revision=None, base_url=None,
                gen_config={"temperature": 0.7, "max_tokens": 10, "seed": 0, "top_p": None},
                messages=[{"role": "user", "content": "hi"}], sample=0, template_version="v1")
    k = cache_key(**base)
    assert k == cache_key(**{**base, "gen_config": dict(reversed(list(base["gen_config"].items())))})
    assert len(k) == 64
    for change in ({"sample": 1}, {"model_id": "n"}, {"base_url": "http://x"}, {"template_version": "v2"},
                   {"gen_config": {**base["gen_config"], "temperature": 0.0}},
                   {"messages": [{"role": "user", "content": "hi!"}]}, {"model_options": {"accuracy": 0.5}}):
        assert cache_key(**{**base, **change}) != k, change
    assert cache_key(**{**base, "model_options": {"latency_s": 3}}) == k  # operational option


def test_store_round_trip(tmp_path):
    store = Store(tmp_path)
    rid = store.start_run(kind="run", config={"a": 1}, seed=3)
    items = [Item(input="What is 2+2?", target=4, answer_type="number"), Item(id="q2", input="Yes?", target=True,
                                                                              answer_type="boolean")]
    store.put_items("ds", items)
    assert store.items()["ds"][0].id.startswith("h-") and store.items()["ds"][1].id == "q2"
    c = Completion(text="Answer: 4", finish_reason="stop", prompt_tokens=5, completion_tokens=3, latency_s=0.1)
    store.put_completion("k1", provider="mock", model_id="m", request={"x": 1}, completion=c)
    store.put_completion("k2", provider="mock", model_id="m", request={}, completion=Completion(error="boom"))
    assert store.get_completion("k1") == Completion(text="Answer: 4", finish_reason="stop", prompt_tokens=5,
                                                    completion_tokens=3, latency_s=0.1)
    assert store.cached_keys(["k1", "k2", "k3"]) == {"k1", "k2"}
    assert store.cached_keys(["k1", "k2"], include_failed=False) == {"k1"}
    store.link([(rid, "m", "ds", items[0].id, "original", 0, "k1", 16)])
    rows = store.run_generations(rid)
    assert rows[0]["text"] == "Answer: 4" and rows[0]["max_tokens"] == 16
    store.put_scores(rid, [Score(family="behavior", metric="CQ", model="m", item_id="ds/q2", value=None,
                                 reason="n/a", details={"k": [1, 2]})])
    s = store.scores(rid)[0]
    assert (s.value, s.reason, s.details, s.item_id) == (None, "n/a", {"k": [1, 2]}, "ds/q2")
    store.finish_run(rid)
    assert store.run()["status"] == "finished" and store.run()["config"] == {"a": 1}
    assert store.cache_summary()[0]["entries"] == 2
    assert store.clear_cache(failed_only=True) == 1
    store.close()
    mode = Store(tmp_path).conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_item_ids_are_stable():
    a = Item(input="Q", target=1, answer_type="number")
    b = Item(input="Q", target=1, answer_type="number", group="other")
    assert a.id == b.id and a.id != Item(input="Q", target=2, answer_type="number").id


# ---------------------------------------------------------------------------------------------- runner


def mock_plan(tmp_path, **model):
    return parse_plan({
        "experiment": {"name": "r", "seed": 1, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "m", "max_tokens": 64, **model}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
        "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 200},
    })


def test_runner_caches_every_request(tmp_path):
    plan = mock_plan(tmp_path)
    first = Runner(plan, show_progress=False).run()
    assert first.calls_made == 6 * 3 and first.cached == 0  # 6 items x (2 samples + 1 paraphrase)
    second = Runner(plan, show_progress=False).run()
    assert second.calls_made == 0 and second.cached == 18
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["behavior"]["metrics"]["m"]["CQ"]["n"] == 6
    assert summary["behavior"]["metrics"]["m"]["LS"]["value"] is None
    lines = (tmp_path / "r" / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 18


def test_run_records_where_its_wall_time_went(tmp_path):
    from reasonscope.cli.common import phase_line

    summary = Runner(mock_plan(tmp_path), show_progress=False).run()
    phases = summary.phase_seconds
    assert list(phases) == ["generation", "behavior", "outputs"]
    assert all(v >= 0 for v in phases.values()) and sum(phases.values()) <= summary.wall_s
    notes = json.loads((tmp_path / "r" / "summary.json").read_text())["notes"]
    assert notes["phase_seconds"] == {k: round(phases[k], 1) for k in ("generation", "behavior")}
    assert phase_line({"generation": 97.94, "attack": 67.0}) == " (generation 97.9s, attack 67.0s)"
    assert phase_line({}) == ""


def test_missing_api_key_skips_model_with_message(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_ENV", raising=False)
    plan = parse_plan({
        "experiment": {"name": "k", "output_dir": str(tmp_path)},
        "models": [{"spec": "openai/gpt-x", "api_key_env": "NO_SUCH_KEY_ENV"}, {"spec": "mock/reasoner"}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 1}],
        "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}},
    })
    summary = Runner(plan, show_progress=False).run()
    assert "NO_SUCH_KEY_ENV is not set" in summary.skipped_models["openai/gpt-x"]
    assert summary.calls_made == 3


# ---------------------------------------------------------------------------------------------- retries


def _openai_model(url, **kw):
    return create_model(ModelConfig(spec="openai-compatible/fake", base_url=url, max_retries=kw.pop("max_retries", 4),
                                    timeout_s=kw.pop("timeout_s", 1.0), options={}, **kw))


def _req(i=0):
    return GenerationRequest(messages=[{"role": "user", "content": f"q{i}"}], max_tokens=16, temperature=0.0)


@pytest.mark.parametrize("fault", [429, 500, "drop", "timeout", "badjson"])
def test_retry_recovers_from_each_fault(fault):
    with FakeOpenAIServer(faults={1: fault, 2: fault}, timeout_sleep_s=2.0) as srv:
        model = _openai_model(srv.base_url)
        model.retry_base_s, model.retry_cap_s = 0.01, 0.05
        [c] = asyncio.run(model.generate([_req()]))
    assert c.error is None and c.text.endswith("Answer: 42")
    assert c.attempts == 3 and srv.count == 3


def test_retries_exhausted_leave_the_request_pending():
    with FakeOpenAIServer(fault_for=lambda n, body: 500) as srv:
        model = _openai_model(srv.base_url, max_retries=2)
        model.retry_base_s, model.retry_cap_s = 0.01, 0.02
        [c] = asyncio.run(model.generate([_req()]))
    assert c.pending and not c.failed and "no answer after 3 attempts" in c.error and "500" in c.error
    assert srv.count == 3


def test_non_retryable_error_fails_at_once():
    model = _openai_model("http://127.0.0.1:9/v1")
    calls = []

    async def bad():
        calls.append(1)
        raise KeyError("programming error")

    c = asyncio.run(model.call_with_retries(bad))
    assert len(calls) == 1 and c.failed and c.error.startswith("failed (not retryable)") and c.attempts == 1


def test_fault_run_completes_and_counts_failures(tmp_path):
    """20% of requests fault in a seeded pattern; requests whose retries run out stay pending (not
    stored) and the next run sends only them; nothing is lost or duplicated."""
    import random

    rng = random.Random(5)
    pattern = {n: rng.choice([429, 500, "drop", "badjson"]) for n in range(1, 400) if rng.random() < 0.2}
    with FakeOpenAIServer(faults=pattern) as srv:
        plan = parse_plan({
            "experiment": {"name": "f", "output_dir": str(tmp_path)},
            "models": [{"spec": "openai-compatible/fake", "base_url": srv.base_url, "max_retries": 1,
                        "concurrency": 8, "timeout_s": 2, "options": {"retry_base_s": 0.01}}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 3}],
            "families": {"behavior": {"samples": 2, "paraphrases": 2, "nli": {"backend": "none"},
                                      "similarity": {"method": "embedding"}}},
            "stats": {"n_resamples": 200},
        })
        summary = Runner(plan, show_progress=False).run()
        total = 9 * 4
        assert summary.calls_made == total and summary.failed == 0 and summary.pending > 0
        assert srv.served == total - summary.pending
        assert summary.outcome.code == 3 and "pending" in summary.outcome.message
        store = Store(tmp_path / "f")
        rows = store.run_generations(store.run()["run_id"])
        assert len(rows) == total and len({r["key"] for r in rows}) == total
        assert sum(1 for r in rows if not r["done"]) == summary.pending and not any(r["error"] for r in rows)
        store.close()
        data = json.loads((tmp_path / "f" / "summary.json").read_text())
        assert data["behavior"]["counts"]["openai-compatible/fake"]["items"] == 9
        assert data["behavior"]["counts"]["openai-compatible/fake"]["pending"] == summary.pending
        srv.faults.clear()
        again = Runner(plan, show_progress=False).run()  # sends the pending requests only
    assert again.calls_made == summary.pending and again.cached == total - summary.pending
    assert srv.served == total


def test_api_key_never_reaches_store_or_outputs(tmp_path, monkeypatch):
    canary = "sk-canary-0123456789abcdef"
    monkeypatch.setenv("CANARY_KEY", canary)

    def reply(body):
        return "Answer: 1"

    with FakeOpenAIServer(fault_for=lambda n, body: 500 if n % 3 == 0 else None, reply=reply) as srv:
        plan = parse_plan({
            "experiment": {"name": "sec", "output_dir": str(tmp_path)},
            "models": [{"spec": "openai-compatible/fake", "base_url": srv.base_url, "api_key_env": "CANARY_KEY",
                        "max_retries": 0, "options": {"retry_base_s": 0.01}}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
            "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                                      "similarity": {"method": "embedding"}}},
            "stats": {"n_resamples": 200},
        })
        Runner(plan, show_progress=False).run()
    assert srv.auth_headers[0] == f"Bearer {canary}"  # the key was used...
    for path in (tmp_path / "sec").rglob("*"):
        if path.is_file():
            assert canary.encode() not in path.read_bytes(), path  # ...and is nowhere in the outputs


def test_hf_dataset_id_goes_through_datasets(monkeypatch):
    import sys
    import types

    from reasonscope.data.loaders import load_dataset
    from reasonscope.plan import DatasetConfig

    calls = []
    fake = types.ModuleType("datasets")

    def load(name, config=None, split=None):
        calls.append((name, config, split))
        return [{"question": "Q?", "answer": "a\n#### 5"}]

    fake.load_dataset = load
    monkeypatch.setitem(sys.modules, "datasets", fake)
    res = load_dataset(DatasetConfig(name="g", format="gsm8k", hf_id="openai/gsm8k", hf_config="main"))
    assert calls == [("openai/gsm8k", "main", "test")] and res.items[0].target == 5 and res.source == "hf:openai/gsm8k"


def test_no_runnable_model_is_an_error_before_the_store(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_ENV", raising=False)
    plan = parse_plan({
        "experiment": {"name": "none", "output_dir": str(tmp_path)},
        "models": [{"spec": "openai/gpt-x", "api_key_env": "NO_SUCH_KEY_ENV"}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 1}],
    })
    with pytest.raises(ValueError, match="no model of the plan can run here:\n  openai/gpt-x: environment variable"):
        Runner(plan, show_progress=False).run()
    assert not (tmp_path / "none").exists()
