"""``reasonscope demo``: the built-in plan on the synthetic set with the embedded SmolLM2."""

from __future__ import annotations

from pathlib import Path

import typer

from ..plan import ExperimentConfig, PlanError, parse_plan
from .common import WAIT_LOCK, fail, run_plan
from .options import setting_option

app = typer.Typer()


@app.command()
def demo(output_dir: str = setting_option(ExperimentConfig, "output_dir", note="The demo's run directory is "
                                         "OUTPUT_DIR/demo."),
         size: int = typer.Option(6, min=1, help="Synthetic items per kind (3 kinds)."),
         max_tokens: int = typer.Option(160, min=16, help="Max new tokens per generation (also the ES budget)."),
         wait_lock: float = WAIT_LOCK) -> None:
    """Run the built-in plan on the synthetic set with the embedded SmolLM2 (CPU, a few minutes)."""
    from ..demo import demo_plan

    try:
        plan = parse_plan(demo_plan(output_dir, size, max_tokens), "<demo plan>")
    except PlanError as err:
        fail(str(err))
        return
    from ..demo import print_notes
    from .common import console

    try:
        run_plan(plan, None, False, "local", wait_lock=wait_lock)
    finally:
        print_notes(console, Path(output_dir) / "demo")
