"""``reasonscope run PLAN``: run a YAML plan (generate, score, report)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..plan import PlanError, load_plan
from ..shared_settings import DatasetConfig
from .common import WAIT_LOCK, fail, run_plan
from .options import setting_option

app = typer.Typer()


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
    try:
        plan = load_plan(plan_path)
    except PlanError as err:
        fail(str(err))
        return
    if skip_bad_rows:
        for ds in plan.datasets:
            ds.skip_bad_rows = True
    run_plan(plan, plan_path.parent, retry_failed, executor, max_failed, wait_lock, rescore)
