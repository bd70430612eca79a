"""RACE: do an LLM's rationales cite the evidence a TF-IDF logistic regression relies on?

From *Framework for Machine Evaluation of Reasoning Completeness in Large Language Models for
Classification Tasks* (arXiv:2510.21884).

For each test instance with a parsed prediction and rationale:

1. the class under evaluation c is the LLM's predicted label (``target: predicted``, default) or the
   gold label (``target: gold``);
2. the top-k features by |coef[c, f] * tfidf[f]| (k = 5) are split into supporting S (> 0) and
   contradicting C (< 0) sets (:mod:`reasonscope.evidence.classifier`); the classifier reads the
   item's own text fields, each on its own, through one token stream
   (:mod:`reasonscope.evidence.analysis`);
3. each matcher (exact, token, edit, edit_chars; :mod:`reasonscope.evidence.matchers`) marks which
   features occur in the rationale's token stream, with their spans;
4. coverage_S = |matched S| / |S| and coverage_C = |matched C| / |C|, ``None`` when the set is empty.

Aggregation, per matcher and per group (correct = the prediction equals the gold label; for
multi-label gold, is one of them): mean coverage with a 95% CI (a score interval) over the instances where
it is defined; the group's asymmetry A = mean coverage_S - mean coverage_C; and a permutation
test of A(correct) - A(incorrect) (group labels permuted, two-sided; exact over all relabellings when
there are at most ``n_permutations`` of them, else 2,000 random ones; Holm-adjusted across the
matchers: :mod:`reasonscope.stats.permutation`).
Predictions that could not be parsed are counted and left out of coverage (they have no class to
evaluate); they count as incorrect in the LLM's accuracy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..judge.parse import NoObject, NotALiteral, load_object
from ..stats.bootstrap import bootstrap_mean, mean_or_none
from ..stats.multiple import adjust_rows
from ..stats.permutation import asymmetry_permutation_test
from ..types import Item, Score
from .analysis import item_segments, make_analyzer
from .classifier import EvidenceClassifier, Feature, split_sets
from .matchers import MATCHERS, Match, Rationale, match, threshold_label

FAMILY = "evidence"
PROMPT_VERSION = "race-v1"
GENERATION_FAILED = "generation failed"  # reason prefix of a failed generation kept as a wrong prediction


@dataclass
class Prediction:
    """A model's parsed answer to one test item.

    ``label`` is None when the answer could not be parsed (``reason`` says why); ``raw`` is the reply text.
    """

    label: str | None
    rationale: str
    reason: str | None = None
    raw: str = ""


@dataclass
class InstanceResult:
    """RACE's reading of one test instance, one row of the per-item scores.

    Holds the gold and predicted labels, the evaluated class (None when the instance is not scored, with
    ``reason``), the supporting and contradicting top features, and per matcher the matches found in the
    rationale and the coverage ``{"support": cov_S, "contradict": cov_C}`` (each in [0, 1], None for an
    empty set).
    """

    item_id: str
    gold: list[str]
    predicted: str | None
    correct: bool
    evaluated: str | None
    support: list[Feature] = field(default_factory=list)
    contradict: list[Feature] = field(default_factory=list)
    matches: dict[str, dict[str, list[Match]]] = field(default_factory=dict)
    coverage: dict[str, dict[str, float | None]] = field(default_factory=dict)
    rationale: str = ""
    reason: str | None = None


# ------------------------------------------------------------------------------------------- prompting


ANSWER_FORM = ('{"label": "<one of the labels>", "rationale": "<one or two sentences on which words of the text '
               'led to the label>"}')
"""The answer form the prompt shows; its ``<...>`` parts are placeholders, not answers."""
PLACEHOLDERS: tuple[str, ...] = tuple(re.findall(r"<([^<>]+)>", ANSWER_FORM))
ECHO_WORDS = 4
"""A rationale holding the first this many words of a placeholder echoes the prompt."""


def build_messages(item: Item, labels: list[str]) -> list[dict[str, str]]:
    """The chat prompt asking for one of ``labels`` and a rationale, as a JSON object, for ``item.input``."""
    return [{"role": "user", "content": (
        f"Classify the text into exactly one of these labels: {', '.join(labels)}.\n"
        f"Reply with a JSON object only, of the form {ANSWER_FORM}.\n\n"
        f"Text: {item.input}")}]


def echoes_placeholder(rationale: str, placeholders: tuple[str, ...] = PLACEHOLDERS) -> bool:
    """Whether ``rationale`` repeats the prompt's placeholder instead of answering.

    True when it is nothing but an angle-bracketed span (``<...>``), or it holds the first
    :data:`ECHO_WORDS` words of one of ``placeholders`` longer than that (case and spacing ignored, ``…``
    or ``...`` cuts allowed). Such a rationale counts as no rationale.
    """
    text = _norm(rationale.replace("…", " ").replace("...", " "))
    if re.fullmatch(r"<[^<>]*>?", text):
        return True
    return any(" ".join(_norm(p).split()[:ECHO_WORDS]) in text for p in placeholders
               if len(p.split()) > ECHO_WORDS)


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip().lower())


def parse_prediction(text: str, labels: list[str]) -> Prediction:
    """Strict parse of a label-and-rationale answer.

    The first ``{...}`` block as JSON, else as a Python literal (``ast.literal_eval``, never ``eval``); it
    must hold a string ``label`` among ``labels`` (case-insensitive) and a string
    ``rationale``.
    """
    try:
        obj = load_object(text)
    except NoObject:
        return Prediction(None, "", "unparseable: no JSON object in the output", text)
    except NotALiteral:
        return Prediction(None, "", "unparseable: the object is neither JSON nor a Python literal", text)
    if not isinstance(obj, dict):
        return Prediction(None, "", "unparseable: not an object", text)
    label, rationale = obj.get("label"), obj.get("rationale")
    if not isinstance(rationale, str):
        rationale = ""
    echo = bool(rationale) and echoes_placeholder(rationale)
    if echo:  # the prompt's placeholder repeated: no rationale (counted as such)
        rationale = ""
    if not isinstance(label, str):
        return Prediction(None, rationale, "unparseable: no string 'label'", text)
    by_norm = {_norm(lab): lab for lab in labels}
    if _norm(label) not in by_norm:
        return Prediction(None, rationale, f"unparseable: label {label!r} is not one of {labels}", text)
    why = "no rationale: it repeats the prompt's placeholder" if echo else "no rationale"
    return Prediction(by_norm[_norm(label)], rationale, None if rationale else why, text)


# ------------------------------------------------------------------------------------------- scoring


def gold_labels(item: Item) -> list[str]:
    """The item's gold labels: ``metadata['labels']`` when it is a non-empty list, else ``[target]``."""
    labels = item.metadata.get("labels")
    return [str(x) for x in labels] if isinstance(labels, list) and labels else [str(item.target)]


