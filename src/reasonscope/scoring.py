"""Scoring a stored run with the families enabled in its plan (behavior, evidence, attributes). Reads
the store and calls no generator: the NLI judge, similarity models and attribute judges are scoring
models, and the judges' calls go through the store's request cache like every call (a re-score asks
nothing twice). Results replace the family's previous scores for the run, so re-scoring is idempotent.
The attack and information families run from the runner (they generate or train themselves).

:func:`prepare_scorers` wraps the scoring models in the store's score cache without loading them;
each loads on its first cache miss, or earlier through :meth:`ScoringModels.warm`, which the runner
calls in a background thread while generation runs (loading then overlaps with waiting for the
provider; a run with nothing to generate loads nothing ahead).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from .config import FamiliesConfig, StatsConfig
from .results import RunData, load_run_data
from .store import Store


@dataclass
class ScoringModels:
    nli: Any = None
    nli_reason: str | None = None
    sim: Any = None
    sim_reason: str | None = None
    preload_similarity: bool = True

    def warm(self) -> None:
        """Load the scoring models now (the runner calls this in a background thread once generation has
        something to send, so loading overlaps with waiting for the provider); a failure is left for
        scoring to report."""
        from .scorers.cache import ScorerUnavailable

        for scorer in (self.nli, self.sim if self.preload_similarity else None):
            if scorer is not None and hasattr(scorer, "scorer"):
                try:
                    scorer.scorer()
                except ScorerUnavailable:
                    pass


def prepare_scorers(families: FamiliesConfig | Any, store: Store | None = None) -> ScoringModels:
    """The scoring models the families need, behind the store's score cache (:mod:`reasonscope.scorers.cache`).
    Nothing is loaded here: each model loads on its first cache miss, so a re-run, or a metric with
    nothing to score (SS with one sample per item), loads no model at all."""
    out = ScoringModels()
    if families.behavior is not None:
        from .scorers.cache import ScoreCache
        from .scorers.nli import cached_nli
        from .scorers.similarity import cached_similarity

        cache = ScoreCache(store) if store is not None else None
        out.nli, out.nli_reason = cached_nli(families.behavior.nli, cache, label="behavior LS: NLI")
        out.sim = cached_similarity(families.behavior.similarity, cache, label="behavior SS")
        out.preload_similarity = families.behavior.samples >= 2
    return out


def score_run(store: Store, run_id: str, families: FamiliesConfig | Any, stats: StatsConfig, *, seed: int = 0,
              temperatures: dict[str, float] | None = None, console: Console | None = None,
              executor: str = "local", data: RunData | None = None, models: ScoringModels | None = None,
              base_dir=None) -> dict:
    console = console or Console(stderr=True)
    data = data or load_run_data(store, run_id)
    out: dict = {}
    behavior = families.behavior
    if behavior is not None and data.generations:
        from .behavior.family import score_behavior

        if models is None:
            models = prepare_scorers(families, store)
        if executor != "local":
            from .executors import distribute

            models = distribute(models, families, executor)
        for reason in (models.nli_reason, models.sim_reason):
            if reason:
                console.print("[yellow]behavior: " + escape(reason))
        scores, tables = score_behavior(data, behavior, stats, seed=seed, temperatures=temperatures,
                                        nli=models.nli, nli_reason=models.nli_reason, sim=models.sim,
                                        sim_reason=models.sim_reason)
        tables["backends"]["executor"] = executor
        store.delete_scores(run_id, "behavior")
        store.put_scores(run_id, scores)
        store.put_artefact(run_id, "behavior.json", "json", json.dumps(tables, default=str))
        out["behavior"] = tables
    evidence = families.evidence
    if evidence is not None:
        out["evidence"] = score_evidence(store, run_id, evidence, stats, data, seed=seed, console=console)
    attributes = getattr(families, "attributes", None)
    if attributes is not None:
        from .attributes.family import score_attributes

        out["attributes"] = score_attributes(store, run_id, attributes, stats, data, seed=seed, console=console,
                                             base_dir=base_dir)
    return out


def score_evidence(store: Store, run_id: str, ev, stats: StatsConfig, data: RunData, *, seed: int = 0,
                   console: Console | None = None) -> dict:
    """RACE for each model that labelled the test items (generated or imported predictions).

    A failed generation (``stats.failed_generations``): ``exclude`` leaves the item out (it has no
    prediction; counted in ``llm.failed``); ``wrong`` keeps it as an unreadable prediction, wrong in
    the LLM's accuracy and left out of coverage."""
    from .evidence.family import GENERATION_FAILED, Prediction, class_labels, parse_prediction, run_evidence
    from .text.answers import extract_answer

    train = store.items(ev.train.name).get(ev.train.name, [])
    test = store.items(ev.test.name).get(ev.test.name, [])
    labels = class_labels(train)
    by_model: dict[str, dict] = {}
    failed: dict[str, int] = {}
    prefix = f"{ev.test.name}/"
    ours = [g for g in data.generations if g.item_id.startswith(prefix)]
    dedicated = [g for g in ours if g.variant == "evidence"]
    for g in dedicated or [g for g in ours if g.variant == "original" and g.sample == 0]:
        pred = parse_prediction(g.raw_text, labels)
        if not dedicated and pred.label is None:  # imported outputs: answer line + rationale, not JSON
            ext = extract_answer(g.raw_text, "label", choices=labels)
            pred = Prediction(ext.answer, ext.trace, ext.reason if ext.answer is None else None, g.raw_text)
        preds = by_model.setdefault(g.model, {})
        if g.error:
            failed[g.model] = failed.get(g.model, 0) + 1
            if stats.failed_generations == "exclude":
                continue
            pred.label, pred.reason = None, f"{GENERATION_FAILED}: {g.error}"
        preds[g.item_id[len(prefix):]] = pred
    tables: dict = {}
    scores = []
    for model, preds in by_model.items():
        with (console or Console(stderr=True)).status(f"evidence: {model}"):
            s, t = run_evidence(train, test, preds, k=ev.k, target=ev.target, matchers=tuple(ev.matchers),
                                delta=ev.delta, delta_chars=ev.delta_chars,
                                stop_words=ev.stop_words, text_fields=ev.text_fields,
                                min_df=ev.min_df, max_features=ev.max_features, C=ev.C,
                                sweep_k=tuple(ev.sweep_k), sweep_delta=tuple(ev.sweep_delta),
                                sweep_delta_chars=tuple(ev.sweep_delta_chars),
                                confidence=stats.confidence, n_resamples=stats.n_resamples,
                                n_permutations=ev.n_permutations, p_adjust=stats.p_adjust, seed=seed, model=model)
        n_failed = failed.get(model, 0)
        t["llm"]["failed"] = n_failed
        t["settings"]["failed_generations"] = stats.failed_generations
        if n_failed:
            t["warnings"].append(f"evidence, {model}: {n_failed} failed generations "
                                 + ("left out (stats.failed_generations: exclude)"
                                    if stats.failed_generations == "exclude" else
                                    "counted as wrong in accuracy and left out of coverage "
                                    "(stats.failed_generations: wrong)"))
        scores += s
        tables[model] = t
    store.delete_scores(run_id, "evidence")
    store.put_scores(run_id, scores)
    store.put_artefact(run_id, "evidence.json", "json", json.dumps(tables, default=str))
    return tables
