"""``reasonscope evidence``: RACE from the command line (a plan with only the evidence family)."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import WAIT_LOCK, fail, run_command_line_plan

app = typer.Typer()


@app.command()
def evidence(train: str = typer.Option(..., help="Training split: a file (CSV/JSONL/TSV) or 'topics' (built in)."),
             test: str = typer.Option(..., help="Test split: a file or 'topics'."),
             format_: str = typer.Option("csv", "--format", help="Dataset format of both files: agnews, imdb, "
                                         "goemotions, esnli, csv, jsonl, json, topics."),
             map_: str | None = typer.Option(None, "--map", help="field=column,... for generic formats "
                                             "(input=text,target=label)."),
             predictions: Path | None = typer.Option(None, help="JSONL of existing predictions "
                                                     "(id, label, rationale[, model]) or (id, output)."),
             model: list[str] = typer.Option([], "--model", help="Model spec(s) that label and explain the test "
                                             "items (e.g. smollm2, openai/gpt-4o-mini)."),
             k: int = typer.Option(5, min=1, help="Top-k classifier features per instance."),
             delta: float = typer.Option(0.2, min=0, max=1, help="Threshold of the edit matcher (normalised "
                                         "Levenshtein distance)."),
             delta_chars: int = typer.Option(1, min=0, help="Threshold of the edit_chars matcher (Levenshtein "
                                             "distance in characters)."),
             stop_words: str = typer.Option("function_words", help="Stop words removed before the classifier forms "
                                            "n-grams: function_words, english (scikit-learn's list) or none."),
             text_field: list[str] = typer.Option([], "--text-field", help="A field holding the items' own text "
                                                  "(repeat for several; each is vectorised on its own). Default: the "
                                                  "fields the format declares (esnli: premise, hypothesis), else input."),
             target: str = typer.Option("predicted", help="Class whose evidence is evaluated: predicted or gold."),
             size: int = typer.Option(200, help="Items per split when a split is 'topics'."),
             limit: int | None = typer.Option(None, help="Use at most this many test items."),
             output_dir: str = typer.Option("runs", help="Parent folder of the run directory."),
             name: str = typer.Option("evidence", help="Run name."),
             seed: int = typer.Option(0), wait_lock: float = WAIT_LOCK) -> None:
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
