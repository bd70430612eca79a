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

Reported, per method (REV, LAREV): the absolute score per variant (mean, 95% bootstrap CI over
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
import random
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..calls import complete_cached, planned_request
from ..config import InformationConfig, StatsConfig
from ..stats.bootstrap import bootstrap_mean, estimate, paired_difference
from ..stats.multiple import adjust_rows
from ..store import Store
from ..text.answers import normalize_text
from ..types import Item, Score, stable_hash
from .baseline import Baseline, label_text, rewrite_messages, rule_baseline_with_rule
from .defaults import PenaltyWeights, penalty_weights
from .leakage import is_substitute
from .variants import SEPARATIONS, VARIANTS, baseline_input, variant_texts

FAMILY = "information"
# the forms LLM rewrites are constrained to (models.structured): one non-empty line ending a sentence; one word
BASELINE_FORM = r"""[A-Za-z0-9"'(][^\n]{2,298}[.!?]"""
ANTONYM_FORM = r"[A-Za-z][A-Za-z-]{0,30}"


def make_baselines(items: list[Item], cfg: InformationConfig, store: Store, *, seed: int,
                   console: Console) -> dict[str, Baseline]:
    """item id -> baseline and the rule that built it (an ``llm`` rewrite that failed or came back empty is
    replaced by the rule baseline and marked ``llm failed -> rule``)."""
    if cfg.baseline == "rule":
        return {it.id: rule_baseline_with_rule(it) for it in items}
    if cfg.baseline == "column":
        missing = [it.id for it in items if cfg.baseline_column not in it.metadata]
        if missing:
            raise ValueError(f"baseline column {cfg.baseline_column!r} missing from items {missing[:5]}")
        return {it.id: Baseline(str(it.metadata[cfg.baseline_column]), "column") for it in items}
    from ..models.registry import create_model

    model = create_model(cfg.baseline_model)
    planned = {it.id: planned_request(model, "information", None, "baseline", 0,
                                      rewrite_messages(it.input, label_text(it)), seed, "baseline-rewrite-v1",
                                      {"task": "baseline"}, item_id=it.id, structured={"regex": BASELINE_FORM})
               for it in items}
    completions = complete_cached(model, list(planned.values()), store, console=console, label="baseline rewrite")
    out = {}
    for it in items:
        c = completions[planned[it.id].key]
        text = c.text.strip().splitlines()[0].strip() if c.text and c.text.strip() and not c.error else ""
        out[it.id] = Baseline(text, "llm") if text else Baseline(rule_baseline_with_rule(it).text, "llm failed -> rule")
    return out


def baseline_notes(baselines: dict[str, Baseline]) -> tuple[dict[str, int], list[str]]:
    """(rule -> count, warnings about the baselines that a stand-in rule built)."""
    counts: dict[str, int] = {}
    for b in baselines.values():
        counts[b.rule] = counts.get(b.rule, 0) + 1
    n, out = len(baselines), []
    if counts.get("llm failed -> rule"):
        out.append(f"{counts['llm failed -> rule']} of {n} llm baseline rewrites failed or came back empty: those "
                   "items use the rule baseline instead (rule 'llm failed -> rule' in the baselines table)")
    if counts.get("fallback"):
        out.append(f"{counts['fallback']} of {n} rule baselines use the fallback wording 'Asked \"<question>\", the "
                   "reply is <y>.' because the question rules could not rewrite the question (rule 'fallback')")
    return counts, out


def generated_rationales(items: list[Item], cfg: InformationConfig, store: Store, *, seed: int,
                         console: Console) -> dict[str, dict[str, str]]:
    """variant name -> item id -> rationale, from each generator model."""
    from ..models.registry import create_model

    out: dict[str, dict[str, str]] = {}
    for mc in cfg.generators:
        model = create_model(mc)
        if model.missing_requirements():
            console.print(f"[yellow]information: generator {mc.display_name} skipped")
            continue
        msgs = {it.id: [{"role": "user", "content": f"Question: {it.input}\nAnswer: {label_text(it)}\n"
                         "Explain in one or two sentences why this answer is right."}] for it in items}
        planned = {i: planned_request(model, "information", None, "rationale", 0, m, seed, "rationale-v1",
                                      {"task": "rationale"}, item_id=i) for i, m in msgs.items()}
        completions = complete_cached(model, list(planned.values()), store, console=console,
                                         label=f"rationales {model.name}")
        out[f"generated:{model.name}"] = {i: completions[p.key].text.strip() for i, p in planned.items()
                                         if not completions[p.key].error}
        model.close()
    return out


def split_train(items: list[Item], fraction: float, seed: int) -> tuple[list[Item], list[Item]]:
    order = list(items)
    random.Random(seed).shuffle(order)
    n_val = max(1, round(fraction * len(order))) if len(order) > 1 else 0
    return order[n_val:], order[:n_val]


def run_information(store: Store, run_id: str, cfg: InformationConfig, stats: StatsConfig, train_items: list[Item],
                    test_items: list[Item] | None, run_dir: Path, *, seed: int = 0,
                    console: Console | None = None) -> dict:
    from .evaluator import load_evaluator
    from .training import TrainSettings, train_erm

    console = console or Console(stderr=True)
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        console.print("[yellow]information:[/yellow] " + escape(message))

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
        for note in antonym_notes(larev_info["antonym_sources"]):
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
    absolute = {m: {v: estimate(list(per_item[m][v].values()), stats, seed) for v in per_item[m]} for m in per_item}
    separation = {m: separations(per_item[m], stats, seed) for m in per_item}
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
             "n_test": len(scored), "training": train_info, "environments": environments_info[:200],
             "settings": cfg.model_dump(mode="json", exclude={"train", "test"}), "warnings": warnings,
             "examples": [{"item": i.id, "baseline": baselines[i.id], "baseline_rule": built[i.id].rule,
                           "label": y[i.id], **{v: texts[v].get(i.id) for v in texts}} for i in scored[:20]]}
    store.delete_scores(run_id, FAMILY)
    store.put_scores(run_id, scores)
    store.put_artefact(run_id, "information.json", "json", json.dumps(table, default=str))
    return table


