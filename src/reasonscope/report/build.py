"""Writing every output of a run from the store alone.

``RUN_DIR/summary.json``    run metadata (config, versions, git hash, seed, skipped models, bad rows)
                            and each family's tables (estimates with CIs, strategies, breakdowns).
``RUN_DIR/samples.jsonl``   one line per generation: item fields, raw text, extracted answer and
                            reason, trace, steps, tokens, finish reason, error, source, and the
                            item-level scores (on the item's primary generation, variant original
                            sample 0).
``RUN_DIR/results.xlsx``    one sheet per table, plus Metadata (no text cell is ever a formula:
                            :mod:`reasonscope.report.spreadsheets`).
``RUN_DIR/tables/*.csv``    the same tables as CSV (text cells that start like a formula get a ``'``).
``RUN_DIR/tables/index.csv`` every table with its row count (a table without rows gets no csv).
``RUN_DIR/*.png``           grouped bars and the families' plots (CIs as error bars); with
                            ``reasonscope report --format markdown|latex`` also ``*.svg`` and ``*.pdf``.
``RUN_DIR/report.md|.tex``  with ``--format markdown|latex``: the tables for a paper
                            (:mod:`reasonscope.report.paper`).
``RUN_DIR/report.html``     self-contained (plots inlined), every model text escaped by Jinja2
                            autoescaping, per-item drill-down with ``<details>`` (no script); each
                            text bounded, control characters shown as symbols
                            (:mod:`reasonscope.report.html`).
``RUN_DIR/config.yaml``     the plan of the run shown (its stored ``config``), read back by
                            ``load_plan``. A run on a changed plan that is killed, or still
                            generating, leaves the previous run's outputs *and* its plan: what the
                            folder shows describes one run.

Every file is written beside its target, and the files are renamed into place together once all are
written (:mod:`reasonscope.storage.atomic_files`), so a process killed while writing leaves the previous
report whole, never a truncated file or a mix of two runs. The report shows
the run's status: a runner writes the outputs of a run that ends well with status ``finished`` and
only then records that status in the store (:func:`reasonscope.pipeline.runner.finish_run_with_outputs`).

A run's plots are drawn by a second process (:mod:`reasonscope.report.plot_worker`, started by the runner while
it generates) while this one writes the CSV tables and, for a run held in memory, ``samples.jsonl``; the page,
which inlines the plots, comes next, while the worker writes ``results.xlsx``. The files are the same as when
everything is written here, which is what happens when the worker fails (said on the console with its error)
and for ``reasonscope report``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..output_files import SCHEMA_VERSION
from ..storage.atomic_files import (
    atomic_open,
    read_staged,
    remove_stale_temporaries,
    replace_together,
    write_text,
)
from ..storage.run_data import RunData, run_chunks
from ..storage.store import Store
from ..types import Generation, Score
from .columns import round_sheets
from .config_file import write_config
from .html import clip, family_tables, item_marks, item_views, step_views, stream_html
from .item_sheet import ItemScoreSheet
from .labels import column_guide
from .paper import FORMATS, PaperFormat, paper_text
from .plots import EXTRA_FORMATS
from .spreadsheets import write_csvs, write_xlsx

if TYPE_CHECKING:
    from collections.abc import Callable

    from .plot_worker import PlotWorker
    from .view import FamilyReport

STORE_FINGERPRINTS = ("generations_written", "items", "sources")
"""Notes that fingerprint the store for the up-to-date check (:mod:`reasonscope.pipeline.up_to_date`: a sum of
write times, digests), not numbers to read: kept in ``summary.json``, left out of results.xlsx."""



def utc_time(ts: float | None) -> str | None:
    """A stored run time (seconds since the epoch) as ``2026-11-25 14:40 UTC``; None kept."""
    if ts is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M UTC")


def demo_caveats(run: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """The built-in demo's notes on what its numbers show and do not, when the run is the demo; else ``[]``.

    The demo is a run named ``demo`` with the embedded SmolLM2 as its only model; the notes come from
    :func:`reasonscope.demo.family_notes`.
    """
    config = run.get("config") or {}
    specs = [m.get("spec") for m in config.get("models") or []]
    if (config.get("experiment") or {}).get("name") != "demo" or specs != ["smollm2"]:
        return []
    from ..demo import family_notes

    return family_notes(summary)


def run_header(store: Store, run_id: str, run: dict[str, Any], models: list[str]) -> dict[str, Any]:
    """What the report's first line names.

    The models, each dataset with the number of items the run requested generations for (datasets a family
    builds itself, such as the information family's, are named by the plan with their planned size), and when
    the run started.
    """
    counts: dict[str, int] = {}
    for dataset, _ in store.run_item_keys(run_id):
        counts[dataset] = counts.get(dataset, 0) + 1
    datasets = dict(counts)
    for fam in ((run.get("config") or {}).get("families") or {}).values():
        for split in ("train", "test"):
            d = (fam or {}).get(split) if isinstance(fam, dict) else None
            if isinstance(d, dict) and d.get("name") and d["name"] not in datasets:
                datasets[d["name"]] = d.get("size") or d.get("limit")
    return {"models": models, "datasets": datasets, "date": utc_time(run.get("created"))}


def scores_by_item(scores: Iterable[Score]) -> dict[tuple[str, str], dict[str, Any]]:
    """(model, item) -> ``family.metric`` -> value, reason and details, for the item-level scores."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for s in scores:
        if s.item_id:
            out.setdefault((s.model, s.item_id), {})[f"{s.family}.{s.metric}"] = \
                {"value": s.value, "reason": s.reason, "details": s.details}
    return out


SAMPLE_TEXT_CHARS = 100_000
"""Longest text written whole into a ``samples.jsonl`` row; a longer one is cut with its length stated."""


def sample_rows(data: RunData, scores_by_item: dict[tuple[str, str], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """One ``samples.jsonl`` row per generation of ``data`` (a run or a chunk of one).

    Item by item (dataset, item id), then model, variant and sample: the order of a run read chunk by chunk.

    Bounded as ``report.html`` is (:mod:`reasonscope.report.html`), with a larger limit. Each text is written
    once: the model's text is ``prediction``; its think block and trace are parts of it, so ``think`` and
    ``trace`` are written only when the row does not already hold them (``None`` / ``""`` otherwise:
    read them from ``prediction``, as the report does); ``original_input``, which the row's schema requires,
    repeats ``input`` for the original variant (questions are dataset rows, bounded when read). A text longer than :data:`SAMPLE_TEXT_CHARS` characters (question,
    prediction, error) keeps its first :data:`SAMPLE_TEXT_CHARS` followed by
    ``" … [N more characters; the whole text is in store.sqlite]"``. The steps are listed as the report lists
    them: each by its first :data:`~reasonscope.report.html.STEP_PREVIEW_CHARS` characters (`` …`` when cut),
    until :data:`~reasonscope.report.html.STEPS_SHOWN_CHARS` characters are listed, then one last entry
    ``"… [N more steps]"``. A run of 1 MB replies writes about 0.1 MB per row instead of 4 MB.
    """
    def cut(text: Any) -> Any:
        if not isinstance(text, str):
            return text
        shown, more = clip(text, SAMPLE_TEXT_CHARS)
        return shown + (f" … [{more:,} more characters; the whole text is in store.sqlite]" if more else "")

    def order(g: Generation) -> tuple:
        item = data.items[g.item_id]
        return item.group, item.id, g.model, g.variant, g.sample

    for g in sorted(data.generations, key=order):
        item = data.items[g.item_id]
        raw = g.raw_text or ""
        shown, left = step_views(g.steps or [], None, False)
        steps = [text for text, _ in shown] + ([f"… [{left:,} more steps]"] if left else [])
        row = {
            "model": g.model, "dataset": item.group, "item_id": item.id, "variant": g.variant, "sample": g.sample,
            "key": g.key,  # the request's cache key (reasonscope.output_files.SampleRow)
            "input": cut(item.variant_text(g.variant)), "original_input": cut(item.input), "choices": item.choices,
            "target": item.target, "answer_type": item.answer_type, "type": item.metadata.get("type"),
            "prediction": cut(raw), "answer": g.answer, "answer_reason": g.answer_reason,
            "think": cut(g.think) if g.think and g.think not in raw else None,
            "trace": cut(g.trace) if g.trace and g.trace not in raw else "",
            "steps": steps, "prompt_tokens": g.prompt_tokens,
            "completion_tokens": g.completion_tokens, "max_tokens": g.max_tokens, "finish_reason": g.finish_reason,
            "truncated": g.truncated, "error": cut(g.error), "latency_s": g.latency_s, "source": g.source,
        }
        if g.variant == "original" and g.sample == 0:
            row["scores"] = scores_by_item.get((g.model, g.item_id), {})
        yield row  # written by write_lines (default=str: any value that is not JSON is written as its str)


def write_lines(out: IO[str], rows: Iterable[Any]) -> None:
    """One JSON object per line to ``out``."""
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: Path, rows: Any) -> Path:
    """One JSON object per line, written atomically."""
    with atomic_open(path, "w") as fh:
        write_lines(fh, rows)
    return path


def write_report(store: Store, run_id: str, run_dir: Path, data: RunData | None = None, *,
                 families: Iterable[Any], run: dict[str, Any] | None = None,
                 paper: PaperFormat | None = None, plotter: PlotWorker | None = None,
                 warn: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Write every output of ``run_id`` into ``run_dir`` (replaced together, see the module docstring).

    Return them by name. ``families``: the families whose results are reported (each a
    :class:`reasonscope.family.Family`), in the report's order (the registry's,
    ``registry.all_families("summary")``): each family's stored result ``<name>.json`` is written through its
    report part (``family.report``, a :class:`reasonscope.report.view.FamilyReport`); this module names no
    family. ``data``: the run when it is already in memory (else it is read from the store chunk
    by chunk: :func:`reasonscope.storage.run_data.iter_run_chunks`); ``run``: the run record shown (default
    ``data.run``, else the stored record); ``paper``: also the tables as ``report.md`` (markdown) or
    ``report.tex`` (LaTeX, booktabs), and every plot as SVG and PDF beside its PNG
    (:mod:`reasonscope.report.paper`). ``plotter``: a started :class:`~reasonscope.report.plot_worker.PlotWorker`
    that draws the plots in its own process while this one writes the tables (the same files); when it fails the
    plots are drawn here and ``warn`` (default: the standard error stream) is given its traceback.
    """
    run_dir = Path(run_dir)
    run = run or (data.run if data is not None else None) or store.run(run_id)
    remove_stale_temporaries(run_dir)
    remove_stale_temporaries(run_dir / "tables")
    token = EXTRA_FORMATS.set(("svg", "pdf") if paper else ())
    try:
        with replace_together():
            return _write_outputs(store, run_id, run_dir, run, data, [f.report for f in families], paper, plotter,
                                  warn)
    finally:
        EXTRA_FORMATS.reset(token)


def _item_pass(store: Store, run_id: str, chunks: Iterable[RunData], samples: IO[str],
               reports: Iterable[FamilyReport] = ()) -> Iterator[dict[str, Any]]:
    """One pass over the run, a chunk at a time.

    Writes each generation's ``samples.jsonl`` line to ``samples`` and yields the report's item views (marked
    as the families say: :func:`reasonscope.report.html.item_marks`), so neither file needs the whole run in
    memory.
    """
    verdict, steps = item_marks(reports)
    for chunk in chunks:
        by_item = scores_by_item(store.item_scores(run_id, chunk.items))
        write_lines(samples, sample_rows(chunk, by_item))
        yield from item_views(chunk, by_item, verdict, steps)


def generation_totals(store: Store, run_id: str) -> dict[str, Any]:
    """``summary.json``'s ``generations``.

    Stored (total), missing (per model), failed and imported, counted in the store.
    """
    counts = store.run_generation_counts(run_id)
    missing = {m: c["requested"] - c["done"] for m, c in counts.items() if c["requested"] > c["done"]}
    return {"total": sum(c["done"] for c in counts.values()), "missing": sum(missing.values()),
            "missing_by_model": missing, "failed": sum(c["failed"] for c in counts.values()),
            "imported": sum(c["imported"] for c in counts.values())}


def _write_outputs(store: Store, run_id: str, run_dir: Path, run: dict[str, Any], data: RunData | None,
                   reports: list[FamilyReport], paper: PaperFormat | None = None, plotter: PlotWorker | None = None,
                   warn: Callable[[str], None] | None = None) -> dict[str, Path]:
    results: dict[str, Any] = {}  # family -> its stored result (the artefact), for the families that ran
    for report in reports:
        raw = store.artefact(run_id, f"{report.name}.json")
        if raw:
            results[report.name] = json.loads(raw)
    present = [r for r in reports if results.get(r.name)]
    if plotter is not None:  # drawn in the worker while the tables are written here
        plotter.send([(r, results[r.name]) for r in present], EXTRA_FORMATS.get())
    notes = run.get("notes") or {}
    summary = {
        "schema_version": SCHEMA_VERSION,  # reasonscope.output_files.summary_model
        "run": {k: run[k] for k in ("run_id", "kind", "status", "seed", "git_hash", "versions", "created",
                                    "finished")},
        "config": run["config"], "notes": notes,
        "generations": generation_totals(store, run_id),
        **{r.name: r.summary(results[r.name]) if results.get(r.name) else None for r in reports},
        "left_out": {r.name: left for r in reports if results.get(r.name) and (left := r.left_out(results[r.name]))},
    }
    out: dict[str, Path] = {}
    out["summary"] = write_text(run_dir / "summary.json", json.dumps(summary, indent=2, default=str))
    if run.get("config"):  # the plan of the run shown, from the store: never a later run's (module docstring)
        out["config"] = write_config(run_dir, run["config"])
    sheets: dict[str, Any] = {}
    for r in present:
        sheets.update(r.sheets(results[r.name]))
        for name, rows in r.record_rows(results[r.name]).items():  # the family's own JSONL files
            out[name] = write_jsonl(run_dir / f"{name}.jsonl", rows)
    sheets = round_sheets(sheets)  # one rounding rule per column, and a "0.50 [0.30, 0.80]" text column per estimate
    owners = {key: r for r in reports for key in r.tables}
    sheets["columns"] = column_guide(sheets, owners)  # what each column means
    if paper:
        name = (run.get("config") or {}).get("experiment", {}).get("name") or run_id
        out["paper"] = write_text(run_dir / FORMATS[paper], paper_text(family_tables(sheets, reports), paper,
                                                                       f"{name}: run {run_id}",
                                                                       {r.name: r.title for r in reports}))
    models = [m.get("name") or m.get("spec") for m in (run.get("config") or {}).get("models") or []]
    sheets["items"] = ItemScoreSheet(store.item_score_rows(run_id), models or None)  # a row per (model, item)
    header = run_header(store, run_id, run, models)
    plan_families = (run.get("config") or {}).get("families") or {}
    scored = {ds: n for r in present for ds, n in r.scored(results[r.name], plan_families.get(r.name) or {}).items()}
    if scored:  # the plan's size and what was scored, both (they can differ)
        header["scored"] = scored
    meta = {"run_id": run_id, "kind": run["kind"], "status": run["status"], "seed": run["seed"],
            "created (UTC)": utc_time(run.get("created")), "finished (UTC)": utc_time(run.get("finished")),
            "git_hash": run["git_hash"],
            "versions": run["versions"], "config": run["config"],
            "notes": {k: v for k, v in notes.items() if k not in STORE_FINGERPRINTS}}
    if plotter is not None:  # written by the worker once it has drawn the plots (_workbook)
        plotter.send_workbook(sheets, meta)
        out["xlsx"] = run_dir / "results.xlsx"
    else:
        out["xlsx"] = write_xlsx(run_dir / "results.xlsx", sheets, meta)
    write_csvs(run_dir / "tables", sheets)
    gaps: dict[str, list[str]] = {r.name: [] for r in reports}
    out["samples"], out["html"] = run_dir / "samples.jsonl", run_dir / "report.html"
    page = {"run": run, "tables": results, "sheets": sheets, "gaps": gaps, "reports": reports, "header": header,
            "about": demo_caveats(run, summary)}
    if data is not None:  # the run in memory: samples.jsonl first (while a plot worker draws), then the page
        scored = [(data, scores_by_item(store.item_scores(run_id, data.items)))]
        with atomic_open(out["samples"], "w") as samples:
            for chunk, by_item in scored:
                write_lines(samples, sample_rows(chunk, by_item))
        plots = _plots(present, results, run_dir, gaps, plotter, warn)
        out.update(plots)
        verdict, steps = item_marks(reports)
        views = (view for chunk, by_item in scored for view in item_views(chunk, by_item, verdict, steps))
        with atomic_open(out["html"], "w") as html:
            stream_html(html, items=views, images=_images(plots), **page)
    else:
        plots = _plots(present, results, run_dir, gaps, plotter, warn)
        out.update(plots)
        with atomic_open(out["samples"], "w") as samples, atomic_open(out["html"], "w") as html:  # one pass
            views = _item_pass(store, run_id, run_chunks(store, run_id, data), samples, reports)
            stream_html(html, items=views, images=_images(plots), **page)
            for _ in views:  # every line of samples.jsonl, whatever the page showed
                pass
    if plotter is not None:
        out["xlsx"] = _workbook(plotter, run_dir / "results.xlsx", sheets, meta, warn)
    return out


def _images(plots: dict[str, Path]) -> dict[str, str]:
    """Plot name -> its PNG in base64, as written in this report (staged: :func:`read_staged`)."""
    return {name: base64.b64encode(read_staged(p)).decode() for name, p in plots.items()}


def _plots(present: list[FamilyReport], results: dict[str, Any], run_dir: Path, gaps: dict[str, list[str]],
           plotter: PlotWorker | None, warn: Callable[[str], None] | None) -> dict[str, Path]:
    """Each present family's plots, plot name -> file in ``run_dir``: ``plotter``'s, else (or when it failed) drawn here.

    Why a plot is missing is appended to ``gaps`` (family -> reasons).
    """
    if plotter is not None:
        from .plot_worker import PlotWorkerFailed

        try:
            return _worker_plots(plotter.receive(), run_dir, gaps)
        except PlotWorkerFailed as err:
            (warn or _stderr)(f"the plot worker failed, so the plots are drawn in this process instead; its "
                              f"error:\n{err}")
    plots: dict[str, Path] = {}
    for r in present:
        plots.update(r.plots(results[r.name], run_dir, gaps[r.name]))
    return plots


def _workbook(plotter: PlotWorker, path: Path, sheets: dict[str, Any], meta: dict[str, Any],
              warn: Callable[[str], None] | None) -> Path:
    """``results.xlsx`` as the plot worker wrote it; written here when it failed (told unless a failure was)."""
    from .plot_worker import PlotWorkerFailed

    told = plotter.failed  # the plots' failure was told already
    try:
        data = plotter.receive_workbook()
    except PlotWorkerFailed as err:
        if not told:
            (warn or _stderr)(f"the plot worker failed, so the workbook is written in this process instead; its "
                              f"error:\n{err}")
        return write_xlsx(path, sheets, meta)
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return path


def _worker_plots(reply: dict[str, Any], run_dir: Path, gaps: dict[str, list[str]]) -> dict[str, Path]:
    """The files a plot worker drew, written into ``run_dir`` (atomically, staged with the report's other files)."""
    from .plots import CLIPPED

    for rel, data in reply["files"].items():
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(run_dir / rel, "wb") as fh:
            fh.write(data)
    for family, why in reply["gaps"].items():
        gaps.setdefault(family, []).extend(why)
    CLIPPED.update(reply["clipped"])
    return {name: run_dir / rel for drawn in reply["plots"].values() for name, rel in drawn.items()}


def _stderr(message: str) -> None:
    import sys

    print(f"warning: {message}", file=sys.stderr)
