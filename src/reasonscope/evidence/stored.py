"""RACE over a stored run.

Read each model's labels and rationales (generated, or imported predictions)
from the store, run :func:`reasonscope.evidence.scoring.run_evidence` per model, and store the scores and
the ``evidence.json`` artefact (replacing the run's previous evidence scores).
"""

from __future__ import annotations

import json

from rich.console import Console

from ..shared_settings import StatsConfig
from ..storage.run_data import RunData
from ..storage.store import Store
from .settings import EvidenceConfig


def score_evidence(store: Store, run_id: str, ev: EvidenceConfig, stats: StatsConfig, data: RunData, *, seed: int = 0,
                   console: Console | None = None, models: list | None = None) -> dict:
    """RACE for each model that labelled the test items (generated or imported predictions).

    A failed generation (``stats.failed_generations``): ``exclude`` leaves the item out (it has no
    prediction; counted in ``llm.failed``); ``wrong`` keeps it as an unreadable prediction, wrong in
    the LLM's accuracy and left out of coverage.
    """
    from ..text.answers import extract_answer
    from .scoring import GENERATION_FAILED, Prediction, class_labels, parse_prediction, run_evidence

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
    readings = {model: relabel_by_likelihood(preds, model, models or [], test, labels, store)
                for model, preds in by_model.items()} if ev.label_reading == "likelihood" else {}
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
        t["llm"]["label_reading"] = ev.label_reading
        if ev.label_reading == "likelihood":
            reading = readings[model]
            t["llm"].update({k: v for k, v in reading.items() if k != "warning"})
            if reading.get("warning"):
                t["warnings"].append(reading["warning"])
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


def relabel_by_likelihood(preds: dict, model: str, models: list, test: list, labels: list[str], store: Store) -> dict:
    """Replace each prediction's label by the most likely label under ``model`` (:mod:`.likelihood`).

    The rationale stays. Returns what the table records: the method, how many labels changed, per item the
    renormalised label probabilities, or a warning when the model cannot be rebuilt (sampled labels kept).
    """
    from ..models.registry import create_model
    from ..scorers.cache import ScorerUnavailable
    from .likelihood import likelihood_labels
    from .scoring import GENERATION_FAILED, build_messages

    cfg = next((m for m in models if m.display_name == model), None)
    if cfg is None:
        return {"label_method": "sampled (fallback)",
                "warning": f"evidence, {model}: label_reading: likelihood needs the model of the plan, which this "
                           "run cannot rebuild (imported outputs?): its sampled labels are used"}
    lm = create_model(cfg)
    try:
        # a failed generation keeps its policy (left out, or wrong): it is not relabelled
        items = [it for it in test if it.id in preds and not (preds[it.id].reason or "").startswith(GENERATION_FAILED)]
        try:
            got = likelihood_labels(lm, items, labels, build_messages, store)
        except (NotImplementedError, ScorerUnavailable, RuntimeError, OSError) as err:
            return {"label_method": "sampled (fallback)",
                    "warning": f"evidence, {model}: label_reading: likelihood, but the log-probabilities are "
                               f"unavailable ({type(err).__name__}: {err}): its sampled labels are used"}
    finally:
        lm.close()
    changed = 0
    for item_id, r in got.items():
        pred = preds[item_id]
        if r["label"] is None:
            continue
        changed += pred.label != r["label"]
        pred.label = r["label"]
        pred.reason = None if pred.rationale else "no rationale"
    method = next(iter(got.values()))["method"] if got else None
    return {"label_method": method, "labels_changed": changed,
            "label_probabilities": {i: r["probabilities"] for i, r in got.items()}}
