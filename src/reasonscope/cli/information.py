"""``reasonscope information train|score``: REV and LAREV from the command line."""

from __future__ import annotations

from pathlib import Path

import typer

from ..information.settings import InformationConfig
from ..plan import ExperimentConfig, PlanError, load_plan, parse_plan
from .common import WAIT_LOCK, fail, run_command_line_plan, run_plan
from .options import setting_option

app = typer.Typer(name="information", no_args_is_help=True,
                  help="REV and LAREV: how much label information a rationale adds over a baseline "
                  "(trained evaluators).")


def _split(value: str, split_name: str, format_: str, size: int, seed: int) -> dict:
    if value == "synthetic":
        return {"name": f"synthetic-{split_name}", "format": "synthetic", "size": size,
                "seed": seed + (0 if split_name == "train" else 1)}
    return {"name": Path(value).stem + f"-{split_name}", "format": format_, "path": value}


@app.command("train")
def information_train(train: str = typer.Option(..., help="Items with gold rationales: a file (esnli, ecqa, jsonl "
                                                "with rationale, ...) or 'synthetic'."),
                      test: str | None = typer.Option(None, help="Also score these items (file or 'synthetic')."),
                      format_: str = typer.Option("jsonl", "--format", help="Format of the files."),
                      evaluator: str = setting_option(InformationConfig, "evaluator"),
                      method: list[str] = setting_option(InformationConfig, "methods", "--method",
                                                         note="Repeat the option for both."),
                      baseline: str = setting_option(InformationConfig, "baseline"),
                      nli_relation: str = setting_option(InformationConfig, "nli_relation"),
                      epochs: int = setting_option(InformationConfig, "epochs"),
                      probe_epochs: int = setting_option(InformationConfig, "probe_epochs"),
                      larev_epochs: int = setting_option(InformationConfig, "larev_epochs"),
                      larev_init: str = setting_option(InformationConfig, "larev_init"),
                      leak_terms: str = setting_option(InformationConfig, "leak_terms"),
                      lr: float = setting_option(InformationConfig, "lr"),
                      size: int = typer.Option(50, help="Synthetic items per kind."),
                      reduction: str = setting_option(InformationConfig, "reduction"),
                      lambda_irm: float | None = setting_option(InformationConfig, "lambda_irm"),
                      lambda_probe: float | None = setting_option(InformationConfig, "lambda_probe"),
                      wordnet: str | None = setting_option(InformationConfig, "wordnet"),
                      output_dir: str = setting_option(ExperimentConfig, "output_dir"),
                      name: str = setting_option(ExperimentConfig, "name", default="information"),
                      seed: int = setting_option(ExperimentConfig, "seed", note="In training it seeds every random "
                                                 "choice: new weights, the model-selection split, batch order, "
                                                 "dropout, random antonyms."),
                      wait_lock: float = WAIT_LOCK) -> None:
    """Train Phi_base, Phi (and for LAREV the probe and Phi_LA); with --test, score the rationale variants."""
    run_command_line_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "families": {"information": {
                               "train": _split(train, "train", format_, size, seed),
                               "test": _split(test, "test", format_, max(1, size // 5), seed) if test else None,
                               "evaluator": evaluator, "methods": method, "baseline": baseline,
                               "nli_relation": nli_relation, "epochs": epochs,
                               "probe_epochs": probe_epochs, "larev_epochs": larev_epochs,
                               "larev_init": larev_init, "leak_terms": leak_terms, "lr": lr,
                               "reduction": reduction, "lambda_irm": lambda_irm, "lambda_probe": lambda_probe,
                               "wordnet": wordnet}}}, wait_lock=wait_lock)


@app.command("score")
def information_score(run_dir: Path = typer.Argument(..., help="A run directory with trained evaluators."),
                      test: str = typer.Option(..., help="Items to score: a file or 'synthetic'."),
                      format_: str = typer.Option("jsonl", "--format"),
                      size: int = typer.Option(10, help="Synthetic items per kind."),
                      generator: list[str] = setting_option(InformationConfig, "generators", "--generator",
                                                            note="Model specs (repeat the option)."),
                      wait_lock: float = WAIT_LOCK) -> None:
    """Score rationale variants (and generated rationales) with the evaluators trained in RUN_DIR."""
    from ..shared_settings import DatasetConfig, ModelConfig

    config = run_dir / "config.yaml"
    if not config.is_file():
        fail(f"{run_dir}: no config.yaml; train first with `reasonscope information train`")
        return
    try:
        plan = load_plan(config)
        info = plan.families.information
        if info is None:
            fail(f"{config}: the run has no information family")
            return
        seed = plan.experiment.seed
        info = info.model_copy(update={
            "test": parse_plan(_split(test, "test", format_, size, seed), "<--test>", model=DatasetConfig),
            "generators": [parse_plan({"spec": g}, "<--generator>", model=ModelConfig) for g in generator]})
        plan = plan.model_copy(update={"families": plan.families.model_copy(update={"information": info})})
    except (PlanError, ValueError) as err:
        fail(str(err))
        return
    run_plan(plan, None, False, "local", wait_lock=wait_lock)
