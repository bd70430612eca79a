"""``reasonscope report RUN_DIR``: rebuild every output of a run from its store."""

from __future__ import annotations

from pathlib import Path

import typer

from ..registry import all_families
from ..report.compact import print_compact
from ..storage.rundir import RunDirLock
from .common import (
    WAIT_LOCK,
    console,
    exit_when_locked,
    fail,
    out,
    print_summary,
    run_status,
    storage_failure,
)

app = typer.Typer()


@app.command()
@exit_when_locked("cannot rebuild the report now: ")
def report(run_dir: Path = typer.Argument(..., help="A run directory (holds store.sqlite)."),
           run_id: str | None = typer.Option(None, help="Run id (default: the latest finished run)."),
           wait_lock: float = WAIT_LOCK,
           format: str = typer.Option("html", "--format", help="Also write the tables for a paper: markdown "
                                      "(report.md) or latex (report.tex, booktabs), with every plot as SVG and PDF; "
                                      "html (default): the usual outputs only.")) -> None:
    """Rebuild every output of a run from its store alone.

    The newest finished run (or --run-id), with its own plan as config.yaml. With --format markdown or
    latex also the tables as report.md or report.tex (one rounding rule per column, direction arrows, n;
    booktabs for LaTeX) and each plot as SVG and PDF beside its PNG.

    It holds the run directory's lock while it writes, as a run does: while a run works there it stops
    at once (exit 75, naming the run's process) or waits with --wait-lock SECONDS, so the outputs never
    mix a report of the previous run with a run that is writing its own. Exit codes: 0 ok; 2 no such run
    or store, or a damaged store; 74 a file could not be written or read (full disk, read-only folder);
    75 the run directory is in use.
    """
    from ..report.build import write_report
    from ..storage.store import STORE_FILENAME, Store

    if format not in ("html", "markdown", "latex"):
        fail(f"--format {format!r}: expected html, markdown or latex")
        return
    if not (run_dir / STORE_FILENAME).exists():  # before the lock, which would create the folder
        fail(f"{run_dir}: no {STORE_FILENAME} here; is this a reasonscope run directory?")
        return
    try:
        with RunDirLock(run_dir, wait=wait_lock):
            store = Store.open_existing(run_dir)
            try:
                record = store.run(run_id)
                rid = record["run_id"]
                paths = write_report(store, rid, run_dir, families=all_families("summary"),
                                     paper=None if format == "html" else format)
            finally:
                store.close()
    except (FileNotFoundError, LookupError, ValueError) as err:
        storage_failure(err, run_dir)
        fail(str(err))
        return
    except Exception as err:  # a full disk, a read-only folder, a damaged store: one message, no traceback
        storage_failure(err, run_dir)
        raise
    console.print(f"rebuilt {len(paths)} outputs of run {rid} ({run_status(record)}) in {run_dir}/")
    print_summary(run_dir / "summary.json")
    print_compact(run_dir / "summary.json", out, all_families("summary"))
    if "paper" in paths:
        console.print(f"tables for a paper: {paths['paper']} (plots also as .svg and .pdf)")
