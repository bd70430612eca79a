"""Reliability: faults with kills, bad input leaves the store consistent, config fuzzing, SQL
parameters, and the Ray executor equal to the local one."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonscope.data.loaders import DatasetError
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import PlanError, parse_plan
from reasonscope.storage.store import Store
from reasonscope.testing import FakeOpenAIServer
from reasonscope.types import Item, Score


def table_counts(db):
    con = sqlite3.connect(db)
    out = {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # table names are constants here
           for t in ("runs", "items", "generations", "run_generations", "scores", "artefacts")}
    con.close()
    return out


def test_faults_and_three_kills_lose_and_duplicate_nothing(tmp_path):
    """20% of requests fault (429, 500, dropped connection, timeout, bad JSON) in a seeded pattern;
    the CLI is killed three times mid-run, then finishes. Every request ends stored exactly once,
    no completed request is sent again, and requests whose retries ran out stay pending (exit 3) until
    a later run sends them."""
    rng = random.Random(11)
    pattern = {n: rng.choice([429, 500, "drop", "timeout", "badjson"]) for n in range(1, 2000) if rng.random() < 0.2}
    with FakeOpenAIServer(faults=pattern, latency_s=0.03, timeout_sleep_s=1.5) as srv:
        plan = {"experiment": {"name": "fk", "seed": 2, "output_dir": str(tmp_path / "runs")},
                "models": [{"spec": "openai-compatible/fake", "base_url": srv.base_url, "concurrency": 4,
                            "max_retries": 1, "timeout_s": 1.0, "options": {"retry_base_s": 0.01}}],
                "datasets": [{"name": "syn", "format": "synthetic", "size": 4}],
                "families": {"behavior": {"samples": 2, "paraphrases": 2, "nli": {"backend": "none"},
                                          "similarity": {"method": "embedding"}}},
                "stats": {"n_resamples": 200}}
        path = tmp_path / "plan.yaml"
        path.write_text(yaml.safe_dump(plan))
        db = tmp_path / "runs" / "fk" / "store.sqlite"
        total = 12 * 4
        cmd = [sys.executable, "-m", "reasonscope.cli", "run", str(path)]
        for wait_for in (8, 20, 32):
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            deadline = time.time() + 120
            while srv.count < wait_for and time.time() < deadline and proc.poll() is None:
                time.sleep(0.01)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        con = sqlite3.connect(db)
        done_bodies = {json.loads(r)["messages"][0]["content"] + f"|{json.loads(r)['seed']}"
                       for (r,) in con.execute("SELECT request FROM generations")}
        con.close()
        assert 0 < len(done_bodies) < total
        before = len(srv.bodies)
        for _ in range(6):  # the faults go on: requests whose retries run out wait for the next run
            final = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if final.returncode != 3:
                break
            assert "pending" in final.stderr.strip().splitlines()[-1]
        assert final.returncode == 0, final.stdout + final.stderr
        resent = [b for b in srv.bodies[before:] if b["messages"][0]["content"] + f"|{b['seed']}" in done_bodies]
        assert not resent, "a completed request was sent again"
    store = Store(tmp_path / "runs" / "fk")
    run = store.run()
    rows = store.run_generations(run["run_id"])
    assert len(rows) == total and len({r["key"] for r in rows}) == total and all(r["done"] for r in rows)
    assert not any(r["error"] for r in rows)  # transient faults never end as failed generations
    summary = json.loads((tmp_path / "runs" / "fk" / "summary.json").read_text())
    assert summary["behavior"]["counts"]["openai-compatible/fake"] == {
        "items": 12, "generations": total, "failed": 0, "pending": 0,
        "unparseable": summary["behavior"]["counts"]["openai-compatible/fake"]["unparseable"],
        "truncated": 0}
    assert table_counts(tmp_path / "runs" / "fk" / "store.sqlite")["generations"] == total


def test_bad_input_leaves_the_store_consistent(tmp_path):
    good = {"experiment": {"name": "s", "output_dir": str(tmp_path)},
            "models": [{"spec": "mock/reasoner"}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 1}],
            "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                      "similarity": {"method": "embedding"}}},
            "stats": {"n_resamples": 200}}
    Runner(parse_plan(good), show_progress=False).run()
    db = tmp_path / "s" / "store.sqlite"
    before = table_counts(db)
    cases = {
        "trunc.jsonl": b'{"input": "Q1", "target": 1}\n{"input": "Q2", "tar',
        "latin1.jsonl": '{"input": "caf\u00e9", "target": 1}\n'.encode("latin-1"),
        "missing.jsonl": b'{"question_text": "Q", "target": 1}\n',
        "empty.jsonl": b"",
        "huge.jsonl": b'{"input": "' + b"x" * (50 * 2**20) + b'", "target": 1}\n',
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        bad = dict(good, datasets=[{"name": "bad", "format": "jsonl", "path": str(tmp_path / name)}])
        with pytest.raises(DatasetError) as err:
            Runner(parse_plan(bad), show_progress=False).run()
        assert name in str(err.value)
        assert table_counts(db) == before, name
    messages = {
        "trunc.jsonl": "trunc.jsonl:2: invalid JSON",
        "latin1.jsonl": "latin1.jsonl:1: not valid UTF-8",
        "missing.jsonl": "missing.jsonl:1: field 'input': missing field 'input'",
        "empty.jsonl": "empty.jsonl: the file is empty",
        "huge.jsonl": "huge.jsonl:1: line longer than 20 MiB",
    }
    for name, msg in messages.items():
        with pytest.raises(DatasetError, match=msg.replace(".", r"\.")):
            Runner(parse_plan(dict(good, datasets=[{"name": "bad", "format": "jsonl", "path": str(tmp_path / name)}])),
                   show_progress=False).run()
    for bad_family in ({"behavior": {"strategies": {"z": {"CQ": 0}}}}, {"behavior": {"colour": 1}}):
        with pytest.raises(PlanError):
            parse_plan(dict(good, families=bad_family))
    assert table_counts(db) == before


KEYS = ["experiment", "models", "datasets", "families", "stats", "name", "spec", "format", "temperature",
        "max_tokens", "behavior", "samples", "strategies", "seed", "bogus"]
values = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner,
                                                                                   max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=5))
def test_fuzzed_plans_give_a_plan_or_a_plan_error(data):
    try:
        parse_plan(data, "fuzz.yaml")
    except PlanError as err:
        assert str(err).startswith("fuzz.yaml")


def test_sql_uses_parameters_only(tmp_path):
    store = Store(tmp_path)
    evil = "x'); DROP TABLE scores; --"
    rid = store.start_run(kind="run", config={"evil": evil}, seed=0)
    store.put_items("ds", [Item(id=evil, input=evil, target=1, answer_type="number")])
    store.put_scores(rid, [Score(family="behavior", metric="CQ", model=evil, item_id=evil, value=1.0)])
    assert store.items()["ds"][0].id == evil and store.scores(rid)[0].model == evil
    assert store.run(rid)["config"] == {"evil": evil}
    import inspect

    import reasonscope.storage.store as module

    source = inspect.getsource(module)
    assert "execute(f" not in source and ".format(" not in source  # no SQL built by string formatting


def test_judge_output_is_never_evaluated(tmp_path):
    from reasonscope.evidence.scoring import parse_prediction

    marker = tmp_path / "pwned"
    text = '{"label": __import__("pathlib").Path(' + repr(str(marker)) + ').touch(), "rationale": "x"}'
    assert parse_prediction(text, ["a"]).label is None and not marker.exists()


@pytest.mark.skipif(__import__("importlib").util.find_spec("ray") is None, reason="ray not installed")
def test_ray_executor_equals_local(tmp_path, tiny_nli):
    plan = {"experiment": {"name": "r", "seed": 1, "output_dir": str(tmp_path)},
            "models": [{"spec": "mock/reasoner", "options": {"accuracy": 0.7}}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
            "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "hf", "model": str(tiny_nli)},
                                      "similarity": {"method": "embedding"}}},
            "stats": {"n_resamples": 200}}
    Runner(parse_plan(plan), show_progress=False).run()
    local = json.loads((tmp_path / "r" / "summary.json").read_text())["behavior"]
    import ray

    # a fresh run directory: in the same one every score would be read back from the score cache
    plan["experiment"]["output_dir"] = str(tmp_path / "fresh")
    try:
        Runner(parse_plan(plan), show_progress=False, executor="ray").run()
    finally:
        ray.shutdown()
    remote = json.loads((tmp_path / "fresh" / "r" / "summary.json").read_text())["behavior"]
    assert remote["backends"]["executor"] == "ray" and local["backends"]["executor"] == "local"
    assert remote["backends"]["score_cache"]["nli"]["computed"] > 0  # computed by the actors, cached here
    for metric in ("LS", "SS", "CQ"):
        assert remote["metrics"]["mock/reasoner"][metric]["value"] == pytest.approx(
            local["metrics"]["mock/reasoner"][metric]["value"], abs=1e-5)


_SCORING_CHILD = r'''
import sys, time
import numpy as np
from reasonscope.scorers.cache import CachedEmbedding, ScoreCache
from reasonscope.storage.store import Store

def vector(text):
    return np.arange(64, dtype=np.float32) * float(len(text)) + float(sum(map(ord, text)) % 97)

def compute(_model, texts):
    time.sleep(0.02)  # slow enough to be killed between (and during) chunk commits
    return [vector(t) for t in texts]

scorer = CachedEmbedding(kind="embedding", model="fake-encoder", settings={"dim": 64}, load=lambda: object(),
                         compute=compute, description="fake", cache=ScoreCache(Store(sys.argv[1])), chunk=3,
                         progress=False)
scorer.embed([f"text number {i} " * (1 + i % 7) for i in range(int(sys.argv[2]))])
'''


def test_kill_during_scoring_leaves_no_partial_cached_score(tmp_path):
    """Scoring killed with SIGKILL three times while it commits chunks to the score cache: the store
    passes SQLite's integrity check, every cached value read back is whole and exact (a vector of the
    full length, equal to a clean computation), and the next run computes only what is missing."""
    import numpy as np

    from reasonscope.scorers.cache import CachedEmbedding, ScoreCache

    n = 300
    run_dir = tmp_path / "run"
    Store(run_dir).close()
    script = tmp_path / "child.py"
    script.write_text(_SCORING_CHILD)
    db = run_dir / "store.sqlite"
    counts = []
    for wait_for in (15, 60, 120):
        proc = subprocess.Popen([sys.executable, str(script), str(run_dir), str(n)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + 120
        got = 0
        while got < wait_for and time.time() < deadline and proc.poll() is None:
            time.sleep(0.01)
            try:
                con = sqlite3.connect(db, timeout=0.1)
                got = con.execute("SELECT COUNT(*) FROM score_cache").fetchone()[0]
                con.close()
            except sqlite3.OperationalError:  # table not there yet, or locked for a moment
                pass
        assert proc.poll() is None, proc.stderr.read().decode()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        counts.append(got)
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    cached = con.execute("SELECT COUNT(*) FROM score_cache").fetchone()[0]
    con.close()
    assert counts[0] >= 15 and 0 < cached < n and cached % 3 == 0  # whole chunks only

    texts = [f"text number {i} " * (1 + i % 7) for i in range(n)]

    def vector(text):
        return np.arange(64, dtype=np.float32) * float(len(text)) + float(sum(map(ord, text)) % 97)

    scorer = CachedEmbedding(kind="embedding", model="fake-encoder", settings={"dim": 64}, load=lambda: object(),
                             compute=lambda _m, xs: [vector(t) for t in xs], description="fake",
                             cache=ScoreCache(Store(run_dir)), chunk=3, progress=False)
    values = scorer.embed(texts)
    assert scorer.stats.cached == cached and scorer.stats.computed == n - cached
    assert values.shape == (n, 64)
    assert all(np.array_equal(values[i], vector(t)) for i, t in enumerate(texts))
