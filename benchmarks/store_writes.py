"""Benchmark: a first run's store writes, with the schema's triggers, with set-based upkeep, without upkeep.

What a run's generation phase writes, without the model: ``--items`` items of ``--k`` samples and ``--p``
paraphrases linked to a run in one call (:meth:`Store.link`), then their completions stored as the runner
stores them, ``--turn`` completions per transaction (:meth:`Store.put_completion` in :meth:`Store.transaction`;
the runner commits the answers of one turn of its event loop together, 8 with the default concurrency and an
instant model), then the run's item-level scores in one call (:meth:`Store.put_scores` after
:meth:`Store.delete_scores`, as the behaviour family writes a part of 1,000 items: its 7 metrics per item).
Five variants, each on a fresh store:

* ``schema``: the store as opened (schema 6): its triggers keep every link's outcome and the filter counts true
  on each row.
* ``set-based``: the upkeep a schema 7 would do instead, once per call and per transaction, as statements over
  the rows written (:func:`set_based_link`, :func:`set_based_turn`, :func:`set_based_scores`): the schema's
  triggers are given a guard that skips them while a row of ``upkeep_deferred`` exists (inserted and deleted
  inside the writer's transaction, so no other connection sees it), so that they still keep the store true for
  every other writer. A prototype for this measurement, not a store reasonscope writes; its counts and outcomes
  are tested against the triggers' and a recount.
* ``unscored skipped``: the schema with a cheaper trigger body where it can be had: the three triggers that set
  the outcome bits of a link's scores are skipped for a link whose item has no score of its run (every link of
  a first run while it generates), a lookup in place of two ``UPDATE`` statements.
* ``no triggers``: the same tables and indexes, the triggers dropped and nothing kept: what the writes cost
  without upkeep, a bound on what any upkeep could save.
* ``autocheckpoint``: the schema with ``PRAGMA wal_autocheckpoint`` at ``--autocheckpoint`` pages (default
  10,000: a WAL of up to about 40 MB) instead of SQLite's 1,000: fewer checkpoints while it writes, one at close.

The variants alternate over ``--repeats`` rounds (in order, then reversed); the script prints each round (link
and store seconds, of which commits, the scores' seconds and the store's close, which checkpoints its WAL) and
the medians.

    python benchmarks/store_writes.py --items 900 --k 3 --p 3 --repeats 5

The texts and requests have the peer benchmark's shapes (``benchmarks/behavior_vs_peer.py``: the mock's
four-line answers, a question of a sentence): 900 items give its 5,400 completions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from reasonscope.storage.store import _PUT_SCORE, Store
from reasonscope.types import Completion, Score, canonical_json

VARIANTS = ("schema", "set-based", "unscored skipped", "no triggers", "autocheckpoint")


def requests(items: int, k: int, p: int) -> list[tuple[str, str, int, dict, str]]:
    """(item id, variant, sample, request, text) of every generation, in the runner's order."""
    out = []
    for i in range(items):
        for variant, samples in [("original", k)] + [(f"p{j}", 1) for j in range(p)]:
            for sample in range(samples):
                question = f"Item {i}: how many apples are left when {i % 7 + 2} of {i % 11 + 9} are eaten? ({variant})"
                request = {"messages": [{"role": "user", "content": question}], "max_tokens": 256,
                           "temperature": 0.0, "top_p": 1.0, "seed": 1 + sample, "sample": sample, "base_url": None,
                           "template": "v3"}
                text = (f"Let me think step by step.\nI combine the quantities that matter.\nSo the result follows.\n"
                        f"Answer: {i % 11 + 9 - i % 7 - 2 + (sample % 2)}")
                out.append((f"q{i}", variant, sample, request, text))
    return out


