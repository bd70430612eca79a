"""``reasonscope compare BASE NEW``: paired comparison of two runs, and a gate for CI (exit 0 / 1 / 2)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .common import console, fail, out

app = typer.Typer()

FORMATS = ("text", "markdown", "json")


def parse_pairs(values: list[str] | None) -> dict[str, str]:
    """``["a=b", ...]`` as ``{"a": "b"}``; a malformed entry is a BadParameter naming it."""
    pairs: dict[str, str] = {}
    for value in values or []:
        base, sep, new = value.partition("=")
        if not sep or not base.strip() or not new.strip():
            raise typer.BadParameter(f"{value!r}: expected BASE_MODEL=NEW_MODEL", param_hint="--pair")
        pairs[base.strip()] = new.strip()
    return pairs


def parse_metrics(values: list[str] | None) -> list[str] | None:
    """``--metrics`` entries, each a comma-separated list, flattened; None when none is given."""
    names = [name.strip() for value in values or [] for name in value.split(",") if name.strip()]
    return names or None


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _registered_metrics(family: str):
    """The metric specs of a registered family (the registry's, so that any registered family has directions)."""
    from ..registry import get_family

    return get_family(family).metrics


def _reads_answers(family: str, settings: dict | None) -> bool | None:
    """Whether a registered family, with its stored settings, scores the run's answers (None: cannot tell)."""
    from pydantic import ValidationError

    from ..registry import get_family

    if settings is None:
        return None
    try:
        fam = get_family(family)
        return fam.answers(fam.settings.model_validate(settings)) is not None
    except (LookupError, ImportError, ValidationError):
        return None


def _settings_model(family: str):
    """The settings model of a registered family: a setting a run did not store reads as its default."""
    from ..registry import get_family

    return get_family(family).settings


@app.command()
def compare(
    base: Path | None = typer.Argument(None, help="The baseline run folder."),
    new: Path | None = typer.Argument(None, help="The run folder compared with it."),
    format_: str = typer.Option("text", "--format", help="text (a table for the terminal), markdown (for a pull "
                                "request) or json (a RunComparison, see --schema)."),
    html: Path | None = typer.Option(None, "--html", metavar="FILE", help="Also write a self-contained HTML page: "
                                     "the differences with their intervals, and the items that changed most."),
    metrics: list[str] | None = typer.Option(None, "--metrics", help="What the gate reads: metrics or families, "
                                             "comma-separated or repeated (CQ, behavior, coverage_support, "
                                             "attack/success). Default: every metric."),
    pair: list[str] | None = typer.Option(None, "--pair", metavar="BASE=NEW", help="Pair a BASE model with a NEW "
                                          "model of another name (repeatable). Same names pair by default; one "
                                          "unmatched model on each side is paired."),
    min_effect: float = typer.Option(0.0, "--min-effect", help="A significantly worse metric fails the gate only "
                                     "when |NEW - BASE| exceeds this, in the metric's unit (0.02 = 2 points of a "
                                     "share)."),
    allow_mismatch: bool = typer.Option(False, "--allow-mismatch", help="Compare and gate even where a family's "
                                        "settings (scorer model, judge), its prompt templates or an item's content "
                                        "differ."),
    base_run_id: str | None = typer.Option(None, help="Which run of BASE's store (default: its latest finished)."),
    new_run_id: str | None = typer.Option(None, help="Which run of NEW's store (default: its latest finished)."),
    top_items: int = typer.Option(5, min=0, help="Items per metric in the drill-down (largest change first)."),
    schema: bool = typer.Option(False, "--schema", help="Print the JSON Schema of --format json and exit."),
) -> None:
    """Compare two runs on the items both hold: is NEW worse, better, or no different from BASE?

    For every item-level metric both runs have (every family, dataset and model pair): the mean paired
    difference NEW - BASE with a 95% interval and a p-value (exact McNemar for 0/1 values, a paired
    sign-flip permutation test otherwise), Holm's correction over the metrics, and the verdict worse /
    better / no change from the metric's direction. Nothing is written into either run folder.

    Exit codes: 0 no gating metric is significantly worse; 1 at least one is (after Holm, beyond
    --min-effect); 2 the runs cannot be compared (not a run folder, a run still being written, a damaged
    store, different datasets, no shared item, a family whose settings or prompt templates differ without
    --allow-mismatch).

    Examples: `reasonscope compare runs/main runs/pr`; `reasonscope compare runs/main runs/pr --metrics CQ
    --min-effect 0.02 --format markdown > comment.md`; `reasonscope compare runs/a runs/b --pair
    gpt-4o=gpt-4.1 --html compare.html`.
    """
    from ..compare import CompareError, compare_runs, json_schema, render_markdown, render_text

    if schema:
        typer.echo(json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False))
        return
    if base is None or new is None:
        fail("expected two run folders: reasonscope compare BASE NEW")
        return
    if format_ not in FORMATS:
        fail(f"--format {format_!r}: expected one of {', '.join(FORMATS)}")
        return
    if html is not None and (_inside(html, base) or _inside(html, new)):
        fail(f"--html {html}: inside a run folder; compare writes nothing there, write the page elsewhere")
        return
    try:
        result = compare_runs(base, new, pairs=parse_pairs(pair), metrics=parse_metrics(metrics),
                              min_effect=min_effect, allow_mismatch=allow_mismatch, base_run_id=base_run_id,
                              new_run_id=new_run_id, top_items=top_items, catalogue=_registered_metrics,
                              reads_answers=_reads_answers, settings_models=_settings_model)
    except CompareError as err:
        fail(str(err))
        return
    if format_ == "json":
        typer.echo(result.model_dump_json(indent=2))
    elif format_ == "markdown":
        typer.echo(render_markdown(result), nl=False)
    else:
        render_text(result, out)
    if html is not None:
        from ..compare import render_html
        from ..storage.atomic_files import write_text

        try:
            html.parent.mkdir(parents=True, exist_ok=True)
            write_text(html, render_html(result))
        except OSError as err:
            fail(f"{html}: cannot write the HTML page ({err.strerror or err})")
            return
        console.print(f"wrote {html}", highlight=False)
    if format_ != "text":
        console.print(f"gate: exit {result.exit_code}: {result.reason}", highlight=False, soft_wrap=True)
    raise typer.Exit(result.exit_code)
