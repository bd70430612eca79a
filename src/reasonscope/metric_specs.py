"""What every reported number is: its key, a human label, unit, range and direction, declared once.

A :class:`MetricSpec` is read by the console printers, the HTML report (column labels, "how computed"
notes, summary cards), the contract tests and the docs, so a number is named the same way wherever it
is shown. Families declare theirs; this module is a shared layer and imports no family.
"""

from __future__ import annotations

from dataclasses import dataclass

from .family_order import FAMILY_NAMES


@dataclass(frozen=True)
class MetricSpec:
    """One reported number.

    Attributes:
        key: The name in tables and ``summary.json`` (``"CQ"``, ``"coverage_support"``, ``"success_rate"``).
        label: The human label shown in reports and printers (``"Correctness (CQ)"``).
        family: The family that computes it.
        range: ``(low, high)`` of the possible values; ``None`` when unbounded (REV in nats, ratings in Elo).
        higher_is_better: Direction: ``True``, ``False`` (e.g. attack success: more fragile reasoning),
            ``None`` (neither).
        unit: ``""`` (a share or score in [0, 1]), ``"nats"``, ``"Elo"``, ``"s"``...
        aggregation: How per-item values become the number (``"mean over items"``).
        description: One line on how it is computed, shown as the report's "how computed" note.
    """

    key: str
    label: str
    family: str
    range: tuple[float, float] | None = (0.0, 1.0)
    higher_is_better: bool | None = True
    unit: str = ""
    aggregation: str = "mean over items"
    description: str = ""



def _specs(family: str, *rows: tuple) -> tuple[MetricSpec, ...]:
    """``(key, label, description, **overrides)`` rows of one family as specs."""
    out = []
    for key, label, description, *extra in rows:
        out.append(MetricSpec(key=key, label=label, family=family, description=description, **(extra[0] if extra else {})))
    return tuple(out)


_UNBOUNDED = {"range": None}
_COUNT = {"range": None, "higher_is_better": None, "aggregation": "count"}

BEHAVIOR = _specs(
    "behavior",
    ("CQ", "Correctness (CQ)", "share of items whose extracted answer equals the gold answer (typed matching: "
     "numbers compared numerically, booleans and choice letters from the final answer); unparseable = wrong"),
    ("CS", "Consistency (CS)", "mean pairwise agreement of the extracted answers of the K samples of an item; "
     "trivially 1 at temperature 0"),
    ("RS", "Robustness (RS)", "over items answered correctly, the share of paraphrases whose extracted answer equals "
     "the original answer; n/a without paraphrases"),
    ("LS", "Logical soundness (LS)", "1 - mean contradiction probability between consecutive reasoning steps "
     "(NLI model); a one-step trace counts 1.0"),
    ("ES", "Efficiency (ES)", "the ES reading the strategies use (ES_corpus or ES_item, see the settings)"),
    ("ES_corpus", "Efficiency, corpus (ES_corpus)", "harmonic mean of CQ and the mean length score "
     "1 - completion tokens / token budget; CI from an item bootstrap", {"aggregation": "H(CQ, mean length score)"}),
    ("ES_item", "Efficiency, per item (ES_item)", "mean over items of the harmonic mean of CQ_i and the length "
     "score L_i; never above CQ"),
    ("conciseness", "Length score (L)", "1 - completion tokens / token budget (max new tokens), per item"),
    ("SS", "Semantic stability (SS)", "mean pairwise BERTScore F1 (or embedding cosine, as recorded) over the K "
     "reasoning traces of an item; trivially 1 at temperature 0"),
    ("strategy", "Weighted strategy score", "sum of w_m * metric_m over the available metrics divided by the sum of "
     "their weights (a not-applicable metric is left out and the rest renormalised)",
     {"aggregation": "weighted mean of the model's metrics"}),
    ("difference", "Difference A - B", "mean over shared items of metric(A) - metric(B); paired bootstrap CI and a "
     "sign-flip permutation test", {"range": (-1.0, 1.0), "higher_is_better": None}),
)
BEHAVIOR_METRICS: tuple[str, ...] = ("CQ", "CS", "RS", "LS", "ES", "SS")
"""The six behaviour metrics the strategies weigh and the printers, plots and tables show, in that order
(keys of :data:`BEHAVIOR`; read through here by :mod:`reasonscope.settings`, the behavior family and
the report)."""

