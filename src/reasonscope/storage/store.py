"""SQLite run store: request cache, generations, items, scores, run metadata.

One file per run directory (``RUN_DIR/store.sqlite``), WAL mode, every write committed at once, so
a killed process loses at most the requests that were in flight. The store is the single source of
truth: every report is rebuilt from it.

Tables
------
``runs``            one row per invocation: resolved config, package versions, git hash, seed, status,
                    and the process that runs it (pid, host, process start time).
``items``           the items of each dataset, as JSON (so reports need nothing but the store).
``generations``     the request cache: ``key`` -> the provider's completion (raw text always kept).
``run_generations`` which cached completion answers which (model, dataset, item, variant, sample), with
                    the request's outcome and ``dataset/item id`` key (schema 5; triggers keep the outcome true)
                    and its slot (``link_slots``: the run and model as one integer; counted in ``link_counts``).
``scores``          every score, per run, family, metric, model and item (``''`` = corpus level), with its
                    slot (``score_slots``: the run, family, metric and model as one integer) and the outcomes of
                    its model's linked requests for its item (schema 6; counted in ``score_counts`` by triggers).
``artefacts``       named blobs (plots, tables) a run produced.
``score_models``    the identity (kind, backend, model, settings, versions) of each model-based scorer.
``score_cache``     every model-based score (NLI probability, similarity, embedding, perplexity), keyed
                    by scorer and hashed input (:mod:`reasonscope.scorers.cache`).

Cache key
---------
``sha256`` of the canonical JSON of: provider, model id, revision, base URL, the full generation
config (temperature, top_p, max tokens, seed), the messages, the sample index, the template
version and the provider options that change outputs (:func:`cache_key`; operational options such as
``base_urls`` or ``device`` are left out). A cached completion is never requested again. Only parameters bound
with ``?`` are used in SQL. The template version is also written into the stored request (``generations.request``,
field ``template``; ``imported:<format>`` for imported outputs), where ``reasonscope compare`` reads it; a
generation stored before that has none.

Run status
----------
``running`` from :meth:`Store.start_run` until :meth:`Store.finish_run` sets ``finished`` (called once
the run's outputs are written) or ``interrupted`` (an exception, Ctrl-C). A process killed outright
cannot write anything, so every open of a store marks the runs still ``running`` whose process has
ended (same host, pid gone or reused; :func:`reasonscope.storage.processes.process_gone`) as ``interrupted``.
A run of another host stays ``running``: its process cannot be checked from here.

Schema versions and migrations
------------------------------
The schema version is SQLite's ``PRAGMA user_version``: the number of migrations applied. Opening a
store applies the missing ones in order, each in one transaction with its version bump, so a store
written by any earlier reasonscope is brought forward and never half-migrated; a store from a newer
reasonscope (a version above ``len(MIGRATIONS)``) is refused rather than misread. Version 0 is a
store without a version: an empty file or one written by reasonscope 0.1.0, whose tables the first
migration creates ``IF NOT EXISTS``.

To change the schema, add one function after the last migration of this module (``_v6_filter_slots``
today), decorated with ``@migration``, that takes the connection and runs its statements with ``conn.execute`` (no
``executescript``: it would commit half-way). Its position is its version. Never edit, reorder or
remove a released migration; write a new one (``ALTER TABLE ... ADD COLUMN``, ``CREATE TABLE``, a data
fix). Then extend the test that opens a store of the previous version.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..types import Completion, Item, Score, canonical_json, stable_hash
from .io_errors import explain, is_disk_full
from .processes import process_gone, this_process
from .run_files import STORE_FILENAME
from .run_links import RUNS_SQL, link_state
from .rundir import make_run_dir
from .scrub import scrub_generation
from .versions import package_versions

RESERVE_FILENAME = ".store.sqlite.reserve"
RESERVE_BYTES = 1 << 20  # room to commit the answers in hand when the disk fills (Store.reserve_space)
RUN_STATUSES = ("running", "finished", "interrupted")

# ------------------------------------------------------------------------------------------ migrations

# the outcome of the linked request ``run_generations`` row: its cached generation's, NULL (pending) when none
_OUTCOME_OF_KEY = ("SELECT CASE WHEN g.error IS NULL THEN 'answered' ELSE 'failed' END FROM generations g "
                   "WHERE g.key = run_generations.key")

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []


def migration(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
    """Register ``fn`` as the next schema version (see "Schema versions and migrations" above)."""
    MIGRATIONS.append(fn)
    return fn


@migration
def _v1_tables(conn: sqlite3.Connection) -> None:
    """The tables of reasonscope 0.1.0 (kept ``IF NOT EXISTS``: its stores have them, unversioned)."""
    for statement in (
        "CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY, kind TEXT, created REAL, finished REAL, "
        "status TEXT, config TEXT, versions TEXT, git_hash TEXT, seed INTEGER, notes TEXT)",
        "CREATE TABLE IF NOT EXISTS items(dataset TEXT, item_id TEXT, position INTEGER, data TEXT, "
        "PRIMARY KEY(dataset, item_id))",
        "CREATE TABLE IF NOT EXISTS generations(key TEXT PRIMARY KEY, provider TEXT, model_id TEXT, request TEXT, "
        "text TEXT, finish_reason TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL, "
        "cost_usd REAL, error TEXT, attempts INTEGER, source TEXT, created REAL)",
        "CREATE TABLE IF NOT EXISTS run_generations(run_id TEXT, model TEXT, dataset TEXT, item_id TEXT, "
        "variant TEXT, sample INTEGER, key TEXT, max_tokens INTEGER, "
        "PRIMARY KEY(run_id, model, dataset, item_id, variant, sample))",
        "CREATE TABLE IF NOT EXISTS scores(run_id TEXT, family TEXT, metric TEXT, model TEXT, item_id TEXT, "
        "value REAL, reason TEXT, details TEXT, PRIMARY KEY(run_id, family, metric, model, item_id))",
        "CREATE TABLE IF NOT EXISTS artefacts(run_id TEXT, name TEXT, kind TEXT, data BLOB, "
        "PRIMARY KEY(run_id, name))",
    ):
        conn.execute(statement)


@migration
def _v2_run_process(conn: sqlite3.Connection) -> None:
    """The process that runs each run, to tell a run in progress from one whose process was killed.

    Runs of 0.1.0 stores left ``running`` have no process to check: they are marked ``interrupted``.
    """
    conn.execute("ALTER TABLE runs ADD COLUMN pid INTEGER")
    conn.execute("ALTER TABLE runs ADD COLUMN host TEXT")
    conn.execute("ALTER TABLE runs ADD COLUMN process_started REAL")
    conn.execute("UPDATE runs SET status='interrupted' WHERE status='running'")


@migration
def _v3_score_cache(conn: sqlite3.Connection) -> None:
    """The score cache of model-based scorers (:mod:`reasonscope.scorers.cache`).

    One row per scorer identity in ``score_models``, one row per (scorer, hashed input) in ``score_cache``.
    """
    conn.execute("CREATE TABLE score_models(scorer TEXT PRIMARY KEY, kind TEXT, description TEXT, identity TEXT, "
                 "created REAL)")
    conn.execute("CREATE TABLE score_cache(scorer TEXT, input TEXT, value BLOB, PRIMARY KEY(scorer, input)) "
                 "WITHOUT ROWID")


@migration
def _v4_item_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for reading a run item by item (:func:`reasonscope.storage.run_data.iter_run_chunks`).

    Its linked requests by dataset and item, and its scores by item.
    """
    conn.execute("CREATE INDEX run_generations_by_item ON run_generations(run_id, dataset, item_id, model, variant, "
                 "sample)")
    conn.execute("CREATE INDEX scores_by_item ON scores(run_id, item_id)")


