"""Reading one run folder for a comparison, strictly read-only.

Nothing is ever written into the run folder, not even SQLite's side files:

* the folder must hold ``store.sqlite`` (else: "not a run folder");
* a run still being written is refused: the folder's lock (:mod:`reasonscope.storage.rundir`) is held (tested with
  a shared, non-blocking ``flock`` on the lock file opened read-only, which changes neither its bytes nor
  its times), or the run's record says ``running`` and its process is alive on this host;
* a store without a write-ahead log is opened ``immutable`` (SQLite then creates no ``-wal`` / ``-shm``
  file, which even ``mode=ro`` does); a store left with a non-empty write-ahead log (a killed run, another
  reader) is read from a private copy of the two files in a temporary folder, so the rows in the log are
  seen and the folder is left as it was;
* a damaged store, one without reasonscope's tables, or one from a newer reasonscope is refused.

Besides the run's record, items and item-level scores, the prompt templates of its generations are read
(:mod:`reasonscope.compare.templates`).

Each refusal is a :class:`CompareError` whose message names the file and what was expected (the command
line's exit code 2).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..storage.processes import process_gone
from ..storage.rundir import LOCK_FILENAME, RunDirLock
from ..storage.store import MIGRATIONS, STORE_FILENAME, select_run
from .templates import read_runtimes, read_templates

REQUIRED_TABLES = ("runs", "items", "scores", "run_generations", "generations")


class CompareError(ValueError):
    """Two runs cannot be read or compared; the message names the file and what was expected (exit 2)."""


@dataclass
class RunSource:
    """One run as the comparison reads it.

    Attributes:
        path: The run folder as given.
        store_path: Its store file.
        run: The run's record (``runs`` row, ``config`` decoded).
        items: ``"dataset/item id"`` -> the stored item (dict: input, target, ...).
        scores: ``(family, metric, model, item key) -> value`` of every item-level score (None: n/a).
        templates: use -> model -> the prompt templates of its generations
            (:func:`reasonscope.compare.templates.read_templates`).
        runtimes: use -> model -> the runtimes that made its generations
            (:func:`reasonscope.compare.templates.read_runtimes`).
    """

    path: Path
    store_path: Path
    run: dict[str, Any]
    items: dict[str, dict[str, Any]]
    scores: dict[tuple[str, str, str, str], float | None]
    conn: sqlite3.Connection | None = field(default=None, repr=False)
    templates: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    runtimes: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    @property
    def models(self) -> list[str]:
        """The models with an item-level score, sorted."""
        return sorted({k[2] for k in self.scores})

    @property
    def families(self) -> list[str]:
        """The families with an item-level score, sorted."""
        return sorted({k[0] for k in self.scores})

    @property
    def datasets(self) -> list[str]:
        """The datasets of the stored items, sorted."""
        return sorted({key.split("/", 1)[0] for key in self.items})

    def output(self, model: str, item_key: str) -> str | None:
        """The model's first completion of the item (original question, sample 0 first), or None."""
        if self.conn is None or item_key not in self.items:
            return None
        dataset, item_id = item_key.split("/", 1)
        row = self.conn.execute(
            "SELECT g.text FROM run_generations rg JOIN generations g ON g.key = rg.key WHERE rg.run_id=? AND "
            "rg.model=? AND rg.dataset=? AND rg.item_id=? ORDER BY rg.variant != 'original', rg.sample LIMIT 1",
            (self.run["run_id"], model, dataset, item_id)).fetchone()
        return None if row is None else row[0]