# the set-based prototype: a link's outcome class and whether it is its model's original sample 0, as schema 6
# counts them in link_counts; the outcome of a link's generation as stored now (NULL: none stored)
_CLASS = "(CASE l.outcome WHEN 'answered' THEN 1 WHEN 'failed' THEN 2 ELSE 4 END)"
_FIRST = "(l.variant = 'original' AND l.sample = 0)"
_STORED = "(SELECT CASE WHEN g.error IS NULL THEN 'answered' ELSE 'failed' END FROM generations g WHERE g.key = l.key)"
_STAGED = ("(l.run_id, l.model, l.dataset, l.item_id, l.variant, l.sample) IN (SELECT run_id, model, dataset, item_id, "
           "variant, sample FROM temp.staged_links)")
_TURN = "l.key IN (SELECT value FROM json_each(?))"


def _count(where: str, sign: str) -> str:
    """SQL: add (``+``) or take (``-``) the links ``where`` selects to or from ``link_counts``."""
    return (f"INSERT INTO link_counts SELECT l.slot, {_CLASS}, {_FIRST}, {sign}COUNT(*) FROM run_generations l "
            f"WHERE {where} AND l.slot IS NOT NULL GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET n = n + excluded.n")


def _rescore(where: str) -> str:
    """SQL: the outcome bits of the scores of the links ``where`` selects (schema 6's triggers count a change)."""
    bits = " + ".join(f"{b} * EXISTS (SELECT 1 FROM run_generations o WHERE o.run_id = scores.run_id AND o.outcome "
                      f"{c} AND o.model = scores.model AND o.item_key = scores.item_id)"
                      for b, c in ((1, "= 'answered'"), (2, "= 'failed'"), (4, "IS NULL")))
    return (f"UPDATE scores SET outcomes = ({bits}) WHERE rowid IN (SELECT s.rowid FROM run_generations l JOIN scores s "
            f"ON s.run_id = l.run_id AND s.item_id = l.item_key AND s.model = l.model WHERE {where}) AND "
            f"slot IS NOT NULL AND outcomes IS NOT ({bits})")


def guard_trigger(conn, name: str, guard: str) -> None:
    """Give trigger ``name`` the condition ``guard``: it runs only when ``guard`` holds (and its own ``WHEN``)."""
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)).fetchone()
    head, body = sql.split(" BEGIN ", 1)
    head = head.replace(" WHEN ", f" WHEN {guard} AND (", 1) + ")" if " WHEN " in head else f"{head} WHEN {guard}"
    conn.execute(f"DROP TRIGGER {name}")  # a name read from the schema, not input
    conn.execute(f"{head} BEGIN {body}")


def defer_triggers(conn) -> None:
    """Give every trigger of the store a guard: skipped while ``upkeep_deferred`` holds a row (set-based variant)."""
    conn.execute("CREATE TABLE upkeep_deferred(writer TEXT)")
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        guard_trigger(conn, name, "NOT EXISTS (SELECT 1 FROM upkeep_deferred)")


def skip_unscored(conn) -> None:
    """The triggers that set the outcome bits of a link's scores skip a link whose item has no score of its run."""
    def scored(r: str) -> str:
        return f"EXISTS (SELECT 1 FROM scores s WHERE s.run_id = {r}.run_id AND s.item_id = {r}.item_key)"

    guard_trigger(conn, "run_generations_rescored_linked", scored("NEW"))
    guard_trigger(conn, "run_generations_rescored_unlinked", scored("OLD"))
    guard_trigger(conn, "run_generations_rescored", f"({scored('OLD')} OR {scored('NEW')})")