EVIDENCE = _specs(
    "evidence",
    ("coverage_support", "Support coverage", "per instance, the share of the classifier's top-k supporting features "
     "(contribution > 0 toward the evaluated class) found in the rationale; empty set: n/a"),
    ("coverage_contradict", "Contradiction coverage", "per instance, the share of the top-k contradicting features "
     "(contribution < 0) found in the rationale; a faithful rationale cites few of them",
     {"higher_is_better": False}),
    ("asymmetry", "Asymmetry A", "mean support coverage - mean contradiction coverage of a group of instances",
     {"range": (-1.0, 1.0), "aggregation": "difference of two means"}),
    ("asymmetry_difference", "A(correct) - A(incorrect)", "asymmetry of correctly predicted instances minus that "
     "of incorrect ones; label permutation test", {"range": (-2.0, 2.0), "higher_is_better": None,
                                                   "aggregation": "difference of two groups"}),
    ("classifier_test_accuracy", "Classifier accuracy", "accuracy of the TF-IDF + logistic regression classifier on "
     "the test split", {"aggregation": "share of test items"}),
    ("llm_accuracy", "LLM accuracy", "share of test items whose label extracted from the LLM's answer equals the gold "
     "label", {"aggregation": "share of test items"}),
)

INFORMATION = _specs(
    "information",
    ("REV", "REV", "log p(y | r, b) under Phi minus log p(y | b) under Phi_base, in nats (sum or per-token mean over "
     "y's tokens, as the table says); > 0: the rationale adds label information", {**_UNBOUNDED, "unit": "nats"}),
    ("LAREV", "LAREV", "as REV, with the leakage-aware evaluator Phi_LA (IRM across original / masked / antonym "
     "environments and a leakage probe) in place of Phi", {**_UNBOUNDED, "unit": "nats"}),
    ("separation", "Separation Gold - X", "mean paired difference score(Gold) - score(X) over the test items; a good "
     "evaluator separates Gold from Leaky, Gold-Leaky and Vacuous", {**_UNBOUNDED, "unit": "nats",
                                                                    "aggregation": "mean paired difference"}),
    ("separation_sum", "Sum of separations", "sum of the three separations Gold - X", {**_UNBOUNDED, "unit": "nats",
                                                                                     "aggregation": "sum"}),
    ("accuracy", "Evaluator accuracy", "share of test items whose label the evaluator ranks first given r and b",
     {"aggregation": "share of test items"}),
    ("baseline_accuracy", "Baseline evaluator accuracy on b", "accuracy of the baseline evaluator from b alone; high values "
     "mean the baseline gives the label away and REV cannot mean much", {"higher_is_better": False,
                                                                         "aggregation": "share of held-out items"}),
)

ATTRIBUTES = _specs(
    "attributes",
    ("score", "Attribute score", "mean over items of the judges' scores normalised to 0-1 (unscored answers left "
     "out, never 0), or of an automatic metric"),
    ("elo", "Elo rating", "online Elo (K=4, base 10, scale 400, initial 1000) over per-attribute battles: of two "
     "models on an item the higher score wins", {**_UNBOUNDED, "unit": "Elo", "aggregation": "rating"}),
    ("bt", "Bradley-Terry rating", "maximum-likelihood Bradley-Terry strength on the Elo scale (ties as half wins), "
     "battle-level bootstrap CI", {**_UNBOUNDED, "unit": "Elo", "aggregation": "rating"}),
    ("rank", "Rank", "rank by Bradley-Terry rating (1 = best), bounds from bootstrap ranks",
     {"range": None, "higher_is_better": False, "aggregation": "rank"}),
    ("krippendorff_alpha", "Judge agreement (Krippendorff's alpha)", "agreement of the judges' scores (interval "
     "metric); 1 = perfect, 0 = chance", {"range": (-1.0, 1.0), "aggregation": "over judged units"}),
    ("spearman_vs_human", "Spearman rho vs human labels", "rank correlation over the models between the attribute's "
     "ratings and the human-label ratings", {"range": (-1.0, 1.0), "aggregation": "over models"}),
    ("mean_abs_shap", "Mean |SHAP|", "mean absolute SHAP value of the attribute difference in the preference model "
     "(LightGBM on attribute(A) - attribute(B))", {"range": None, "aggregation": "mean over pairs"}),
)