def evaluate_instance(clf: EvidenceClassifier, row, item: Item, pred: Prediction, *, k: int, target: str,
                      matchers: tuple[str, ...], delta: float, delta_chars: int = 1) -> InstanceResult:
    """RACE coverage of one instance: the share of the classifier's top features that its rationale cites.

    The classifier's top-k features for the evaluated class (the predicted label, or the gold one with
    ``target="gold"``) are split into supporting (contribution > 0) and contradicting (< 0) sets S and C;
    per matcher, cov_S = |{f in S found in the rationale}| / |S| and cov_C likewise over C.

    Returns:
        The instance with its features, matches and coverage per matcher and side. Each coverage is in
        [0, 1]: higher cov_S is better (the rationale cites the evidence the decision rests on), lower
        cov_C is better. A coverage is None when its feature set is empty; ``evaluated`` is None (no
        coverage) when the label is missing or unknown to the classifier, ``reason`` saying why.
    """
    gold = gold_labels(item)
    res = InstanceResult(item_id=item.id, gold=gold, predicted=pred.label, correct=pred.label in gold,
                         evaluated=None, rationale=pred.rationale, reason=pred.reason)
    evaluated = pred.label if target == "predicted" else gold[0]
    if evaluated is None or evaluated not in clf.classes:
        res.reason = res.reason or f"label {evaluated!r} unknown to the classifier"
        return res
    res.evaluated = evaluated
    res.support, res.contradict = split_sets(clf.top_features(row, evaluated, k))
    r = Rationale(pred.rationale, clf.analyzer)
    for m in matchers:
        found = {side: [x for f in feats if (x := match(m, f.text, r, delta, delta_chars))]
                 for side, feats in (("support", res.support), ("contradict", res.contradict))}
        res.matches[m] = found
        res.coverage[m] = {"support": len(found["support"]) / len(res.support) if res.support else None,
                           "contradict": len(found["contradict"]) / len(res.contradict) if res.contradict else None}
    return res


