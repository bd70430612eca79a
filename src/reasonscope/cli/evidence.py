"""``reasonscope evidence``: RACE from the command line (a plan with only the evidence family)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..evidence.settings import EvidenceConfig
from ..plan import ExperimentConfig
from .common import WAIT_LOCK, fail, run_command_line_plan
from .options import setting_option

app = typer.Typer()


@app.command()
def evidence(train: str = typer.Option(..., help="Training split: a file (CSV/JSONL/TSV) or 'topics' (built in)."),
             test: str = typer.Option(..., help="Test split: a file or 'topics'."),
             format_: str = typer.Option("csv", "--format", help="Dataset format of both files: agnews, imdb, "
                                         "goemotions, esnli, csv, jsonl, json, topics."),
             map_: str | None = typer.Option(None, "--map", help="field=column,... for generic formats "
                                             "(input=text,target=label)."),
             predictions: Path | None = setting_option(EvidenceConfig, "predictions"),
             model: list[str] = typer.Option([], "--model", help="Model spec(s) that label and explain the test "
                                             "items (e.g. smollm2, openai/gpt-4o-mini)."),
             k: int = setting_option(EvidenceConfig, "k"),
             delta: float = setting_option(EvidenceConfig, "delta"),
             delta_chars: int = setting_option(EvidenceConfig, "delta_chars"),
             stop_words: str = setting_option(EvidenceConfig, "stop_words", note="On the command line: "
                                              "function_words, english or none."),
             text_field: list[str] | None = setting_option(EvidenceConfig, "text_fields", "--text-field",
                                                           note="Repeat the option for several."),
             target: str = setting_option(EvidenceConfig, "target"),
             size: int = typer.Option(200, help="Items per split when a split is 'topics'."),
             limit: int | None = typer.Option(None, help="Use at most this many test items."),
             output_dir: str = setting_option(ExperimentConfig, "output_dir"),
             name: str = setting_option(ExperimentConfig, "name", default="evidence"),
             seed: int = setting_option(ExperimentConfig, "seed"), wait_lock: float = WAIT_LOCK) -> None:
    """RACE: do rationales cite the evidence a TF-IDF logistic regression relies on?"""
    from ..data.predictions import parse_mapping

    if bool(predictions) == bool(model):
        fail("give exactly one of --predictions FILE or --model SPEC")
        return

    def split(value: str, split_name: str) -> dict:
        if value == "topics":
            return {"name": f"topics-{split_name}", "format": "topics", "size": size, "split": split_name,
                    **({"limit": limit} if limit and split_name == "test" else {})}
        out = {"name": Path(value).stem + f"-{split_name}", "format": format_, "path": value,
               "mapping": parse_mapping(map_) if map_ else {}}
        if limit and split_name == "test":
            out["limit"] = limit
        return out

    run_command_line_plan({
        "experiment": {"name": name, "seed": seed, "output_dir": output_dir},
        "models": [{"spec": m} for m in model],
        "families": {"behavior": None, "evidence": {
            "train": split(train, "train"), "test": split(test, "test"),
            "predictions": str(predictions) if predictions else None, "k": k, "delta": delta,
            "delta_chars": delta_chars, "stop_words": stop_words, "text_fields": text_field or None,
            "target": target}},
    }, wait_lock=wait_lock)