ATTACK = _specs(
    "attack",
    ("success", "Attack success rate", "share of decided attacks where the answer was kept and the reasoning became "
     "wrong; higher = more fragile reasoning", {"higher_is_better": False, "aggregation": "share of decided attacks"}),
    ("wrong", "Answer changed rate", "share of decided attacks where the answer changed",
     {"higher_is_better": None, "aggregation": "share of decided attacks"}),
    ("unattackable", "Unattackable rate", "share of decided attacks where the answer was kept and the reasoning "
     "judged correct; higher = more robust reasoning", {"aggregation": "share of decided attacks"}),
    ("transfer_success", "Transfer success rate", "success rate of the successful perturbations replayed on another "
     "model", {"higher_is_better": False, "aggregation": "share of decided attacks"}),
    ("seconds_per_item", "Seconds per item", "wall-clock time of the method per attacked item: its search plus "
     "its share of the item's batched chain regeneration",
     {"range": None, "higher_is_better": False, "unit": "s"}),
)

# The rationale attributes a judge scores and the automatic (ROSCOE-style) metrics, by the key their scores
# carry (``auto.<metric>`` for an automatic one). Every one is normalised so that higher is better; the
# label says what a high value means where the name alone is ambiguous (hallucination, repetition).
ATTRIBUTE_LABELS: dict[str, str] = {
    "faithfulness": "Faithfulness", "hallucination": "No hallucination (1 = none)",
    "repetition": "No repetition (1 = none)", "informativeness": "Informativeness", "plausibility": "Plausibility",
    "self_consistency": "Self-consistency", "source_consistency": "Source consistency", "grammar": "Grammar",
    "arithmetic_accuracy": "Arithmetic accuracy", "conciseness": "Conciseness", "completeness": "Completeness",
    "correctness": "Correctness",
    "auto.faithfulness": "Faithfulness (automatic: step-source embedding similarity)",
    "auto.informativeness": "Informativeness (automatic: embedding similarity to the source)",
    "auto.repetition_step": "No step repetition (automatic: 1 = no near-duplicate steps)",
    "auto.repetition_word": "No word repetition (automatic: 1 = no repeated words)",
    "auto.self_consistency": "Self-consistency (automatic: 1 - step contradiction, NLI)",
    "auto.source_consistency": "Source consistency (automatic: 1 - contradiction with the source, NLI)",
    "auto.perplexity_chain": "Fluency (automatic: from the chain's perplexity, higher = lower perplexity)",
    "auto.faithfulness_ww": "Faithfulness (automatic: step and token similarity to the source)",
    "auto.informativeness_chain": "Informativeness (automatic: whole chain vs whole source similarity)",
    "auto.perplexity_step": "Fluency (automatic: mean of each step's inverse perplexity)",
    "auto.perplexity_step_max": "Fluency (automatic: the least fluent step's inverse perplexity)",
}


def attribute_label(key: str) -> str:
    """The label of an attribute or automatic metric (:data:`ATTRIBUTE_LABELS`).

    Any other key is humanised (``new_attr`` -> ``New attr``, ``auto.x`` -> ``X (automatic)``). Higher is
    better for all.
    """
    key = key.removeprefix("judge.")
    if key in ATTRIBUTE_LABELS:
        return ATTRIBUTE_LABELS[key]
    auto = key.startswith("auto.")
    text = key.removeprefix("auto.").replace("_", " ").strip()
    return text[:1].upper() + text[1:] + (" (automatic)" if auto else "")


CATALOGUE: tuple[MetricSpec, ...] = BEHAVIOR + EVIDENCE + INFORMATION + ATTRIBUTES + ATTACK
FAMILIES = FAMILY_NAMES  # the canonical order, declared in reasonscope.family_order
_BY_KEY = {(s.family, s.key): s for s in CATALOGUE}


def metric_spec(family: str, key: str) -> MetricSpec:
    """The spec of ``key`` in ``family``; a KeyError names the known keys."""
    try:
        return _BY_KEY[(family, key)]
    except KeyError:
        known = ", ".join(k for f, k in _BY_KEY if f == family)
        raise KeyError(f"no metric {key!r} in family {family!r} (known: {known})") from None


def find_spec(family: str, key: str) -> MetricSpec | None:
    """The spec of ``key`` in ``family``, or None."""
    return _BY_KEY.get((family, key))


__all__ = ["ATTRIBUTE_LABELS", "BEHAVIOR_METRICS", "CATALOGUE", "FAMILIES", "MetricSpec", "attribute_label", "find_spec", "metric_spec"]
