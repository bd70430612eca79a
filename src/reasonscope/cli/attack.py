"""``reasonscope attack``: MATCHA from the command line (a plan with only the attack family)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..attack.settings import AttackConfig
from ..plan import ExperimentConfig
from .common import WAIT_LOCK, run_command_line_plan
from .options import setting_option

app = typer.Typer()


@app.command()
def attack(model: list[str] = typer.Option(["smollm2"], "--model", help="White-box target(s): hf/<id-or-path> or "
                                           "smollm2."),
           dataset: str = typer.Option("synthetic", help="A file (jsonl, gsm8k, strategyqa, ...) or 'synthetic'."),
           format_: str = typer.Option("jsonl", "--format", help="Format of --dataset when it is a file."),
           method: list[str] = setting_option(AttackConfig, "methods", "--method", note="Repeat the option."),
           limit: int | None = setting_option(AttackConfig, "limit"),
           size: int = typer.Option(2, help="Synthetic items per kind (arithmetic only is attacked)."),
           ratio: float = setting_option(AttackConfig, "ratio"),
           steps: int = setting_option(AttackConfig, "steps"),
           epsilon_p: float = setting_option(AttackConfig, "epsilon_p"),
           cot_tokens: int = setting_option(AttackConfig, "cot_tokens"),
           judge: str | None = setting_option(AttackConfig, "judge", note="A provider spec, e.g. openai/gpt-4o-mini."),
           transfer: list[str] = setting_option(AttackConfig, "transfer", note="Model specs (repeat the option)."),
           executor: str = typer.Option("local", help="local, or ray (one actor per GPU)."),
           output_dir: str = setting_option(ExperimentConfig, "output_dir"),
           name: str = setting_option(ExperimentConfig, "name", default="attack"),
           seed: int = setting_option(ExperimentConfig, "seed"), wait_lock: float = WAIT_LOCK) -> None:
    """MATCHA: perturbations that keep the answer but break the chain of thought (white-box models)."""
    ds = ({"name": "synthetic", "format": "synthetic", "size": size} if dataset == "synthetic" else
          {"name": Path(dataset).stem, "format": format_, "path": dataset})
    run_command_line_plan({
        "experiment": {"name": name, "seed": seed, "output_dir": output_dir},
        "models": [{"spec": m} for m in model], "datasets": [ds],
        "families": {"attack": {"methods": method, "limit": limit, "ratio": ratio, "steps": steps,
                                "epsilon_p": epsilon_p, "cot_tokens": cot_tokens,
                                "judge": {"spec": judge} if judge else None,
                                "transfer": [{"spec": t} for t in transfer],
                                **({"answer_types": ["number"]} if dataset == "synthetic" else {})}},
    }, executor, wait_lock)