@migration
def _v5_filter_indexes(conn: sqlite3.Connection) -> None:
    """What ``reasonscope view``'s Items page filters on, stored where the filters read it.

    ``scores_by_value``: each score's value beside its primary key, so that the items of a metric with a
    given value are counted and paged from the index alone.

    ``run_generations.outcome``: the outcome of each linked request, ``answered`` (its generation is stored
    without error), ``failed`` (stored with an error) or NULL (pending: none stored), and
    ``run_generations.item_key``: its item as scores key it, ``dataset/item id``. Both are back-filled here
    from the request cache. :meth:`Store.link` writes them with each link, and triggers keep ``outcome``
    true on every other write (a generation stored, replaced, changed or deleted: a failed request answered
    on a re-run, ``reasonscope cache clear``; a link inserted by other code):
    ``run_generations_by_key`` finds a generation's links. ``run_generations_outcome``
    (run, outcome, model, item key, variant, sample) then counts and pages the requests of one outcome
    from one index range, and walks beside ``scores_by_value`` in the same (model, item key) order for a
    metric and an outcome (a merge, not a lookup per score).
    """
    conn.execute("CREATE INDEX scores_by_value ON scores(run_id, family, metric, model, item_id, value)")
    conn.execute("ALTER TABLE run_generations ADD COLUMN outcome TEXT")
    conn.execute("ALTER TABLE run_generations ADD COLUMN item_key TEXT")
    conn.execute("UPDATE run_generations SET item_key = dataset || '/' || item_id, outcome = (" + _OUTCOME_OF_KEY + ")")
    conn.execute("CREATE INDEX run_generations_by_key ON run_generations(key)")
    conn.execute("CREATE INDEX run_generations_outcome ON run_generations(run_id, outcome, model, item_key, variant, "
                 "sample)")
    new = "CASE WHEN NEW.error IS NULL THEN 'answered' ELSE 'failed' END"  # the stored generation's outcome
    set_new = "UPDATE run_generations SET outcome = " + new + " WHERE key = NEW.key AND outcome IS NOT " + new + "; "
    conn.execute("CREATE TRIGGER run_generations_linked AFTER INSERT ON run_generations "
                 "WHEN NEW.item_key IS NULL OR (NEW.outcome IS NULL AND "
                 "EXISTS (SELECT 1 FROM generations g WHERE g.key = NEW.key)) BEGIN "
                 "UPDATE run_generations SET item_key = NEW.dataset || '/' || NEW.item_id, "
                 "outcome = (SELECT CASE WHEN g.error IS NULL THEN 'answered' ELSE 'failed' END FROM generations g "
                 "WHERE g.key = NEW.key) WHERE rowid = NEW.rowid; END")
    conn.execute("CREATE TRIGGER generations_stored AFTER INSERT ON generations BEGIN " + set_new + "END")
    conn.execute("CREATE TRIGGER generations_changed AFTER UPDATE OF key, error ON generations BEGIN "
                 "UPDATE run_generations SET outcome = NULL WHERE key = OLD.key AND OLD.key IS NOT NEW.key; "
                 + set_new + "END")
    conn.execute("CREATE TRIGGER generations_deleted AFTER DELETE ON generations BEGIN "
                 "UPDATE run_generations SET outcome = NULL WHERE key = OLD.key; END")


# the outcomes of a (run, model, item key)'s linked requests as bits: 1 one answered, 2 one failed, 4 one pending
# (0: none linked, as for the scores of a model that sends no request); the three probes read run_generations_outcome
def _linked(run: str, model: str, key: str, outcome: str) -> str:
    """SQL: whether a request of ``run``, ``model`` and item ``key`` is linked with ``outcome`` (a condition)."""
    return (f"EXISTS (SELECT 1 FROM run_generations l WHERE l.run_id = {run} AND l.outcome {outcome} AND "
            f"l.model = {model} AND l.item_key = {key})")


def _outcomes_of(run: str, model: str, key: str) -> str:
    """SQL of the outcome bits of the linked requests of ``run``, ``model`` and item ``key`` (SQL expressions)."""
    answered, failed, pending = (_linked(run, model, key, o) for o in ("= 'answered'", "= 'failed'", "IS NULL"))
    return f"({answered} + 2 * {failed} + 4 * {pending})"


