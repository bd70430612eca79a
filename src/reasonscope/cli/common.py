"""What every command of the command line shares.

The two consoles, :func:`fail`, the ``--wait-lock`` option, running a plan (:func:`run_plan`) and printing a
run's summary (:func:`print_summary`).

Exit codes: 0 ok, 1 a model measured too little (skipped, nothing answered, or more failed
generations than ``--max-failed``), 2 invalid plan, data or option (a damaged store too), 3 requests
pending (run again), 74 a file of the run directory could not be written or read (full disk, read-only
folder: :mod:`reasonscope.storage.io_errors`), 130 interrupted; see :mod:`reasonscope.pipeline.run_outcome`. The reason of a non-zero code is the last line.

Commands that write a run directory hold its lock (:mod:`reasonscope.storage.rundir`); when another process
holds it they stop with exit code 75 (:data:`LOCKED_EXIT`, "try again later") and a message naming that
process (one handler for all of them: :func:`exit_when_locked`), or wait with ``--wait-lock SECONDS``; so
does ``report`` (it rewrites the outputs). ``cache ls`` only reads and takes no lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from ..plan import PlanError, parse_plan
from ..registry import all_families
from ..storage.rundir import RunDirLocked

console = Console(stderr=True)  # progress, notes, errors
out = Console()  # tables and results
LOCKED_EXIT = 75  # EX_TEMPFAIL: another process holds the run directory; try again later
WAIT_LOCK = typer.Option(0.0, "--wait-lock", metavar="SECONDS", help="When another process holds the run "
                         "directory, wait up to SECONDS for it to finish (default 0: stop at once; inf: no limit).")


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on stderr and exit with ``code`` (2: invalid plan, data or option)."""
    console.print(Text("error: ", style="red") + Text(message), soft_wrap=True)
    raise typer.Exit(code)


def storage_failure(err: BaseException, run_dir: Path, after_full: str = "") -> None:
    """Exit with one message naming the file and what to do when ``err`` is a storage error of ``run_dir``.

    ``err`` or what it was raised from is classified by :mod:`reasonscope.storage.io_errors`: code 74 for a full disk,
    a read-only folder or an I/O error, 2 for a damaged store; return when it is not a storage error.
    ``after_full`` is added to the message of a full disk. A :class:`~reasonscope.storage.rundir.RunDirLocked`
    returns at once (:func:`exit_when_locked` handles it).
    """
    from ..storage.io_errors import explain_chain
    from ..storage.store import STORE_FILENAME

    if isinstance(err, RunDirLocked):  # a held lock is no storage failure (its own exit: exit_when_locked)
        return
    problem = explain_chain(err, Path(run_dir) / STORE_FILENAME)
    if problem is not None:
        fail(problem.message + (after_full if problem.kind == "full" else ""), problem.code)


@contextmanager
def exit_when_locked(prefix: str = "") -> Iterator[None]:
    """Exit with :data:`LOCKED_EXIT` (75) and the lock's message when another process holds the run directory.

    The one handler of :class:`~reasonscope.storage.rundir.RunDirLocked` of the command line: a command that
    writes a run directory is decorated with it (``@exit_when_locked()`` under ``@app.command()``), or a block
    is run inside it. The message names the holding process; ``prefix`` goes before it. Handlers of other
    errors inside may see the lock error pass (:func:`storage_failure` lets it go), never turn it into another
    exit code.
    """
    try:
        yield
    except RunDirLocked as err:
        fail(prefix + str(err), LOCKED_EXIT)


def run_status(run: dict) -> str:
    """A run's status, with its process when it is still running."""
    if run["status"] == "running" and run.get("pid"):
        return f"running (pid {run['pid']} on {run.get('host') or '?'})"
    return str(run["status"])


def print_summary(summary_path: Path) -> None:
    """Print each family's section of a run's ``summary.json`` with that family's printer, in the summary order."""
    from ..registry import family_names, get_family

    data = json.loads(summary_path.read_text())
    for name in family_names("summary"):
        tables = data.get(name)
        if tables:
            get_family(name).print_summary(tables, out, console)


def families_present(summary_path: Path) -> list:
    """The families with a section in a run's ``summary.json``, in the summary order.

    The compact summary has lines only for them; asking only them for their report part leaves the other
    families' report modules (and the numpy and plotting imports they bring) unimported, about 0.1 s of a
    re-run.
    """
    data = json.loads(Path(summary_path).read_text(encoding="utf-8"))
    return [f for f in all_families("summary") if data.get(f.name)]


