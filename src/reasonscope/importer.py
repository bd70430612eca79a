"""``reasonscope score``: outputs the user already has -> the store -> the same scoring and report as a
generated run, with no generator called. The outputs are a predictions file (mapped with ``--map``) or
the logs of another framework (``--from lm-eval`` / ``--from inspect``, :mod:`reasonscope.data.adapters`).

Imported records are stored as completions with ``source = "imported:<file>:<line>"`` (for a log: its
place in the log, such as ``<samples file>:<line>`` or ``sample=<id>,epoch=<n>``) and a key
hashed from the file, model, item, variant, sample and text, so importing the same file twice
adds nothing. ES needs token counts: a ``completion_tokens`` column, or ``tokenizer`` (an HF id
or path) to count the prediction's tokens, and a budget (``max_tokens`` column or ``budget``).
With an evidence training split, the imported items are RACE's test split: each record's
prediction is read as ``{"label", "rationale"}`` JSON when it is one, else the predicted label is
the extracted answer (answer type ``label``) and the rationale is the ``rationale`` column (or the
reasoning trace).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from .config import ScorePlan
from .data.loaders import BadRow, load_dataset
from .data.predictions import read_predictions
from .rundir import RunDirLock
from .runner import finish_run_with_outputs, write_config
from .scoring import score_run
from .store import Store


@dataclass
class ScoreSummary:
    run_id: str
    run_dir: Path
    records: int
    items: int
    bad_rows: list[BadRow]


def token_counter(tokenizer: str):
    from transformers import AutoTokenizer

    from .models.loading import model_loading

    with model_loading():
        tok = AutoTokenizer.from_pretrained(tokenizer)
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def score_file(plan: ScorePlan, *, console: Console | None = None, wait_lock: float = 0.0) -> ScoreSummary:
    """Import, score and report ``plan.input`` in ``plan.run_dir`` (holding the run directory's lock,
    waiting up to ``wait_lock`` seconds for another process to release it)."""
    console = console or Console(stderr=True)
    cfg = plan.input
    counter = token_counter(cfg.tokenizer) if cfg.tokenizer else None
    if cfg.format == "predictions":
        result = read_predictions(cfg.path, cfg.mapping, skip_bad_rows=cfg.skip_bad_rows,
                                  answer_type=cfg.answer_type, budget=cfg.budget, token_counter=counter)
    else:
        from .data.adapters import read_log

        result = read_log(cfg.format, cfg.path, skip_bad_rows=cfg.skip_bad_rows, answer_type=cfg.answer_type,
                          budget=cfg.budget, token_counter=counter)
    log_notes = getattr(result, "notes", [])
    for note in log_notes:
        console.print(escape(note))
    if result.bad_rows:
        console.print(f"[yellow]skipped {len(result.bad_rows)} bad rows: " + escape(
            "; ".join(str(b) for b in result.bad_rows[:5]) + (" ..." if len(result.bad_rows) > 5 else "")))
    run_dir = plan.run_dir
    families = plan.families
    ev = families.evidence
    train_items = None
    if ev is not None:
        if len(result.items) != 1:
            raise ValueError(f"evidence scoring takes one dataset per file; {cfg.path} holds {sorted(result.items)}")
        train_items = load_dataset(ev.train, seed=plan.experiment.seed).items
        # the imported items are the test split
        families = families.model_copy(update={"evidence": ev.model_copy(
            update={"test": ev.test.model_copy(update={"name": next(iter(result.items))})})})
    with RunDirLock(run_dir, wait=wait_lock):
        store = Store(run_dir)
        try:
            write_config(run_dir, plan)
            for dataset, items in result.items.items():
                store.put_items(dataset, items)
            if train_items is not None:
                store.put_items(ev.train.name, train_items)
            notes = {"bad_rows": {Path(cfg.path).name: [str(b) for b in result.bad_rows]} if result.bad_rows else {},
                     "imported_from": str(cfg.path), "records": len(result.generations)}
            if cfg.format != "predictions":
                notes["log"] = {"format": cfg.format, "notes": log_notes}
            run_id = store.start_run(kind="score", config=plan.model_dump(mode="json"), seed=plan.experiment.seed,
                                     notes=notes)
            store.import_completions(run_id, cfg.path, [(g.line, g.model, g.dataset, g.item_id, g.variant,
                                                         g.sample, g.completion, g.max_tokens)
                                                        for g in result.generations])
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
                        result.bad_rows)
