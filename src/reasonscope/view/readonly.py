"""Opening a run's store for reading only: nothing written, nothing created, no writer blocked.

A run folder may be in use: a run writes its store (SQLite in WAL mode) while the viewer reads it. The
viewer opens a fresh connection per request (:func:`open_read_only`) and closes it at once:

* when the store's ``-wal`` and ``-shm`` files exist (a writer has the store open, or the last one
  ended without removing them), the connection is ``mode=ro``: it reads the newest committed state
  through the WAL, takes no write lock, and a writer goes on unblocked (WAL readers never block
  writers);
* otherwise no process has the store open, and the connection is ``immutable=1``: SQLite then creates
  no ``-wal``, ``-shm`` or journal file beside the store. (``mode=ro`` alone would create them.)

Nothing is migrated (a store of an older schema from :data:`OLDEST_SCHEMA` on is read as it is) and no run is marked interrupted (:class:`reasonscope.storage.store.Store` does both when
it opens a store; the viewer never does). A store written by a newer reasonscope, or one that is not a
SQLite file, raises :class:`StoreUnreadable` with the reason; the Runs page shows it on that run's row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..storage.store import MIGRATIONS, STORE_FILENAME, Store

__all__ = ["OLDEST_SCHEMA", "StoreUnreadable", "open_read_only", "read_snapshot", "store_fingerprint"]

OLDEST_SCHEMA = 4
"""The oldest store schema the viewer reads: 4 has every table and the by-item indexes. A store of schema 4
lacks what schema 5 adds for the filters (``scores_by_value``; the ``outcome`` and ``item_key`` columns of
``run_generations`` with ``run_generations_outcome`` and ``run_generations_by_key``): it is read by queries
that look each linked request up in the request cache instead (slower on a large run). A store of schema 5 lacks schema 6's slots and counts (``score_slots``, ``score_counts``,
``link_slots``, ``link_counts`` and their indexes): its filters are counted by reading their index ranges. Either is
read so until a ``reasonscope`` command that opens it for writing (``reasonscope report``) brings it forward."""


class StoreUnreadable(RuntimeError):
    """A store the viewer cannot read (damaged, not SQLite, or from a newer reasonscope)."""


def _connect(path: Path) -> sqlite3.Connection:
    wal, shm = path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
    mode = "mode=ro" if wal.exists() and shm.exists() else "immutable=1"
    return sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False, timeout=5)


@contextmanager
def open_read_only(run_dir: Path) -> Iterator[Store]:
    """The run folder's store as a :class:`~reasonscope.storage.store.Store` on a read-only connection, closed after.

    Raises:
        StoreUnreadable: The store is damaged, not a SQLite file, or written by a newer reasonscope.
    """
    path = Path(run_dir) / STORE_FILENAME
    try:
        conn = _connect(path)
    except sqlite3.Error as err:
        raise StoreUnreadable(f"{path}: cannot be opened ({err})") from None
    store = Store.__new__(Store)  # Store.__init__ would migrate and mark runs: both write
    store.run_dir, store.path, store.conn = Path(run_dir), path, conn
    try:
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as err:
            raise StoreUnreadable(f"{path}: not a readable store ({err})") from None
        if version > len(MIGRATIONS):
            raise StoreUnreadable(f"{path}: written by a newer reasonscope (store schema {version}, this version "
                                  f"reads up to {len(MIGRATIONS)}); upgrade reasonscope to view it")
        if version < OLDEST_SCHEMA:
            raise StoreUnreadable(f"{path}: written by an older reasonscope (store schema {version}; the viewer "
                                  f"reads {OLDEST_SCHEMA} to {len(MIGRATIONS)}); `reasonscope report {run_dir}` "
                                  "brings it forward")
        yield store
    finally:
        conn.close()


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction on ``conn``: every read inside sees the same committed state of the store.

    Without it each ``SELECT`` is a transaction of its own (Python's sqlite3 opens one implicitly only before
    a write), so a run that commits between two reads of one page (its count, then its rows) would give a page
    that disagrees with its count. ``BEGIN`` then one read pins the snapshot at once (a deferred transaction
    would pin it at its first read); a writer is not blocked (a WAL reader never blocks a writer), and the
    transaction, which wrote nothing, is ended on exit. Inside a transaction already, nothing is begun.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
        yield conn
    finally:
        conn.rollback()


def store_fingerprint(run_dir: Path) -> tuple:
    """What changes when the run folder's store or ``summary.json`` changes: size and time of each file.

    The viewer keeps what it read of a run until this changes.
    """
    out = []
    for name in (STORE_FILENAME, STORE_FILENAME + "-wal", "summary.json"):
        try:
            st = (Path(run_dir) / name).stat()
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)
