"""``reasonscope score``: score outputs the user already has (a predictions file or another framework's logs)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..plan import ExperimentConfig, PlanError, ScoreInputConfig, load_plan, parse_plan
from .common import WAIT_LOCK, console, exit_when_locked, fail, print_summary, storage_failure
from .options import setting_option

app = typer.Typer()


@app.command()
@exit_when_locked()
def score(input_path: Path | None = typer.Option(None, "--input", "-i", help="JSONL / JSON / CSV of existing outputs."),
          from_: str | None = typer.Option(None, "--from", help="Read another framework's logs at PATH instead: "
                                           "lm-eval (samples files of --log_samples) or inspect (eval logs)."),
          log_path: Path | None = typer.Argument(None, metavar="[PATH]", help="The log file or folder for --from."),
          map_: str | None = typer.Option(None, "--map", help="field=column,... (input, target, prediction, id, "
                                          "model, sample, variant, rationale, answer_type, choices, ...)."),
          plan_path: Path | None = typer.Option(None, "--plan", help="A score plan (YAML) instead of the options."),
          output_dir: str = setting_option(ExperimentConfig, "output_dir"),
          name: str = setting_option(ExperimentConfig, "name", default="scored"),
          skip_bad_rows: bool = setting_option(ScoreInputConfig, "skip_bad_rows"),
          answer_type: str | None = setting_option(ScoreInputConfig, "answer_type"),
          budget: int | None = setting_option(ScoreInputConfig, "budget"),
          tokenizer: str | None = setting_option(ScoreInputConfig, "tokenizer"),
          nli: str = typer.Option("none", help="NLI backend for LS: none, hf:<id-or-path>, llm:<model spec>."),
          similarity: str = typer.Option("embedding", help="SS method: embedding or bertscore (embedded MiniLM)."),
          evidence_train: str | None = typer.Option(None, help="A labelled training split (file, or 'topics'): "
                                                     "also score the records' rationales with RACE."),
          evidence_format: str = typer.Option("csv", help="Format of --evidence-train (agnews, imdb, csv, ...)."),
          log_run: str | None = setting_option(ScoreInputConfig, "log_run", "--log-run", note="With --from; "
                                               "lm-eval's run date as in results_<date>.json."),
          max_failed: str | None = typer.Option(None, help="Exit 1 when a model has more failed generations than "
                                                "this: a share of its generations (5%) or a count (3)."),
          wait_lock: float = WAIT_LOCK) -> None:
    """Score outputs you already have (no generation): the same metrics and report as a generated run.

    Exit codes, as for run: 0 ok; 1 the outputs were scored but measured too little (a model has no
    successful generation, or more failed than --max-failed); 2 invalid input or option; 75 the run
    directory is in use by another process. The reason of a non-zero code is the last line.
    """
    from ..data.loaders import DatasetError
    from ..data.predictions import parse_mapping
    from ..pipeline.run_outcome import FailedLimit
    from ..pipeline.score_imported import score_file
    from ..plan import ScorePlan

    plan = None
    try:
        limit = FailedLimit.parse(max_failed) if max_failed is not None else None
        if plan_path is not None:
            plan = load_plan(plan_path, ScorePlan)
        else:
            if from_ is not None:
                if input_path is not None and log_path is not None:
                    fail("give the log as PATH or as --input, not both")
                    return
                input_path = log_path or input_path
            elif log_path is not None:
                fail(f"PATH {log_path} needs --from lm-eval|inspect (a predictions file is given with --input)")
                return
            if input_path is None:
                fail("give --input FILE, --from lm-eval|inspect PATH, or --plan PLAN.yaml")
                return
            backend, _, model = nli.partition(":")
            nli_cfg = {"backend": backend} | ({"model": model} if model else {})
            plan = parse_plan({
                "experiment": {"name": name, "output_dir": output_dir},
                "input": {"path": str(input_path), "format": from_ or "predictions",
                          "mapping": parse_mapping(map_), "skip_bad_rows": skip_bad_rows,
                          "answer_type": answer_type, "budget": budget, "tokenizer": tokenizer,
                          **({"log_run": log_run} if log_run is not None else {})},
                "families": {"behavior": {"nli": nli_cfg, "similarity": {"method": similarity}},
                             **({"evidence": {"train": (
                                 {"name": "topics-train", "format": "topics", "size": 200, "split": "train"}
                                 if evidence_train == "topics" else
                                 {"name": "evidence-train", "format": evidence_format, "path": evidence_train})}}
                                if evidence_train else {})},
            }, "<command line>", model=ScorePlan)
        summary = score_file(plan, console=console, wait_lock=wait_lock, max_failed=limit)
    except (PlanError, DatasetError, ValueError) as err:
        fail(str(err))
        return
    except Exception as err:  # a full disk, a read-only folder, a damaged store: one message, no traceback
        if plan is not None:
            storage_failure(err, plan.run_dir)
        raise
    console.print(f"[green]scored[/green] {summary.records} records of {summary.items} items"
                  + (f", {len(summary.bad_rows)} bad rows skipped" if summary.bad_rows else "")
                  + f" -> {summary.run_dir}/")
    print_summary(summary.run_dir / "summary.json")
    if summary.outcome is not None and summary.outcome.code:
        fail(summary.outcome.message, summary.outcome.code)