def baseline_only_accuracy(phi_base, ids: list[str], baselines: dict[str, str], y: dict[str, str],
                           candidates: list[str] | None, split: str) -> dict[str, Any]:
    """How well Phi_base predicts y from b alone on held-out items: accuracy (its most likely label), the
    mean p(y | b) and the mean log p(y | b) (sum over y's tokens)."""
    import math

    if not ids:
        return {"split": split, "n": 0, "accuracy": None, "mean_p_label": None, "mean_log_p_label": None}
    inputs = [baseline_input(baselines[i]) for i in ids]
    if candidates and all(y[i] in candidates for i in ids):
        cand = phi_base.candidate_log_likelihoods(inputs, candidates)
        preds = [candidates[max(range(len(candidates)), key=c.__getitem__)] for c in cand]
        ll = [c[candidates.index(y[i])] for c, i in zip(cand, ids, strict=True)]
    else:
        preds = phi_base.predict(inputs, candidates)
        ll = phi_base.log_likelihood(inputs, [y[i] for i in ids], reduction="sum")
    return {"split": split, "n": len(ids),
            "accuracy": sum(_same(p, y[i]) for p, i in zip(preds, ids, strict=True)) / len(ids),
            "mean_p_label": sum(math.exp(v) for v in ll) / len(ll), "mean_log_p_label": sum(ll) / len(ll)}


def baseline_leak_warning(baseline_only: dict[str, Any], threshold: float, larev_run: bool) -> str | None:
    """The warning for a baseline that gives the label away (None when Phi_base is below ``threshold``)."""
    acc = baseline_only.get("accuracy")
    if acc is None or acc < threshold:
        return None
    bound = -baseline_only["mean_log_p_label"]
    return (f"the baseline alone gives the label away: from b alone, Phi_base ranks the true label first for "
            f"{acc:.1%} of {baseline_only['n']} held-out {baseline_only['split']} items (mean p(y | b) = "
            f"{baseline_only['mean_p_label']:.3f}, mean log p(y | b) = {-bound:.3f} nats). The label is recoverable "
            "from b, so an evaluator need not read r: REV(r) = log p(y | r, b) - log p(y | b) is at most "
            f"{bound:.3g} nats on average, and what Phi gains over Phi_base can come from reading b with more "
            "confidence rather than from the rationale. REV scores and Gold - X separations then do not measure "
            "rationale quality. This is the failure of REV under baseline label leakage that the LAREV thesis "
            "reports on e-SNLI (Li, 2026, Table 5.10). "
            + ("Compare with the LAREV rows, whose Phi_LA is trained not to rely on b."
               if larev_run else "Run LAREV (methods: [rev, larev]), which trains the evaluator not to rely on b."))


