"""The evidence (RACE) family's metric catalogue.

RACE's numbers (support and contradiction coverage, the asymmetry and its difference between correct and
incorrect predictions, classifier and LLM accuracy), declared once for the printer, the report and the docs'
metric catalogue (``Family.metrics``).
"""

from __future__ import annotations

from ..metric_specs import declare

__all__ = ["EVIDENCE"]


EVIDENCE = declare(
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
