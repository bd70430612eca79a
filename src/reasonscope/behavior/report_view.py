"""The behaviour family's part of the report: its tables, its plot, its card and its section of report.html.

Tables (:func:`behavior_tables`): the six metrics per model with their 95% CIs, the weighted strategy scores
and their weights, the metrics per dataset and per item type, and the paired differences between models;
the rows keep their estimates unrounded (one rounding rule per column is applied where the sheets are
written). Plot: the six metrics per model as grouped bars with their CIs (:func:`behavior_plots`; a radar
cannot show intervals). Card: correctness CQ per model, the number every other behaviour metric is read
against. In the page's per-item drill-down an item is marked right when its CQ is 1, and each reasoning
step shows its contradiction probability with the next step (from LS).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..report.cards import Card, estimate_line, few_items_caveat
from ..report.numbers import estimate_cells, round_p
from ..report.plots import FULL, ci_bars, outside_legend, pyplot, save
from ..report.view import FamilyReport, SplitView, Table
from .catalogue import BEHAVIOR, BEHAVIOR_METRICS
from .summary_model import BehaviorSummary

__all__ = ["BEHAVIOR_COUNTS", "BehaviorReport", "ES_READINGS", "REPORT", "behavior_plots", "behavior_tables",
           "grouped_bars"]

ES_READINGS = ("ES_corpus", "ES_item")
BEHAVIOR_COUNTS = ("ES_corpus", "ES_item", "ES_reading", "items", "failed", "pending", "unparseable", "truncated",
                   "failed_generations")
"""Columns of ``raw_metrics`` shown in their own table ("Other efficiency reading and counts per model")."""


def _fmt(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def _paired_row(row: dict[str, Any]) -> dict[str, Any]:
    """A paired-difference row: p-values and the difference with its CI rounded by the report's rule."""
    out = {k: round_p(v) if k.startswith("p_") else _fmt(v) for k, v in row.items()}
    if "difference" in row:
        out["difference"], out["low"], out["high"] = estimate_cells(row["difference"], row.get("low"), row.get("high"))
    return out


def behavior_tables(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The behaviour family's flat tables.

    Raw metrics with CIs, strategies, strategy weights, per dataset, per type, and paired differences.
    """
    raw, strat, per_ds, per_type = [], [], [], []
    for model, mets in t.get("metrics", {}).items():
        row: dict[str, Any] = {"model": model}
        for m in BEHAVIOR_METRICS:
            e = mets[m]
            row[m], row[f"{m}_low"], row[f"{m}_high"] = estimate_cells(e["value"], e["low"], e["high"])
            row[f"{m}_n"] = e["n"]
            row[f"{m}_failed"] = e.get("failed", 0)
            if e["value"] is None:
                row[f"{m}_reason"] = e.get("reason")
        for m in ES_READINGS:  # both readings of ES under their own names; ES is the selected one
            if m in mets:
                row[m], row[f"{m}_low"], row[f"{m}_high"] = estimate_cells(*(mets[m][k] for k in ("value", "low", "high")))
        row["ES_reading"] = mets.get("ES", {}).get("reading")
        c = t.get("counts", {}).get(model, {})
        row.update({"items": c.get("items"), "failed": c.get("failed"), "pending": c.get("pending", 0),
                    "unparseable": c.get("unparseable"), "truncated": c.get("truncated"),
                    "failed_generations": t.get("settings", {}).get("failed_generations", "wrong")})
        raw.append(row)
        srow: dict[str, Any] = {"model": model}
        for name, res in t.get("strategies", {}).get(model, {}).items():
            srow[name], srow[f"{name}_low"], srow[f"{name}_high"] = estimate_cells(
                res["value"], res.get("low"), res.get("high"))  # the CI: item bootstrap (behavior.strategies)
            if res["left_out"]:
                srow[f"{name}_left_out"] = ",".join(res["left_out"])
        strat.append(srow)
        for label, target in (("per_dataset", per_ds), ("per_type", per_type)):
            for bucket, ests in t.get(label, {}).get(model, {}).items():
                r = {"model": model, "dataset" if label == "per_dataset" else "type": bucket}
                for m in BEHAVIOR_METRICS:
                    r[m], r[f"{m}_low"], r[f"{m}_high"] = estimate_cells(ests[m]["value"], ests[m]["low"], ests[m]["high"])
                    r[f"{m}_n"] = ests[m]["n"]
                    r[f"{m}_failed"] = ests[m].get("failed", 0)
                target.append(r)
    weights = [{"strategy": name, **{m: _fmt(w[m]) for m in BEHAVIOR_METRICS},
                "user": name in t.get("user_strategies", [])} for name, w in t.get("strategy_weights", {}).items()]
    adjust = (t.get("p_adjust") or {}).get("description")
    paired = [{**_paired_row(row), "p_adjust": adjust} for row in t.get("paired", [])]
    return {"raw_metrics": raw, "strategies": strat, "strategy_weights": weights, "per_dataset": per_ds,
            "per_type": per_type, "paired_differences": paired}


def _label(key: str) -> str:
    spec = next((s for s in BEHAVIOR if s.key == key), None)
    return spec.label if spec else key


def grouped_bars(metrics: dict[str, dict[str, Any]], path: Path) -> Path:
    """The six behaviour metrics per model as grouped bars with their 95% CIs.

    A metric n/a for a model has no bar (its reason is in the table).
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=FULL)
    ci_bars(ax, list(BEHAVIOR_METRICS), metrics, labels=[_label(m) for m in BEHAVIOR_METRICS])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean over items (0-1; 95% CI)")
    ax.set_title("Behaviour metrics per model (higher is better; n/a marked, its reason in the table)")
    outside_legend(ax)
    return save(fig, path)