def antonym_notes(sources: dict[str, int]) -> list[str]:
    """Warnings about antonym environments (E3) built from stand-ins instead of antonyms."""
    n = sum(sources.values())
    out = []
    random_n = sum(c for s, c in sources.items() if is_substitute(s))
    if random_n:
        out.append(f"{random_n} of {n} antonym environments (E3) hold a random word (of the same part of speech when "
                   "known), not an antonym: no antonym model gave one and WordNet had none. For those examples E3 "
                   "only breaks the leak term's link to the label instead of reversing it; set antonym_model for "
                   "real antonyms")
    failed = sum(c for s, c in sources.items() if s.endswith("(llm gave none)"))
    if failed:
        out.append(f"{failed} of {n} antonym requests to the antonym model gave no usable word: WordNet or a random "
                   "word was used instead")
    return out


def score_variants(scorers: dict[str, Any], phi_base, texts: dict[str, dict[str, str]], baselines: dict[str, str],
                   y: dict[str, str], ids: list[str], *, reduction: str = "sum", candidates: list[str] | None = None,
                   truncation: dict[str, dict[str, int]] | None = None) -> tuple[dict, dict, list[dict]]:
    """REV-style scores of every (method, variant, item): log p(y | r, b) under the method's evaluator minus
    log p(y | b) under Phi_base. Returns (method -> variant -> item -> score, method -> variant -> accuracy,
    one row per score with its log-probabilities and the evaluator's prediction). ``truncation``, when
    given, receives per variant the counts of :meth:`~reasonscope.information.evaluator.Evaluator.fit_inputs`."""
    base_ll = dict(zip(ids, phi_base.log_likelihood([baseline_input(baselines[i]) for i in ids], [y[i] for i in ids],
                                                    reduction=reduction), strict=True))
    per_item: dict[str, dict[str, dict[str, float]]] = {m: {} for m in scorers}
    accuracy: dict[str, dict[str, float]] = {m: {} for m in scorers}
    rows: list[dict] = []
    for method, ev in scorers.items():
        for variant, by_item in texts.items():
            have = [i for i in ids if i in by_item]
            inputs, counts = ev.fit_inputs([by_item[i] for i in have], [baselines[i] for i in have])
            if truncation is not None:
                truncation[variant] = counts  # the same for every method (one tokenizer)
            if candidates and reduction == "sum" and all(y[i] in candidates for i in have):
                # one pass over the candidates gives both the prediction and log p(y | r, b)
                cand = ev.candidate_log_likelihoods(inputs, candidates)
                ll = [c[candidates.index(y[i])] for c, i in zip(cand, have, strict=True)]
                preds = [candidates[max(range(len(candidates)), key=c.__getitem__)] for c in cand]
            else:
                ll = ev.log_likelihood(inputs, [y[i] for i in have], reduction=reduction)
                preds = ev.predict(inputs, candidates)
            accuracy[method][variant] = sum(_same(p, y[i]) for p, i in zip(preds, have, strict=True)) / max(1, len(have))
            per_item[method][variant] = {i: v - base_ll[i] for i, v in zip(have, ll, strict=True)}
            rows += [{"method": method, "variant": variant, "item": i, "score": v - base_ll[i], "log_p_phi": v,
                      "log_p_base": base_ll[i], "prediction": p, "rationale": by_item[i], "baseline": baselines[i],
                      "label": y[i], "reduction": reduction} for i, v, p in zip(have, ll, preds, strict=True)]
    return per_item, accuracy, rows


def model_folders(root: Path, cfg: InformationConfig, tr: list[Item], va: list[Item], baselines: dict[str, str],
                  seed: int, weights: PenaltyWeights | None = None) -> dict[str, Path]:
    """``root/<model>-<fingerprint>`` per model: the fingerprint hashes everything that determines the
    trained weights (evaluator, data, baselines, split, seed, input budget and that model's settings, for
    Phi_LA the penalty weights actually used), so a finished or interrupted model is resumed only when
    nothing changed, and a changed setting trains a new one."""
    data = stable_hash([[i.id, i.rationale, baselines[i.id], str(i.target)] for i in tr] + ["|"] +
                       [[i.id, i.rationale, baselines[i.id], str(i.target)] for i in va])
    common = {"evaluator": cfg.evaluator, "seed": seed, "data": data, "lr": cfg.lr,
              "mixed_precision": cfg.mixed_precision, "max_input_tokens": cfg.max_input_tokens}
    erm = {**common, "epochs": cfg.epochs, "batch": cfg.batch_size}
    probe = {**erm, "probe_epochs": cfg.probe_epochs, "probe_batch": cfg.probe_batch_size, "ig": cfg.ig_steps,
             "antonym_model": cfg.antonym_model.spec if cfg.antonym_model else None}
    weights = weights or PenaltyWeights(cfg.lambda_irm or 0.0, cfg.lambda_probe or 0.0, "plan")
    la = {**probe, "larev_epochs": cfg.larev_epochs, "lambda_irm": weights.lambda_irm,
          "lambda_probe": weights.lambda_probe}
    return {name: root / f"{name}-{stable_hash({'model': name, **spec}, 10)}"
            for name, spec in (("phi_base", erm), ("phi", erm), ("probe", probe), ("phi_la", la))}


