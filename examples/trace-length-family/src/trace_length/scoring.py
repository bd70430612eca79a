"""Scoring: per-answer values -> per-item scores (stored) -> per-model estimates (the family's tables).

Only the answers to the plan's own questions count (variant ``original``, every sample); a failed
generation (an error, no text) is left out and counted, never scored as zero steps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from reasonscope.stats import estimate
from reasonscope.types import VARIANT_ORIGINAL, Score

from .metrics import FAMILY_NAME, METRICS, steps, unexplained
from .settings import TraceLengthConfig


def score_trace_length(chunks: Iterable[Any], settings: TraceLengthConfig, stats: Any,
                       seed: int = 0) -> tuple[list[Score], dict[str, Any]]:
    """Score every answer of the run's chunks.

    Args:
        chunks: The run's data in chunks of whole items (:meth:`reasonscope.family.ScoringContext.chunks`).
        settings: The family's settings.
        stats: The plan's statistics settings (confidence, resamples, interval method).
        seed: Seeds the bootstrap.

    Returns:
        The item-level scores (one per model, item and metric) and the tables: ``min_steps``, and per model
        ``steps`` and ``unexplained`` (estimate dicts: value, low, high, n, method), ``answers`` and
        ``failed``; ``warnings`` lists models with no usable answer.
    """
    per_item: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    failed: dict[str, int] = defaultdict(int)
    answers: dict[str, int] = defaultdict(int)
    models: dict[str, None] = {}
    for chunk in chunks:
        for g in chunk.generations:
            if g.variant != VARIANT_ORIGINAL:
                continue
            models.setdefault(g.model, None)
            if g.error or not g.raw_text:
                failed[g.model] += 1
                continue
            answers[g.model] += 1
            n = len(g.steps)
            values = per_item[(g.model, g.item_id)]
            values["steps"].append(steps(n))
            values["unexplained"].append(unexplained(n, settings.min_steps))
    scores: list[Score] = []
    by_model: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (model, item_id), values in per_item.items():
        for key, vals in values.items():
            mean = sum(vals) / len(vals)
            by_model[model][key].append(mean)
            scores.append(Score(family=FAMILY_NAME, metric=key, model=model, item_id=item_id, value=mean,
                                details={"answers": len(vals)}))
    tables: dict[str, Any] = {"min_steps": settings.min_steps, "models": {}, "warnings": []}
    for model in models:
        row: dict[str, Any] = {}
        for spec in METRICS:
            row[spec.key] = estimate(by_model[model][spec.key], stats, seed, bounds=spec.range)
        counted = row["steps"]
        if counted["low"] is not None and counted["low"] < 0:  # a mean of counts is never negative: clip it
            counted["low"], counted["method"] = 0.0, counted["method"] + ", clipped at 0"
        row["answers"] = answers[model]
        row["failed"] = failed[model]
        tables["models"][model] = row
        if not answers[model]:
            tables["warnings"].append(f"{model}: no successful answer to measure ({failed[model]} failed)")
    return scores, tables
