"""The information family's tables: REV scores of the rationale variants, separations, baseline checks.

Separations (Gold - X, SUM) come with paired bootstrap CIs and Holm-adjusted p-values; the baseline-only
accuracy and the warnings are built on them.
"""

from __future__ import annotations

from typing import Any

from ..shared_settings import StatsConfig
from ..stats.bootstrap import bootstrap_mean, paired_difference
from ..text.answers import normalize_text
from .leakage import is_substitute
from .variants import SEPARATIONS, baseline_input


def baseline_only_accuracy(phi_base, ids: list[str], baselines: dict[str, str], y: dict[str, str],
                           candidates: list[str] | None, split: str) -> dict[str, Any]:
    """How well Phi_base predicts y from b alone on held-out items.

    Returns:
        ``split``, ``n``, ``accuracy`` (share of items whose most likely label is y, in [0, 1]; high means
        the baseline gives the label away, so lower is better for REV to mean anything), ``mean_p_label``
        (mean p(y | b), in [0, 1]) and ``mean_log_p_label`` (mean log p(y | b), sum over y's tokens, <= 0).
        The three values are None when there is no item.
    """
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


def antonym_notes(sources: dict[str, int], *, antonym_model_error: str | None = None,
                  wordnet: str | None = None) -> list[str]:
    """Warnings about antonym environments (E3) built from stand-ins instead of antonyms.

    Args:
        sources: antonym source -> number of examples (``training.antonym_sources``).
        antonym_model_error: why the configured antonym model could not be used (None: it could, or none
            was set).
        wordnet: why WordNet could not be read (None: it could, or it was not checked).
    """
    n = sum(sources.values())
    out = []
    if antonym_model_error:
        out.append(f"{antonym_model_error}: no antonym came from it")
    random_n = sum(c for s, c in sources.items() if is_substitute(s))
    if random_n:
        why = [antonym_model_error or ("the antonym model gave none" if any("(llm gave none)" in s for s in sources)
                                       else "no antonym_model is set"),
               f"WordNet is unavailable: {wordnet}" if wordnet else "WordNet had none"]
        out.append(f"{random_n} of {n} antonym environments (E3) hold a random word (of the same part of speech when "
                   f"known), not an antonym ({'; '.join(why)}). For those examples E3 only breaks the leak term's "
                   "link to the label instead of reversing it; set antonym_model (e.g. the embedded smollm2) or "
                   "install WordNet for real antonyms")
    failed = sum(c for s, c in sources.items() if s.endswith("(llm gave none)"))
    if failed:
        out.append(f"{failed} of {n} antonym requests to the antonym model gave no usable word: WordNet or a random "
                   "word was used instead")
    return out


def score_variants(scorers: dict[str, Any], phi_base, texts: dict[str, dict[str, str]], baselines: dict[str, str],
                   y: dict[str, str], ids: list[str], *, reduction: str = "sum", candidates: list[str] | None = None,
                   truncation: dict[str, dict[str, int]] | None = None) -> tuple[dict, dict, list[dict]]:
    """REV scores of every (method, variant, item): the information a rationale adds about the label.

    REV(r) = log p(y | r, b) - log p(y | b): the label's log-likelihood under the method's evaluator (Phi
    for ``rev``, Phi_LA for ``larev``) given rationale and baseline, minus its log-likelihood under
    Phi_base given the baseline alone, in nats (``reduction``: sum or mean over y's tokens).

    Args:
        scorers: Method -> evaluator (Phi or Phi_LA).
        phi_base (Evaluator): The baseline evaluator (b alone).
        texts: Variant -> item id -> rationale text.
        baselines: Item id -> baseline b.
        y: Item id -> label text.
        ids: The items to score.
        reduction: ``sum`` or ``mean`` over y's tokens.
        candidates: The label set, when closed (predictions are then the most likely candidate).
        truncation: When given, receives per variant the counts of
            :meth:`~reasonscope.information.evaluator.Evaluator.fit_inputs`.

    Returns:
        (method -> variant -> item -> REV, method -> variant -> accuracy of the evaluator's prediction,
        one row per score with its log-probabilities and prediction). REV is unbounded: positive when the
        rationale makes the label more likely than the baseline alone (higher is more informative), 0
        when it adds nothing, negative when it misleads.
    """
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