def collapse_warning(phi_la, la_val: float, phi_val: float) -> str | None:
    """A warning when Phi_LA's validation loss is near that of uniform logits (log V per token): the
    IRM penalty can be lowered fastest by flattening the logits, which makes every LAREV score the same."""
    import math

    uniform = math.log(len(phi_la.tokenizer))
    if la_val >= 0.75 * uniform and la_val > phi_val + 1.0:
        return (f"Phi_LA collapsed: its validation loss {la_val:.2f} per token is near uniform logits' "
                f"{uniform:.2f} (Phi: {phi_val:.2f}); the IRM penalty dominated training, so LAREV scores are not "
                "meaningful. Lower lambda_irm or train longer (the warm-up is the first third of the steps); "
                "an evaluator whose output head starts untrained (embedded-minilm-ed) is most exposed.")
    return None


def _same(pred: str, gold: str) -> bool:
    return normalize_text(pred) == normalize_text(gold)


def _result(res) -> dict:
    return {"best_epoch": res.best_epoch, "best_val_loss": res.best_val, "epochs": res.epochs_run,
            "resumed_from_epoch": res.resumed_from, "examples_per_s": res.examples_per_s, "history": res.history,
            "folder": str(res.folder / "best")}


def separations(per_item: dict[str, dict[str, float]], stats: StatsConfig, seed: int) -> dict[str, dict]:
    """Gold - X for the three degraded variants (paired by item) and their SUM."""
    out: dict[str, dict] = {}
    gold = per_item.get("gold", {})
    sums: dict[str, float] = {}
    for a, b in SEPARATIONS:
        other = per_item.get(b, {})
        ids = [i for i in gold if i in other]
        d = paired_difference([gold[i] for i in ids], [other[i] for i in ids], confidence=stats.confidence,
                              n_resamples=stats.n_resamples, seed=seed, n_permutations=stats.n_permutations,
                              method=stats.method)
        out[f"{a}-{b}"] = {"value": d.value, "low": d.low, "high": d.high, "n": d.n, "p_value": d.p_value,
                           "test": d.test_label, "null": (d.test or {}).get("null")}
        for i in ids:
            sums[i] = sums.get(i, 0.0) + gold[i] - other[i]
    complete = [i for i in sums if all(i in per_item.get(b, {}) for _, b in SEPARATIONS)]
    s = bootstrap_mean([sums[i] for i in complete], confidence=stats.confidence, n_resamples=stats.n_resamples,
                       seed=seed)
    out["SUM"] = {"value": s.value, "low": s.low, "high": s.high, "n": s.n, "p_value": None}
    return out