def behavior_plots(metrics: dict[str, dict[str, Any]], folder: Path, gaps: list[str]) -> dict[str, Path]:
    """The grouped bars of the behaviour metrics, with their CIs (a radar cannot show intervals).

    When no metric has a value for any model nothing is drawn and why is appended to ``gaps``.
    """
    if not any(mets[m]["value"] is not None for mets in metrics.values() for m in BEHAVIOR_METRICS):
        gaps.append("no behaviour plots: every metric is n/a for every model (see the reasons in the table)")
        return {}
    return {"behavior_bars": grouped_bars(metrics, folder / "behavior_bars.png")}


class BehaviorReport(FamilyReport):
    """The behaviour family's report: tables, grouped bars, the CQ card and the section with its settings."""

    name = "behavior"
    title = "Behaviour"
    metrics = BEHAVIOR
    summary_type = BehaviorSummary
    template = "behavior.html.j2"
    item_verdict = "CQ"
    step_scores = ("LS", "contradiction")
    tables = {
        "raw_metrics": Table(
            "Behaviour metrics per model",
            "Mean over items with a 95% CI chosen by the kind of values (exact Clopper-Pearson for 0/1 values such as "
            "CQ, a score interval for bounded means; see the Statistics page); under each value n = items with a "
            "value and the failed generations the metric read.", BEHAVIOR_COUNTS),
        "strategies": Table(
            "Weighted strategy scores",
            "Each strategy's weighted mean of the model's metrics (weights in the next table); a metric that is n/a "
            "is left out and the remaining weights renormalised (\"without ...\"). 95% CI: percentile item "
            "bootstrap, the items resampled together for every metric and the weighted mean recomputed on each "
            "resample."),
        "strategy_weights": Table("Strategy weights", "Normalised weight of each metric in each strategy (sum 1)."),
        "per_dataset": Table("Per dataset", "The metrics restricted to the items of each dataset, 95% CIs over "
                             "those items (by the kind of values, as above)."),
        "per_type": Table("Per item type", "The metrics restricted to the items of each type, 95% CIs over those "
                          "items (by the kind of values, as above)."),
        "paired_differences": Table(
            "Paired differences (A - B, same items)",
            "p: paired sign-flip permutation test, H0: per-item differences symmetric about 0, two-sided; adjusted "
            "as the Adjustment column says."),
    }
    split_views = (SplitView(
        "behavior_counts", "raw_metrics", "Other efficiency reading and counts per model",
        "The other reading of ES (the one the strategies use is the ES column above, as the settings line says), "
        "and the items, failed, pending, unparseable and truncated generations of each model.",
        ("model", *BEHAVIOR_COUNTS), once_per_page="ES_reading"),)

    def sheets(self, artefact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """:func:`behavior_tables`."""
        return behavior_tables(artefact)

    def plots(self, artefact: dict[str, Any], folder: Path, gaps: list[str]) -> dict[str, Path]:
        """:func:`behavior_plots` of the metrics (nothing without metrics)."""
        return behavior_plots(artefact["metrics"], folder, gaps) if artefact.get("metrics") else {}

    def card(self, t: dict[str, Any]) -> Card:
        """The behaviour card: CQ per model, with the answer matching, NLI and similarity backends."""
        lines = [estimate_line(m, mets.get("CQ")) for m, mets in t.get("metrics", {}).items()]
        b = t.get("backends", {})
        n = max((mets.get("CQ", {}).get("n") or 0 for mets in t.get("metrics", {}).values()), default=None)
        return Card(self.name, self.title, self.name, self.spec("CQ").label, self.direction("CQ"), lines,
                    f"answers: {b.get('answer_matching')}; NLI: {b.get('nli')}; similarity: {b.get('similarity')}",
                    list(t.get("warnings", [])), few_items_caveat("items per model", n))


REPORT = BehaviorReport()


def behavior_card(t: dict[str, Any]) -> Card:
    """The behaviour card (:meth:`BehaviorReport.card`)."""
    return REPORT.card(t)