READS_B_MARGIN = 0.05  # an evaluator at most this much less accurate with Vacuous than with Gold reads b, not r


def reads_baseline_warning(method: str, accuracy: dict[str, float], n: int) -> str | None:
    """A warning when the evaluator is about as accurate with the Vacuous rationale as with the Gold one.

    The Vacuous variant puts b in r's place, so it carries no label information beyond b. An evaluator
    (Phi for REV, Phi_LA for LAREV) whose accuracy with it is at least its accuracy with Gold minus
    :data:`READS_B_MARGIN` (0.05) predicts the label from b, not from r; its separations then measure how
    it reads b. None when it is clearly less accurate with Vacuous (it reads r) or a variant is missing.
    """
    gold, vacuous = accuracy.get("gold"), accuracy.get("vacuous")
    if gold is None or vacuous is None or vacuous < gold - READS_B_MARGIN:
        return None
    model = "Phi_LA" if method == "larev" else "Phi"
    return (f"{method.upper()}: {model} reads b, not r: it is right for {gold:.1%} of {n} test items with the Gold "
            f"rationale and {vacuous:.1%} with the Vacuous one (b in r's place), so it predicts the label from the "
            f"baseline; its Gold - X separations measure how it reads b, not what the rationale adds")


def collapse_warning(phi_la, la_val: float, phi_val: float) -> str | None:
    """A warning when Phi_LA's validation loss is near that of uniform logits (log V per token).

    The IRM penalty can be lowered fastest by flattening the logits, which makes every LAREV score the same.
    """
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


def separations(per_item: dict[str, dict[str, float]], stats: StatsConfig, seed: int,
                clusters: dict[str, str] | None = None) -> dict[str, dict]:
    """Separations Gold - X for the three degraded variants, paired by item, and their SUM.

    Gold - X = mean_i (REV_i(gold) - REV_i(X)) for X in leaky, gold_leaky, vacuous, with a paired bootstrap
    CI and a paired permutation p-value; SUM = mean_i of the three differences summed, over the items that
    have all four variants, with a bootstrap CI.

    With ``clusters`` (item -> cluster, e.g. the premise of an e-SNLI pair: pairs that share a premise
    are not independent), the differences are averaged per cluster first and the interval, the test and
    ``n`` are over clusters (``n_items`` keeps the number of items): the value is then the mean over
    clusters of the cluster means.

    Args:
        per_item: Variant -> item id -> REV score (one method).
        stats: Confidence level, resamples, permutations and interval method.
        seed: Seed of the resampling.
        clusters: Item id -> cluster label (None: every item its own cluster).

    Returns:
        ``gold-leaky``, ``gold-gold_leaky``, ``gold-vacuous`` and ``SUM`` -> estimate (value, low, high, n,
        p_value). Unbounded, in nats; higher is better (a good evaluator ranks the gold rationale above
        every degraded one, so every separation is positive). Value None when no item has both variants.
    """
    out: dict[str, dict] = {}
    gold = per_item.get("gold", {})
    sums: dict[str, float] = {}
    for a, b in SEPARATIONS:
        other = per_item.get(b, {})
        ids = [i for i in gold if i in other]
        d = paired_difference([gold[i] for i in ids], [other[i] for i in ids], confidence=stats.confidence,
                              n_resamples=stats.n_resamples, seed=seed, n_permutations=stats.n_permutations,
                              method=stats.method, bounds=None,  # log-probability scores: no known range
                              clusters=[clusters[i] for i in ids] if clusters else None)
        out[f"{a}-{b}"] = {"value": d.value, "low": d.low, "high": d.high, "n": d.n, "n_items": len(ids),
                           "p_value": d.p_value, "test": d.test_label, "null": (d.test or {}).get("null")}
        for i in ids:
            sums[i] = sums.get(i, 0.0) + gold[i] - other[i]
    complete = [i for i in sums if all(i in per_item.get(b, {}) for _, b in SEPARATIONS)]
    s = bootstrap_mean([sums[i] for i in complete], confidence=stats.confidence, n_resamples=stats.n_resamples,
                       method=stats.method, seed=seed, bounds=None,
                       clusters=[clusters[i] for i in complete] if clusters else None)
    out["SUM"] = {"value": s.value, "low": s.low, "high": s.high, "n": s.n, "n_items": len(complete), "p_value": None}
    return out
