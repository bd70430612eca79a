"""Store schema versions: a store written by reasonscope 0.1.0 (no version) opens, migrates and reads
back; a newer store is refused; adding a migration is one function; runs whose process is gone read
as interrupted."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import reasonscope.storage.store as store_module
from reasonscope.cli import app
from reasonscope.storage.store import MIGRATIONS, Store, StoreVersionError
from reasonscope.types import Completion, Item

runner = CliRunner()

# The schema reasonscope 0.1.0 created (CREATE TABLE IF NOT EXISTS, no user_version), written out here
# by hand so that the test does not depend on the code it checks.
SCHEMA_0_1_0 = """
CREATE TABLE runs(run_id TEXT PRIMARY KEY, kind TEXT, created REAL, finished REAL, status TEXT,
  config TEXT, versions TEXT, git_hash TEXT, seed INTEGER, notes TEXT);
CREATE TABLE items(dataset TEXT, item_id TEXT, position INTEGER, data TEXT, PRIMARY KEY(dataset, item_id));
CREATE TABLE generations(key TEXT PRIMARY KEY, provider TEXT, model_id TEXT, request TEXT, text TEXT,
  finish_reason TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL, cost_usd REAL,
  error TEXT, attempts INTEGER, source TEXT, created REAL);
CREATE TABLE run_generations(run_id TEXT, model TEXT, dataset TEXT, item_id TEXT, variant TEXT, sample INTEGER,
  key TEXT, max_tokens INTEGER, PRIMARY KEY(run_id, model, dataset, item_id, variant, sample));
CREATE TABLE scores(run_id TEXT, family TEXT, metric TEXT, model TEXT, item_id TEXT, value REAL, reason TEXT,
  details TEXT, PRIMARY KEY(run_id, family, metric, model, item_id));