def _value_class(value: str) -> str:
    """SQL of a score value's class: 1 (value 1), 0 (value 0), 2 (none: n/a), 3 (any other number)."""
    return f"(CASE WHEN {value} IS NULL THEN 2 WHEN {value} = 1 THEN 1 WHEN {value} = 0 THEN 0 ELSE 3 END)"


def _outcome_class(outcome: str) -> str:
    """SQL of a linked request's outcome as its bit: 1 answered, 2 failed, 4 pending (``outcome`` NULL)."""
    return f"(CASE {outcome} WHEN 'answered' THEN 1 WHEN 'failed' THEN 2 ELSE 4 END)"


@migration
def _v6_filter_slots(conn: sqlite3.Connection) -> None:
    """What ``reasonscope view``'s Items filters read, kept small and counted as it is written.

    Scores, for the metric filters:

    ``score_slots``: one integer ``slot`` per (run, family, metric, model) that has scores. ``scores.slot``
    names it and ``scores.outcomes`` holds the outcomes of the model's linked requests for the score's item
    as bits (1: one answered, 2: one failed, 4: one pending; 0: none linked, as for a model that sends no
    request). The index ``scores_by_slot`` (slot, item id, value, outcomes) then serves a metric with any
    value and outcome filter from one index range in page order, its entries a third of the size of
    ``scores_by_value``'s (which it replaces: the run, family, metric and model text is not repeated in each).

    ``score_counts`` (slot, value class, outcome bits) -> the number of item-level scores, so a metric
    filter is counted from a few rows, not by reading its range. Value classes: 1 (value 1), 0 (value 0),
    2 (no value: n/a), 3 (another number).

    All of it is back-filled here, written by :meth:`Store.put_scores` with each score, and kept true by
    triggers: a score written by other code is given its slot and outcomes; a score inserted (``INSERT OR
    REPLACE`` included: the replaced row is uncounted before), updated or deleted is counted; a linked
    request inserted, deleted or changed (its outcome set by the request cache's triggers of schema 5:
    answered, failed on a re-run, ``reasonscope cache clear``) sets the outcomes of its model's scores of its
    item. Writes that skip these (``INSERT OR IGNORE`` or an upsert into ``scores``, a score's run, family,
    metric or model changed in place) are not supported.

    Linked requests, for the filters without a metric: ``link_slots``, one integer ``slot`` per (run, model)
    with links, named by ``run_generations.slot``; the index ``run_generations_by_slot`` (slot, item key,
    outcome) in page order; ``link_counts`` (slot, outcome bit, first) -> the number of links, ``first`` 1
    for a model's ``original`` sample 0 (when every matched link is one, each (model, item) is one link and the
    count is the sum). Written by :meth:`Store.link`, given to links of other code and counted by triggers
    likewise (``INSERT OR REPLACE`` included).
    """
    conn.execute("CREATE TABLE score_slots(slot INTEGER PRIMARY KEY, run_id TEXT, family TEXT, metric TEXT, "
                 "model TEXT, UNIQUE(run_id, family, metric, model))")
    conn.execute("ALTER TABLE scores ADD COLUMN slot INTEGER")
    conn.execute("ALTER TABLE scores ADD COLUMN outcomes INTEGER")
    conn.execute("INSERT INTO score_slots(run_id, family, metric, model) SELECT DISTINCT run_id, family, metric, model "
                 "FROM scores ORDER BY run_id, family, metric, model")
    conn.execute("UPDATE scores SET slot = (SELECT p.slot FROM score_slots p WHERE p.run_id = scores.run_id AND "
                 "p.family = scores.family AND p.metric = scores.metric AND p.model = scores.model), outcomes = "
                 + _outcomes_of("scores.run_id", "scores.model", "scores.item_id"))
    conn.execute("DROP INDEX scores_by_value")
    conn.execute("CREATE INDEX scores_by_slot ON scores(slot, item_id, value, outcomes)")
    conn.execute("CREATE TABLE score_counts(slot INTEGER, value_class INTEGER, outcomes INTEGER, n INTEGER, "
                 "PRIMARY KEY(slot, value_class, outcomes)) WITHOUT ROWID")
    conn.execute("INSERT INTO score_counts SELECT slot, " + _value_class("value") + ", outcomes, COUNT(*) FROM scores "
                 "WHERE item_id != '' GROUP BY 1, 2, 3")
    def count(r: str) -> str:  # row alias NEW or OLD
        return (f"INSERT INTO score_counts SELECT {r}.slot, " + _value_class(f"{r}.value") + f", {r}.outcomes, 1 "
                f"WHERE {r}.slot IS NOT NULL AND {r}.item_id != '' ON CONFLICT DO UPDATE SET n = n + 1; ")

    def uncount(r: str) -> str:
        return (f"UPDATE score_counts SET n = n - 1 WHERE slot = {r}.slot AND value_class = "
                + _value_class(f"{r}.value") + f" AND outcomes = {r}.outcomes AND {r}.item_id != ''; ")

    # a new slot is inserted only where none exists (not ``INSERT OR IGNORE``: in a trigger, the conflict clause of
    # the statement that fires it wins, and an ``INSERT OR REPLACE INTO scores`` would replace the slot's row)
    conn.execute("CREATE TRIGGER scores_slotted AFTER INSERT ON scores WHEN NEW.slot IS NULL BEGIN "
                 "INSERT INTO score_slots(run_id, family, metric, model) "
                 "SELECT NEW.run_id, NEW.family, NEW.metric, NEW.model WHERE NOT EXISTS (SELECT 1 FROM score_slots p "
                 "WHERE p.run_id = NEW.run_id AND p.family = NEW.family AND p.metric = NEW.metric AND "
                 "p.model = NEW.model); "
                 "UPDATE scores SET slot = (SELECT p.slot FROM score_slots p WHERE p.run_id = NEW.run_id AND "
                 "p.family = NEW.family AND p.metric = NEW.metric AND p.model = NEW.model), outcomes = "
                 + _outcomes_of("NEW.run_id", "NEW.model", "NEW.item_id") + " WHERE rowid = NEW.rowid; END")
    conn.execute("CREATE TRIGGER scores_replacing BEFORE INSERT ON scores BEGIN "
                 "UPDATE score_counts SET n = n - 1 WHERE (slot, value_class, outcomes) = (SELECT s.slot, "
                 + _value_class("s.value") + ", s.outcomes FROM scores s WHERE s.run_id = NEW.run_id AND "
                 "s.family = NEW.family AND s.metric = NEW.metric AND s.model = NEW.model AND s.item_id = NEW.item_id "
                 "AND s.item_id != ''); END")
    conn.execute("CREATE TRIGGER scores_counted AFTER INSERT ON scores BEGIN " + count("NEW") + "END")
    conn.execute("CREATE TRIGGER scores_uncounted AFTER DELETE ON scores BEGIN " + uncount("OLD") + "END")
    conn.execute("CREATE TRIGGER scores_recounted AFTER UPDATE OF slot, item_id, value, outcomes ON scores BEGIN "
                 + uncount("OLD") + count("NEW") + "END")

    def rescore(r: str) -> str:
        o = _outcomes_of(f"{r}.run_id", f"{r}.model", f"{r}.item_key")
        return (f"UPDATE scores SET outcomes = {o} WHERE run_id = {r}.run_id AND item_id = {r}.item_key AND "
                f"model = {r}.model AND slot IS NOT NULL AND outcomes IS NOT {o}; ")

    new, old = rescore("NEW"), rescore("OLD")
    conn.execute("CREATE TRIGGER run_generations_rescored_linked AFTER INSERT ON run_generations BEGIN " + new + "END")
    conn.execute("CREATE TRIGGER run_generations_rescored_unlinked AFTER DELETE ON run_generations BEGIN " + old + "END")
    conn.execute("CREATE TRIGGER run_generations_rescored AFTER UPDATE OF run_id, model, item_key, outcome ON "
                 "run_generations WHEN OLD.outcome IS NOT NEW.outcome OR OLD.item_key IS NOT NEW.item_key OR "
                 "OLD.model IS NOT NEW.model OR OLD.run_id IS NOT NEW.run_id BEGIN " + old + new + "END")
    conn.execute("CREATE TABLE link_slots(slot INTEGER PRIMARY KEY, run_id TEXT, model TEXT, UNIQUE(run_id, model))")
    conn.execute("ALTER TABLE run_generations ADD COLUMN slot INTEGER")
    conn.execute("INSERT INTO link_slots(run_id, model) SELECT DISTINCT run_id, model FROM run_generations "
                 "ORDER BY run_id, model")
    conn.execute("UPDATE run_generations SET slot = (SELECT p.slot FROM link_slots p WHERE p.run_id = "
                 "run_generations.run_id AND p.model = run_generations.model)")
    conn.execute("CREATE INDEX run_generations_by_slot ON run_generations(slot, item_key, outcome)")
    def first(r: str) -> str:
        return f"({r}.variant = 'original' AND {r}.sample = 0)"

    conn.execute("CREATE TABLE link_counts(slot INTEGER, outcome INTEGER, first INTEGER, n INTEGER, "
                 "PRIMARY KEY(slot, outcome, first)) WITHOUT ROWID")
    conn.execute("INSERT INTO link_counts SELECT slot, " + _outcome_class("outcome") + ", " + first("l")
                 + ", COUNT(*) FROM run_generations l GROUP BY 1, 2, 3")
    def link_count(r: str) -> str:
        return (f"INSERT INTO link_counts SELECT {r}.slot, " + _outcome_class(f"{r}.outcome") + ", " + first(r)
                + f", 1 WHERE {r}.slot IS NOT NULL ON CONFLICT DO UPDATE SET n = n + 1; ")

    def link_uncount(r: str) -> str:
        return (f"UPDATE link_counts SET n = n - 1 WHERE slot = {r}.slot AND outcome = "
                + _outcome_class(f"{r}.outcome") + " AND first = " + first(r) + "; ")

    conn.execute("CREATE TRIGGER run_generations_slotted AFTER INSERT ON run_generations WHEN NEW.slot IS NULL BEGIN "
                 "INSERT INTO link_slots(run_id, model) SELECT NEW.run_id, NEW.model WHERE NOT EXISTS "
                 "(SELECT 1 FROM link_slots p WHERE p.run_id = NEW.run_id AND p.model = NEW.model); "
                 "UPDATE run_generations SET slot = (SELECT p.slot FROM link_slots p WHERE p.run_id = NEW.run_id AND "
                 "p.model = NEW.model) WHERE rowid = NEW.rowid; END")
    conn.execute("CREATE TRIGGER run_generations_replacing BEFORE INSERT ON run_generations BEGIN "
                 "UPDATE link_counts SET n = n - 1 WHERE (slot, outcome, first) = (SELECT l.slot, "
                 + _outcome_class("l.outcome") + ", " + first("l") + " FROM run_generations l WHERE "
                 "l.run_id = NEW.run_id AND l.model = NEW.model AND l.dataset = NEW.dataset AND "
                 "l.item_id = NEW.item_id AND l.variant = NEW.variant AND l.sample = NEW.sample); END")
    conn.execute("CREATE TRIGGER run_generations_counted AFTER INSERT ON run_generations BEGIN "
                 + link_count("NEW") + "END")
    conn.execute("CREATE TRIGGER run_generations_uncounted AFTER DELETE ON run_generations BEGIN "
                 + link_uncount("OLD") + "END")
    conn.execute("CREATE TRIGGER run_generations_recounted AFTER UPDATE OF slot, outcome, variant, sample ON "
                 "run_generations BEGIN " + link_uncount("OLD") + link_count("NEW") + "END")