def set_based_link(store: Store, rows: list) -> None:
    """:meth:`Store.link` with the upkeep of its links as statements over all of them, in one transaction."""
    with store.transaction() as c:
        c.execute("INSERT INTO upkeep_deferred VALUES ('link')")
        c.execute("CREATE TEMP TABLE IF NOT EXISTS staged_links(run_id, model, dataset, item_id, variant, sample, key, "
                  "max_tokens)")
        c.execute("DELETE FROM temp.staged_links")
        c.executemany("INSERT INTO temp.staged_links VALUES (?,?,?,?,?,?,?,?)", rows)
        c.execute("INSERT OR IGNORE INTO link_slots(run_id, model) SELECT DISTINCT run_id, model FROM temp.staged_links")
        c.execute(_count(_STAGED, "-"))  # the links about to be replaced
        c.execute("INSERT OR REPLACE INTO run_generations(run_id, model, dataset, item_id, variant, sample, key, "
                  "max_tokens, item_key, outcome, slot) SELECT l.*, l.dataset || '/' || l.item_id, " + _STORED + ", "
                  "(SELECT p.slot FROM link_slots p WHERE p.run_id = l.run_id AND p.model = l.model) "
                  "FROM temp.staged_links l")
        c.execute(_count(_STAGED, ""))
        c.execute("DELETE FROM upkeep_deferred")
        c.execute(_rescore(_STAGED))


def set_based_turn(store: Store, completions: list) -> None:
    """One turn's completions stored in the open transaction, their links' upkeep as statements over all of them."""
    keys = json.dumps([key for key, _, _ in completions])
    c = store.conn
    c.execute("INSERT INTO upkeep_deferred VALUES ('turn')")
    c.execute(_count(_TURN, "-"), (keys,))
    for key, request, completion in completions:
        store.put_completion(key, provider="mock", model_id="reasoner", request=request, completion=completion)
    c.execute(f"UPDATE run_generations AS l SET outcome = {_STORED} WHERE {_TURN} AND outcome IS NOT {_STORED}", (keys,))
    c.execute(_count(_TURN, ""), (keys,))
    c.execute("DELETE FROM upkeep_deferred")
    c.execute(_rescore(_TURN), (keys,))


def set_based_scores(store: Store, run_id: str, scores: list[Score]) -> None:
    """:meth:`Store.put_scores` with the upkeep of its scores' counts as statements over all of them."""
    rows = [(run_id, s.family, s.metric, s.model, s.item_id or "", s.value, s.reason, canonical_json(s.details))
            for s in scores]
    value_class = "(CASE WHEN s.value IS NULL THEN 2 WHEN s.value = 1 THEN 1 WHEN s.value = 0 THEN 0 ELSE 3 END)"
    count = ("INSERT INTO score_counts SELECT s.slot, " + value_class + ", s.outcomes, {sign}COUNT(*) FROM scores s "
             "WHERE (s.run_id, s.family, s.metric, s.model, s.item_id) IN (SELECT * FROM temp.staged_scores) AND "
             "s.slot IS NOT NULL AND s.item_id != '' GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET n = n + excluded.n")
    with store.transaction() as c:
        c.execute("INSERT INTO upkeep_deferred VALUES ('scores')")
        c.execute("CREATE TEMP TABLE IF NOT EXISTS staged_scores(run_id, family, metric, model, item_id)")
        c.execute("DELETE FROM temp.staged_scores")
        c.executemany("INSERT INTO temp.staged_scores VALUES (?,?,?,?,?)", [r[:5] for r in rows])
        c.execute("INSERT OR IGNORE INTO score_slots(run_id, family, metric, model) SELECT DISTINCT run_id, family, "
                  "metric, model FROM temp.staged_scores")
        c.execute(count.format(sign="-"))  # the scores about to be replaced
        c.executemany(_PUT_SCORE, rows)
        c.execute(count.format(sign=""))
        c.execute("DELETE FROM upkeep_deferred")


def run_scores(rows: list) -> list[Score]:
    """The item-level scores of the behaviour family's 7 metrics for each item of ``rows`` (1, 0, n/a or a share)."""
    items = sorted({item for item, _, _, _, _ in rows}, key=lambda i: int(i[1:]))
    values = (1.0, 0.0, None, 0.5)
    return [Score(family="behavior", metric=metric, model="mock", item_id=f"items/{item}", value=values[(i + m) % 4])
            for i, item in enumerate(items)
            for m, metric in enumerate(("CQ", "CS", "ES_item", "LS", "RS", "SS", "conciseness"))]


