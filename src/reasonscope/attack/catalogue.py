"""The attack (MATCHA) family's metric catalogue.

MATCHA's outcome rates (success: higher = more fragile reasoning; answer changed; unattackable), the transfer
rate and the seconds per item, declared once for the printer, the report and the docs' metric catalogue
(``Family.metrics``).
"""

from __future__ import annotations

from ..metric_specs import declare

__all__ = ["ATTACK"]


ATTACK = declare(
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