_PUT_SCORE = ("INSERT OR REPLACE INTO scores(run_id, family, metric, model, item_id, value, reason, details, slot, "
              "outcomes) VALUES (?1,?2,?3,?4,?5,?6,?7,?8, (SELECT p.slot FROM score_slots p WHERE p.run_id = ?1 AND "
              "p.family = ?2 AND p.metric = ?3 AND p.model = ?4), " + _outcomes_of("?1", "?4", "?5") + ")")


class StoreVersionError(ValueError):
    """The store was written by a newer reasonscope."""

# Provider options that change how a request is sent, not what it returns: left out of the key.
OPERATIONAL_OPTIONS = frozenset({"base_urls", "call_log", "latency_s", "device", "fail_rate", "retry_base_s",
                                 "retry_cap_s", "max_reply_bytes"})


def cache_key(*, provider: str, model_id: str, revision: str | None, base_url: str | None,
              gen_config: dict[str, Any], messages: list[dict[str, str]], sample: int,
              template_version: str, model_options: dict[str, Any] | None = None) -> str:
    """Hash of everything that determines a completion (see module docstring)."""
    options = {k: v for k, v in (model_options or {}).items() if k not in OPERATIONAL_OPTIONS}
    return stable_hash({
        "provider": provider, "model_id": model_id, "revision": revision, "base_url": base_url,
        "gen_config": gen_config, "messages": messages, "sample": sample, "template": template_version,
        "options": options,
    }, length=64)