def train_larev_models(cfg: InformationConfig, phi_base, phi, tr: list[Item], va: list[Item], baselines: dict[str, str],
                       y: dict[str, str], folders: dict[str, Path], store: Store, weights: PenaltyWeights, *,
                       seed: int, console: Console):
    """Leakage terms (IG on Phi_base, batched and cached), environments, probe psi, Phi_LA."""
    from .ig_cache import AttributionCache
    from .leakage import AntonymSource, content_words, environments, leakage_attributions, leakage_term

    try:
        import captum  # noqa: F401
    except ImportError:
        raise RuntimeError("LAREV needs captum for integrated gradients: pip install 'reasonscope[information]' "
                           "(or methods: [rev])") from None
    from .training import LarevExample, TrainSettings, train_larev, train_probe

    mask = phi.tokenizer.mask_token or "<mask>"
    shift = len(baseline_input(""))
    cache = AttributionCache(folders["phi_base"].parent / "ig-cache.sqlite")
    try:
        attributions = leakage_attributions(phi_base, [baseline_input(baselines[it.id]) for it in tr + va],
                                            [y[it.id] for it in tr + va], n_steps=cfg.ig_steps,
                                            batch_size=cfg.ig_batch_size, cache=cache,
                                            fingerprint=folders["phi_base"].name, console=console,
                                            label="integrated gradients on Phi_base")
    finally:
        cache.close()
    terms = {}
    for it, (offsets, attr) in zip(tr + va, attributions, strict=True):
        terms[it.id] = leakage_term(baselines[it.id], [(max(0, s - shift), max(0, e - shift)) if e > shift
                                                       else (0, 0) for s, e in offsets], attr)
    asked = [(t.word, baselines[i]) for i, t in terms.items() if t is not None and not t.word.isdigit()]
    antonym = AntonymSource(content_words(list(baselines.values())), _llm_antonyms(cfg, asked, store, seed, console),
                            seed)
    examples, masked_train, env_info = [], [], []
    train_ids = {it.id for it in tr}
    for it in tr + va:
        term = terms[it.id]
        envs, prov = environments(baselines[it.id], term, mask, antonym, it.id)
        env_info.append({"item": it.id, "baseline": baselines[it.id], **prov, **{f"env_{k}": v for k, v in envs.items()},
                         "attribution": term.attribution if term else None})
        if it.id in train_ids:
            env_inputs, _ = phi.fit_inputs([it.rationale] * 3, [envs[e] for e in ("original", "mask", "antonym")])
            examples.append(LarevExample(env_inputs, baseline_input(envs["mask"]), y[it.id]))
            masked_train.append(baseline_input(envs["mask"]))
    masked_val = [baseline_input(e["env_mask"]) for e in env_info[len(tr):]]
    probe_settings = TrainSettings(cfg.probe_epochs, cfg.lr, cfg.probe_batch_size, seed, cfg.mixed_precision)
    psi = train_probe(phi, masked_train, [y[i.id] for i in tr], masked_val, [y[i.id] for i in va], probe_settings,
                      folders["probe"], console=console)
    la_settings = TrainSettings(cfg.larev_epochs, cfg.lr, 1, seed, cfg.mixed_precision)
    val_inputs, _ = phi.fit_inputs([i.rationale for i in va], [baselines[i.id] for i in va])
    phi_la, res = train_larev(cfg.evaluator, examples, psi, val_inputs, [y[i.id] for i in va], la_settings,
                              folders["phi_la"], lambda_irm=weights.lambda_irm, lambda_probe=weights.lambda_probe,
                              console=console, max_input_tokens=cfg.max_input_tokens)
    sources: dict[str, int] = {}
    for e in env_info:
        sources[e.get("antonym_source", "none")] = sources.get(e.get("antonym_source", "none"), 0) + 1
    probe_state = json.loads((folders["probe"] / "state.json").read_text())
    return phi_la, {"probe": {"best_val_loss": probe_state["best_val"], "best_epoch": probe_state["best_epoch"],
                              "examples_per_s": probe_state.get("examples_per_s")},
                    "phi_la": _result(res), "antonym_sources": sources}, env_info


def _llm_antonyms(cfg: InformationConfig, asked: list[tuple[str, str]], store: Store, seed: int, console: Console):
    """(word, sentence) -> the provider's one-word antonym (None when unreadable), all asked in one cached pass;
    None without an antonym model."""
    if cfg.antonym_model is None or not asked:
        return None
    from ..models.registry import create_model

    model = create_model(cfg.antonym_model)
    if model.missing_requirements():
        return None
    planned = {(word, sentence): planned_request(
        model, "information", None, "antonym", 0,
        [{"role": "user", "content": f"Sentence: {sentence}\nGive one word with the opposite meaning of '{word}' that "
          "fits the sentence. Reply with the word only."}], seed, "antonym-v1", {"task": "antonym"}, item_id=word,
        structured={"regex": ANTONYM_FORM})
        for word, sentence in asked}
    completions = complete_cached(model, list(planned.values()), store, console=console, label="antonyms")
    table: dict[tuple[str, str], str | None] = {}
    for pair, p in planned.items():
        c = completions[p.key]
        words = c.text.strip().split()
        table[pair] = words[0].strip(".,;:'\"") if words and not c.error else None
    model.close()
    return lambda word, sentence: table.get((word, sentence))
