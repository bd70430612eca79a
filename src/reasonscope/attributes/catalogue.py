"""The attributes family's metric catalogue and attribute labels.

The attribute scores, ratings (Elo, Bradley-Terry, rank), judge agreement and preference explanation, declared
once, and the labels of the rationale attributes and automatic metrics (:func:`attribute_label`), read by the
printer, the report and the docs' metric catalogue.
"""

from __future__ import annotations

from ..metric_specs import UNBOUNDED, declare

__all__ = ["ATTRIBUTES", "ATTRIBUTE_LABELS", "attribute_label"]


ATTRIBUTES = declare(
    "attributes",
    ("score", "Attribute score", "mean over items of the judges' scores normalised to 0-1 (unscored answers left "
     "out, never 0), or of an automatic metric"),
    ("elo", "Elo rating", "online Elo (K=4, base 10, scale 400, initial 1000) over per-attribute battles: of two "
     "models on an item the higher score wins", {**UNBOUNDED, "unit": "Elo", "aggregation": "rating"}),
    ("bt", "Bradley-Terry rating", "maximum-likelihood Bradley-Terry strength on the Elo scale (ties as half wins), "
     "battle-level bootstrap CI", {**UNBOUNDED, "unit": "Elo", "aggregation": "rating"}),
    ("rank", "Rank", "rank by Bradley-Terry rating (1 = best), bounds from bootstrap ranks",
     {"range": None, "higher_is_better": False, "aggregation": "rank"}),
    ("krippendorff_alpha", "Judge agreement (Krippendorff's alpha)", "agreement of the judges' scores (interval "
     "metric); 1 = perfect, 0 = chance", {"range": (-1.0, 1.0), "aggregation": "over judged units"}),
    ("spearman_vs_human", "Spearman rho vs human labels", "rank correlation over the models between the attribute's "
     "ratings and the human-label ratings", {"range": (-1.0, 1.0), "aggregation": "over models"}),
    ("mean_abs_shap", "Mean |SHAP|", "mean absolute SHAP value of the attribute difference in the preference model "
     "(LightGBM on attribute(A) - attribute(B))", {"range": None, "aggregation": "mean over pairs"}),
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
