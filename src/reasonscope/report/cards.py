"""The summary cards at the top of the HTML report: one per family present.

A card shows the family's headline number per model (or per method) with its 95% CI and n, what
computed it (backend, evaluator, judges), and how many warnings the family raised with the first two.
Each family builds its own card (:meth:`reasonscope.report.view.FamilyReport.card`) with the helpers
here (:func:`estimate_line`, :func:`few_items_caveat`); its page says which number is its headline and
why.

Caveats: a card whose numbers cannot mean much says so first, in its own box above the numbers (for
example a headline over fewer than :data:`FEW_ITEMS` items). Models a family left out (an attack needs a
white-box model) are listed first among the card's warnings. A card's warnings are listed in full (the
first :data:`FIRST_WARNINGS`, the rest behind "more"); the report's banners hold only run-level warnings,
so each warning is written once. The lines of a card are one column, rounded alike (:func:`same_rule`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .numbers import format_column, format_estimate

FIRST_WARNINGS = 2
FEW_ITEMS = 30
"""Fewer items than this behind a headline: its interval is wide and the card says the numbers show the
pipeline rather than measure a model."""


@dataclass
class CardLine:
    """One line of a summary card: a model (or model and method), its formatted value and n."""

    name: str
    value: str
    n: str = ""
    estimate: dict[str, Any] | None = None
    """The estimate behind ``value`` (``value``, ``low``, ``high``): the card's lines are one column, rounded
    alike (:func:`reasonscope.report.numbers.format_column`)."""
    unit: str = ""


@dataclass
class Card:
    """A summary card of one family: headline metric and direction, and one line per model.

    Also what computed it, and the family's warnings and caveats.
    """

    family: str
    title: str
    anchor: str
    headline: str
    direction: str
    lines: list[CardLine]
    backend: str
    warnings: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    @property
    def first_warnings(self) -> list[str]:
        """The warnings shown open on the card, in full."""
        return self.warnings[:FIRST_WARNINGS]

    @property
    def more_warnings(self) -> list[str]:
        """The warnings behind the card's "more" (in full)."""
        return self.warnings[FIRST_WARNINGS:]


def few_items_caveat(what: str, n: int | None) -> list[str]:
    """``["only n <what>: ..."]`` when ``n`` is below :data:`FEW_ITEMS`, else ``[]``."""
    if n is None or n >= FEW_ITEMS:
        return []
    return [f"only {n} {what}: the intervals are wide; these numbers show the pipeline at work, they do not "
            "measure the model"]


def estimate_line(name: str, e: dict[str, Any] | None, unit: str = "", n: Any = None) -> CardLine:
    """A card line of estimate ``e``: ``value [low, high]`` (with ``unit``) and ``n=...``, or ``n/a (why)``.

    ``n``: the count shown (default the estimate's own ``n``).
    """
    n = (e or {}).get("n") if n is None else n
    if not e or e.get("value") is None:
        why = (e or {}).get("reason") or ("no item" if n == 0 else None)
        return CardLine(name, "n/a" + (f" ({why})" if why else ""), "" if n is None else f"n={n}")
    return CardLine(name, format_estimate(e["value"], e.get("low"), e.get("high"), unit), "" if n is None else f"n={n}",
                    e, unit)


def family_cards(tables: Mapping[str, Any], reports: Iterable[Any]) -> list[Card]:
    """The cards of the families present, in the order of ``reports`` (the report's order, also the terminal's).

    ``tables``: family name -> its stored result or its section of ``summary.json`` (absent or None: no card);
    ``reports``: the families' report parts (:class:`reasonscope.report.view.FamilyReport`), each asked for
    its card.
    """
    cards = []
    for report in reports:
        t = tables.get(report.name)
        if not t:
            continue
        card = report.card(t)
        if card is None:
            continue
        same_rule(card.lines)
        card.warnings = [f"left out {why}" if why.startswith(f"{m}:") else f"left out {m}: {why}"
                         for m, why in report.left_out(t).items()] + card.warnings
        cards.append(card)
    return cards


def same_rule(lines: list[CardLine]) -> None:
    """Rewrite the values of a card's lines at one rounding rule (the lines are one column)."""
    shown = [line for line in lines if line.estimate and line.estimate.get("value") is not None]
    for line, text in zip(shown, format_column([line.estimate for line in shown]), strict=True):
        line.value = f"{text} {line.unit}" if line.unit else text


def left_out_models(t: dict[str, Any]) -> dict[str, str]:
    """The models a family's result says it left out (``skipped_models``: model -> why), else ``{}``."""
    return dict(t.get("skipped_models") or {}) if isinstance(t, dict) else {}