def asymmetry(rows: list[dict[str, float | None]]) -> float | None:
    """RACE asymmetry A = mean cov_S - mean cov_C over a group of instances.

    Args:
        rows: One ``{"support": cov_S, "contradict": cov_C}`` per instance; None values are left out of
            their mean.

    Returns:
        A value in [-1, 1], higher is better (the rationales cite supporting evidence more than
        contradicting evidence). None when either mean has no value.

    Examples:
        >>> asymmetry([{"support": 1.0, "contradict": 0.0}, {"support": 0.5, "contradict": None}])
        0.75
    """
    s, c = mean_or_none(r["support"] for r in rows), mean_or_none(r["contradict"] for r in rows)
    return None if s is None or c is None else s - c


def aggregate(results: list[InstanceResult], matchers: tuple[str, ...], *, confidence: float = 0.95,
              n_resamples: int = 2000, n_permutations: int = 2000, seed: int = 0,
              p_adjust: str = "holm") -> dict[str, Any]:
    """Corpus tables of RACE, one per matcher, over the scored instances.

    For correct and incorrect predictions apart: n and the mean cov_S and cov_C with bootstrap CIs (each
    in [0, 1]), and the asymmetry A = mean cov_S - mean cov_C (range [-1, 1]; higher = rationales cite more
    supporting than contradicting evidence). ``asymmetry_difference`` is A(correct) - A(incorrect) with a
    permutation test over the correct / incorrect split, its p-values adjusted across matchers
    (``p_adjust``); ``all`` holds the means over every scored instance. A group with no instance has no
    mean.
    """
    scored = [r for r in results if r.evaluated is not None]
    out: dict[str, Any] = {}
    for m in matchers:
        table: dict[str, Any] = {}
        for group, flag in (("correct", True), ("incorrect", False)):
            rows = [r.coverage[m] for r in scored if r.correct == flag]
            table[group] = {
                "n": len(rows),
                "support": bootstrap_mean([x["support"] for x in rows], confidence=confidence,
                                          n_resamples=n_resamples, seed=seed).as_dict(),
                "contradict": bootstrap_mean([x["contradict"] for x in rows], confidence=confidence,
                                             n_resamples=n_resamples, seed=seed).as_dict(),
                "asymmetry": asymmetry(rows),
            }
        sig = asymmetry_permutation_test([r.coverage[m]["support"] for r in scored],
                                         [r.coverage[m]["contradict"] for r in scored],
                                         [r.correct for r in scored], n_permutations=n_permutations, seed=seed)
        table["asymmetry_difference"] = {"value": sig.statistic, "p_value": sig.p_value,
                                         "n_permutations": n_permutations, "test": sig.label, "null": sig.null,
                                         "definition": "A(correct) - A(incorrect), A = mean cov_S - mean cov_C"}
        table["all"] = {"support": mean_or_none(r.coverage[m]["support"] for r in scored),
                        "contradict": mean_or_none(r.coverage[m]["contradict"] for r in scored)}
        out[m] = table
    # matchers that matched the same features give the same test (one merged row in the report): counted once
    identity = {id(out[m]["asymmetry_difference"]): json.dumps(out[m], sort_keys=True, default=str) for m in matchers}
    applied = adjust_rows([out[m]["asymmetry_difference"] for m in matchers], p_adjust,
                          same=lambda r: identity[id(r)])
    for m in matchers:
        out[m]["asymmetry_difference"]["p_adjust"] = applied["description"]
    return out


def fields_used(items: list[Item], text_fields: Sequence[str] | None) -> list[str]:
    """The distinct text-field lists the items were read with (``input`` when they name none)."""
    if text_fields:
        return [", ".join(text_fields)]
    return sorted({", ".join(i.metadata.get("text_fields") or ["input"]) for i in items})


def check_text_fields(items: list[Item], text_fields: Sequence[str] | None = None) -> None:
    """Check that every item's text fields can be read; run before any model is called.

    Raises:
        TextFieldError: For the first item whose text fields cannot be read (a ValueError naming the item
            and the field, :class:`~reasonscope.evidence.analysis.TextFieldError`).
    """
    for item in items:
        item_segments(item, text_fields)


