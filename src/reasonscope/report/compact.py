"""The compact summary printed last by every run: one line per model and family, lm-eval style.

A markdown table (it reads in a terminal and pastes into an issue or a notebook) of each family's
headline metric, the one its card in report.html shows (:mod:`reasonscope.report.cards`): family,
model (and attack method), metric, direction (``↑`` higher is better, ``↓`` lower is better), n, and
the value with its 95% CI at the card's rounding rule. Models a family left out are lines of their
own, with why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cards import family_cards

if TYPE_CHECKING:
    from .view import FamilyReport

HEADERS = ("Family", "Model", "Metric", "Dir", "n", "Value [95% CI]")
NUMERIC = (False, False, False, False, True, True)


def _arrow(direction: str) -> str:
    if direction.startswith("higher is better") or direction.startswith("higher = more new"):
        return "↑"
    if direction.startswith("lower is better") or direction.startswith("higher = more fragile"):
        return "↓"
    return ""


def compact_rows(summary: dict[str, Any], reports: Iterable[FamilyReport]) -> list[tuple[str, ...]]:
    """The rows of the compact summary of a ``summary.json`` (module docstring), family by family as ``reports``."""
    rows = []
    for card in family_cards(summary, reports):
        metric = card.headline.split(" (mean score")[0]
        for line in card.lines:
            rows.append((card.family, line.name, metric, _arrow(card.direction), line.n.removeprefix("n="),
                         line.value))
        for model, why in (summary.get("left_out") or {}).get(card.family, {}).items():
            rows.append((card.family, model, "left out", "", "", why.removeprefix(f"{model}: ")))
    return rows


def compact_lines(summary: dict[str, Any], reports: Iterable[FamilyReport]) -> list[str]:
    """The compact summary as aligned markdown lines; ``[]`` when no family has a result."""
    rows = compact_rows(summary, reports)
    if not rows:
        return []
    widths = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(HEADERS)]

    def line(cells) -> str:
        return "| " + " | ".join(c.rjust(w) if num else c.ljust(w)
                                 for c, w, num in zip(cells, widths, NUMERIC, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" if num else "-" * (w + 2)
                          for w, num in zip(widths, NUMERIC, strict=True)) + "|"
    return ["summary (headline metric per model and family; ↑ higher is better, ↓ lower is better):",
            line(HEADERS), rule, *(line(r) for r in rows)]


def print_compact(summary_path: Path, console: Any, families: Iterable[Any]) -> None:
    """Print the compact summary of the run whose ``summary.json`` is ``summary_path`` to a rich console.

    ``families``: the families whose cards make the lines, in the order printed (the registry's summary order).
    """
    lines = compact_lines(json.loads(Path(summary_path).read_text(encoding="utf-8")), [f.report for f in families])
    if lines:
        console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)
