"""``reasonscope schema`` and ``reasonscope validate``: the plan's JSON schema and a dry check of a plan."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..plan import PlanError, load_plan, plan_json_schema
from .common import console, fail, out

app = typer.Typer()


@app.command()
def schema() -> None:
    """Print the JSON schema of the YAML plan."""
    out.print_json(json.dumps(plan_json_schema()))


@app.command()
def validate(plan_path: Path = typer.Argument(..., help="YAML plan")) -> None:
    """Check a plan (keys, types, values, weights) without running anything."""
    try:
        plan = load_plan(plan_path)
    except PlanError as err:
        fail(str(err))
        return
    from ..data.files import DatasetError, check_regular_file, resolve_path

    for where, cfg in plan.dataset_places():  # each local file is there and is a file (nothing is read)
        if cfg.path and cfg.format not in ("synthetic", "topics", "word_problems"):
            try:
                check_regular_file(resolve_path(cfg.path, plan_path.parent))
            except DatasetError as err:
                fail(f"{plan_path}: {where}.path: {err}")
                return
    console.print(f"[green]ok[/green]: {len(plan.models)} models, {len(plan.datasets)} datasets -> {plan.run_dir}")
