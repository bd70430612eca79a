"""benchmarks/store_writes.py measures what it says: the runner's writes, with the schema's upkeep, with the
set-based upkeep it prototypes (the same counts and outcomes as the triggers) and without upkeep."""

from __future__ import annotations

import sqlite3

from reasonscope.storage.store import Store
from reasonscope.types import Completion, Score


def test_the_requests_are_the_runners_plan_for_k_samples_and_p_paraphrases(load_benchmark):
    bench = load_benchmark("store_writes")
    rows = bench.requests(2, 3, 2)
    assert [(item, variant, sample) for item, variant, sample, _, _ in rows] == [
        ("q0", "original", 0), ("q0", "original", 1), ("q0", "original", 2), ("q0", "p0", 0), ("q0", "p1", 0),
        ("q1", "original", 0), ("q1", "original", 1), ("q1", "original", 2), ("q1", "p0", 0), ("q1", "p1", 0)]
    assert rows[5][4].endswith("Answer: 7")  # item 1, sample 0: (1 + 9) apples less (1 + 2) eaten


def test_with_the_schema_every_link_is_answered_and_counted_and_without_triggers_nothing_is(load_benchmark, tmp_path):
    bench = load_benchmark("store_writes")
    rows = bench.requests(3, 2, 1)  # 9 completions, 4 transactions of at most 3
    for variant, outcomes, counted in (("schema", {("answered", 9)}, 9), ("autocheckpoint", {("answered", 9)}, 9),
                                       ("set-based", {("answered", 9)}, 9), ("unscored skipped", {("answered", 9)}, 9),
                                       ("no triggers", {(None, 9)}, 0)):
        link, store, commits, scores, close = bench.one(variant, rows, 3, tmp_path / variant)
        assert link > 0 and store >= commits > 0 and scores > 0 and close > 0
        con = sqlite3.connect(tmp_path / variant / "store.sqlite")
        assert con.execute("SELECT COUNT(*) FROM generations").fetchone() == (9,)
        assert set(con.execute("SELECT outcome, COUNT(*) FROM run_generations GROUP BY outcome").fetchall()) == outcomes
        # the filter counts: the 9 links under "answered" (bit 1) with the schema; kept by no trigger without it
        assert con.execute("SELECT COALESCE(SUM(n), 0) FROM link_counts WHERE outcome = 1").fetchone() == (counted,)
        # 7 metrics of 3 items, each of an item whose links are all answered (bits 1); value classes 1, 0, n/a, 3
        assert con.execute("SELECT COUNT(*), COUNT(DISTINCT outcomes) FROM scores").fetchone() == (21, 1)
        assert con.execute("SELECT COALESCE(SUM(n), 0) FROM score_counts WHERE outcomes = 1").fetchone() == (
            21 if counted else 0,)
        con.close()


def state(store: Store) -> tuple:
    """What the upkeep keeps: each link's outcome, the link counts, each score's outcome bits, the score counts."""
    q = store.conn.execute
    return (q("SELECT run_id, model, item_key, variant, sample, outcome, slot FROM run_generations ORDER BY 1, 2, 3, 4, 5"
              ).fetchall(),
            q("SELECT slot, outcome, first, n FROM link_counts WHERE n != 0 ORDER BY 1, 2, 3").fetchall(),
            q("SELECT metric, model, item_id, value, outcomes FROM scores ORDER BY 1, 2, 3").fetchall(),
            q("SELECT slot, value_class, outcomes, n FROM score_counts WHERE n != 0 ORDER BY 1, 2, 3").fetchall())


def recount(store: Store) -> tuple:
    """The link counts and score counts recounted from the rows (what the upkeep must equal)."""
    q = store.conn.execute
    return (q("SELECT slot, CASE outcome WHEN 'answered' THEN 1 WHEN 'failed' THEN 2 ELSE 4 END, "
              "variant = 'original' AND sample = 0, COUNT(*) FROM run_generations GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
              ).fetchall(),
            q("SELECT slot, CASE WHEN value IS NULL THEN 2 WHEN value = 1 THEN 1 WHEN value = 0 THEN 0 ELSE 3 END, "
              "outcomes, COUNT(*) FROM scores WHERE item_id != '' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").fetchall())


