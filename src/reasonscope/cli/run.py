"""``reasonscope run PLAN``: run a YAML plan (generate, score, report)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from ..pipeline.fast_rerun import file_sha256
from ..plan import PlanError, load_plan
from ..shared_settings import DatasetConfig
from .common import (
    WAIT_LOCK,
    console,
    done_line,
    fail,
    out,
    outputs_line,
    print_tables,
    run_plan,
    start_banner,
)
from .options import setting_option

app = typer.Typer()
log = logging.getLogger(__name__)


@app.command()
def run(plan_path: Path = typer.Argument(..., help="YAML plan"),
        retry_failed: bool = typer.Option(False, help="Send again requests stored as failed."),
        skip_bad_rows: bool = setting_option(DatasetConfig, "skip_bad_rows", note="On the command line: for every "
                                             "dataset of the plan."),
        executor: str = typer.Option("local", help="Executor for per-item scoring work: local, or ray "
                                     "(pip install 'reasonscope\\[ray]'; RAY_ADDRESS for a cluster)."),
        max_failed: str | None = typer.Option(None, help="Exit 1 when a model has more failed generations than "
                                              "this: a share of its requests that ended (5%) or a count (3)."),
        wait_lock: float = WAIT_LOCK,
        rescore: bool = typer.Option(False, help="Score and write the outputs again even when the latest finished "
                                     "run already answers this plan (it is otherwise reported as up to date).")
        ) -> None:
    """Run a YAML plan: generate (cached, resumable), score, and write the report.

    Exit codes: 0 ok; 1 a model was skipped, answered nothing, or failed more than --max-failed;
    2 invalid plan, data or option; 3 requests pending after rate limits or server errors (run the
    same command again); 75 the run directory is in use by another process; 130 interrupted. The reason of a non-zero code is the last line.
    """
    plan_sha256 = file_sha256(plan_path)  # before and after it is read: the bytes the plan was resolved from
    try:
        plan = load_plan(plan_path)
    except PlanError as err:
        fail(str(err))
        return
    if plan_sha256 != file_sha256(plan_path):
        plan_sha256 = None
    if skip_bad_rows:
        for ds in plan.datasets:
            ds.skip_bad_rows = True
    summary = run_plan(plan, plan_path.parent, retry_failed, executor, max_failed, wait_lock, rescore)
    if summary is not None and plan_sha256 is not None and not skip_bad_rows and summary.requests is not None:
        try:
            record_rerun(str(plan_path), plan_sha256, plan, plan_path.parent, summary.run_id, summary.requests)
        except Exception:  # noqa: BLE001 - the record only makes the next re-run faster; the run has succeeded
            log.debug("re-run record of %s not written (the next run of it takes the full path)", plan_path,
                      exc_info=True)


def record_rerun(plan_arg: str, plan_sha256: str, plan, base_dir: Path, run_id: str, requests: int) -> None:
    """Record what ``reasonscope run PLAN`` prints when finished run ``run_id`` is up to date.

    :mod:`reasonscope.pipeline.fast_rerun` answers the next ``reasonscope run PLAN`` from it before the command line
    is imported. The text is rendered here by the same consoles and functions as the full command's answer, for
    this process's terminal, each write kept with its stream in order (:class:`_Recorder`): the banner and the
    up-to-date line, the ``done`` line for each wall time from 0.0 to 0.9 s, then the tables with their notes and
    the outputs line. ``requests``: the plan's request count (the run's summary carries it,
    :attr:`reasonscope.pipeline.runner.RunSummary.requests`), which the ``done`` line reports as from the store.
    """
    from ..pipeline.fast_rerun import write_record
    from ..pipeline.runner import RunSummary
    from ..pipeline.up_to_date import up_to_date_message

    head: list[list[str]] = []
    with _recorded(head):
        console.print(start_banner(plan), highlight=False)
        console.print(up_to_date_message(run_id))
    done = []
    for tenths in range(10):
        line: list[list[str]] = []
        with _recorded(line):
            console.print(done_line(RunSummary(run_id=run_id, run_dir=plan.run_dir, cached=requests,
                                               wall_s=tenths / 10)))
        done.append(line)
    tail: list[list[str]] = []
    with _recorded(tail):
        print_tables(plan.run_dir)
        console.print(outputs_line(plan.run_dir))
    write_record(plan_arg, plan_sha256, plan, base_dir, run_id, {"head": head, "done": done, "tail": tail})


class _Recorder:
    """A console's file that keeps each write, with its stream, instead of writing it.

    It answers ``isatty``, ``encoding`` and ``fileno`` as the real file does, so rich renders for that file.
    """

    def __init__(self, real, stream: str, writes: list[list[str]]):
        self.real, self.stream, self.writes = real, stream, writes

    def write(self, text: str) -> int:
        self.writes.append([self.stream, text])
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.real.isatty()

    def fileno(self) -> int:
        return self.real.fileno()

    @property
    def encoding(self) -> str:
        return self.real.encoding


@contextmanager
def _recorded(writes: list[list[str]]) -> Iterator[None]:
    """Keep what both consoles write (:class:`_Recorder`), in order, instead of writing it."""
    saved = [(c, c._file) for c in (console, out)]
    console.file = _Recorder(console.file, "stderr", writes)
    out.file = _Recorder(out.file, "stdout", writes)
    try:
        yield
    finally:
        for c, file in saved:
            c.file = file