def phase_line(seconds: dict[str, float]) -> str:
    """`` (generation 105.2s, behavior 18.1s, ...)``: where a run's wall time went; empty when nothing ran."""
    shown = [f"{name} {value:.1f}s" for name, value in seconds.items()]
    return f" ({', '.join(shown)})" if shown else ""


def quiet_third_party_progress() -> None:
    """Silence the progress bars of the libraries under reasonscope's own.

    Transformers' "Loading weights", huggingface_hub's downloads and conversions, any tqdm bar: only
    reasonscope's rich progress bars reach the terminal.
    """
    import os
    import sys

    # read when those libraries are imported (transformers takes its default from huggingface_hub's)
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if "huggingface_hub" in sys.modules:  # imported already: switch them off there too (no import otherwise)
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def start_banner(plan) -> str:
    """One line saying what will run: models, datasets, families, and where the outputs go."""
    families = [name for name, cfg in plan.families if cfg is not None]
    models = ", ".join(m.name or m.spec for m in plan.models) or "none"
    datasets = ", ".join(d.name for d in plan.datasets) or "none"
    return (f"reasonscope: running {plan.experiment.name}: models {models}; datasets {datasets}; "
            f"families {', '.join(families) or 'none'}; outputs in {plan.run_dir}/")


def run_command_line_plan(data: dict, executor: str = "local", wait_lock: float = 0.0) -> None:
    """Run the plan a family command builds from its options; an invalid option fails with the plan's message."""
    try:
        plan = parse_plan(data, "<command line>")
    except (PlanError, ValueError) as err:
        fail(str(err))
        return
    run_plan(plan, None, False, executor, wait_lock=wait_lock)


@exit_when_locked()
def run_plan(plan, base_dir: Path | None, retry_failed: bool, executor: str, max_failed: str | None = None,
             wait_lock: float = 0.0, rescore: bool = False):
    """Run a plan, print its tables, and exit with the run's outcome code (reason on the last line).

    Returns the run's summary (:class:`reasonscope.pipeline.runner.RunSummary`) when the code is 0.
    """
    from ..pipeline.run_outcome import INTERRUPTED, FailedLimit
    from ..pipeline.runner import Runner

    if executor not in ("local", "ray"):
        fail(f"unknown executor {executor!r}; expected local or ray")
        return
    try:
        limit = FailedLimit.parse(max_failed) if max_failed is not None else None
    except ValueError as err:
        fail(str(err))
        return
    console.print(start_banner(plan), highlight=False)
    try:
        summary = Runner(plan, console=console, retry_failed=retry_failed, base_dir=base_dir,
                         executor=executor, max_failed=limit, wait_lock=wait_lock,
                         reuse_finished=not rescore).run()
    except (PlanError, ValueError) as err:  # a DatasetError (file, line, field) is a ValueError
        fail(str(err))
        return
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: completed generations are stored; run the same command again "
                      "to finish without repeating them")
        raise typer.Exit(INTERRUPTED) from None
    except Exception as err:  # a full disk, a read-only folder, a damaged store: one message, no traceback
        storage_failure(err, plan.run_dir, " Answers received before the failure are stored (a full disk first "
                        "gives back the space reserved for them); requests in flight when it stopped are sent "
                        "again.")
        raise
    console.print(done_line(summary))
    print_tables(summary.run_dir)
    console.print(outputs_line(summary.run_dir))
    outcome = summary.outcome
    if outcome is not None and outcome.code:
        fail(outcome.message, outcome.code)
    return summary


def done_line(summary) -> str:
    """The line after a run (rich markup): its id, what was called, cached, failed and pending, its wall time."""
    return (f"[green]done[/green] run {summary.run_id}: {summary.calls_made} model calls, {summary.cached} from the "
            f"store, {summary.failed} failed, {summary.pending} pending, {summary.wall_s:.1f}s"
            + phase_line(summary.phase_seconds))


def print_tables(run_dir: Path) -> None:
    """A run's tables: each family's summary (:func:`print_summary`), then the compact summary."""
    print_summary(Path(run_dir) / "summary.json")
    from ..report.compact import print_compact  # the run's last table: a line per model and family

    print_compact(Path(run_dir) / "summary.json", out, families_present(Path(run_dir) / "summary.json"))


def outputs_line(run_dir: Path) -> str:
    """The last line of a run: where its outputs are."""
    return f"outputs in {run_dir}/ (report.html, summary.json, samples.jsonl, results.xlsx)"