def run_evidence(train: list[Item], test: list[Item], predictions: dict[str, Prediction], *, k: int = 5,
                 target: str = "predicted", matchers: tuple[str, ...] = MATCHERS, delta: float = 0.2,
                 delta_chars: int = 1, stop_words: str | Sequence[str] = "function_words",
                 text_fields: Sequence[str] | None = None, min_df: int | float = 1,
                 max_features: int | None = None, C: float = 1.0, sweep_k: tuple[int, ...] = (3, 5, 10, 20),
                 sweep_delta: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4),
                 sweep_delta_chars: tuple[int, ...] = (1, 2, 3, 4, 5), confidence: float = 0.95,
                 n_resamples: int = 2000, n_permutations: int = 2000, seed: int = 0, p_adjust: str = "holm",
                 model: str = "llm") -> tuple[list[Score], dict[str, Any]]:
    """Fit the classifier on ``train``'s text fields, evaluate every test item that has a prediction.

    ``delta`` is the normalised threshold of the ``edit`` matcher, ``delta_chars`` the absolute one (in
    characters) of ``edit_chars``; ``stop_words`` and ``text_fields`` are described in
    :mod:`reasonscope.evidence.analysis`.
    """
    analyzer = make_analyzer(stop_words)
    multilabel = any(isinstance(i.metadata.get("labels"), list) for i in train)
    clf = EvidenceClassifier(min_df=min_df, max_features=max_features, C=C, seed=seed, analyzer=analyzer)
    docs_test = [item_segments(i, text_fields) for i in test]
    clf.fit([item_segments(i, text_fields) for i in train],
            [gold_labels(i) for i in train] if multilabel else [str(i.target) for i in train])
    X = clf.transform(docs_test)
    clf_pred = clf.predict(docs_test)
    clf_acc = sum(p in gold_labels(i) for p, i in zip(clf_pred, test, strict=True)) / len(test) if test else None

    def evaluate_all(kk: int, ms: tuple[str, ...], d: float, dc: int) -> list[InstanceResult]:
        return [evaluate_instance(clf, X[j], item, predictions[item.id], k=kk, target=target, matchers=ms, delta=d,
                                  delta_chars=dc) for j, item in enumerate(test) if item.id in predictions]

    results = evaluate_all(k, matchers, delta, delta_chars)
    stats_kw = {"confidence": confidence, "n_resamples": n_resamples, "n_permutations": n_permutations, "seed": seed,
                "p_adjust": p_adjust}
    coverage = aggregate(results, matchers, **stats_kw)
    for m, table in coverage.items():
        table["threshold"] = threshold_label(m, delta, delta_chars)
    tables: dict[str, Any] = {
        "settings": {"k": k, "target": target, "matchers": list(matchers), "delta": delta,
                     "delta_chars": delta_chars, "min_df": min_df, "max_features": max_features, "C": C,
                     "multilabel": multilabel, "n_train": len(train), "n_test": len(test),
                     "text_fields": fields_used(train, text_fields), **analyzer.describe()},
        "classifier": {"test_accuracy": clf_acc, "classes": clf.classes,
                       "n_features": len(clf.feature_names)},
        "llm": {"model": model, "n": len(results),
                "accuracy": sum(r.correct for r in results) / len(results) if results else None,
                "unparseable": sum(1 for r in results if r.predicted is None
                                   and not (r.reason or "").startswith(GENERATION_FAILED)),
                "no_rationale": sum(1 for r in results if r.predicted is not None and not r.rationale)},
        "coverage": coverage,
        "confusion": confusion(results, clf.classes),
        "instances": [asdict(r) for r in results],
    }
    unparseable = tables["llm"]["unparseable"]
    tables["warnings"] = []
    if results and unparseable == len(results):
        tables["warnings"].append(f"evidence, {model}: none of the {len(results)} outputs could be parsed as a label "
                                  "and a rationale, so coverage is not applicable (the model does not follow the "
                                  "requested format)")
    elif unparseable:
        tables["warnings"].append(f"evidence, {model}: {unparseable} of {len(results)} outputs unparseable "
                                  "(counted as wrong, left out of coverage)")
    # sweeps: k (all matchers at the set thresholds), then each edit threshold at the set k
    sweep_stats = {**stats_kw, "n_resamples": min(n_resamples, 500), "n_permutations": min(n_permutations, 500)}

    def sweep(kk: int, ms: tuple[str, ...], d: float, dc: int) -> dict[str, Any]:
        same = kk == k and d == delta and dc == delta_chars and set(ms) <= set(matchers)
        return aggregate(results if same else evaluate_all(kk, ms, d, dc), ms, **sweep_stats)

    tables["sweep_k"] = []
    for kk in sweep_k:
        agg = sweep(kk, matchers, delta, delta_chars)
        tables["sweep_k"] += [_sweep_row("k", kk, m, agg[m], threshold_label(m, delta, delta_chars)) for m in matchers]
    tables["sweep_delta"] = [_sweep_row("delta", d, "edit", sweep(k, ("edit",), d, delta_chars)["edit"],
                                        threshold_label("edit", d, delta_chars))
                             for d in sweep_delta] if "edit" in matchers else []
    tables["sweep_delta_chars"] = [
        _sweep_row("delta_chars", d, "edit_chars", sweep(k, ("edit_chars",), delta, d)["edit_chars"],
                   threshold_label("edit_chars", delta, d))
        for d in sweep_delta_chars] if "edit_chars" in matchers else []
    scores: list[Score] = []
    for r in results:
        for m in matchers:
            for side in ("support", "contradict"):
                value = r.coverage.get(m, {}).get(side)
                reason = None
                if value is None:
                    reason = r.reason if r.evaluated is None else f"no {'supporting' if side == 'support' else 'contradicting'} feature in the top-{k}"
                scores.append(Score(family=FAMILY, metric=f"coverage_{side}:{m}", model=model, item_id=r.item_id,
                                    value=value, reason=reason,
                                    details={"matched": [asdict(x) for x in r.matches.get(m, {}).get(side, [])],
                                             "correct": r.correct}))
    for m, t in tables["coverage"].items():
        for group in ("correct", "incorrect"):
            for side in ("support", "contradict"):
                est = t[group][side]
                scores.append(Score(family=FAMILY, metric=f"coverage_{side}:{m}:{group}", model=model,
                                    value=est["value"], details={**est, "threshold": t["threshold"]}))
    return scores, tables


