"""The information (REV, LAREV) family's metric catalogue.

REV and LAREV, the separations Gold - X, the evaluators' accuracies and the baseline-only check, declared once
(units in nats where unbounded) for the printer, the report and the docs' metric catalogue
(``Family.metrics``).
"""

from __future__ import annotations

from ..metric_specs import UNBOUNDED, declare

__all__ = ["INFORMATION"]


INFORMATION = declare(
    "information",
    ("REV", "REV", "log p(y | r, b) under Phi minus log p(y | b) under Phi_base, in nats (sum or per-token mean over "
     "y's tokens, as the table says); > 0: the rationale adds label information", {**UNBOUNDED, "unit": "nats"}),
    ("LAREV", "LAREV", "as REV, with the leakage-aware evaluator Phi_LA (IRM across original / masked / antonym "
     "environments and a leakage probe) in place of Phi", {**UNBOUNDED, "unit": "nats"}),
    ("separation", "Separation Gold - X", "mean paired difference score(Gold) - score(X) over the test items; a good "
     "evaluator separates Gold from Leaky, Gold-Leaky and Vacuous", {**UNBOUNDED, "unit": "nats",
                                                                    "aggregation": "mean paired difference"}),
    ("separation_sum", "Sum of separations", "sum of the three separations Gold - X", {**UNBOUNDED, "unit": "nats",
                                                                                     "aggregation": "sum"}),
    ("accuracy", "Evaluator accuracy", "share of test items whose label the evaluator ranks first given r and b",
     {"aggregation": "share of test items"}),
    ("baseline_accuracy", "Baseline evaluator accuracy on b", "accuracy of the baseline evaluator from b alone; high values "
     "mean the baseline gives the label away and REV cannot mean much", {"higher_is_better": False,
                                                                         "aggregation": "share of held-out items"}),
)
