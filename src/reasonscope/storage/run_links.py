"""How a run's linked requests stand in the store, read with nothing but :mod:`sqlite3`.

:meth:`reasonscope.storage.store.Store.run_link_state` and the re-run check that answers before the command line
is imported (:mod:`reasonscope.pipeline.fast_rerun`) both read it here and judge it with :func:`links_unchanged`, so both
compare the same numbers the same way.
"""

from __future__ import annotations

import sqlite3

RUNS_SQL = ("SELECT run_id, kind, created, finished, status, config, versions, git_hash, seed, notes, pid, host "
            "FROM runs ORDER BY created")
"""Every run record, oldest first (:meth:`reasonscope.storage.store.Store.runs` decodes its JSON columns)."""

# whole seconds and microseconds summed apart: one sum of microseconds overflows SQLite's 64-bit integers past
# about 5,000 generations
LINK_STATE_SQL = ("SELECT COUNT(*), COUNT(g.key), SUM(CAST(g.created AS INTEGER)), "
                  "SUM(CAST((g.created - CAST(g.created AS INTEGER)) * 1000000 AS INTEGER)) "
                  "FROM run_generations rg LEFT JOIN generations g ON g.key = rg.key WHERE rg.run_id=?")


def link_state(conn: sqlite3.Connection, run_id: str) -> tuple[int, int, int]:
    """The run's linked requests, those whose generation is stored, and the sum of their write times.

    The write times are summed in whole microseconds: the sum changes when one generation is written again
    (a failed generation sent again replaces its row), and needs no clock to be compared.
    """
    linked, stored, seconds, micros = conn.execute(LINK_STATE_SQL, (run_id,)).fetchone()
    return linked, stored, (seconds or 0) * 1_000_000 + (micros or 0)


def links_unchanged(state: tuple[int, int, int], requests: int | None, written: int | None) -> bool:
    """Whether a run's :func:`link_state` is as it was when the run finished.

    ``requests``: how many requests the plan makes (None: not known, never unchanged); ``written``: the sum of
    write times the run's notes recorded (``generations_written``). Every request linked, every linked generation
    stored, none written again.
    """
    linked, stored, now_written = state
    return requests is not None and linked == requests and stored == linked and now_written == written
