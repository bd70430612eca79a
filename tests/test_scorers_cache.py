"""The score cache: round trips through the store, keys that change with the scorer, deduplication,
clearing by kind, no forward pass and no model load on a re-run, the schema migration, and the
batched LLM-as-NLI judge."""

from __future__ import annotations

import math
import sqlite3

import pytest
from typer.testing import CliRunner

import reasonscope.storage.store as store_module
from reasonscope.cli import app
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import NLIConfig, parse_plan
from reasonscope.scorers.cache import (
    CachedNLI,
    ScoreCache,
    ScorerUnavailable,
    clear_score_cache,
    score_cache_summary,
)
from reasonscope.scorers.nli import LLMJudgeNLI, cached_nli
from reasonscope.storage.store import MIGRATIONS, Store

runner = CliRunner()


class CountingNLI:
    """p(contradiction) = len(premise) / (len(premise) + len(hypothesis)); counts forward calls."""

    description = "counting-nli"

    def __init__(self):
        self.calls: list[int] = []

    def contradiction(self, pairs):
        self.calls.append(len(pairs))
        return [len(p) / (len(p) + len(h)) for p, h in pairs]


def counting(store, *, model="m1", settings=None, chunk=256, kind="nli"):
    inner = CountingNLI()
    loads = []

    def load():
        loads.append(1)
        return inner

    scorer = CachedNLI(kind=kind, model=model, settings=settings or {"a": 1}, load=load,
                       compute=lambda s, pairs: s.contradiction([(p, h) for p, h in pairs]),
                       description=f"counting:{model}", cache=ScoreCache(store) if store else None, chunk=chunk)
    return scorer, inner, loads


PAIRS = [("ab", "c"), ("x", "yyy"), ("ab", "c"), ("ab", "cd"), ("x", "yyy")]
EXPECTED = [2 / 3, 1 / 4, 2 / 3, 2 / 4, 1 / 4]


def test_round_trip_dedupe_and_no_forward_pass_on_re_read(tmp_path):
    store = Store(tmp_path / "s")
    scorer, inner, loads = counting(store, chunk=2)
    assert scorer.contradiction(PAIRS) == pytest.approx(EXPECTED)
    # 5 pairs, 3 distinct: each distinct pair scored once, in chunks of 2 (2 forward calls), one load
    assert sum(inner.calls) == 3 and inner.calls == [2, 1] and loads == [1]
    s = scorer.stats
    assert (s.requested, s.unique, s.cached, s.computed, s.forward_calls, s.loads) == (5, 3, 0, 3, 2, 1)
    store.close()
    again = Store(tmp_path / "s")  # a new process reading the same store
    scorer2, inner2, loads2 = counting(again)
    assert scorer2.contradiction(PAIRS) == pytest.approx(EXPECTED)
    assert inner2.calls == [] and loads2 == [] and not scorer2.loaded  # 0 forward passes, no model loaded
    assert scorer2.stats.cached == 3 and scorer2.description == "counting-nli"  # recorded description read back
    # a partly new request computes only the new input
    assert scorer2.contradiction([("ab", "c"), ("new", "n")]) == pytest.approx([2 / 3, 3 / 4])
    assert inner2.calls == [1]
    again.close()


def test_key_changes_with_model_settings_and_the_model_files(tmp_path):
    store = Store(tmp_path / "s")
    base, inner, _ = counting(store)
    base.contradiction(PAIRS)
    for kw in ({"model": "m2"}, {"settings": {"a": 2}}):
        other, inner2, _ = counting(store, **kw)
        assert other.scorer_id != base.scorer_id
        other.contradiction(PAIRS)
        assert sum(inner2.calls) == 3  # nothing stale is read
    same, inner3, _ = counting(store)
    same.contradiction(PAIRS)
    assert inner3.calls == []
    # a local model folder: rewriting its files makes a new scorer
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"1234")
    first, _, _ = counting(store, model=str(folder))
    (folder / "weights.bin").write_bytes(b"123456")
    second, _, _ = counting(store, model=str(folder))
    assert first.scorer_id != second.scorer_id
    store.close()


