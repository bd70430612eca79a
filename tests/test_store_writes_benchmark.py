"""benchmarks/store_writes.py measures what it says: the runner's writes, with the schema's upkeep and without."""

from __future__ import annotations

import sqlite3


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
                                       ("no triggers", {(None, 9)}, 0)):
        link, store, commits = bench.one(variant, rows, 3, tmp_path / variant)
        assert link > 0 and store >= commits > 0
        con = sqlite3.connect(tmp_path / variant / "store.sqlite")
        assert con.execute("SELECT COUNT(*) FROM generations").fetchone() == (9,)
        assert set(con.execute("SELECT outcome, COUNT(*) FROM run_generations GROUP BY outcome").fetchall()) == outcomes
        # the filter counts: the 9 links under "answered" (bit 1) with the schema; kept by no trigger without it
        assert con.execute("SELECT COALESCE(SUM(n), 0) FROM link_counts WHERE outcome = 1").fetchone() == (counted,)
        con.close()
