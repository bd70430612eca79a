"""``reasonscope score``: outputs the user already has, scored and reported as a generated run.

The outputs go into the store, then through the same scoring and report, with no generator called. They are a
predictions file (mapped with ``--map``) or the logs of another framework (``--from lm-eval`` / ``--from
inspect``, :mod:`reasonscope.data.adapters`).

Imported records are stored as completions with ``source = "imported:<file>:<line>"`` (for a log: its
place in the log, such as ``<samples file>:<line>`` or ``sample=<id>,epoch=<n>``) and a key
hashed from the file, model, item, variant, sample and text, so importing the same file twice
adds nothing. ES needs token counts: a ``completion_tokens`` column, or ``tokenizer`` (an HF id
or path) to count the prediction's tokens, and a budget (``max_tokens`` column or ``budget``).
A family that reads data of its own to score imported outputs says so through
:meth:`reasonscope.family.Family.prepare_import` (this module names no family). With an evidence training
split, the imported items are RACE's test split: each record's
prediction is read as ``{"label", "rationale"}`` JSON when it is one, else the predicted label is
the extracted answer (answer type ``label``) and the rationale is the ``rationale`` column (or the
reasoning trace).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..data.loaders import BadRow
from ..data.predictions import read_predictions
from ..family import GenerationContext
from ..plan import ScoreFamiliesConfig, ScorePlan
from ..registry import enabled_families
from ..storage.rundir import RunDirLock
from ..storage.store import Store
from ..types import Item
from .family_scoring import score_run
from .run_outcome import FailedLimit, Outcome, decide, tally
from .runner import finish_run_with_outputs


@dataclass
class ScoreSummary:
    """The result of ``reasonscope score``: run id and directory, records and items, bad rows skipped.

    ``outcome`` holds the exit code and its reason, decided as for a generated run.
    """

    run_id: str
    run_dir: Path
    records: int
    items: int
    bad_rows: list[BadRow]
    outcome: Outcome | None = None  # the exit code and its reason, decided as for a generated run


def token_counter(tokenizer: str):
    """A function counting a text's tokens with the Hugging Face tokenizer ``tokenizer`` (no special tokens).

    Used to measure completion lengths of imported outputs that carry no token counts.
    """
    from transformers import AutoTokenizer

    from ..models.loading import model_loading

    with model_loading():
        tok = AutoTokenizer.from_pretrained(tokenizer)
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def prepare_import(plan: ScorePlan, datasets: dict[str, list[Item]], source: str
                   ) -> tuple[ScoreFamiliesConfig, dict[str, list[Item]]]:
    """Each enabled family's settings for the imported outputs, and the data sets the families read.

    See :meth:`reasonscope.family.Family.prepare_import`.
    """
    ctx = GenerationContext(seed=plan.experiment.seed, datasets=datasets)
    updates: dict[str, object] = {}
    items: dict[str, list[Item]] = {}
    for family, settings in enabled_families(plan.families, canonical=True):
        updated, own = family.prepare_import(settings, ctx, source)
        if updated is not settings:
            updates[family.name] = updated
        items.update(own)
    return (plan.families.model_copy(update=updates) if updates else plan.families), items


def score_file(plan: ScorePlan, *, console: Console | None = None, wait_lock: float = 0.0,
               max_failed: FailedLimit | None = None) -> ScoreSummary:
    """Import, score and report ``plan.input`` in ``plan.run_dir``.

    Holds the run directory's lock, waiting up to ``wait_lock`` seconds for another process to release it. The
    summary's ``outcome`` applies the rule of a generated run (:func:`reasonscope.pipeline.run_outcome.decide`) to the
    imported generations: code 1 when a model has no successful one, or more failed than ``max_failed``.
    """
    console = console or Console(stderr=True)
    cfg = plan.input
    if cfg.format == "predictions":
        from ..data.adapters import KINDS, sniff_log

        kind = sniff_log(Path(cfg.path))
        if kind is not None:
            source = "inspect" if kind.startswith("inspect") else "lm-eval"
            raise ValueError(f"{cfg.path}: {KINDS[kind]}, not a predictions file: read it with --from {source}")
    counter = token_counter(cfg.tokenizer) if cfg.tokenizer else None
    if cfg.format == "predictions":
        result = read_predictions(cfg.path, cfg.mapping, skip_bad_rows=cfg.skip_bad_rows,
                                  answer_type=cfg.answer_type, budget=cfg.budget, token_counter=counter)
    else:
        from ..data.adapters import read_log

        result = read_log(cfg.format, cfg.path, skip_bad_rows=cfg.skip_bad_rows, answer_type=cfg.answer_type,
                          budget=cfg.budget, token_counter=counter, log_run=cfg.log_run)
    log_notes = getattr(result, "notes", [])
    log_warnings = getattr(result, "warnings", [])
    for note in log_notes:
        console.print(escape(note))
    for warning in log_warnings:
        console.print("[yellow]warning:[/yellow] " + escape(warning))
    if result.bad_rows:
        console.print(f"[yellow]skipped {len(result.bad_rows)} bad rows: " + escape(
            "; ".join(str(b) for b in result.bad_rows[:5]) + (" ..." if len(result.bad_rows) > 5 else "")))
    run_dir = plan.run_dir
    families, family_items = prepare_import(plan, result.items, cfg.path)
    with RunDirLock(run_dir, wait=wait_lock):
        store = Store(run_dir)
        try:
            for dataset, items in result.items.items():  # config.yaml: written with the outputs
                store.put_items(dataset, items)
            for dataset, items in family_items.items():
                store.put_items(dataset, items)
            notes = {"bad_rows": {Path(cfg.path).name: [str(b) for b in result.bad_rows]} if result.bad_rows else {},
                     "imported_from": str(cfg.path), "records": len(result.generations)}
            if cfg.format != "predictions":
                notes["log"] = {"format": cfg.format, "notes": log_notes, "warnings": log_warnings}
            run_id = store.start_run(kind="score", config=plan.model_dump(mode="json"), seed=plan.experiment.seed,
                                     notes=notes)
            store.import_completions(run_id, cfg.path, [(g.line, g.model, g.dataset, g.item_id, g.variant,
                                                         g.sample, g.completion, g.max_tokens)
                                                        for g in result.generations],
                                    template=f"imported:{cfg.format}")
            outcome = decide(tally(store, run_id), max_failed)
            notes["outcome"] = outcome.as_dict()
            try:
                score_run(store, run_id, families, plan.stats, seed=plan.experiment.seed, console=console,
                          temperatures=getattr(result, "temperatures", None))
                finish_run_with_outputs(store, run_id, run_dir, notes)
            except BaseException:
                store.finish_run(run_id, "interrupted")
                raise
        finally:
            store.close()
    return ScoreSummary(run_id, run_dir, len(result.generations), sum(len(v) for v in result.items.values()),
                        result.bad_rows, outcome)
