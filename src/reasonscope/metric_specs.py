"""What every reported number is: its key, a human label, unit, range and direction, declared once.

A :class:`MetricSpec` is read by the console printers, the HTML report (column labels, "how computed"
notes, summary cards), the contract tests and the docs, so a number is named the same way wherever it
is shown. Families declare theirs; this module is a shared layer and imports no family.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    """One reported number.

    Parameters
    ----------
    key
        the name in tables and ``summary.json`` (``"CQ"``, ``"coverage_support"``, ``"success_rate"``).
    label
        the human label shown in reports and printers (``"Correctness (CQ)"``).
    family
        the family that computes it.
    range
        ``(low, high)`` of the possible values; ``None`` when unbounded (REV in nats, ratings in Elo).
    higher_is_better
        direction: ``True``, ``False`` (e.g. attack success: more fragile reasoning), ``None`` (neither).
    unit
        ``""`` (a share or score in [0, 1]), ``"nats"``, ``"Elo"``, ``"s"``...
    aggregation
        how per-item values become the number (``"mean over items"``).
    description
        one line on how it is computed, shown as the report's "how computed" note.
    """

    key: str
    label: str
    family: str
    range: tuple[float, float] | None = (0.0, 1.0)
    higher_is_better: bool | None = True
    unit: str = ""
    aggregation: str = "mean over items"
    description: str = ""


__all__ = ["MetricSpec"]