def test_summary_and_clear_by_kind(tmp_path):
    store = Store(tmp_path / "s")
    nli, _, _ = counting(store)
    nli.contradiction(PAIRS)
    llm, _, _ = counting(store, kind="llm-nli")
    llm.contradiction(PAIRS[:2])
    rows = {r["kind"]: r for r in score_cache_summary(store)}
    assert rows["nli"]["entries"] == 3 and rows["llm-nli"]["entries"] == 2
    assert rows["nli"]["model"] == "counting-nli" and rows["nli"]["bytes"] > 0
    assert clear_score_cache(store, "llm-nli") == 2
    assert [r["kind"] for r in score_cache_summary(store)] == ["nli"]
    with pytest.raises(ValueError, match="unknown score kind 'bogus'"):
        clear_score_cache(store, "bogus")
    store.close()
    res = runner.invoke(app, ["cache", "ls", str(tmp_path / "s")])
    assert res.exit_code == 0 and "score cache" in res.output and "counting-nli" in res.output
    res = runner.invoke(app, ["cache", "clear", str(tmp_path / "s"), "--kind", "nli", "--yes"])
    assert res.exit_code == 0 and "deleted 3 cached scores" in res.output
    res = runner.invoke(app, ["cache", "clear", str(tmp_path / "s"), "--kind", "bogus", "--yes"])
    assert res.exit_code != 0 and "unknown score kind" in res.output and "Traceback" not in res.output


def test_without_a_store_duplicates_are_still_scored_once():
    scorer, inner, _ = counting(None)
    assert scorer.contradiction(PAIRS) == pytest.approx(EXPECTED)
    assert scorer.contradiction(PAIRS[:2]) == pytest.approx(EXPECTED[:2])
    assert sum(inner.calls) == 3


def test_a_model_that_fails_to_load_is_reported_at_first_miss(tmp_path):
    store = Store(tmp_path / "s")
    scorer, reason = cached_nli(NLIConfig(backend="hf", model=str(tmp_path / "no-such-model")), ScoreCache(store))
    assert reason is None and not scorer.loaded
    with pytest.raises(ScorerUnavailable, match="could not be loaded"):
        scorer.contradiction([("a", "b")])
    assert cached_nli(NLIConfig(backend="none"))[0] is None
    store.close()


def test_migration_from_the_previous_schema_version(tmp_path, monkeypatch):
    run_dir = tmp_path / "v2"
    monkeypatch.setattr(store_module, "MIGRATIONS", list(MIGRATIONS[:2]))
    old = store_module.Store(run_dir)
    assert old.schema_version == 2
    rid = old.start_run(kind="run", config={"x": 1}, seed=3)
    old.close()
    monkeypatch.undo()
    store = Store(run_dir)
    assert store.schema_version == len(MIGRATIONS) == 6
    assert [r["run_id"] for r in store.runs()] == [rid]
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"score_models", "score_cache"} <= tables
    scorer, inner, _ = counting(store)
    assert scorer.contradiction(PAIRS[:1]) == pytest.approx(EXPECTED[:1])
    store.close()
    con = sqlite3.connect(run_dir / "store.sqlite")
    assert con.execute("SELECT COUNT(*) FROM score_cache").fetchone()[0] == 1
    con.close()


def _plan(tmp_path, tiny_nli, samples=3):
    return parse_plan({
        "experiment": {"name": "c", "seed": 2, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "a", "max_tokens": 40, "options": {"accuracy": 0.6}},
                   {"spec": "mock/reasoner", "name": "b", "max_tokens": 40, "options": {"accuracy": 0.9}}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 3}],
        "families": {"behavior": {"samples": samples, "paraphrases": 1,
                                  "nli": {"backend": "hf", "model": str(tiny_nli)},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 200},
    })


