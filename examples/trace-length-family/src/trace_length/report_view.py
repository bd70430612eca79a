"""The family's part of every output: summary.json, the workbook, report.html and the compact summary.

Its summary.json section, a workbook sheet, a report.html table, a summary card at the top of the report
(whose lines are also the terminal's compact summary) and its own section of report.html
(``templates/trace_length.html.j2``).

:class:`reasonscope.report.view.FamilyReport` gives every method a "shows nothing" default; this one
overrides what the family shows.
"""

from __future__ import annotations

from typing import Any

from reasonscope.report.cards import Card, estimate_line, few_items_caveat
from reasonscope.report.numbers import estimate_cells
from reasonscope.report.view import FamilyReport, Table

from .metrics import FAMILY_NAME, METRICS
from .summary_model import TraceLengthSummary

SHEET = "trace_length_models"  # sheet keys are unique across families: prefixed with the family's name


class TraceLengthReport(FamilyReport):
    """Trace length in the report: one row per model, the unexplained-answer share on the card."""

    name = FAMILY_NAME
    title = "Trace length"
    metrics = METRICS
    summary_type = TraceLengthSummary
    summary_description = "The trace_length family (a plugin): reasoning steps per answer and unexplained answers."
    template = "trace_length.html.j2"
    column_labels = {"answers": "Answers", "failed": "Failed"}
    tables = {SHEET: Table("Reasoning steps and unexplained answers per model",
                           "Means over items with 95% intervals (bootstrap for steps, exact Clopper-Pearson for "
                           "the share).")}

    def sheets(self, artefact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """``trace_length_models``: per model each metric with its ``_low``/``_high``, answers, failed."""
        rows = []
        for model, m in artefact["models"].items():
            row: dict[str, Any] = {"model": model}
            for spec in METRICS:
                e = m[spec.key]
                row[spec.key], row[f"{spec.key}_low"], row[f"{spec.key}_high"] = estimate_cells(
                    e["value"], e["low"], e["high"])
            rows.append({**row, "answers": m["answers"], "failed": m["failed"]})
        return {SHEET: rows}

    def card(self, artefact: dict[str, Any]) -> Card:
        """The headline: each model's share of unexplained answers (lower is better)."""
        lines = [estimate_line(model, m["unexplained"]) for model, m in artefact["models"].items()]
        n = max((m["unexplained"]["n"] for m in artefact["models"].values()), default=None)
        return Card(FAMILY_NAME, self.title, FAMILY_NAME, self.spec("unexplained").label,
                    self.direction("unexplained"), lines, f"unexplained: fewer than {artefact['min_steps']} steps",
                    list(artefact.get("warnings") or ()), few_items_caveat("items", n))


REPORT = TraceLengthReport()
