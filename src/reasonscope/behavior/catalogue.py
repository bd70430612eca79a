"""The behaviour family's metric catalogue.

The behaviour family's numbers (CQ, CS, RS, LS, ES and its two readings, the length score, SS, the weighted
strategy score, paired differences), declared once: the printer, the report and the docs' metric catalogue
read these specs (``Family.metrics``).
"""

from __future__ import annotations

from ..metric_specs import declare

__all__ = ["BEHAVIOR", "BEHAVIOR_METRICS"]


BEHAVIOR = declare(
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
(keys of :data:`BEHAVIOR`; read by the family's settings, scoring, printer and report view)."""