def test_the_set_based_upkeep_and_the_cheaper_triggers_keep_what_the_schema_keeps(load_benchmark, tmp_path):
    """Links, answers (one failed), scores, the same links again (replaced, their scores' outcomes changed), a failed
    answer sent again and answered, then a link and a generation deleted by other code (the guarded triggers serve
    it): after each step the set-based store and the one whose rescoring triggers skip unscored items hold what
    the schema's triggers hold, and every store's counts equal a recount."""
    bench = load_benchmark("store_writes")
    stores = {name: Store(tmp_path / name.replace(" ", "-")) for name in ("schema", "set-based", "unscored skipped")}
    bench.defer_triggers(stores["set-based"].conn)
    bench.skip_unscored(stores["unscored skipped"].conn)
    links = [("r", "m", "d", f"q{i}", variant, 0, f"k{i}{variant}", 64) for i in range(4) for variant in ("original", "p0")]
    answers = [(f"k{i}{v}", {"i": i}, Completion(text=f"Answer: {i}", error="HTTP 500" if (i, v) == (1, "p0") else None))
               for i in range(4) for v in ("original", "p0")]
    scores = [Score(family="behavior", metric="CQ", model="m", item_id=f"d/q{i}", value=float(i % 2)) for i in range(4)]

    def step(name, schema, set_based):
        for variant, store in stores.items():
            (set_based if variant == "set-based" else schema)(store)
        got = {variant: state(store) for variant, store in stores.items()}
        assert got["set-based"] == got["schema"] == got["unscored skipped"], name
        for store in stores.values():
            assert state(store)[1] == recount(store)[0] and state(store)[3] == recount(store)[1], name
        return got["schema"]

    def turn(store, rows, set_based):
        with store.transaction():
            if set_based:
                bench.set_based_turn(store, rows)
            else:
                for key, request, completion in rows:
                    store.put_completion(key, provider="mock", model_id="reasoner", request=request, completion=completion)

    def score(store, values=(1.0, 0.0, None, 0.5)):
        batch = [s.model_copy(update={"value": values[i]}) for i, s in enumerate(scores)]
        if store is stores["set-based"]:
            bench.set_based_scores(store, "r", batch)
        else:
            store.put_scores("r", batch)

    def other(store):  # a writer that knows nothing of the upkeep: the (guarded) triggers keep the store true
        store.conn.execute("DELETE FROM run_generations WHERE item_id = 'q3' AND variant = 'p0'")
        store.conn.execute("DELETE FROM generations WHERE key = 'k2original'")

    step("linked", lambda s: s.link(links), lambda s: bench.set_based_link(s, links))
    links_state = step("answered", lambda s: turn(s, answers[:5], False), lambda s: turn(s, answers[:5], True))
    assert [row[5] for row in links_state[0]] == ["answered", "answered", "answered", "failed", "answered", None,
                                                  None, None]
    step("scored", score, score)
    def rescored(store):  # the same scores replaced, with other values
        score(store, (0.0, 0.0, 1.0, None))

    got = step("scored again", rescored, rescored)
    assert got[3] == [(1, 0, 1, 1), (1, 0, 3, 1), (1, 1, 5, 1), (1, 2, 4, 1)]  # (slot, value class, bits, n)
    step("linked again", lambda s: s.link(links), lambda s: bench.set_based_link(s, links))
    got = step("answered again", lambda s: turn(s, answers[3:], False), lambda s: turn(s, answers[3:], True))
    assert [row[4] for row in got[2]] == [1, 3, 1, 1]  # item 1: its original answered, its paraphrase failed
    retried = [("k1p0", {"i": 1}, Completion(text="Answer: 1"))]
    got = step("failed one answered", lambda s: turn(s, retried, False), lambda s: turn(s, retried, True))
    assert [row[4] for row in got[2]] == [1, 1, 1, 1]
    got = step("other writer", other, other)
    assert [row[4] for row in got[2]] == [1, 1, 5, 1]  # item 2: its original's generation deleted (pending)
    assert got[1] == [(1, 1, 0, 3), (1, 1, 1, 3), (1, 4, 1, 1)]  # 7 links: 6 answered (3 of them originals), 1 pending
    for store in stores.values():
        store.close()
