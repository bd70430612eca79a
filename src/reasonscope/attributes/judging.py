"""Pointwise judging of rationales.

The targets (each model's primary answer per item), one request per judge and target through the store, strict
parsing, per-unit scores, and agreement between judges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..execution.calls import complete_cached, planned_request
from ..judge.parse import parse_judgement
from ..judge.prompts import SCALES, TEMPLATE_VERSION, judge_messages
from ..judge.schemas import attribute_scores_schema
from ..models.base import LanguageModel
from ..stats.agreement import alpha_permutation_test, krippendorff_alpha, mean_spearman
from ..storage.store import Store
from ..types import Item
from .settings import AttributesConfig


@dataclass
class Target:
    """A rationale to judge.

    ``model``'s answer to the item ``unit`` (a dataset/item key or a preference record and side).
    """

    model: str
    unit: str
    question: str
    rationale: str
    item: Item | None = None
    reference: str | None = None
    error: str | None = None
    steps: list[str] = field(default_factory=list)


@dataclass
class Judged:
    """One judge's parsed verdict on one rationale.

    Attributes:
        judge: the judge model's name.
        key: the request's cache key in the store.
        scores: attribute -> score on the configured scale, for the attributes the answer scored.
        unscored: attribute -> why it has no score (a failed call or an unparseable answer).
        explanations: attribute -> the judge's explanation.
        raw: the judge's answer text.
    """
    judge: str
    key: str
    scores: dict[str, float]
    unscored: dict[str, str]
    explanations: dict[str, str]
    raw: str


def run_targets(data) -> list[Target]:
    """The primary answer (original, sample 0) of every model to every item of a run."""
    out = []
    for g in data.generations:
        if g.variant != "original" or g.sample != 0:
            continue
        item = data.items[g.item_id]
        out.append(Target(g.model, g.item_id, item.input, g.raw_text, item,
                          None if item.target is None else str(item.target), g.error, g.steps))
    return out


def make_judges(cfg: AttributesConfig, console: Console) -> tuple[list[LanguageModel], dict[str, str]]:
    """The usable judge models of ``cfg``; each skipped judge is reported on ``console``.

    Returns:
        The judges and a mapping of each skipped judge to the reason.
    """
    from ..models.registry import usable_models

    judges, skipped = usable_models(cfg.judges)
    for why in skipped.values():
        console.print("[yellow]attributes: judge skipped: " + escape(why))
    return judges, skipped


def judge_pointwise(judge: LanguageModel, targets: list[Target], cfg: AttributesConfig, store: Store, *, seed: int,
                    console: Console) -> dict[tuple[str, str], Judged]:
    """``(model, unit)`` -> the judge's parsed verdict on that rationale (failed generations are skipped)."""
    names = cfg.names
    scale_max = SCALES[cfg.scale][1]
    planned = {}
    for t in targets:
        if t.error:
            continue
        context = f"Reference answer: {t.reference}" if cfg.show_reference and t.reference else None
        messages = judge_messages(t.question, t.rationale, scale=cfg.scale, attributes=names, context=context)
        planned[(t.model, t.unit)] = planned_request(
            judge, "attributes", None, f"judge:{t.model}", 0, messages, seed, TEMPLATE_VERSION,
            {"task": "judge", "attributes": names, "text": t.rationale, "scale_max": scale_max},
            item_id=t.unit, structured={"json_schema": attribute_scores_schema(names, scale_max)})
    completions = complete_cached(judge, list(planned.values()), store, console=console,
                                     label=f"judge {judge.name}")
    out = {}
    for unit, p in planned.items():
        c = completions[p.key]
        if c.error:
            why = f"judge call failed: {c.error}"
            res = Judged(judge.name, p.key, {}, {a: why for a in names}, {}, c.text)
        else:
            parsed = parse_judgement(c.text, names, scale_max=scale_max)
            res = Judged(judge.name, p.key, parsed.scores, parsed.unscored, parsed.explanations, c.text)
        out[unit] = res
    return out


def unit_scores(targets: list[Target], verdicts: dict[str, dict[tuple[str, str], Judged]], names: list[str]
                ) -> dict[tuple[str, str], dict[str, float | None]]:
    """Mean over judges of each attribute of each (model, unit); None when no judge scored it."""
    out = {}
    for t in targets:
        row: dict[str, float | None] = {}
        for a in names:
            vals = [v[(t.model, t.unit)].scores[a] for v in verdicts.values()
                    if (t.model, t.unit) in v and a in v[(t.model, t.unit)].scores]
            row[a] = sum(vals) / len(vals) if vals else None
        out[(t.model, t.unit)] = row
    return out


_EMPTY = Judged("", "", {}, {}, {}, "")


def agreement_row(scores: dict[str, dict[str, float | None]], *, seed: int, units: int) -> dict[str, Any]:
    """Agreement between judges on one attribute.

    Krippendorff's alpha with its one-sided permutation p-value (agreement above chance) and the mean pairwise
    Spearman rho of one attribute.
    """
    test = alpha_permutation_test(scores, seed=seed)
    return {"krippendorff_alpha": krippendorff_alpha(scores), "alpha_p_value": test.p_value, "alpha_test": test.label,
            "alpha_null": test.null, "spearman": mean_spearman(scores), "units": units}


def per_judge_scores(verdicts: dict[str, dict[tuple[str, str], Judged]], attribute: str
                     ) -> dict[str, dict[str, float | None]]:
    """One attribute's scores per judge, keyed ``"model|unit"``.

    Returns:
        judge -> ``"model|unit"`` -> score, None where the judge gave none (the input of the agreement
        statistics).
    """
    return {j: {f"{m}|{u}": r.scores.get(attribute) for (m, u), r in v.items()} for j, v in verdicts.items()}


def _top_reasons(results) -> list[str]:
    counts: dict[str, int] = {}
    for r in results:
        for why in r.unscored.values():
            counts[why] = counts.get(why, 0) + 1
    return [f"{n}x {why}" for why, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5]]
