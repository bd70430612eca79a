"""RACE (seed 000): do an LLM's rationales cite the evidence a TF-IDF logistic regression relies on?

For each test instance with a parsed prediction and rationale:

1. the class under evaluation c is the LLM's predicted label (``target: predicted``, default) or the
   gold label (``target: gold``);
2. the top-k features by |coef[c, f] * tfidf[f]| (k = 5) are split into supporting S (> 0) and
   contradicting C (< 0) sets (:mod:`reasonscope.evidence.classifier`);
3. each matcher (exact, token, edit; :mod:`reasonscope.evidence.matchers`) marks which features occur
   in the rationale, with their spans;
4. coverage_S = |matched S| / |S| and coverage_C = |matched C| / |C|, ``None`` when the set is empty.

Aggregation, per matcher and per group (correct = the prediction equals the gold label; for
multi-label gold, is one of them): mean coverage with a 95% bootstrap CI over the instances where
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
from dataclasses import asdict, dataclass, field
from typing import Any

from ..judge.parse import NoObject, NotALiteral, load_object
from ..stats.bootstrap import bootstrap_mean, mean_or_none
from ..stats.multiple import adjust_rows
from ..stats.permutation import asymmetry_permutation_test
from ..types import Item, Score
from .classifier import EvidenceClassifier, Feature, split_sets
from .matchers import MATCHERS, Match, Rationale, match

FAMILY = "evidence"
PROMPT_VERSION = "race-v1"


@dataclass
class Prediction:
    label: str | None
    rationale: str
    reason: str | None = None
    raw: str = ""


@dataclass
class InstanceResult:
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


def build_messages(item: Item, labels: list[str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": (
        f"Classify the text into exactly one of these labels: {', '.join(labels)}.\n"
        "Reply with a JSON object only, of the form "
        '{"label": "<one of the labels>", "rationale": "<one or two sentences on which words of the text '
        'led to the label>"}.\n\n'
        f"Text: {item.input}")}]


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip().lower())


def parse_prediction(text: str, labels: list[str]) -> Prediction:
    """Strict parse: the first ``{...}`` block as JSON, else as a Python literal (``ast.literal_eval``,
    never ``eval``); it must hold a string ``label`` among ``labels`` (case-insensitive) and a string
    ``rationale``."""
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
    if not isinstance(label, str):
        return Prediction(None, rationale, "unparseable: no string 'label'", text)
    by_norm = {_norm(lab): lab for lab in labels}
    if _norm(label) not in by_norm:
        return Prediction(None, rationale, f"unparseable: label {label!r} is not one of {labels}", text)
    return Prediction(by_norm[_norm(label)], rationale, None if rationale else "no rationale", text)


# ------------------------------------------------------------------------------------------- scoring


def gold_labels(item: Item) -> list[str]:
    labels = item.metadata.get("labels")
    return [str(x) for x in labels] if isinstance(labels, list) and labels else [str(item.target)]


def evaluate_instance(clf: EvidenceClassifier, row, item: Item, pred: Prediction, *, k: int, target: str,
                      matchers: tuple[str, ...], delta: float) -> InstanceResult:
    gold = gold_labels(item)
    res = InstanceResult(item_id=item.id, gold=gold, predicted=pred.label, correct=pred.label in gold,
                         evaluated=None, rationale=pred.rationale, reason=pred.reason)
    evaluated = pred.label if target == "predicted" else gold[0]
    if evaluated is None or evaluated not in clf.classes:
        res.reason = res.reason or f"label {evaluated!r} unknown to the classifier"
        return res
    res.evaluated = evaluated
    res.support, res.contradict = split_sets(clf.top_features(row, evaluated, k))
    r = Rationale(pred.rationale)
    for m in matchers:
        found = {"support": [x for f in res.support if (x := match(m, f.text, r, delta))],
                 "contradict": [x for f in res.contradict if (x := match(m, f.text, r, delta))]}
        res.matches[m] = found
        res.coverage[m] = {"support": len(found["support"]) / len(res.support) if res.support else None,
                           "contradict": len(found["contradict"]) / len(res.contradict) if res.contradict else None}
    return res


def asymmetry(rows: list[dict[str, float | None]]) -> float | None:
    s, c = mean_or_none(r["support"] for r in rows), mean_or_none(r["contradict"] for r in rows)
    return None if s is None or c is None else s - c


def aggregate(results: list[InstanceResult], matchers: tuple[str, ...], *, confidence: float = 0.95,
              n_resamples: int = 2000, n_permutations: int = 2000, seed: int = 0,
              p_adjust: str = "holm") -> dict[str, Any]:
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
    applied = adjust_rows([out[m]["asymmetry_difference"] for m in matchers], p_adjust)
    for m in matchers:
        out[m]["asymmetry_difference"]["p_adjust"] = applied["description"]
    return out


def run_evidence(train: list[Item], test: list[Item], predictions: dict[str, Prediction], *, k: int = 5,
                 target: str = "predicted", matchers: tuple[str, ...] = MATCHERS, delta: float = 0.2,
                 min_df: int | float = 1, max_features: int | None = None, C: float = 1.0,
                 sweep_k: tuple[int, ...] = (3, 5, 10, 20), sweep_delta: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4),
                 confidence: float = 0.95, n_resamples: int = 2000, n_permutations: int = 2000, seed: int = 0,
                 p_adjust: str = "holm",
                 model: str = "llm") -> tuple[list[Score], dict[str, Any]]:
    """Fit the classifier on ``train``, evaluate every test item that has a prediction."""
    multilabel = any(isinstance(i.metadata.get("labels"), list) for i in train)
    clf = EvidenceClassifier(min_df=min_df, max_features=max_features, C=C, seed=seed)
    clf.fit([i.input for i in train], [gold_labels(i) for i in train] if multilabel else [str(i.target) for i in train])
    X = clf.transform([i.input for i in test])
    clf_pred = clf.predict([i.input for i in test])
    clf_acc = sum(p in gold_labels(i) for p, i in zip(clf_pred, test, strict=True)) / len(test) if test else None
    results = [evaluate_instance(clf, X[j], item, predictions[item.id], k=k, target=target, matchers=matchers,
                                 delta=delta) for j, item in enumerate(test) if item.id in predictions]
    stats_kw = {"confidence": confidence, "n_resamples": n_resamples, "n_permutations": n_permutations, "seed": seed,
                "p_adjust": p_adjust}
    tables: dict[str, Any] = {
        "settings": {"k": k, "target": target, "matchers": list(matchers), "delta": delta, "min_df": min_df,
                     "max_features": max_features, "C": C, "multilabel": multilabel,
                     "n_train": len(train), "n_test": len(test)},
        "classifier": {"test_accuracy": clf_acc, "classes": clf.classes,
                       "n_features": len(clf.feature_names)},
        "llm": {"model": model, "n": len(results),
                "accuracy": sum(r.correct for r in results) / len(results) if results else None,
                "unparseable": sum(1 for r in results if r.predicted is None),
                "no_rationale": sum(1 for r in results if r.predicted is not None and not r.rationale)},
        "coverage": aggregate(results, matchers, **stats_kw),
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
    # sweeps: k (matchers at the default delta) and delta (edit matcher at the default k)
    sweep_stats = {**stats_kw, "n_resamples": min(n_resamples, 500), "n_permutations": min(n_permutations, 500)}
    tables["sweep_k"] = []
    def evaluate_all(kk: int, ms: tuple[str, ...], d: float) -> list[InstanceResult]:
        if kk == k and d == delta and set(ms) <= set(matchers):
            return results  # the main evaluation already holds these instances
        return [evaluate_instance(clf, X[j], item, predictions[item.id], k=kk, target=target, matchers=ms, delta=d)
                for j, item in enumerate(test) if item.id in predictions]

    for kk in sweep_k:
        rs = evaluate_all(kk, matchers, delta)
        agg = aggregate(rs, matchers, **sweep_stats)
        for m in matchers:
            tables["sweep_k"].append(_sweep_row("k", kk, m, agg[m]))
    tables["sweep_delta"] = []
    if "edit" in matchers:
        for d in sweep_delta:
            rs = evaluate_all(k, ("edit",), d)
            tables["sweep_delta"].append(_sweep_row("delta", d, "edit", aggregate(rs, ("edit",), **sweep_stats)["edit"]))
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
                                    value=est["value"], details=est))
    return scores, tables


def _sweep_row(param: str, value, matcher: str, agg: dict) -> dict[str, Any]:
    return {param: value, "matcher": matcher,
            "support_correct": agg["correct"]["support"]["value"], "contradict_correct": agg["correct"]["contradict"]["value"],
            "support_incorrect": agg["incorrect"]["support"]["value"],
            "contradict_incorrect": agg["incorrect"]["contradict"]["value"],
            "asymmetry_correct": agg["correct"]["asymmetry"], "asymmetry_incorrect": agg["incorrect"]["asymmetry"],
            "asymmetry_difference": agg["asymmetry_difference"]["value"]}


def confusion(results: list[InstanceResult], classes: list[str]) -> dict[str, Any]:
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
    return sorted({lab for it in train for lab in gold_labels(it)})
