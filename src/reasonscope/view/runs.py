"""The Runs page's rows: one per run folder, read from its store and ``summary.json``.

Each row names the run (its key: the folder's path under the viewed root), when it started, its
models, its datasets with the number of items the run requested generations for, the families its plan
enables, its status and outcome (the exit code and its reason, with the failed and pending requests of
every model), and the headline numbers with their 95% intervals.

Sources, and why:

* the run record (status, time, plan, notes with the outcome) is the store's latest finished run (the
  latest of any status when none finished: the one ``reasonscope report`` shows), read on a read-only
  connection (:mod:`reasonscope.view.readonly`);
* item counts are counted in SQL (``COUNT(DISTINCT item_id)`` per dataset, on the store's item index),
  nothing loaded;
* a run still running has no outcome yet: its failed and pending requests are counted in the store
  (:meth:`reasonscope.storage.store.Store.run_generation_counts`);
* the headline numbers are the report's summary cards (:func:`reasonscope.report.cards.family_cards`,
  the same numbers and formatting as the top of ``report.html``), computed from the run folder's
  ``summary.json`` (the tables the last report wrote). They are shown only when that summary is of the
  run the row describes; otherwise the row says the report is not written yet.

A store that cannot be read gives a row with ``error`` set and nothing else: the page shows the error on
that row and goes on. Model and family names are read from the plan and the summary: the viewer names
no family, so a family installed as a plugin appears as its sections do.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .readonly import StoreUnreadable, open_read_only

__all__ = ["HeadlineCard", "HeadlineLine", "RunRow", "read_run_row"]

# exit codes of the commands that run a plan (reasonscope.pipeline.run_outcome), as a word for the Runs page
EXIT_MEANINGS = {0: "ok", 1: "measured too little", 2: "invalid input", 3: "requests pending", 130: "interrupted"}


class HeadlineLine(BaseModel):
    """One line of a summary card: a model (or model and method), its value with interval, and n."""

    name: str
    value: str
    n: str = ""


class HeadlineCard(BaseModel):
    """A family's summary card as the report draws it: headline metric, direction, one line per model."""

    family: str
    title: str
    headline: str
    direction: str
    lines: list[HeadlineLine]


class RunRow(BaseModel):
    """One run on the Runs page (module docstring). ``error``: why the store could not be read."""

    key: str = Field(description="the run folder's path under the viewed folder ('/' between folders)")
    run_id: str | None = None
    kind: str | None = None
    status: str | None = Field(default=None, description="running, finished or interrupted")
    created: float | None = Field(default=None, description="Unix time the run started")
    date: str | None = Field(default=None, description="the start as 'YYYY-MM-DD HH:MM UTC'")
    models: list[str] = Field(default_factory=list)
    datasets: dict[str, int | None] = Field(default_factory=dict,
                                            description="dataset -> items the run requested (None: planned only)")
    families: list[str] = Field(default_factory=list)
    exit_code: int | None = Field(default=None, description="the run's exit code (None: still running or unknown)")
    outcome: str = Field(default="", description="the exit code's meaning and reason")
    failed: int = Field(default=0, description="failed requests over every model")
    pending: int = Field(default=0, description="pending requests over every model")
    cards: list[HeadlineCard] = Field(default_factory=list)
    cards_note: str | None = Field(default=None, description="why there are no headline numbers")
    error: str | None = None


def utc_date(ts: float | None) -> str | None:
    """Seconds since the epoch as ``2026-11-25 14:40 UTC`` (None kept)."""
    return None if ts is None else datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M UTC")


def _datasets(conn: sqlite3.Connection, run_id: str, config: dict[str, Any]) -> dict[str, int | None]:
    counts: dict[str, int | None] = dict(conn.execute(
        "SELECT dataset, COUNT(DISTINCT item_id) FROM run_generations WHERE run_id=? GROUP BY dataset",
        (run_id,)).fetchall())
    for d in config.get("datasets") or []:  # planned but not generated (yet), or built by a family
        if isinstance(d, dict) and d.get("name"):
            counts.setdefault(d["name"], None)
    return counts


def _cards(summary: dict[str, Any], families: Iterable[Any]) -> list[HeadlineCard]:
    from ..report.cards import family_cards

    cards = family_cards(summary, [f.report for f in families])
    return [HeadlineCard(family=c.family, title=c.title, headline=c.headline, direction=c.direction,
                         lines=[HeadlineLine(name=ln.name, value=ln.value, n=ln.n) for ln in c.lines])
            for c in cards]


def _summary(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_run_row(key: str, run_dir: Path, families: Iterable[Any] = ()) -> RunRow:
    """The Runs page's row of the run in ``run_dir`` (module docstring); never raises for a bad store.

    ``families``: the families whose summary cards give the headline numbers, in the report's order.
    """
    try:
        with open_read_only(run_dir) as store:
            run = store.run()
            config = run.get("config") or {}
            notes = run.get("notes") or {}
            row = RunRow(key=key, run_id=run["run_id"], kind=run.get("kind"), status=run.get("status"),
                         created=run.get("created"), date=utc_date(run.get("created")),
                         models=[m.get("name") or m.get("spec") for m in config.get("models") or []
                                 if isinstance(m, dict)],
                         datasets=_datasets(store.conn, run["run_id"], config),
                         families=[f for f, s in (config.get("families") or {}).items() if s])
            outcome = notes.get("outcome")
            if outcome:
                row.exit_code = outcome.get("code")
                tallies = (outcome.get("models") or {}).values()
                row.failed = sum(t.get("failed") or 0 for t in tallies)
                row.pending = sum(t.get("pending") or 0 for t in tallies)
                meaning = EXIT_MEANINGS.get(row.exit_code, "")
                row.outcome = f"{meaning}: {outcome['message']}" if outcome.get("message") else meaning
            elif row.status == "running":
                counts = store.run_generation_counts(run["run_id"]).values()
                row.failed = sum(c["failed"] for c in counts)
                row.pending = sum(c["requested"] - c["done"] for c in counts)
                row.outcome = "running"
            elif row.status == "interrupted":
                row.exit_code, row.outcome = 130, EXIT_MEANINGS[130]
    except (StoreUnreadable, LookupError, sqlite3.Error, ValueError) as err:
        return RunRow(key=key, error=str(err))
    summary = _summary(run_dir)
    if summary is None:
        row.cards_note = "no summary.json yet: the report of this run is not written"
    elif (summary.get("run") or {}).get("run_id") != row.run_id:
        row.cards_note = (f"summary.json is of run {(summary.get('run') or {}).get('run_id')}, not of "
                          f"{row.run_id}: `reasonscope report` writes this run's")
    else:
        try:
            row.cards = _cards(summary, families)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            row.cards_note = f"the headline numbers cannot be read from summary.json ({err!r})"
    return row
