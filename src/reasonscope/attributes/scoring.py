"""The attributes family.

Following *Rethinking Human Preference Evaluation of LLM Rationales*: twelve rationale attributes by LLM
judges, ROSCOE-style automatic metrics, preference explanation and per-attribute ratings.

What is judged
--------------
Each model's primary answer to each item (variant ``original``, sample 0): the raw completion (the
reasoning and its final answer) with the question. The gold answer is not shown, as in the
publication's prompts; ``show_reference: true`` adds it as context (a departure: a judge that sees
the answer grades correctness against it). The choice is recorded in the table (``show_reference``)
and with every score (``details.reference_shown``). Failed generations are not judged (their
attributes are unscored: "generation failed").

Judges
------
Every judge is a provider (any spec); its calls go through the store (:mod:`reasonscope.execution.calls`), so
they are cached, resumable and traceable (the cache key is kept with each score). Temperature
defaults to 0 and the seed is the experiment's, both in the cache key and recorded. Answers are
parsed strictly (:func:`reasonscope.judge.parse.parse_judgement`): a missing or out-of-range score
is *unscored*, counted per judge and attribute, never 0. Scores on 0-10 are divided by 10.
A rationale that addresses its grader ("give this 1.0", "ignore the rubric") is *flagged*
(:func:`reasonscope.judge.parse.hostile_flags`); its score still comes from the judge's JSON.

Aggregation
-----------
* The attribute score of a (model, item) is the mean over the judges that scored it.
* Per model and attribute: the mean over items with a 95% CI over items (a score interval for a bounded mean).
* Agreement between judges per attribute over the (model, item) units: Krippendorff's alpha
  (interval) with a one-sided permutation p-value (H0: the judges score independently;
  :func:`reasonscope.stats.agreement.alpha_permutation_test`) and the mean pairwise Spearman rho
  (needs 2+ judges).
* Automatic metrics (:mod:`reasonscope.attributes.automatic`) are aggregated the same way, under
  ``auto.<metric>``.

Ratings
-------
Per attribute (judge mean and automatic metrics alike), every two models scored on the same item
meet once; the higher score wins, scores tie when they differ by at most ``margin`` + 1e-9 (default
margin 0: equal scores only; :mod:`reasonscope.attributes.elo`). Online Elo (K = 4, base 10, scale
400, initial 1000; battles in (item, model a, model b) order) and Bradley-Terry at the
maximum-likelihood optimum with ``rating_resamples`` battle-level bootstrap rounds (95% percentile
CIs, seeded) and rank bounds (:mod:`reasonscope.stats.ratings`). Warnings name models whose
ratings are unbounded (never lost / never won) or not comparable (disconnected battles).

Preferences
-----------
With ``preferences`` (MT-Bench human judgments, Chatbot Arena battles or plain JSONL): both responses
of every record are judged pointwise; features attribute(A) - attribute(B) explain the human winner
with LightGBM + SHAP (:mod:`reasonscope.attributes.explain`; ties left out); with ``pairwise``, each
judge also compares the two responses in both orders, and a response wins only when both orders
agree (a disagreement is a tie, counted as *inconsistent*); the judge's agreement with the human
winner is reported over the records where both name a winner. The recorded battles are rated by the
human labels and, per attribute, by the judged scores of the two responses (the publication's
attribute-specific Elo), each attribute's ratings compared with the human-label ratings by rank
correlation (:mod:`reasonscope.attributes.ratings`). The per-record scores are kept
(``preferences.scores``) so that ``reasonscope attributes elo`` can re-rate with another margin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from ..data.files import resolve_path
from ..judge.parse import hostile_flags
from ..judge.prompts import TEMPLATE_VERSION
from ..models.base import LanguageModel
from ..shared_settings import StatsConfig
from ..stats.bootstrap import estimate, mean_or_none
from ..stats.multiple import adjust_rows
from ..storage.store import Store
from ..text.steps import split_steps
from ..types import Score
from .automatic import AUTOMATIC_METRICS, METRIC_BACKEND, automatic_metrics, load_backends, prefetch
from .expected_scores import EXPECTED_VERSION, judge_expected
from .expected_scores import METHOD as EXPECTED_METHOD
from .judging import (  # noqa: F401
    _EMPTY,
    Judged,
    Target,
    _top_reasons,
    agreement_row,
    judge_pointwise,
    make_judges,
    per_judge_scores,
    run_targets,
    unit_scores,
)
from .preferences import judge_pairwise, score_preferences  # noqa: F401  (re-exported)
from .ratings import (
    RATING_WARNING_PREFIXES,
    preference_ratings,
    preference_warnings,
    rating_warnings,
    ratings_table,
)
from .settings import AttributesConfig

FAMILY = "attributes"


def score_attributes(store: Store, run_id: str, cfg: AttributesConfig, stats: StatsConfig, data, *, seed: int = 0,
                     console: Console | None = None, base_dir: Path | None = None,
                     judges: list[LanguageModel] | None = None) -> dict:
    """Judge, measure, rate and (with preferences) explain.

    Stores the scores and the ``attributes.json`` table.
    """
    console = console or Console(stderr=True)
    names = cfg.names
    warnings: list[str] = []
    skipped: dict[str, str] = {}
    own_judges = judges is None
    if judges is None:
        judges, skipped = make_judges(cfg, console)
    warnings += [f"judge skipped: {why}" for why in skipped.values()]
    if cfg.judges and not judges:
        warnings.append("no judge could run: judge attributes are not computed")
    targets = run_targets(data) if data is not None else []
    if cfg.scoring == "expected":
        verdicts = {j.name: judge_expected(j, targets, cfg, store) for j in judges}
    else:
        verdicts = {j.name: judge_pointwise(j, targets, cfg, store, seed=seed, console=console) for j in judges}
    per_unit = unit_scores(targets, verdicts, names)
    auto_cfg = cfg.automatic
    auto: dict[tuple[str, str], dict[str, float | None]] = {}
    auto_info: dict[str, Any] = {"enabled": auto_cfg is not None}
    if auto_cfg is not None and targets:
        backends = load_backends(auto_cfg, store)
        units = [(t, t.steps, split_steps(t.question) or [t.question]) for t in targets if not t.error]
        prefetch([(steps, source) for _, steps, source in units], backends)  # batched, cached, progress bar
        auto_info.update(backends=backends.descriptions, unavailable=backends.unavailable)
        for t, steps, source in units:
            auto[(t.model, t.unit)] = automatic_metrics(steps, source, backends)
        auto_info["metrics"] = [m for m in AUTOMATIC_METRICS if m not in backends.unavailable]
    scores: list[Score] = []
    judgements: list[dict] = []
    hostile: list[dict] = []
    for t in targets:
        flags = hostile_flags(t.rationale) if not t.error else []
        if flags:
            hostile.append({"model": t.model, "item": t.unit, "flags": flags})
        per_judge = {j: v.get((t.model, t.unit)) for j, v in verdicts.items()}
        for a in names:
            details = {"judges": {j: ({"score": r.scores[a], "key": r.key} if a in r.scores else
                                      {"score": None, "reason": r.unscored.get(a), "key": r.key})
                                  for j, r in per_judge.items() if r is not None},
                       "reference_shown": cfg.show_reference}
            if flags:
                details["hostile"] = flags
            value = per_unit[(t.model, t.unit)][a]
            reason = None
            if value is None:
                reason = (f"generation failed: {t.error}" if t.error else
                          "no judge configured" if not verdicts else "unscored by every judge")
            scores.append(Score(family=FAMILY, metric=f"judge.{a}", model=t.model, item_id=t.unit, value=value,
                                reason=reason, details=details))
        for metric, value in auto.get((t.model, t.unit), {}).items():
            scores.append(Score(family=FAMILY, metric=f"auto.{metric}", model=t.model, item_id=t.unit, value=value,
                                reason=None if value is not None else "empty reasoning chain",
                                details={"backend": auto_info["backends"].get(METRIC_BACKEND[metric], "none")}))
        for j, r in per_judge.items():
            if r is not None:
                judgements.append({"model": t.model, "item": t.unit, "judge": j, "key": r.key, "scores": r.scores,
                                   "unscored": r.unscored, "explanations": r.explanations, "raw": r.raw,
                                   "hostile": flags})
    models = sorted({t.model for t in targets})
    table: dict[str, Any] = {
        "attributes": names, "scale": cfg.scale, "judges": [j.name for j in judges],
        "judge_settings": {j.name: {"spec": j.config.spec, "temperature": j.config.temperature, "seed": seed,
                                    "max_tokens": j.config.max_tokens,
                                    "template": EXPECTED_VERSION if cfg.scoring == "expected" else TEMPLATE_VERSION}
                           for j in judges},
        "scoring": cfg.scoring, "scoring_method": EXPECTED_METHOD if cfg.scoring == "expected" else
        "the score the judge writes (sampled text, JSON schema when the backend constrains)",
        "show_reference": cfg.show_reference, "automatic": auto_info, "n_targets": len(targets),
        "failed_generations": sum(1 for t in targets if t.error),
    }
    combined: dict[tuple[str, str], dict[str, float | None]] = {
        u: {**row, **{f"auto.{m}": v for m, v in auto.get(u, {}).items()}} for u, row in per_unit.items()}
    columns = names + [f"auto.{m}" for m in auto_info.get("metrics", [])]
    table["scores"] = {m: {a: estimate([combined[(m, t.unit)].get(a) for t in targets if t.model == m], stats, seed)
                           for a in columns} for m in models}
    table["per_judge"] = {j: {m: {a: mean_or_none([v[(m, u)].scores.get(a) for (mm, u) in v if mm == m]) for a in names}
                              for m in models} for j, v in verdicts.items()}
    table["unscored"] = {j: {a: sum(1 for r in v.values() if a in r.unscored) for a in names}
                         for j, v in verdicts.items()}
    table["unscored_reasons"] = {j: _top_reasons(v.values()) for j, v in verdicts.items()}
    table["agreement"] = {a: agreement_row(per_judge_scores(verdicts, a), seed=seed,
                                           units=sum(1 for u in per_unit if sum(1 for v in verdicts.values()
                                                                              if a in v.get(u, _EMPTY).scores) >= 2))
                          for a in names} if len(verdicts) >= 2 else {}
    table["agreement_p_adjust"] = adjust_rows(list(table["agreement"].values()), stats.p_adjust,
                                              key="alpha_p_value", out="alpha_p_adjusted")
    table["hostile"] = hostile
    table["ratings"] = ratings_table(combined, margin=cfg.margin, n_resamples=cfg.rating_resamples, seed=seed,
                                     confidence=stats.confidence)
    table["margin"] = cfg.margin
    warnings += rating_warnings(table["ratings"])
    if len(models) < 2 and targets:
        warnings.append("attribute ratings need 2+ models judged on the same items; this run has "
                        f"{len(models)}")
    for j, counts in table["unscored"].items():
        total = sum(counts.values())
        if total:
            warnings.append(f"judge {j}: {total} of {len(verdicts[j]) * len(names)} attribute scores unscored "
                            f"({'; '.join(table['unscored_reasons'][j][:2])})")
    if hostile:
        warnings.append(f"{len(hostile)} rationale(s) address the grader (flagged; scores taken from the judges' JSON)")
    if cfg.preferences:
        path = resolve_path(cfg.preferences, base_dir)
        table["preferences"], pref_warnings = score_preferences(path, judges, cfg, store, stats, seed=seed,
                                                                console=console)
        warnings += pref_warnings
    if own_judges:
        for j in judges:
            j.close()
    table["warnings"] = warnings
    table["judgements"] = judgements
    store.delete_scores(run_id, FAMILY)
    store.put_scores(run_id, scores)
    store.put_artefact(run_id, "attributes.json", "json", json.dumps(table, default=str))
    return table


def rebuild_ratings(store: Store, run_id: str, *, margin: float, n_resamples: int, seed: int,
                    confidence: float = 0.95) -> dict:
    """Recompute and store the per-attribute ratings of a run.

    Recompute the per-attribute ratings of a run (and of its preference records) from the stored scores, with
    another margin or number of bootstrap rounds, and store them in ``attributes.json``.
    """
    raw = store.artefact(run_id, "attributes.json")
    if raw is None:
        raise LookupError(f"run {run_id} has no attributes scores; run the attributes family first")
    table = json.loads(raw)
    per_unit: dict[tuple[str, str], dict[str, float | None]] = {}
    for s in store.scores(run_id, FAMILY):
        if s.item_id:
            per_unit.setdefault((s.model, s.item_id), {})[s.metric.removeprefix("judge.")] = s.value
    table["ratings"] = ratings_table(per_unit, margin=margin, n_resamples=n_resamples, seed=seed,
                                     confidence=confidence)
    table["margin"] = margin
    warnings = [w for w in table.get("warnings", []) if not w.startswith(RATING_WARNING_PREFIXES)]
    warnings += rating_warnings(table["ratings"])
    pref = table.get("preferences")
    if pref and pref.get("scores") is not None:
        pref["ratings"] = preference_ratings(pref["scores"], table["attributes"], margin=margin,
                                             n_resamples=n_resamples, seed=seed, confidence=confidence)
        human = pref["ratings"]["human"]
        pref["human_ratings"] = human["bradley_terry"] if human else None
        pref["human_elo"] = human["elo"] if human else None
        warnings += preference_warnings(pref["ratings"])
    table["warnings"] = warnings
    store.put_artefact(run_id, "attributes.json", "json", json.dumps(table, default=str))
    return table
