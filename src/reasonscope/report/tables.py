"""Flat tables (lists of row dicts) derived from a family's stored result, shared by every writer.

The xlsx, csv and HTML writers share them, so that every output shows the same numbers: the rows keep their
estimates unrounded, and one rounding rule per column (:mod:`reasonscope.report.columns`) is applied where the
sheets are written; p-values keep 2 significant digits, other numbers 4 decimals until then.
"""

from __future__ import annotations

from typing import Any

from ..metric_specs import BEHAVIOR_METRICS
from .numbers import estimate_cells, round_p

ES_READINGS = ("ES_corpus", "ES_item")


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
