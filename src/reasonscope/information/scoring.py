"""The information family: REV and LAREV.

REV (Chen et al., 2023, *REV: Information-Theoretic Evaluation of Free-Text Rationales*): the
conditional V-information of a rationale r over a baseline b for the label y,

    REV(r) = log p(y | r, b) under Phi  -  log p(y | b) under Phi_base

with log p the **sum** over y's tokens (the documents' sequence log-likelihood; ``reduction: mean``
divides each term by the number of y's tokens instead), y tokenised the same way for both models.
Higher = the rationale adds more label information than b; a model that ignores r (Phi = Phi_base)
gives 0. LAREV (Li, 2026, *LAREV: Leakage-Aware Rationale Evaluation with Conditional
V-information*) is the same difference with the leakage-aware Phi_LA in place of Phi
(:mod:`reasonscope.information.training`, :mod:`reasonscope.information.leakage`).

Pipeline: baselines for every item (:mod:`reasonscope.information.baseline`); the training items
are split into train / validation (``val_fraction``, seeded); Phi_base and Phi are trained (ERM),
then, for LAREV, integrated gradients on Phi_base locate each training baseline's leakage term,
the three environments and the masked baseline are built, the probe psi is trained from Phi, and
Phi_LA from the pretrained backbone with the penalty weights of
:mod:`reasonscope.information.defaults`. Every model is saved under
``RUN_DIR/information/<name>-<fingerprint>/best`` (:func:`model_folders`) and training resumes (see
training). Test items are scored on the variants of :mod:`reasonscope.information.variants` and on any
generated rationales.

Reported, per method (REV, LAREV): the absolute score per variant (mean, 95% CI over
items), the separation table (Gold - Leaky, Gold - Gold-Leaky, Gold - Vacuous: mean paired
differences with paired-bootstrap CIs and the paired test of :func:`reasonscope.stats.bootstrap.paired_difference`,
and SUM = the sum of the three, its CI from the bootstrap of the per-item sum), the evaluator's
accuracy per variant (the most likely label among the training labels when there are at most 20,
else greedy decoding, compared with y), per-item scores, and the training throughput of every model.
Alongside, what could make the numbers mean less than they seem:

* **baseline-only accuracy** of Phi_base on held-out items (the test items, else the validation
  split) and the mean p(y | b). When Phi_base alone ranks the true label first for at least
  ``baseline_warn_accuracy`` (0.95) of them, b already gives the label away and REV cannot tell what
  r adds from how well an evaluator reads b: the run warns (CLI, report) and points at LAREV;
* **substitutions**: baselines built by a stand-in rule (an ``llm`` rewrite that failed and was
  replaced by the rule baseline, a question the rules could only wrap with the fallback wording) and
  antonym environments that hold a random word instead of an antonym, each counted and warned about;
* **truncation**: inputs over ``max_input_tokens`` whose rationale was shortened (b is never cut);
* the penalty weights used and where they came from (plan or dataset default).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from ..scorers.cache import ScoreCache
from ..shared_settings import StatsConfig
from ..stats.bootstrap import estimate
from ..stats.multiple import adjust_rows
from ..storage.store import Store
from ..types import Item, Score, stable_hash
from .baseline import label_text
from .cached_scores import CachedEvaluator
from .defaults import PenaltyWeights, penalty_weights
from .inputs import baseline_notes, generated_rationales, make_baselines, split_train
from .larev import _llm_antonyms, train_larev_models  # noqa: F401  (_llm_antonyms: imported from here by tests)
from .leakage import is_substitute
from .settings import InformationConfig
from .tables import (
    _result,
    antonym_notes,
    baseline_leak_warning,
    baseline_only_accuracy,
    collapse_warning,
    reads_baseline_warning,
    score_variants,
    separations,
)
from .variants import VARIANTS, baseline_input, variant_texts

FAMILY = "information"
_FOLDER_OF = {"rev": "phi", "larev": "phi_la"}  # the trained model behind each method
__all__ = ["FAMILY", "antonym_notes", "baseline_leak_warning", "baseline_notes", "baseline_only_accuracy",
           "collapse_warning", "generated_rationales", "make_baselines", "model_folders", "run_information",
           "score_variants", "separations", "split_train", "train_larev_models"]


def run_information(store: Store, run_id: str, cfg: InformationConfig, stats: StatsConfig, train_items: list[Item],
                    test_items: list[Item] | None, run_dir: Path, *, seed: int = 0,
                    console: Console | None = None) -> dict:
    """Train the information family's evaluators and score the test items; returns the family's table.

    Builds the baselines, trains Phi_base and Phi (and for LAREV the probe and Phi_LA), scores every
    rationale variant and generated rationale of the test items, and stores the scores and
    ``information.json`` (module docstring).

    Raises:
        ValueError: The training split has fewer than 2 items with gold rationales.
    """
    from .evaluator import load_evaluator
    from .training import TrainSettings, resolve_mixed_precision, train_erm

    console = console or Console(stderr=True)
    precision_setting = cfg.mixed_precision
    # auto: the precision it resolves to on this host enters the models' fingerprints and the recorded settings
    cfg = cfg.model_copy(update={"mixed_precision": resolve_mixed_precision(cfg.mixed_precision)})
    warnings: list[str] = []

    def warn(message: str) -> None:  # printed once, with the family's tables at the end of the run
        warnings.append(message)

    # Train and test items may share ids (two splits of one generator, or of one file): every table below is
    # keyed by split-qualified ids, "train:<id>" and "test:<id>".
    trainable = [it.model_copy(update={"id": f"train:{it.id}"}) for it in train_items if it.rationale]
    if len(trainable) < len(train_items):
        warnings.append(f"{len(train_items) - len(trainable)} training items have no gold rationale: left out")
    if len(trainable) < 2:
        raise ValueError("information: the training split needs 2+ items with gold rationales")
    scored = [it.model_copy(update={"id": f"test:{it.id}"}) for it in test_items or [] if it.rationale]
    if len(scored) < len(test_items or []):
        warnings.append(f"{len(test_items) - len(scored)} test items have no gold rationale: not scored")
    built = make_baselines(trainable + scored, cfg, store, seed=seed, console=console)
    baselines = {i: b.text for i, b in built.items()}
    baseline_rules, notes = baseline_notes(built)
    for note in notes:
        warn(note)
    weights = penalty_weights(cfg, train_items)
    tr, va = split_train(trainable, cfg.val_fraction, seed)
    y = {it.id: label_text(it) for it in trainable + scored}
    folders = model_folders(Path(run_dir) / "information", cfg, tr, va, baselines, seed, weights)
    base_settings = TrainSettings(cfg.epochs, cfg.lr, cfg.batch_size, seed, cfg.mixed_precision)
    train_info: dict[str, Any] = {}
    truncation: dict[str, Any] = {"max_input_tokens": cfg.max_input_tokens}

    phi_base = load_evaluator(cfg.evaluator, seed=seed)
    phi_base.max_input_tokens = cfg.max_input_tokens
    over = sum(n > cfg.max_input_tokens for n in phi_base.input_lengths(
        [baseline_input(b) for b in baselines.values()]))
    truncation["baseline_over_limit"] = over
    if over:
        warn(f"{over} of {len(baselines)} baselines are longer than {cfg.max_input_tokens} tokens on their own: "
             "their end is cut in every input (raise max_input_tokens)")
    res = train_erm(phi_base, [baseline_input(baselines[i.id]) for i in tr], [y[i.id] for i in tr],
                    [baseline_input(baselines[i.id]) for i in va], [y[i.id] for i in va], base_settings,
                    folders["phi_base"], label="Phi_base (b -> y)", console=console)
    train_info["phi_base"] = _result(res)
    phi = load_evaluator(cfg.evaluator, seed=seed)
    phi.max_input_tokens = cfg.max_input_tokens
    r_inputs, cut_tr = phi.fit_inputs([i.rationale for i in tr], [baselines[i.id] for i in tr])
    r_val, cut_va = phi.fit_inputs([i.rationale for i in va], [baselines[i.id] for i in va])
    truncation["training"] = {k: cut_tr[k] + cut_va[k] for k in cut_tr}
    res = train_erm(phi, r_inputs, [y[i.id] for i in tr], r_val, [y[i.id] for i in va], base_settings,
                    folders["phi"], label="Phi (r + b -> y)", console=console)
    train_info["phi"] = _result(res)
    scorers = {"rev": phi}
    environments_info: list[dict] = []
    if "larev" in cfg.methods:
        phi_la, larev_info, environments_info = train_larev_models(
            cfg, phi_base, phi, tr, va, baselines, y, folders, store, weights, seed=seed, console=console)
        scorers["larev"] = phi_la
        train_info.update(larev_info)
        for note in antonym_notes(larev_info["antonym_sources"],
                                  antonym_model_error=larev_info.get("antonym_model_error"),
                                  wordnet=larev_info.get("wordnet")):
            warn(note)
        why = collapse_warning(phi_la, larev_info["phi_la"]["best_val_loss"], train_info["phi"]["best_val_loss"])
        if why:
            warn(why)
    if "rev" not in cfg.methods:
        scorers.pop("rev")

    test_name = cfg.test.name if cfg.test is not None else "test"
    labels = sorted({y[i.id] for i in trainable})
    candidates = labels if len(labels) <= 20 else None
    texts: dict[str, dict[str, str]] = {v: {} for v in VARIANTS}
    for it in scored:
        for v, t in variant_texts(it.rationale, y[it.id], baselines[it.id]).items():
            texts[v][it.id] = t
    texts.update(generated_rationales(scored, cfg, store, seed=seed, console=console))
    ids = [i.id for i in scored]
    held_out = ids or [i.id for i in va]
    # scores of the trained evaluators are read back from the store on a re-run (cached_scores)
    cache = ScoreCache(store)
    phi_base = CachedEvaluator(phi_base, folders["phi_base"] / "best", cache, label="Phi_base")
    scorers = {m: CachedEvaluator(ev, folders[_FOLDER_OF[m]] / "best", cache, label=_FOLDER_OF[m])
               for m, ev in scorers.items()}
    baseline_only = baseline_only_accuracy(phi_base, held_out, baselines, y, candidates,
                                           "test" if ids else "validation")
    why = baseline_leak_warning(baseline_only, cfg.baseline_warn_accuracy, "larev" in cfg.methods)
    if why:
        warn(why)
    truncation["scoring"] = {}
    with console.status("information: scoring rationale variants"):
        per_item, accuracy, rows = score_variants(scorers, phi_base, texts, baselines, y, ids,
                                                  reduction=cfg.reduction, candidates=candidates,
                                                  truncation=truncation["scoring"])
    cut = sum(c["rationale_truncated"] for c in [truncation["training"], *truncation["scoring"].values()])
    total = sum(c["inputs"] for c in [truncation["training"], *truncation["scoring"].values()])
    truncation["rationale_truncated"], truncation["inputs"] = cut, total
    if cut:
        warn(f"{cut} of {total} r + b inputs were longer than {cfg.max_input_tokens} tokens: their rationale was "
             "shortened to fit (b is never cut); see the truncation table")
    scores = [Score(family=FAMILY, metric=r.pop("method"), model=r.pop("variant"),
                    item_id=f"{test_name}/{r.pop('item').removeprefix('test:')}", value=r.pop("score"), details=r)
              for r in rows]
    # pairs that share a premise (e-SNLI) are not independent: intervals are clustered by premise
    premise = {it.id: str(it.metadata["premise"]) for it in scored if "premise" in it.metadata}
    clusters = premise if premise and len(premise) == len(scored) and len(set(premise.values())) < len(scored) \
        else None
    absolute = {m: {v: estimate(list(per_item[m][v].values()), stats, seed, bounds=None,
                                clusters=[clusters[i] for i in per_item[m][v]] if clusters else None)
                    for v in per_item[m]}
                for m in per_item}  # log-probability differences: no known range
    separation = {m: separations(per_item[m], stats, seed, clusters) for m in per_item}
    for m in per_item:
        why = reads_baseline_warning(m, accuracy[m], len(ids))
        if why:
            warn(why)
    p_adjust = adjust_rows([row for sep in separation.values() for row in sep.values()], stats.p_adjust)
    table = {"methods": list(scorers), "evaluator": cfg.evaluator, "reduction": cfg.reduction,
             "baseline": cfg.baseline, "absolute": absolute, "separation": separation, "p_adjust": p_adjust,
             "accuracy": accuracy,
             "baseline_accuracy": baseline_only["accuracy"] if ids else None, "baseline_only": baseline_only,
             "baseline_rules": baseline_rules, "truncation": truncation,
             "substitutes": sorted({"fallback", "llm failed -> rule"} & set(baseline_rules)) + sorted(
                 s for s in train_info.get("antonym_sources", {}) if is_substitute(s) or s.endswith("(llm gave none)")),
             "penalties": {"lambda_irm": weights.lambda_irm, "lambda_probe": weights.lambda_probe,
                           "source": weights.source} if "larev" in cfg.methods else None,
             "labels": candidates, "n_train": len(tr), "n_val": len(va),
             "n_test": len(scored), "n_clusters": len(set(clusters.values())) if clusters else len(scored),
             "clustered_by": "premise" if clusters else None, "per_item": per_item, "training": train_info, "environments": environments_info[:200],
             "settings": {**cfg.model_dump(mode="json", exclude={"train", "test"}),
                          "mixed_precision_setting": precision_setting}, "warnings": warnings,
             "examples": [{"item": i.id, "baseline": baselines[i.id], "baseline_rule": built[i.id].rule,
                           "label": y[i.id], **{v: texts[v].get(i.id) for v in texts}} for i in scored[:20]]}
    store.delete_scores(run_id, FAMILY)
    store.put_scores(run_id, scores)
    store.put_artefact(run_id, "information.json", "json", json.dumps(table, default=str))
    return table


def model_folders(root: Path, cfg: InformationConfig, tr: list[Item], va: list[Item], baselines: dict[str, str],
                  seed: int, weights: PenaltyWeights | None = None) -> dict[str, Path]:
    """The training folder ``root/<model>-<fingerprint>`` of each model.

    The fingerprint hashes everything that determines the trained weights (evaluator, data, baselines,
    split, seed, input budget and that model's settings, for Phi_LA the penalty weights actually used and
    the WordNet folder's files), so a finished or interrupted model is resumed only when nothing changed,
    and a changed setting trains a new one.
    """
    data = stable_hash([[i.id, i.rationale, baselines[i.id], str(i.target)] for i in tr] + ["|"] +
                       [[i.id, i.rationale, baselines[i.id], str(i.target)] for i in va])
    common = {"evaluator": cfg.evaluator, "seed": seed, "data": data, "lr": cfg.lr,
              "mixed_precision": cfg.mixed_precision, "max_input_tokens": cfg.max_input_tokens}
    erm = {**common, "epochs": cfg.epochs, "batch": cfg.batch_size}
    probe = {**erm, "probe_epochs": cfg.probe_epochs, "probe_batch": cfg.probe_batch_size, "ig": cfg.ig_steps,
             "antonym_model": cfg.antonym_model.spec if cfg.antonym_model else None, "leak_terms": cfg.leak_terms}
    weights = weights or PenaltyWeights(cfg.lambda_irm or 0.0, cfg.lambda_probe or 0.0, "plan")
    la = {**probe, "larev_epochs": cfg.larev_epochs, "lambda_irm": weights.lambda_irm,
          "lambda_probe": weights.lambda_probe, "larev_init": cfg.larev_init}
    from .training import LAREV_PRECISION

    if cfg.mixed_precision != LAREV_PRECISION:  # Phi_LA's own precision (float32 keys stay as they were)
        la["larev_precision"] = LAREV_PRECISION
    from .wordnet import fingerprint

    antonyms = fingerprint(cfg.wordnet)  # the antonym environment's words (none / nltk: absent, as before)
    if antonyms is not None:
        la["wordnet"] = antonyms
    return {name: root / f"{name}-{stable_hash({'model': name, **spec}, 10)}"
            for name, spec in (("phi_base", erm), ("phi", erm), ("probe", probe), ("phi_la", la))}