def _sweep_row(param: str, value, matcher: str, agg: dict, threshold: str) -> dict[str, Any]:
    return {param: value, "matcher": matcher, "threshold": threshold,
            "support_correct": agg["correct"]["support"]["value"], "contradict_correct": agg["correct"]["contradict"]["value"],
            "support_incorrect": agg["incorrect"]["support"]["value"],
            "contradict_incorrect": agg["incorrect"]["contradict"]["value"],
            "asymmetry_correct": agg["correct"]["asymmetry"], "asymmetry_incorrect": agg["incorrect"]["asymmetry"],
            "asymmetry_difference": agg["asymmetry_difference"]["value"]}


def confusion(results: list[InstanceResult], classes: list[str]) -> dict[str, Any]:
    """Confusion matrix of gold labels (rows, ``classes``) against predicted ones (columns).

    The columns are ``classes`` plus ``(unparseable)``.

    An instance counts under its first gold label (skipped when that is not a class); a prediction that
    matches any of its gold labels counts as that first gold label.
    """
    labels = list(classes) + ["(unparseable)"]
    matrix = [[0] * len(labels) for _ in classes]
    for r in results:
        g = r.gold[0]
        if g not in classes:
            continue
        p = r.predicted if r.predicted in classes else "(unparseable)"
        if r.predicted in r.gold:
            p = g
        matrix[classes.index(g)][labels.index(p)] += 1
    return {"gold": list(classes), "predicted": labels, "matrix": matrix}


# ------------------------------------------------------------------------------------------- inputs


def read_prediction_file(path: str) -> list[tuple[int, str, str, str]]:
    """Rows of (line, model, item id, output text) from a JSONL of existing predictions.

    Each line holds ``id`` and either ``label`` + ``rationale`` (stored as the JSON object the
    generation prompt asks for) or ``output`` (a raw model output, parsed strictly later); ``model``
    is optional (default ``predictions``). Errors name the file, the line and the field.
    """
    from pathlib import Path

    from ..data.loaders import RowError, convert_rows, read_jsonl

    def to_row(row: dict) -> tuple[str, str, str]:
        if row.get("id") in (None, ""):
            raise RowError("id", "missing field 'id'")
        if "output" in row:
            text = str(row["output"])
        elif "label" in row:
            text = json.dumps({"label": row["label"], "rationale": row.get("rationale", "")})
        else:
            raise RowError("label", "missing field 'label' (or 'output' with a raw model output)")
        return str(row.get("model") or "predictions"), str(row["id"]), text

    rows, _ = convert_rows(read_jsonl(Path(path)), path, to_row)
    return [(line, model, item_id, text) for line, (model, item_id, text) in rows]


def class_labels(train: list[Item]) -> list[str]:
    """The sorted distinct gold labels of the training set (the classifier's classes)."""
    return sorted({lab for it in train for lab in gold_labels(it)})
