"""``reasonscope attack``: MATCHA from the command line (a plan with only the attack family)."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import WAIT_LOCK, run_command_line_plan

app = typer.Typer()


@app.command()
def attack(model: list[str] = typer.Option(["smollm2"], "--model", help="White-box target(s): hf/<id-or-path> or "
                                           "smollm2."),
           dataset: str = typer.Option("synthetic", help="A file (jsonl, gsm8k, strategyqa, ...) or 'synthetic'."),
           format_: str = typer.Option("jsonl", "--format", help="Format of --dataset when it is a file."),
           method: list[str] = typer.Option(["token", "embedding", "random"], "--method",
                                            help="token, embedding and/or random (repeat the option)."),
           limit: int | None = typer.Option(None, help="Attack at most this many items."),
           size: int = typer.Option(2, help="Synthetic items per kind (arithmetic only is attacked)."),
           ratio: float = typer.Option(0.2, help="Inserted tokens per question token (at least 1)."),
           steps: int = typer.Option(5, help="Gradient-guided replacement rounds."),
           epsilon_p: float = typer.Option(0.005, help="Embedding ball: eps = p * max token-embedding L-inf norm."),
           cot_tokens: int = typer.Option(96, help="Max tokens of each regenerated chain of thought."),
           judge: str | None = typer.Option(None, help="Judge of the clean, perturbed and transfer reasoning (any "
                                            "provider spec); without one only false equations are detected and a "
                                            "kept answer without one is 'not judged'."),
           transfer: list[str] = typer.Option([], "--transfer", help="Model spec(s) that receive the successful "
                                              "perturbed questions."),
           executor: str = typer.Option("local", help="local, or ray (one actor per GPU)."),
           output_dir: str = typer.Option("runs", help="Parent folder of the run directory."),
           name: str = typer.Option("attack", help="Run name."),
           seed: int = typer.Option(0), wait_lock: float = WAIT_LOCK) -> None:
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