def lock_holder(run_dir: Path) -> str | None:
    """Who holds the run folder's lock (one line), or None when nobody does; the lock file is only read."""
    path = run_dir / LOCK_FILENAME
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows: no flock; the run record is still checked)
        return None
    try:
        fd = open(path, "rb")  # noqa: SIM115  (closed below; read-only: no byte or time changes)
    except OSError:
        return None
    try:
        fcntl.flock(fd.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        holder = RunDirLock(run_dir).holder()
        return holder.describe() if holder else "a process that left no record"
    else:
        fcntl.flock(fd.fileno(), fcntl.LOCK_UN)
        return None
    finally:
        fd.close()


def _check_folder(run_dir: Path, side: str) -> Path:
    if not run_dir.exists():
        raise CompareError(f"{run_dir}: no such folder; expected the {side} run folder (one holding {STORE_FILENAME})")
    if not run_dir.is_dir():
        raise CompareError(f"{run_dir}: not a folder; expected the {side} run folder (one holding {STORE_FILENAME})")
    store = run_dir / STORE_FILENAME
    if not store.is_file():
        raise CompareError(f"{store}: no such file; {run_dir} is not a run folder (expected a folder written by "
                           "reasonscope run, score or a family command, holding its store)")
    holder = lock_holder(run_dir)
    if holder is not None:
        raise CompareError(f"{run_dir / LOCK_FILENAME}: the {side} run is still being written (lock held by "
                           f"{holder}); compare it once that process has finished")
    return store


@contextmanager
def _connect(store: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection that writes nothing beside ``store`` (module docstring)."""
    wal = store.with_name(store.name + "-wal")
    tmp = None
    try:
        if wal.is_file() and wal.stat().st_size > 0:
            tmp = tempfile.TemporaryDirectory(prefix="reasonscope-compare-")
            copy = Path(tmp.name) / store.name
            shutil.copyfile(store, copy)
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            conn = sqlite3.connect(copy.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False)
        else:
            conn = sqlite3.connect(store.resolve().as_uri() + "?immutable=1", uri=True, check_same_thread=False)
        try:
            yield conn
        finally:
            conn.close()
    finally:
        if tmp is not None:
            tmp.cleanup()


def _damaged(store: Path, err: BaseException) -> CompareError:
    return CompareError(f"{store}: not a readable reasonscope store ({err}): it is damaged (cut short or "
                        "overwritten) or not a store; expected the SQLite store a reasonscope run writes")


def _pick_run(store: Path, conn: sqlite3.Connection, run_id: str | None, side: str) -> dict[str, Any]:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    extra = ", pid, host, process_started" if {"pid", "host", "process_started"} <= columns else ""
    cur = conn.execute(f"SELECT run_id, kind, created, status, config, seed{extra} FROM runs ORDER BY created")
    names = [c[0] for c in cur.description]
    runs = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    if not runs:
        raise CompareError(f"{store}: the store holds no run; expected a run that was scored")
    run = select_run(runs, run_id)  # the rule Store.run follows
    if run is None:
        known = ", ".join(r["run_id"] for r in runs)
        raise CompareError(f"{store}: no run {run_id!r} (the store holds {known})")
    if run["status"] == "running" and run.get("pid") is not None and not process_gone(
            run["pid"], run.get("host"), run.get("process_started")):
        raise CompareError(f"{store}: the {side} run {run['run_id']} is still being written (pid {run['pid']} on "
                           f"{run.get('host')}); compare it once it has finished")
    try:
        run["config"] = json.loads(run["config"]) if run["config"] else {}
    except ValueError as err:
        raise _damaged(store, err) from None
    return run


@contextmanager
def open_run(path: str | Path, run_id: str | None = None, side: str = "BASE") -> Iterator[RunSource]:
    """The run of folder ``path`` (the latest finished one, or ``run_id``), read-only (module docstring).

    Args:
        path: The run folder.
        run_id: Which run of the store (default: the latest finished, else the latest).
        side: ``BASE`` or ``NEW``, for the messages.

    Raises:
        CompareError: Not a run folder, a run still being written, a damaged or unknown store, no such run.
    """
    run_dir = Path(path)
    store = _check_folder(run_dir, side)
    try:
        with _connect(store) as conn:
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            except sqlite3.DatabaseError as err:
                raise _damaged(store, err) from None
            if version > len(MIGRATIONS):
                raise CompareError(f"{store}: written by a newer reasonscope (store schema {version}, this version "
                                   f"reads up to {len(MIGRATIONS)}); upgrade reasonscope to compare it")
            missing = [t for t in REQUIRED_TABLES if t not in tables]
            if missing:
                raise CompareError(f"{store}: not a reasonscope store (no table {', '.join(missing)}); expected the "
                                   "SQLite store a reasonscope run writes")
            try:
                run = _pick_run(store, conn, run_id, side)
                items = {}
                for dataset, item_id, data in conn.execute("SELECT dataset, item_id, data FROM items"):
                    items[f"{dataset}/{item_id}"] = json.loads(data) if data else {}
                scores = {(f, m, mo, i): v for f, m, mo, i, v in conn.execute(
                    "SELECT family, metric, model, item_id, value FROM scores WHERE run_id=? AND item_id != ''",
                    (run["run_id"],))}
                templates = read_templates(conn, run["run_id"], run["config"])
                runtimes = read_runtimes(conn, run["run_id"])
            except (sqlite3.DatabaseError, ValueError) as err:
                if isinstance(err, CompareError):
                    raise
                raise _damaged(store, err) from None
            yield RunSource(run_dir, store, run, items, scores, conn, templates, runtimes)
    except sqlite3.DatabaseError as err:
        raise _damaged(store, err) from None
    except OSError as err:
        raise CompareError(f"{getattr(err, 'filename', None) or store}: cannot be read ({err.strerror or err}); "
                           "expected a readable run folder") from None
