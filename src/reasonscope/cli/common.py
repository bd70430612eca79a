"""What every command of the command line shares: the two consoles, :func:`fail`, the ``--wait-lock``
option, running a plan (:func:`run_plan`) and printing a run's summary (:func:`print_summary`).

Exit codes: 0 ok, 1 a model measured too little (skipped, nothing answered, or more failed
generations than ``--max-failed``), 2 invalid plan, data or option, 3 requests pending (run again),
130 interrupted; see :mod:`reasonscope.outcome`. The reason of a non-zero code is the last line.

Commands that write a run directory hold its lock (:mod:`reasonscope.rundir`); when another process
holds it they stop with exit code 75 (:data:`LOCKED_EXIT`, "try again later") and a message naming
that process, or wait with ``--wait-lock SECONDS``. ``report`` and ``cache ls`` take no lock.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from ..config import PlanError
from ..rundir import RunDirLocked

console = Console(stderr=True)  # progress, notes, errors
out = Console()  # tables and results
LOCKED_EXIT = 75  # EX_TEMPFAIL: another process holds the run directory; try again later
WAIT_LOCK = typer.Option(0.0, "--wait-lock", metavar="SECONDS", help="When another process holds the run "
                         "directory, wait up to SECONDS for it to finish (default 0: stop at once; inf: no limit).")
# The order in which the families' summaries are printed after a command.
SUMMARY_ORDER: tuple[str, ...] = ("evidence", "attributes", "attack", "information", "behavior")


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on stderr and exit with ``code`` (2: invalid plan, data or option)."""
    console.print(Text("error: ", style="red") + Text(message), soft_wrap=True)
    raise typer.Exit(code)


def locked(err: RunDirLocked) -> None:
    """Exit with :data:`LOCKED_EXIT`: another process holds the run directory."""
    fail(str(err), LOCKED_EXIT)


def run_status(run: dict) -> str:
    """A run's status, with its process when it is still running."""
    if run["status"] == "running" and run.get("pid"):
        return f"running (pid {run['pid']} on {run.get('host') or '?'})"
    return str(run["status"])


def fmt_counts(e: dict) -> str:
    """`` n=12`` and, when some were failed generations, ``, 2 failed``."""
    failed = e.get("failed") or 0
    if e["value"] is None:
        return f" ({failed} failed)" if failed else ""
    return f" n={e['n']}" + (f", {failed} failed" if failed else "")


def fmt_estimate(e: dict) -> str:
    """``0.750 [0.52, 0.91]`` (value [CI]), ``0.750`` without an interval, ``n/a`` without a value."""
    if e["value"] is None:
        return "n/a"
    return f"{e['value']:.3f}" if e["low"] is None else f"{e['value']:.3f} [{e['low']:.2f}, {e['high']:.2f}]"


def print_summary(summary_path: Path) -> None:
    """Print each family's section of a run's ``summary.json`` with that family's printer."""
    from ..families import get_family

    data = json.loads(summary_path.read_text())
    for name in SUMMARY_ORDER:
        tables = data.get(name)
        if tables:
            get_family(name).print_summary(tables, out, console)


def phase_line(seconds: dict[str, float]) -> str:
    """`` (generation 105.2s, behavior 18.1s, ...)``: where a run's wall time went; empty when nothing ran."""
    shown = [f"{name} {value:.1f}s" for name, value in seconds.items()]
    return f" ({', '.join(shown)})" if shown else ""


def run_plan(plan, base_dir: Path | None, retry_failed: bool, executor: str, max_failed: str | None = None,
             wait_lock: float = 0.0, rescore: bool = False) -> None:
    """Run a plan, print its tables, and exit with the run's outcome code (reason on the last line)."""
    from ..outcome import INTERRUPTED, FailedLimit
    from ..runner import Runner

    if executor not in ("local", "ray"):
        fail(f"unknown executor {executor!r}; expected local or ray")
        return
    try:
        limit = FailedLimit.parse(max_failed) if max_failed is not None else None
    except ValueError as err:
        fail(str(err))
        return
    try:
        summary = Runner(plan, console=console, retry_failed=retry_failed, base_dir=base_dir,
                         executor=executor, max_failed=limit, wait_lock=wait_lock,
                         reuse_finished=not rescore).run()
    except RunDirLocked as err:
        locked(err)
        return
    except (PlanError, ValueError) as err:  # a DatasetError (file, line, field) is a ValueError
        fail(str(err))
        return
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: completed generations are stored; run the same command again "
                      "to finish without repeating them")
        raise typer.Exit(INTERRUPTED) from None
    console.print(f"[green]done[/green] run {summary.run_id}: {summary.calls_made} model calls, "
                  f"{summary.cached} from the store, {summary.failed} failed, {summary.pending} pending, "
                  f"{summary.wall_s:.1f}s" + phase_line(summary.phase_seconds))
    print_summary(summary.run_dir / "summary.json")
    console.print(f"outputs in {summary.run_dir}/ (report.html, summary.json, samples.jsonl, results.xlsx)")
    outcome = summary.outcome
    if outcome is not None and outcome.code:
        fail(outcome.message, outcome.code)