def select_run(runs: list[dict[str, Any]], run_id: str | None) -> dict[str, Any] | None:
    """The run of a store that ``run_id`` names; None when there is no such run (or no run).

    Of ``runs`` (records oldest first, each with ``run_id`` and ``status``): the one with that id, or when
    ``run_id`` is None the latest finished one, else the latest. The one rule of "the run" of a store
    (:meth:`Store.run`, ``reasonscope compare``).
    """
    if run_id is None:
        finished = [r for r in runs if r["status"] == "finished"]
        return (finished or runs or [None])[-1]
    return next((r for r in runs if r["run_id"] == run_id), None)


def git_hash(cwd: Path | None = None) -> str | None:
    """The commit hash of the git checkout at ``cwd`` (``git rev-parse HEAD``), or None outside one."""
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


class Store:
    """The run store of one run directory.

    Safe to open from several processes (WAL); opening brings the schema to the latest version and marks runs
    whose process has ended as interrupted.
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = make_run_dir(run_dir)
        self.path = self.run_dir / STORE_FILENAME
        self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        try:
            self._migrate()
            self.mark_interrupted_runs()
        except BaseException:
            self.conn.close()
            raise

    @property
    def schema_version(self) -> int:
        """The schema version of the store file (``PRAGMA user_version``: migrations applied)."""
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        latest = len(MIGRATIONS)
        if self.schema_version == latest:
            return
        self.conn.execute("BEGIN IMMEDIATE")  # one migrator at a time; others wait, then find nothing to do
        try:
            version = self.schema_version
            if version > latest:
                raise StoreVersionError(f"{self.path}: written by a newer reasonscope (store schema {version}, this "
                                        f"version reads up to {latest}); upgrade reasonscope to open it")
            for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
                step(self.conn)
                # PRAGMA takes no bound parameter; the value is our own migration count
                self.conn.execute("PRAGMA user_version = " + str(int(number)))
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def mark_interrupted_runs(self) -> list[str]:
        """Set ``interrupted`` on the runs still ``running`` whose process has ended; return their ids.

        On a store that cannot be written (read-only folder, full disk) they are left as they are.
        """
        rows = self.conn.execute("SELECT run_id, pid, host, process_started FROM runs WHERE status='running'")
        gone = [run_id for run_id, pid, host, started in rows.fetchall() if process_gone(pid, host, started)]
        try:
            for run_id in gone:
                self.conn.execute("UPDATE runs SET status='interrupted' WHERE run_id=? AND status='running'",
                                  (run_id,))
        except sqlite3.OperationalError as err:
            if explain(err) is None or explain(err).kind not in ("full", "read-only"):
                raise
        return gone

    @classmethod
    def open_existing(cls, run_dir: str | Path) -> Store:
        """The store of an existing run directory.

        A missing store is a FileNotFoundError; one that cannot be read raises :class:`sqlite3.DatabaseError`,
        which :func:`reasonscope.storage.io_errors.explain` words.
        """
        path = Path(run_dir) / STORE_FILENAME
        if not path.exists():
            raise FileNotFoundError(f"{run_dir}: no {STORE_FILENAME} here; is this a reasonscope run directory?")
        return cls(run_dir)

    @classmethod
    def open_read_only(cls, run_dir: str | Path) -> Store:
        """The store of a run directory that cannot be written, opened ``immutable``: read as it is.

        For a read-only folder or disk, where SQLite cannot make the WAL's shared-memory file: nothing is
        migrated or marked. Only for a folder nothing can write to: an immutable reader does not see a
        writer's changes.
        """
        self = cls.__new__(cls)
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / STORE_FILENAME
        self.conn = sqlite3.connect(self.path.resolve().as_uri() + "?immutable=1", uri=True, check_same_thread=False)
        if self.schema_version > len(MIGRATIONS):
            self.conn.close()
            raise StoreVersionError(f"{self.path}: written by a newer reasonscope; upgrade reasonscope to open it")
        return self

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction; on an error it is rolled back, and a full disk gives the space reserve back.

        The rollback is skipped when SQLite has already done it (as it does on a full disk). Giving the
        reserve back (:meth:`reserve_space`) lets the caller still commit what it holds.
        """
        self.conn.execute("BEGIN")
        try:
            yield self.conn
            self.conn.execute("COMMIT")  # where a full disk is found: the WAL grows at commit
        except BaseException as err:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if is_disk_full(err):
                self.release_space()
            raise

    # -- the space reserve -------------------------------------------------------------------
    @property
    def reserve_path(self) -> Path:
        """The hidden file holding the disk space reserve (:meth:`reserve_space`)."""
        return self.run_dir / RESERVE_FILENAME

    def reserve_space(self) -> None:
        """Set :data:`RESERVE_BYTES` of disk aside beside the store while a run generates.

        The reserve is a hidden file, allocated, not sparse. When a write finds the disk full,
        :meth:`transaction` deletes it, so the answers already received can still be committed before the run
        stops: a full disk costs the requests in flight, not the answered ones. Best effort: no reserve when
        there is no room for one.
        """
        try:
            with open(self.reserve_path, "wb") as fh:
                if hasattr(os, "posix_fallocate"):
                    os.posix_fallocate(fh.fileno(), 0, RESERVE_BYTES)
                else:  # pragma: no cover (Windows)
                    fh.write(b"\0" * RESERVE_BYTES)
        except OSError:
            self.release_space()

    def release_space(self) -> bool:
        """Delete the space reserve; whether there was one."""
        try:
            self.reserve_path.unlink()
        except OSError:
            return False
        return True

    # -- runs --------------------------------------------------------------------------------
    def start_run(self, *, kind: str, config: dict[str, Any], seed: int, notes: dict | None = None) -> str:
        """Record a new run of this process, status ``running``; return its id."""
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.reserve_space()
        me = this_process()
        self.conn.execute(
            "INSERT INTO runs(run_id, kind, created, status, config, versions, git_hash, seed, notes, pid, host, "
            "process_started) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, kind, time.time(), "running", canonical_json(config), canonical_json(package_versions()),
             git_hash(), seed, canonical_json(notes or {}), me.pid, me.host, me.started))
        return run_id

    def finish_run(self, run_id: str, status: str = "finished", notes: dict | None = None,
                   finished: float | None = None) -> None:
        """Set the run's final status (``finished`` only once its outputs exist) and end time."""
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}; expected one of {RUN_STATUSES}")
        finished = time.time() if finished is None else finished
        self.release_space()
        if notes is not None:
            self.conn.execute("UPDATE runs SET finished=?, status=?, notes=? WHERE run_id=?",
                              (finished, status, canonical_json(notes), run_id))
        else:
            self.conn.execute("UPDATE runs SET finished=?, status=? WHERE run_id=?", (finished, status, run_id))

    def runs(self) -> list[dict[str, Any]]:
        """Every run record, oldest first, with ``config``, ``versions`` and ``notes`` decoded from JSON."""
        cur = self.conn.execute(RUNS_SQL)
        cols = [c[0] for c in cur.description]
        out = []
        for row in cur.fetchall():
            rec = dict(zip(cols, row, strict=True))
            for k in ("config", "versions", "notes"):
                rec[k] = json.loads(rec[k]) if rec[k] else {}
            out.append(rec)
        return out

    def run(self, run_id: str | None = None) -> dict[str, Any]:
        """A run's record: :func:`select_run` of :meth:`runs` (the latest finished when ``run_id`` is None)."""
        runs = self.runs()
        if not runs:
            raise LookupError(f"{self.path}: the store holds no run")
        found = select_run(runs, run_id)
        if found is None:
            raise LookupError(f"{self.path}: no run {run_id!r}")
        return found

    # -- items -------------------------------------------------------------------------------
    def put_items(self, dataset: str, items: list[Item]) -> None:
        """Store the items of ``dataset`` (replacing those with the same id), keeping their order."""
        with self.transaction() as c:
            c.executemany("INSERT OR REPLACE INTO items(dataset, item_id, position, data) VALUES (?,?,?,?)",
                          [(dataset, it.id, i, it.model_dump_json()) for i, it in enumerate(items)])

    def items(self, dataset: str | None = None) -> dict[str, list[Item]]:
        """The stored items by dataset, each in its stored order; only ``dataset``'s when given."""
        if dataset is None:
            cur = self.conn.execute("SELECT dataset, data FROM items ORDER BY dataset, position")
        else:
            cur = self.conn.execute("SELECT dataset, data FROM items WHERE dataset=? ORDER BY position", (dataset,))
        out: dict[str, list[Item]] = {}
        for ds, data in cur.fetchall():
            out.setdefault(ds, []).append(Item.model_validate_json(data))
        return out

    # -- generations (the request cache) -----------------------------------------------------
    def get_completion(self, key: str) -> Completion | None:
        """The cached completion for a request key, or None when it was never stored."""
        row = self.conn.execute(
            "SELECT text, finish_reason, prompt_tokens, completion_tokens, latency_s, cost_usd, error, attempts, "
            "json_extract(request, '$.constraint') FROM generations WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        return Completion(text=row[0] or "", finish_reason=row[1], prompt_tokens=row[2], completion_tokens=row[3],
                          latency_s=row[4], cost_usd=row[5], error=row[6], attempts=row[7] or 1, constraint=row[8])

    def cached_keys(self, keys: Iterable[str], *, include_failed: bool = True) -> set[str]:
        """The keys among ``keys`` that have a stored generation (failed ones only if ``include_failed``)."""
        keys = list(keys)
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = f"SELECT key FROM generations WHERE key IN ({','.join('?' * len(chunk))})"
            if not include_failed:
                q += " AND error IS NULL"
            found.update(r[0] for r in self.conn.execute(q, chunk).fetchall())
        return found

    def put_completion(self, key: str, *, provider: str, model_id: str, request: dict[str, Any],
                       completion: Completion, source: str = "generated") -> None:
        """Store one generation, after :func:`reasonscope.storage.scrub.scrub_generation`.

        Configured secrets are masked and lone surrogates replaced; what changed is recorded in the request's
        ``repairs``.
        """
        request_json = canonical_json(request)
        completion, scrubbed = scrub_generation(completion, request, request_json)
        if scrubbed is not request:
            request_json = canonical_json(scrubbed)
        self.conn.execute(
            "INSERT OR REPLACE INTO generations(key, provider, model_id, request, text, finish_reason, prompt_tokens, "
            "completion_tokens, latency_s, cost_usd, error, attempts, source, created) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (key, provider, model_id, request_json, completion.text, completion.finish_reason,
             completion.prompt_tokens, completion.completion_tokens, completion.latency_s, completion.cost_usd,
             completion.error, completion.attempts, source, time.time()))

    def import_completions(self, run_id: str, source_file: str,
                           records: list[tuple[int, str, str, str, str, int, Completion, int | None]], *,
                           template: str = "imported") -> None:
        """Store outputs that were not generated here and link them to a run, in one transaction.

        Records are (line, model, dataset, item_id, variant, sample, completion, max_tokens). The key
        hashes the file, model, item, variant, sample and text, so importing a file twice adds
        nothing; ``source`` is ``imported:<file name>:<line>``. ``template`` stands for the prompt template of
        generated outputs (the request's ``template``): what describes the import, ``imported:<format>``.
        """
        name, resolved = Path(source_file).name, str(Path(source_file).resolve())
        links = []
        with self.transaction():
            for line, model, dataset, item_id, variant, sample, completion, max_tokens in records:
                # the key hashes the text as stored (a lone surrogate cannot be hashed as UTF-8)
                completion, repaired = scrub_generation(completion, {})
                key = "import-" + stable_hash({"source": resolved, "model": model, "dataset": dataset, "item": item_id,
                                               "variant": variant, "sample": sample, "text": completion.text},
                                              length=48)
                self.put_completion(key, provider="imported", model_id=model,
                                    request={"source": str(source_file), "line": line, "template": template,
                                             **repaired},
                                    completion=completion,
                                    source=f"imported:{name}:{line}")
                links.append((run_id, model, dataset, item_id, variant, sample, key, max_tokens))
        self.link(links)

    def link(self, rows: list[tuple[str, str, str, str, str, int, str, int | None]]) -> None:
        """Link requests to a run: rows of (run_id, model, dataset, item_id, variant, sample, key, max_tokens).

        Each link is written with its item key (``dataset/item id``) and its outcome as the request cache
        holds it now (``answered``, ``failed``, NULL: pending), and its slot (schema 6); triggers update the
        outcome when the generation is stored later (schema 5) and count it (schema 6).
        """
        with self.transaction() as c:
            c.executemany("INSERT OR IGNORE INTO link_slots(run_id, model) VALUES (?,?)", sorted({r[:2] for r in rows}))
            c.executemany(
                "INSERT OR REPLACE INTO run_generations(run_id, model, dataset, item_id, variant, sample, key, "
                "max_tokens, item_key, outcome, slot) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?3 || '/' || ?4, "
                "(SELECT CASE WHEN g.error IS NULL THEN 'answered' ELSE 'failed' END FROM generations g "
                "WHERE g.key = ?7), (SELECT p.slot FROM link_slots p WHERE p.run_id = ?1 AND p.model = ?2))", rows)

    def run_generations(self, run_id: str) -> list[dict[str, Any]]:
        """Every request linked to the run, joined with its generation when one is stored.

        Rows are dicts, ordered by model, dataset, item, variant and sample; ``done`` is false when no
        generation is stored (the generation's columns are then None).
        """
        cur = self.conn.execute(
            "SELECT rg.model, rg.dataset, rg.item_id, rg.variant, rg.sample, rg.key, rg.max_tokens, g.text, "
            "g.finish_reason, g.prompt_tokens, g.completion_tokens, g.latency_s, g.cost_usd, g.error, g.source, "
            "g.key IS NOT NULL, g.request "
            "FROM run_generations rg LEFT JOIN generations g ON g.key = rg.key WHERE rg.run_id=? "
            "ORDER BY rg.model, rg.dataset, rg.item_id, rg.variant, rg.sample", (run_id,))
        cols = ["model", "dataset", "item_id", "variant", "sample", "key", "max_tokens", "text", "finish_reason",
                "prompt_tokens", "completion_tokens", "latency_s", "cost_usd", "error", "source", "done", "request"]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def run_link_state(self, run_id: str) -> tuple[int, int, int]:
        """The run's linked requests, those whose generation is stored, and the sum of their write times.

        :func:`reasonscope.storage.run_links.link_state`: the write times are summed in whole microseconds, so the
        sum changes when one generation is written again (a failed generation sent again replaces its row).
        """
        return link_state(self.conn, run_id)

    def run_item_keys(self, run_id: str) -> list[tuple[str, str]]:
        """The (dataset, item id) pairs the run has requests for, in the order of SQLite's (binary) sort."""
        return [(d, i) for d, i in self.conn.execute(
            "SELECT DISTINCT dataset, item_id FROM run_generations WHERE run_id=? ORDER BY dataset, item_id",
            (run_id,)).fetchall()]

    def run_generations_between(self, run_id: str, first: tuple[str, str],
                                last: tuple[str, str]) -> list[dict[str, Any]]:
        """The run's linked requests for the items from ``first`` to ``last``, item by item.

        ``first`` and ``last`` are (dataset, item id), inclusive, in :meth:`run_item_keys` order. Rows are
        ordered by dataset, item, model, variant, sample, each with its item's stored JSON (``item``, None
        when the item is not stored).
        """
        cur = self.conn.execute(
            "SELECT rg.model, rg.dataset, rg.item_id, rg.variant, rg.sample, rg.key, rg.max_tokens, g.text, "
            "g.finish_reason, g.prompt_tokens, g.completion_tokens, g.latency_s, g.cost_usd, g.error, g.source, "
            "g.key IS NOT NULL, i.data "
            "FROM run_generations rg LEFT JOIN generations g ON g.key = rg.key "
            "LEFT JOIN items i ON i.dataset = rg.dataset AND i.item_id = rg.item_id "
            "WHERE rg.run_id=? AND (rg.dataset, rg.item_id) BETWEEN (?, ?) AND (?, ?) "
            "ORDER BY rg.dataset, rg.item_id, rg.model, rg.variant, rg.sample", (run_id, *first, *last))
        cols = ["model", "dataset", "item_id", "variant", "sample", "key", "max_tokens", "text", "finish_reason",
                "prompt_tokens", "completion_tokens", "latency_s", "cost_usd", "error", "source", "done", "item"]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def run_generation_counts(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Per model, the run's linked requests whose item is stored.

        ``requested``, ``done`` (a completion is stored), ``failed`` (stored with an error), ``imported`` (not
        generated here) and ``failed_example`` (the first error in model, dataset, item, variant, sample
        order). Counted in SQL, nothing loaded.
        """
        out: dict[str, dict[str, Any]] = {}
        for model, requested, done, failed, imported in self.conn.execute(
                "SELECT rg.model, COUNT(*), COUNT(g.key), COUNT(g.error), "
                "SUM(g.key IS NOT NULL AND COALESCE(g.source, 'generated') != 'generated') "
                "FROM run_generations rg JOIN items i ON i.dataset = rg.dataset AND i.item_id = rg.item_id "
                "LEFT JOIN generations g ON g.key = rg.key WHERE rg.run_id=? GROUP BY rg.model ORDER BY rg.model",
                (run_id,)).fetchall():
            example = self.conn.execute(
                "SELECT g.error FROM run_generations rg JOIN items i ON i.dataset = rg.dataset AND "
                "i.item_id = rg.item_id JOIN generations g ON g.key = rg.key WHERE rg.run_id=? AND rg.model=? AND "
                "g.error IS NOT NULL ORDER BY rg.dataset, rg.item_id, rg.variant, rg.sample LIMIT 1",
                (run_id, model)).fetchone() if failed else None
            out[model] = {"requested": requested, "done": done, "failed": failed, "imported": imported or 0,
                          "failed_example": example[0] if example else None}
        return out

    # -- scores ------------------------------------------------------------------------------
    def put_scores(self, run_id: str, scores: Iterable[Score]) -> None:
        """Store scores of the run (replacing any with the same family, metric, model and item).

        Each is written with its slot and the outcome bits of its model's linked requests for its item (schema 6:
        ``_v6_filter_slots``); triggers count it.
        """
        rows = [(run_id, s.family, s.metric, s.model, s.item_id or "", s.value, s.reason, canonical_json(s.details))
                for s in scores]
        with self.transaction() as c:
            c.executemany("INSERT OR IGNORE INTO score_slots(run_id, family, metric, model) VALUES (?,?,?,?)",
                          sorted({r[:4] for r in rows}))
            c.executemany(_PUT_SCORE, rows)

    def scores(self, run_id: str, family: str | None = None) -> list[Score]:
        """The run's scores in the order they were stored; only ``family``'s when given."""
        q = "SELECT family, metric, model, item_id, value, reason, details FROM scores WHERE run_id=?"
        args: list[Any] = [run_id]
        if family:
            q += " AND family=?"
            args.append(family)
        return [Score(family=f, metric=m, model=mo, item_id=i or None, value=v, reason=r,
                      details=json.loads(d) if d else {})
                for f, m, mo, i, v, r, d in self.conn.execute(q + " ORDER BY rowid", args).fetchall()]

    def item_scores(self, run_id: str, item_keys: Iterable[str]) -> list[Score]:
        """The run's item-level scores of these items (``dataset/item id``), in the order they were stored."""
        keys = list(item_keys)
        out: list[Score] = []
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = self.conn.execute(
                "SELECT family, metric, model, item_id, value, reason, details FROM scores WHERE run_id=? AND "
                f"item_id IN ({','.join('?' * len(chunk))}) ORDER BY rowid", (run_id, *chunk)).fetchall()
            out += [Score(family=f, metric=m, model=mo, item_id=i, value=v, reason=r,
                          details=json.loads(d) if d else {}) for f, m, mo, i, v, r, d in rows]
        return out

    def item_score_rows(self, run_id: str) -> Iterator[tuple[str, str, str, str, float | None]]:
        """``(family, metric, model, item, value)`` of every item-level score of the run, read as consumed.

        No reasons, no details; model by model, each in the order its scores were stored.
        """
        yield from self.conn.execute(
            "SELECT family, metric, model, item_id, value FROM scores WHERE run_id=? AND item_id != '' "
            "ORDER BY model, rowid", (run_id,))

    def delete_scores(self, run_id: str, family: str) -> None:
        """Delete every score of ``family`` in the run (before it is scored again)."""
        self.conn.execute("DELETE FROM scores WHERE run_id=? AND family=?", (run_id, family))

    # -- artefacts ---------------------------------------------------------------------------
    def put_artefact(self, run_id: str, name: str, kind: str, data: bytes | str) -> None:
        """Store a named blob of the run (text is stored as UTF-8), replacing one of the same name."""
        blob = data.encode("utf-8") if isinstance(data, str) else data
        self.conn.execute("INSERT OR REPLACE INTO artefacts(run_id, name, kind, data) VALUES (?,?,?,?)",
                          (run_id, name, kind, blob))

    def artefact(self, run_id: str, name: str) -> bytes | None:
        """The bytes of a named blob of the run, or None."""
        row = self.conn.execute("SELECT data FROM artefacts WHERE run_id=? AND name=?", (run_id, name)).fetchone()
        return None if row is None else row[0]

    # -- cache maintenance -------------------------------------------------------------------
    def cache_summary(self) -> list[dict[str, Any]]:
        """The request cache by provider, model and source: entries, failed entries and completion tokens."""
        cur = self.conn.execute(
            "SELECT provider, model_id, source, COUNT(*), SUM(error IS NOT NULL), SUM(completion_tokens) "
            "FROM generations GROUP BY provider, model_id, source ORDER BY provider, model_id")
        return [{"provider": p, "model_id": m, "source": s, "entries": n, "failed": f or 0, "tokens": t or 0}
                for p, m, s, n, f, t in cur.fetchall()]

    def clear_cache(self, *, model_id: str | None = None, failed_only: bool = False) -> int:
        """Delete cached generations (only ``model_id``'s, only the failed ones when asked).

        Returns:
            The number of generations deleted.
        """
        q, args = "DELETE FROM generations WHERE 1=1", []
        if model_id:
            q += " AND model_id=?"
            args.append(model_id)
        if failed_only:
            q += " AND error IS NOT NULL"
        return self.conn.execute(q, args).rowcount