def test_a_re_run_makes_no_forward_pass_and_loads_no_model(tmp_path, tiny_nli, monkeypatch):
    from reasonscope.scorers import nli as nli_module
    from reasonscope.scorers import similarity as sim_module

    calls = {"nli": 0, "sim": 0, "nli_pairs": 0}
    real_nli, real_sim = nli_module.HFCrossEncoderNLI.contradiction, sim_module.EmbeddingCosine.pairwise

    def nli_counted(self, pairs):
        calls["nli"] += 1
        calls["nli_pairs"] += len(pairs)
        return real_nli(self, pairs)

    def sim_counted(self, a, b):
        calls["sim"] += 1
        return real_sim(self, a, b)

    monkeypatch.setattr(nli_module.HFCrossEncoderNLI, "contradiction", nli_counted)
    monkeypatch.setattr(sim_module.EmbeddingCosine, "pairwise", sim_counted)
    first = Runner(_plan(tmp_path, tiny_nli), show_progress=False).run()
    assert first.calls_made > 0 and calls["nli"] >= 1 and calls["sim"] >= 1
    store = Store(tmp_path / "c")
    tables = store.run(first.run_id)
    cache = __import__("json").loads(store.artefact(first.run_id, "behavior.json"))["backends"]["score_cache"]
    store.close()
    assert tables["status"] == "finished"
    # two models with the mock's small phrase set: many identical step pairs, each scored once
    assert cache["nli"]["unique"] < cache["nli"]["requested"] and cache["nli"]["computed"] == calls["nli_pairs"]
    before = dict(calls)
    loads = []
    monkeypatch.setattr(nli_module, "HFCrossEncoderNLI", lambda *a, **k: loads.append(a))
    second = Runner(_plan(tmp_path, tiny_nli), show_progress=False, reuse_finished=False).run()  # re-scored
    assert second.calls_made == 0 and calls == before and loads == []
    store = Store(tmp_path / "c")
    again = __import__("json").loads(store.artefact(second.run_id, "behavior.json"))
    store.close()
    assert again["backends"]["score_cache"]["nli"]["forward_calls"] == 0
    assert again["backends"]["nli"].startswith("hf-cross-encoder:")


def test_no_similarity_model_is_loaded_when_ss_cannot_apply(tmp_path, tiny_nli, monkeypatch):
    from reasonscope.scorers import similarity as sim_module

    def refuse(*a, **k):
        raise AssertionError("the similarity model must not be loaded with one sample per item")

    monkeypatch.setattr(sim_module, "EmbeddingCosine", refuse)
    summary = Runner(_plan(tmp_path, tiny_nli, samples=1), show_progress=False).run()
    store = Store(tmp_path / "c")
    tables = __import__("json").loads(store.artefact(summary.run_id, "behavior.json"))
    store.close()
    assert "similarity" not in tables["backends"]["score_cache"] or \
        tables["backends"]["score_cache"]["similarity"]["loads"] == 0


class FakeJudge:
    """An API-like model: only the async ``logprobs`` (no ``logprobs_sync``), counting calls in flight."""

    concurrency = 4

    class config:  # noqa: N801 - mimics ModelConfig.spec
        spec = "fake/judge"

    def __init__(self):
        self.in_flight = self.peak = self.calls = 0

    async def logprobs(self, prompt, continuations):
        import asyncio

        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        contradicts = "NEVER" in prompt
        return [-1.0, -2.0, -0.5 if contradicts else -3.0]


def test_llm_judge_nli_is_batched_concurrent_and_cached(tmp_path):
    judge = FakeJudge()
    nli = LLMJudgeNLI(judge)
    pairs = [(f"fact {i}", "it is NEVER so" if i % 2 else "it is so") for i in range(10)]
    got = nli.contradiction(pairs)
    z_c = math.exp(-1) + math.exp(-2) + math.exp(-0.5)
    z_n = math.exp(-1) + math.exp(-2) + math.exp(-3)
    assert got == pytest.approx([math.exp(-3) / z_n if i % 2 == 0 else math.exp(-0.5) / z_c for i in range(10)])
    assert judge.calls == 10 and 1 < judge.peak <= FakeJudge.concurrency
    store = Store(tmp_path / "s")
    cached = CachedNLI(kind="llm-nli", model="fake/judge", settings={}, load=lambda: nli,
                       compute=lambda s, ps: s.contradiction([(p, h) for p, h in ps]), description=nli.description,
                       cache=ScoreCache(store))
    assert cached.contradiction(pairs + pairs) == pytest.approx(got + got)
    assert judge.calls == 20  # the 10 distinct pairs once more (a new scorer), the duplicates not at all
    cached.contradiction(pairs)
    assert judge.calls == 20
    store.close()
