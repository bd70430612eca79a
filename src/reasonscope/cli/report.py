"""``reasonscope report RUN_DIR``: rebuild every output of a run from its store."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import console, fail, print_summary, run_status

app = typer.Typer()


@app.command()
def report(run_dir: Path = typer.Argument(..., help="A run directory (holds store.sqlite)."),
           run_id: str | None = typer.Option(None, help="Run id (default: the latest finished run).")) -> None:
    """Rebuild every output of a run from its store alone (no lock: it reads a consistent snapshot and
    replaces each output file atomically)."""
    from ..report.build import write_report
    from ..store import Store

    try:
        store = Store.open_existing(run_dir)
        record = store.run(run_id)
    except (FileNotFoundError, LookupError, ValueError) as err:
        fail(str(err))
        return
    rid = record["run_id"]
    paths = write_report(store, rid, run_dir)
    store.close()
    console.print(f"rebuilt {len(paths)} outputs of run {rid} ({run_status(record)}) in {run_dir}/")
    print_summary(run_dir / "summary.json")