CREATE TABLE artefacts(run_id TEXT, name TEXT, kind TEXT, data BLOB, PRIMARY KEY(run_id, name));
"""


def old_store(folder):
    folder.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(folder / "store.sqlite")
    con.executescript(SCHEMA_0_1_0)
    item = Item(id="q1", input="What is 2+2?", target=4, answer_type="number", group="syn")
    con.executemany("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)", [
        ("r1", "run", 1.0, 2.0, "finished", json.dumps({"experiment": {"name": "old"}}), "{}", "abc", 7,
         json.dumps({"calls_made": 1})),
        ("r2", "run", 3.0, None, "running", "{}", "{}", None, 7, "{}")])
    con.execute("INSERT INTO items VALUES (?,?,?,?)", ("syn", "q1", 0, item.model_dump_json()))
    con.execute("INSERT INTO generations VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                ("k1", "mock", "reasoner", "{}", "2 + 2 = 4\nAnswer: 4", "stop", 5, 6, 0.1, None, None, 1,
                 "generated", 1.5))
    con.execute("INSERT INTO run_generations VALUES (?,?,?,?,?,?,?,?)", ("r1", "m", "syn", "q1", "original", 0,
                                                                         "k1", 64))
    con.execute("INSERT INTO scores VALUES (?,?,?,?,?,?,?,?)", ("r1", "behavior", "CQ", "m", "syn/q1", 1.0, None,
                                                                json.dumps({"answer": 4})))
    con.execute("INSERT INTO artefacts VALUES (?,?,?,?)", ("r1", "note.txt", "text", b"kept"))
    con.commit()
    assert con.execute("PRAGMA user_version").fetchone()[0] == 0
    con.close()
    return folder


def test_a_store_of_the_previous_version_opens_and_reads_back(tmp_path):
    run_dir = old_store(tmp_path / "old")
    store = Store(run_dir)
    assert store.schema_version == len(MIGRATIONS) == 6
    runs = {r["run_id"]: r for r in store.runs()}
    assert runs["r1"]["status"] == "finished" and runs["r1"]["config"] == {"experiment": {"name": "old"}}
    assert runs["r1"]["notes"] == {"calls_made": 1} and runs["r1"]["seed"] == 7 and runs["r1"]["pid"] is None
    assert runs["r2"]["status"] == "interrupted"  # 0.1.0 recorded no process: a leftover 'running' cannot be live
    assert store.items()["syn"][0].target == 4
    assert store.get_completion("k1") == Completion(text="2 + 2 = 4\nAnswer: 4", finish_reason="stop",
                                                    prompt_tokens=5, completion_tokens=6, latency_s=0.1)
    assert store.run_generations("r1")[0]["text"].endswith("Answer: 4")
    assert [(s.metric, s.value, s.details) for s in store.scores("r1")] == [("CQ", 1.0, {"answer": 4})]
    assert store.artefact("r1", "note.txt") == b"kept"
    indexes = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"run_generations_by_item", "scores_by_item", "scores_by_slot", "run_generations_by_key",
            "run_generations_outcome", "run_generations_by_slot"} <= indexes
    assert store.conn.execute("SELECT item_key, outcome FROM run_generations").fetchall() == [("syn/q1", "answered")]
    assert store.run_item_keys("r1") == [("syn", "q1")]
    assert [r["item"] is not None for r in store.run_generations_between("r1", ("syn", "q1"), ("syn", "q1"))] == [True]
    assert [s.value for s in store.item_scores("r1", ["syn/q1"])] == [1.0]
    store.close()
    again = Store(run_dir)  # idempotent
    assert again.schema_version == 6 and len(again.runs()) == 2
    again.close()
    res = runner.invoke(app, ["report", str(run_dir), "--run-id", "r1"])
    assert res.exit_code == 0, res.output
    assert json.loads((run_dir / "samples.jsonl").read_text().split("\n")[0])["answer"] == 4


def schema_4_store(folder):
    """A store of schema 4 (the migrations before 5 applied) with an answered, a failed and a pending request."""
    folder.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(folder / "store.sqlite", isolation_level=None)
    for number, step in enumerate(MIGRATIONS[:4], start=1):
        step(con)
        con.execute(f"PRAGMA user_version = {number}")
    gen = "INSERT INTO generations(key, text, error) VALUES (?,?,?)"
    con.execute(gen, ("k-ok", "Answer: 4", None))
    con.execute(gen, ("k-bad", "", "HTTP 500"))
    con.executemany("INSERT INTO run_generations VALUES (?,?,?,?,?,?,?,?)", [
        ("r1", "m", "syn", "q1", "original", 0, "k-ok", 64), ("r1", "m", "syn", "q2", "original", 0, "k-bad", 64),
        ("r1", "m", "a/b", "q3", "original", 0, "k-none", 64)])
    con.close()
    return folder


def test_schema_5_back_fills_each_linked_requests_outcome_and_item_key(tmp_path):
    store = Store(schema_4_store(tmp_path / "v4"))
    assert store.schema_version == 6
    assert store.conn.execute("SELECT item_id, item_key, outcome FROM run_generations ORDER BY item_id").fetchall() == [
        ("q1", "syn/q1", "answered"), ("q2", "syn/q2", "failed"), ("q3", "a/b/q3", None)]
    store.close()


def test_every_write_keeps_the_linked_outcome_true(tmp_path):
    store = Store(tmp_path / "s")
    outcome = lambda: dict(store.conn.execute("SELECT item_id, outcome FROM run_generations"))  # noqa: E731
    store.link([("r", "m", "d", "q1", "original", 0, "k1", 8), ("r", "m", "d", "q2", "original", 0, "k2", 8)])
    assert outcome() == {"q1": None, "q2": None}  # pending
    put = lambda key, **c: store.put_completion(key, provider="mock", model_id="m", request={},  # noqa: E731
                                                completion=Completion(**c))
    put("k1", text="", error="timeout")
    put("k2", text="Answer: 1")
    assert outcome() == {"q1": "failed", "q2": "answered"}
    put("k1", text="Answer: 2")  # the failed request answered on a re-run (the row replaced)
    assert outcome() == {"q1": "answered", "q2": "answered"}
    store.link([("r2", "m", "d", "q1", "original", 0, "k1", 8)])  # linked after it was stored
    assert store.conn.execute("SELECT item_key, outcome FROM run_generations WHERE run_id='r2'").fetchall() == [
        ("d/q1", "answered")]
    store.conn.execute("UPDATE generations SET error='late' WHERE key='k2'")
    assert outcome()["q2"] == "failed"
    assert store.clear_cache(failed_only=True) == 1  # k2
    assert outcome() == {"q1": "answered", "q2": None}
    store.conn.execute("INSERT INTO run_generations(run_id, model, dataset, item_id, variant, sample, key) "
                       "VALUES ('r3', 'm', 'd', 'q9', 'original', 0, 'k1')")  # written by other code, no outcome
    assert store.conn.execute("SELECT item_key, outcome FROM run_generations WHERE run_id='r3'").fetchall() == [
        ("d/q9", "answered")]
    store.close()


def counts_are_true(store: Store) -> None:
    """``score_counts`` and ``link_counts`` hold what counting the rows gives (rows a count left at 0 aside)."""
    conn = store.conn
    scores = conn.execute(
        "SELECT slot, CASE WHEN value IS NULL THEN 2 WHEN value = 1 THEN 1 WHEN value = 0 THEN 0 ELSE 3 END, outcomes, "
        "COUNT(*) FROM scores WHERE item_id != '' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").fetchall()
    assert conn.execute("SELECT * FROM score_counts WHERE n != 0 ORDER BY 1, 2, 3").fetchall() == scores
    links = conn.execute(
        "SELECT slot, CASE outcome WHEN 'answered' THEN 1 WHEN 'failed' THEN 2 ELSE 4 END, "
        "variant = 'original' AND sample = 0, COUNT(*) FROM run_generations GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").fetchall()
    assert conn.execute("SELECT * FROM link_counts WHERE n != 0 ORDER BY 1, 2, 3").fetchall() == links


def test_schema_6_back_fills_slots_outcome_bits_and_counts(tmp_path, monkeypatch):
    run_dir = tmp_path / "v5"
    monkeypatch.setattr(store_module, "MIGRATIONS", list(MIGRATIONS[:5]))
    old = store_module.Store(run_dir)
    assert old.schema_version == 5
    old.conn.execute("INSERT INTO generations(key, text, error) VALUES ('k1', 'Answer: 1', NULL), ('k2', '', 'HTTP 500')")
    old.conn.executemany("INSERT INTO run_generations(run_id, model, dataset, item_id, variant, sample, key, max_tokens) "
                         "VALUES (?,?,?,?,?,?,?,?)", [
                             ("r", "m", "d", "q1", "original", 0, "k1", 8),  # answered
                             ("r", "m", "d", "q2", "original", 0, "k2", 8),  # failed
                             ("r", "m", "d", "q3", "original", 0, "k3", 8),  # pending
                             ("r", "m", "d", "q3", "paraphrase-1", 0, "k1", 8)])  # and answered
    old.conn.executemany("INSERT INTO scores VALUES (?,?,?,?,?,?,?,?)", [
        ("r", "behavior", "CQ", "m", "d/q1", 1.0, None, "{}"), ("r", "behavior", "CQ", "m", "d/q2", 0.0, None, "{}"),
        ("r", "behavior", "CQ", "m", "d/q3", None, "n/a", "{}"),
        ("r", "behavior", "CQ", "m", "", 0.5, None, "{}"),  # corpus level: not counted
        ("r", "information", "IG", "backbone", "d/q1", 0.25, None, "{}")])  # a model that sends no request
    old.close()
    monkeypatch.undo()
    store = Store(run_dir)
    assert store.schema_version == 6
    conn = store.conn
    assert conn.execute("SELECT * FROM score_slots ORDER BY slot").fetchall() == [
        (1, "r", "behavior", "CQ", "m"), (2, "r", "information", "IG", "backbone")]
    assert conn.execute("SELECT item_id, slot, outcomes FROM scores ORDER BY slot, item_id").fetchall() == [
        ("", 1, 0), ("d/q1", 1, 1), ("d/q2", 1, 2), ("d/q3", 1, 1 | 4), ("d/q1", 2, 0)]
    # (slot, value class: 0, 1, 2 n/a, 3 other; outcome bits: 1 answered, 2 failed, 4 pending; n)
    assert conn.execute("SELECT * FROM score_counts ORDER BY 1, 2, 3").fetchall() == [
        (1, 0, 2, 1), (1, 1, 1, 1), (1, 2, 5, 1), (2, 3, 0, 1)]
    assert conn.execute("SELECT * FROM link_slots").fetchall() == [(1, "r", "m")]
    assert conn.execute("SELECT DISTINCT slot FROM run_generations").fetchall() == [(1,)]
    # (slot, outcome bit, original sample 0, n)
    assert conn.execute("SELECT * FROM link_counts ORDER BY 1, 2, 3").fetchall() == [
        (1, 1, 0, 1), (1, 1, 1, 1), (1, 2, 1, 1), (1, 4, 1, 1)]
    counts_are_true(store)
    store.close()


def test_every_write_keeps_slots_outcome_bits_and_counts_true(tmp_path):
    from reasonscope.types import Score

    store = Store(tmp_path / "s")
    put = lambda key, **c: store.put_completion(key, provider="mock", model_id="m", request={},  # noqa: E731
                                                completion=Completion(**c))
    bits = lambda: dict(store.conn.execute("SELECT item_id, outcomes FROM scores WHERE metric='CQ'"))  # noqa: E731
    cq = lambda item, value: Score(family="behavior", metric="CQ", model="m", item_id=item, value=value)  # noqa: E731
    store.put_scores("r", [cq("d/q1", 1.0), cq("d/q2", 0.0)])  # scored before its requests are linked
    assert bits() == {"d/q1": 0, "d/q2": 0}
    counts_are_true(store)
    links = [("r", "m", "d", "q1", "original", 0, "k1", 8), ("r", "m", "d", "q2", "original", 0, "k2", 8)]
    store.link(links)
    assert bits() == {"d/q1": 4, "d/q2": 4}  # pending
    store.link(links)  # linked again (INSERT OR REPLACE): counted once
    assert store.conn.execute("SELECT * FROM link_counts WHERE n != 0").fetchall() == [(1, 4, 1, 2)]
    put("k1", text="", error="timeout")
    put("k2", text="Answer: 1")
    assert bits() == {"d/q1": 2, "d/q2": 1}
    counts_are_true(store)
    put("k1", text="Answer: 2")  # the failed request answered on a re-run
    assert bits() == {"d/q1": 1, "d/q2": 1}
    store.put_scores("r", [cq("d/q1", None)])  # scored again after it was answered: replaced, counted once
    assert store.conn.execute("SELECT * FROM score_counts WHERE n != 0 ORDER BY 1, 2, 3").fetchall() == [
        (1, 0, 1, 1), (1, 2, 1, 1)]
    counts_are_true(store)
    assert store.clear_cache() == 2  # reasonscope cache clear: both pending again
    assert bits() == {"d/q1": 4, "d/q2": 4}
    counts_are_true(store)
    store.conn.execute("INSERT INTO scores(run_id, family, metric, model, item_id, value) "
                       "VALUES ('r', 'behavior', 'SS', 'm', 'd/q2', 0.5)")  # written by other code: no slot
    store.conn.execute("INSERT INTO run_generations(run_id, model, dataset, item_id, variant, sample, key) "
                       "VALUES ('r', 'm', 'd', 'q2', 'paraphrase-1', 0, 'k9')")  # likewise
    put("k9", text="Answer: 1")
    assert store.conn.execute("SELECT slot, outcomes FROM scores WHERE metric='SS'").fetchall() == [(2, 1 | 4)]
    assert bits() == {"d/q1": 4, "d/q2": 4 | 1}
    counts_are_true(store)
    store.conn.execute("DELETE FROM run_generations WHERE variant='paraphrase-1'")
    assert bits() == {"d/q1": 4, "d/q2": 4}
    store.delete_scores("r", "behavior")
    assert store.conn.execute("SELECT COUNT(*) FROM score_counts WHERE n != 0").fetchone() == (0,)
    counts_are_true(store)
    store.close()


def test_rows_of_other_code_written_with_insert_or_replace_keep_their_models_one_slot(tmp_path):
    """In a trigger the firing statement's conflict clause wins: an ``INSERT OR REPLACE`` of a second score or
    link must not replace the slot the first one was given (which would orphan the first from the viewer)."""
    store = Store(tmp_path / "s")
    conn = store.conn
    for item in ("d/q1", "d/q2"):
        conn.execute("INSERT OR REPLACE INTO scores(run_id, family, metric, model, item_id, value) "
                     "VALUES ('r', 'behavior', 'CQ', 'm', ?, 1.0)", (item,))
    for item in ("q1", "q2"):
        conn.execute("INSERT OR REPLACE INTO run_generations(run_id, model, dataset, item_id, variant, sample, key) "
                     "VALUES ('r', 'm', 'd', ?, 'original', 0, 'k')", (item,))
    assert conn.execute("SELECT * FROM score_slots").fetchall() == [(1, "r", "behavior", "CQ", "m")]
    assert conn.execute("SELECT * FROM link_slots").fetchall() == [(1, "r", "m")]
    assert conn.execute("SELECT DISTINCT slot FROM scores").fetchall() == [(1,)]
    assert conn.execute("SELECT DISTINCT slot FROM run_generations").fetchall() == [(1,)]
    counts_are_true(store)
    from reasonscope.view.items import ItemQuery, count_rows

    assert count_rows(store, "r", ItemQuery(metric="behavior.CQ")).total == 2
    assert count_rows(store, "r", ItemQuery()).total == 2
    store.close()


def test_a_store_of_a_newer_version_is_refused(tmp_path):
    run_dir = tmp_path / "new"
    Store(run_dir).close()
    con = sqlite3.connect(run_dir / "store.sqlite")
    con.execute("PRAGMA user_version = 99")
    con.close()
    with pytest.raises(StoreVersionError, match="written by a newer reasonscope .store schema 99"):
        Store(run_dir)
    res = runner.invoke(app, ["cache", "ls", str(run_dir)])
    assert res.exit_code == 2 and "upgrade reasonscope" in res.output and "Traceback" not in res.output


def test_adding_a_migration_is_one_function(tmp_path, monkeypatch):
    run_dir = tmp_path / "s"
    store = Store(run_dir)
    rid = store.start_run(kind="run", config={}, seed=0)
    store.close()
    monkeypatch.setattr(store_module, "MIGRATIONS", list(MIGRATIONS))

    @store_module.migration
    def _v7_labels(conn):
        conn.execute("CREATE TABLE labels(run_id TEXT, label TEXT)")
        conn.execute("INSERT INTO labels SELECT run_id, 'migrated' FROM runs")

    store = Store(run_dir)
    assert store.schema_version == 7
    assert store.conn.execute("SELECT run_id, label FROM labels").fetchall() == [(rid, "migrated")]
    store.close()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_runs_whose_process_is_gone_read_interrupted(tmp_path):
    store = Store(tmp_path / "s")
    mine = store.start_run(kind="run", config={}, seed=0)
    gone = store.start_run(kind="run", config={}, seed=0)
    elsewhere = store.start_run(kind="run", config={}, seed=0)
    store.conn.execute("UPDATE runs SET pid=? WHERE run_id=?", (dead_pid(), gone))
    store.conn.execute("UPDATE runs SET host=? WHERE run_id=?", (socket.gethostname() + "-other", elsewhere))
    store.close()
    reopened = Store(tmp_path / "s")
    status = {r["run_id"]: r["status"] for r in reopened.runs()}
    assert status == {mine: "running", gone: "interrupted", elsewhere: "running"}
    reopened.close()


def test_a_store_of_schema_4_gains_the_filter_indexes_and_keeps_its_rows(tmp_path, monkeypatch):
    run_dir = tmp_path / "v4"
    monkeypatch.setattr(store_module, "MIGRATIONS", list(MIGRATIONS[:4]))
    old = store_module.Store(run_dir)
    assert old.schema_version == 4
    rid = old.start_run(kind="run", config={}, seed=0)
    old.conn.executemany("INSERT INTO scores VALUES (?,?,?,?,?,?,?,?)",
                         [(rid, "behavior", "CQ", "m", f"d/q{i}", float(i % 2), None, "{}") for i in range(5)])
    old.conn.execute("INSERT INTO generations(key, text, error) VALUES ('k1', '', 'refused'), ('k2', 'ok', NULL)")
    old.close()
    monkeypatch.undo()
    store = Store(run_dir)
    assert store.schema_version == 6
    indexes = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"scores_by_slot", "run_generations_by_key", "run_generations_outcome", "run_generations_by_slot"} <= indexes
    assert "scores_by_value" not in indexes  # schema 5's, replaced by scores_by_slot in 6
    plan = " ".join(r[3] for r in store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT item_id FROM scores WHERE slot = 1 AND item_id > '' AND value = 0 "
        "AND (outcomes & 1) != 0 ORDER BY item_id"))
    assert "COVERING INDEX scores_by_slot" in plan and "TEMP B-TREE" not in plan
    plan = " ".join(r[3] for r in store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT model, item_key FROM run_generations WHERE run_id=? AND outcome='answered' "
        "ORDER BY model, item_key", (rid,)))
    assert "COVERING INDEX run_generations_outcome" in plan and "TEMP B-TREE" not in plan
    assert store.conn.execute("SELECT * FROM score_counts").fetchall() == [(1, 0, 0, 3), (1, 1, 0, 2)]
    assert [s.value for s in store.scores(rid)] == [0.0, 1.0, 0.0, 1.0, 0.0]
    store.close()


def test_a_run_links_its_requests_with_their_outcome_and_a_retry_answers_them(tmp_path, monkeypatch):
    """The run's write path: a model whose every call fails (an unexpected error: stored as failed) links its
    requests ``failed``; run again with ``retry_failed`` on a working model, the same keys are answered and
    their links follow."""
    import reasonscope.models.mock as mock
    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan

    def plan(fail_rate):
        return parse_plan({
            "experiment": {"name": "o", "seed": 1, "output_dir": str(tmp_path)},
            "models": [{"spec": "mock/reasoner", "name": "a", "max_tokens": 40,
                        "options": {"fail_rate": fail_rate, "retry_base_s": 0.0, "retry_cap_s": 0.0}}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 3}],
            "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"}}},
            "stats": {"n_resamples": 100}})

    def outcomes():
        store = Store(tmp_path / "o")
        try:
            return store.conn.execute("SELECT item_key, outcome FROM run_generations ORDER BY item_key").fetchall()
        finally:
            store.close()

    with monkeypatch.context() as mp:
        mp.setattr(mock, "MockTransientError", ValueError)  # not retryable: the generation is stored failed
        Runner(plan(1.0), show_progress=False).run()
    failed = outcomes()
    assert failed == [(f"syn/{kind}-{i}", "failed") for kind in ("arith", "logic", "mc") for i in range(3)]
    Runner(plan(0.0), show_progress=False, retry_failed=True).run()
    assert {o for _, o in outcomes()} == {"answered"}
