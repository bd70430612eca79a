"""The report part of a family: what it adds to ``summary.json``, the workbook, the plots and ``report.html``.

Every family brings one :class:`FamilyReport` (``Family.report``). The report builder
(:mod:`reasonscope.report.build`) is handed the families and loops over their reports; it names none of
them. For each family whose artefact (``<name>.json``) the run stored, in the order the families are
given, the builder asks its report for:

* :meth:`FamilyReport.summary`: its section of ``summary.json``, typed by :attr:`FamilyReport.summary_type`
  (the ``Summary`` model is assembled from these: :func:`reasonscope.output_files.summary_model`);
* :meth:`FamilyReport.record_rows`: the rows of its own JSONL files (:attr:`FamilyReport.records`, each
  with a published schema);
* :meth:`FamilyReport.sheets`: its flat tables (xlsx sheets, csv files; those named in
  :attr:`FamilyReport.tables` are also report.html tables, with a title and a "how computed" note);
* :meth:`FamilyReport.plots`: its PNG plots (and why a plot was not drawn);
* :meth:`FamilyReport.card`: its summary card at the top of report.html, whose lines also make the
  terminal's compact summary (:mod:`reasonscope.report.compact`);
* :meth:`FamilyReport.section`: what its own section of report.html needs besides its tables and plots,
  rendered by its partial template (:attr:`FamilyReport.template`, in ``<family package>/templates/``) or,
  without one, by the generic section (a heading, its tables, its plots).

Column labels come from the family's metric catalogue (:attr:`FamilyReport.metrics`), then
:attr:`FamilyReport.column_labels`, then the shared labels (:mod:`reasonscope.report.labels`).

Every method has a "shows nothing" default, so a family that declares only its name still appears in
``summary.json`` (its artefact as it is). This module is a shared layer: it imports no family.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..metric_specs import MetricSpec

if TYPE_CHECKING:
    from .cards import Card

__all__ = ["FamilyReport", "SplitView", "Table"]

DIRECTION_WORDS = {True: "higher is better", False: "lower is better", None: "neither direction is better"}


@dataclass(frozen=True)
class Table:
    """How report.html shows one sheet of a family.

    Attributes:
        title: The table's heading.
        note: How its numbers were computed (the catalogue description of each metric column is appended).
        hidden: Columns kept in the xlsx and csv but not shown on the page.
    """

    title: str
    note: str = ""
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True)
class SplitView:
    """A second HTML table made of some columns of a sheet (so that a wide table fits a screen).

    Attributes:
        key: The view's own key (its anchor on the page).
        sheet: The sheet it takes its columns from.
        title: Its heading.
        note: How its numbers were computed.
        columns: The columns shown (with their ``_low``/``_high`` companions).
        once_per_page: A column of the sheet that names another column shown above already (the row's
            value is a column key: that column is left out here); ``""`` for none.
    """

    key: str
    sheet: str
    title: str
    note: str
    columns: tuple[str, ...]
    once_per_page: str = ""


class FamilyReport:
    """A family's presentation: summary section, tables, plots, card and report section.

    Subclass it in ``<family>/report_view.py`` and override what the family shows; set the class
    attributes below. The defaults show nothing but the artefact itself as the family's section of
    ``summary.json``.

    Attributes:
        name: The family's name (its artefact is ``<name>.json``; its summary.json key).
        title: Card title, table-of-contents link and paper section (default: the name).
        metrics: The family's metric catalogue (labels, units, directions, "how computed" notes).
        summary_type: The annotation of the family's field in ``summary.json`` (a pydantic model, or for
            example ``dict[str, ModelSummary]``).
        summary_description: The description of that field in the published schema.
        records: Its own JSONL files: file stem -> the model of one line (a published schema each).
        tables: Sheet key -> how report.html shows it (sheets not listed go to the xlsx and csv only).
        split_views: Second views of some columns of a sheet.
        column_labels: Column key -> label, for this family's tables (before the catalogue's labels).
        spec_aliases: Column key -> the catalogue key whose description explains the column.
        template: A Jinja2 partial in ``<package>/templates/`` rendering the family's section of
            report.html; None: the generic section.
        package: The package holding ``templates/`` (default: the package of the subclass's module).
        item_verdict: The item-level metric whose value 1.0 marks an item right (✓, else ✗) in the page's
            per-item drill-down; None: the family marks no item.
        step_scores: ``(metric, details key)``: the item-level score whose details hold one number per
            reasoning step, shown next to each step in the drill-down; None: none.
    """

    name: str = ""
    title: str = ""
    metrics: tuple[MetricSpec, ...] = ()
    summary_type: Any = dict[str, Any]
    summary_description: str | None = None
    records: dict[str, type[BaseModel]] = {}
    tables: dict[str, Table] = {}
    split_views: tuple[SplitView, ...] = ()
    column_labels: dict[str, str] = {}
    spec_aliases: dict[str, str] = {}
    template: str | None = None
    package: str | None = None
    item_verdict: str | None = None
    step_scores: tuple[str, str] | None = None

    def __init__(self, name: str | None = None, *, title: str | None = None,
                 metrics: tuple[MetricSpec, ...] | None = None) -> None:
        """A report of family ``name`` (class attributes unless given here)."""
        if name is not None:
            self.name = name
        if metrics is not None:
            self.metrics = tuple(metrics)
        self.title = title or self.title or self.name
        if self.package is None:
            module = type(self).__module__
            self.package = module.rpartition(".")[0] or module
        self._specs = {s.key: s for s in self.metrics}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    # --- the catalogue ---------------------------------------------------------------------------------

    def find_spec(self, key: str) -> MetricSpec | None:
        """The catalogue entry of ``key`` in this family, or None."""
        return self._specs.get(key)

    def spec(self, key: str) -> MetricSpec:
        """The catalogue entry of ``key``; a KeyError names the known keys."""
        try:
            return self._specs[key]
        except KeyError:
            raise KeyError(f"no metric {key!r} in family {self.name!r} (known: {', '.join(self._specs)})") from None

    def direction(self, key: str) -> str:
        """``"higher is better"``, ``"lower is better"`` or ``"neither direction is better"`` for metric ``key``."""
        return DIRECTION_WORDS[self.spec(key).higher_is_better]

    # --- what the family shows (defaults: nothing) ------------------------------------------------------

    def summary(self, artefact: dict[str, Any]) -> Any:
        """The family's section of ``summary.json`` (valid against :attr:`summary_type`); here the artefact."""
        return artefact

    def record_rows(self, artefact: dict[str, Any]) -> dict[str, Iterable[dict[str, Any]]]:
        """The lines of each file of :attr:`records`, by file stem; here none."""
        return {}

    def sheets(self, artefact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """The family's flat tables, sheet key -> rows (estimates unrounded); here none."""
        return {}

    def plots(self, artefact: dict[str, Any], folder: Path, gaps: list[str]) -> dict[str, Path]:
        """Write the family's PNG plots into ``folder``; plot name -> file. Append why a plot is missing to ``gaps``."""
        return {}

    def card(self, artefact: dict[str, Any]) -> Card | None:
        """The family's summary card (headline per model with its CI); here None (no card)."""
        return None

    def section(self, artefact: dict[str, Any], sheets: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """Variables for the family's partial template besides ``t`` (the artefact); here none."""
        return {}

    def scored(self, artefact: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
        """Dataset -> items scored, when it can differ from the size the plan names; here none.

        ``settings``: the family's section of the run's plan.
        """
        return {}

    def value_label(self, column: str, value: str) -> str | None:
        """The label a text cell of column ``column`` shows instead of ``value``; here None (the value)."""
        spec = self.find_spec(value) if column == "metric" else None
        return spec.label if spec is not None else None

    def left_out(self, artefact: Any) -> dict[str, str]:
        """The models the family left out, model -> why (the artefact's ``skipped_models``)."""
        return dict(artefact.get("skipped_models") or {}) if isinstance(artefact, dict) else {}