def one(variant: str, rows: list, turn: int, folder: Path, autocheckpoint: int = 10_000
        ) -> tuple[float, float, float, float, float]:
    """(link, store, of which commits, scores, close) seconds of one variant on a fresh store in ``folder``.

    Closing the store checkpoints what its WAL holds into the database file (SQLite does at the last connection's
    close), as at the end of a run: with a larger ``wal_autocheckpoint`` that is where the deferred writes go.
    """
    shutil.rmtree(folder, ignore_errors=True)
    store = Store(folder)
    if variant == "no triggers":
        for (name,) in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            store.conn.execute(f"DROP TRIGGER {name}")  # a name read from the schema, not input
    elif variant == "autocheckpoint":
        store.conn.execute(f"PRAGMA wal_autocheckpoint = {int(autocheckpoint)}")
    elif variant == "set-based":
        defer_triggers(store.conn)
    elif variant == "unscored skipped":
        skip_unscored(store.conn)
    run_id = "bench-run"
    keys = [hashlib.sha256(f"{item}/{v}/{s}".encode()).hexdigest() for item, v, s, _, _ in rows]
    links = [(run_id, "mock", "items", item, v, s, key, 256) for (item, v, s, _, _), key in zip(rows, keys, strict=True)]
    scores = run_scores(rows)
    start = time.perf_counter()
    (set_based_link if variant == "set-based" else Store.link)(store, links)
    linked = time.perf_counter()
    commits = 0.0
    for i in range(0, len(rows), turn):
        completions = [(key, request, Completion(text=text, finish_reason="stop", prompt_tokens=20,
                                                 completion_tokens=24, latency_s=0.0))
                       for (_, _, _, request, text), key in zip(rows[i:i + turn], keys[i:i + turn], strict=True)]
        store.conn.execute("BEGIN")
        if variant == "set-based":
            set_based_turn(store, completions)
        else:
            for key, request, completion in completions:
                store.put_completion(key, provider="mock", model_id="reasoner", request=request, completion=completion)
        t = time.perf_counter()
        store.conn.execute("COMMIT")
        commits += time.perf_counter() - t
    stored = time.perf_counter()
    store.delete_scores(run_id, "behavior")
    (set_based_scores if variant == "set-based" else Store.put_scores)(store, run_id, scores)
    scored = time.perf_counter()
    store.close()
    return linked - start, stored - linked, commits, scored - stored, time.perf_counter() - scored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=900)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--p", type=int, default=3)
    ap.add_argument("--turn", type=int, default=8, help="completions per transaction")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--autocheckpoint", type=int, default=10_000, help="pages, for the autocheckpoint variant")
    args = ap.parse_args()
    rows = requests(args.items, args.k, args.p)
    root = Path(tempfile.mkdtemp(prefix="rs-store-writes-"))
    got: dict[str, list[tuple[float, float, float, float, float]]] = {v: [] for v in VARIANTS}
    for r in range(args.repeats):
        order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            got[variant].append(one(variant, rows, args.turn, root / variant.replace(" ", "-"), args.autocheckpoint))
            link, store, commits, scores, close = got[variant][-1]
            print(f"round {r + 1} {variant:16} link {link:.3f}s  store {store:.3f}s (commits {commits:.3f}s)  "
                  f"scores {scores:.3f}s  close {close:.3f}s  total {link + store + scores + close:.3f}s", flush=True)
    print(f"{len(rows)} completions, {args.turn} per transaction, {len(run_scores(rows))} scores; medians "
          "(total: link + store + scores + close):")
    base = statistics.median(x[0] + x[1] + x[3] + x[4] for x in got["schema"])
    for variant in VARIANTS:
        link, store, commits, scores, close = (statistics.median(x[i] for x in got[variant]) for i in range(5))
        total = statistics.median(x[0] + x[1] + x[3] + x[4] for x in got[variant])
        print(f"  {variant:16} link {link:.3f}s  store {store:.3f}s (commits {commits:.3f}s)  scores {scores:.3f}s  "
              f"close {close:.3f}s  total {total:.3f}s  schema / this {base / total:.2f}x")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
