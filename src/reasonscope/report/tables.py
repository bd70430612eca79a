"""Flat tables (lists of row dicts) derived from a family's stored result, shared by the xlsx, csv
and HTML writers so that every output shows the same numbers."""

from __future__ import annotations

from typing import Any

from ..settings import BEHAVIOR_METRICS

ES_READINGS = ("ES_corpus", "ES_item")


def _fmt(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def fmt_p(v: float | None) -> float | None:
    """A p-value to 4 significant digits (never rounded to 0: 3e-7 stays 3e-7)."""
    return None if v is None else float(f"{v:.4g}")


def behavior_tables(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    raw, strat, per_ds, per_type = [], [], [], []
    for model, mets in t.get("metrics", {}).items():
        row: dict[str, Any] = {"model": model}
        for m in BEHAVIOR_METRICS:
            e = mets[m]
            row[m] = _fmt(e["value"])
            row[f"{m}_low"] = _fmt(e["low"])
            row[f"{m}_high"] = _fmt(e["high"])
            row[f"{m}_n"] = e["n"]
            row[f"{m}_failed"] = e.get("failed", 0)
            if e["value"] is None:
                row[f"{m}_reason"] = e.get("reason")
        for m in ES_READINGS:  # both readings of ES under their own names; ES is the selected one
            if m in mets:
                row[m], row[f"{m}_low"], row[f"{m}_high"] = (_fmt(mets[m][k]) for k in ("value", "low", "high"))
        row["ES_reading"] = mets.get("ES", {}).get("reading")
        c = t.get("counts", {}).get(model, {})
        row.update({"items": c.get("items"), "failed": c.get("failed"), "pending": c.get("pending", 0),
                    "unparseable": c.get("unparseable"), "truncated": c.get("truncated"),
                    "failed_generations": t.get("settings", {}).get("failed_generations", "wrong")})
        raw.append(row)
        srow: dict[str, Any] = {"model": model}
        for name, res in t.get("strategies", {}).get(model, {}).items():
            srow[name] = _fmt(res["value"])
            if res["left_out"]:
                srow[f"{name}_left_out"] = ",".join(res["left_out"])
        strat.append(srow)
        for label, target in (("per_dataset", per_ds), ("per_type", per_type)):
            for bucket, ests in t.get(label, {}).get(model, {}).items():
                r = {"model": model, "dataset" if label == "per_dataset" else "type": bucket}
                for m in BEHAVIOR_METRICS:
                    r[m] = _fmt(ests[m]["value"])
                    r[f"{m}_low"], r[f"{m}_high"] = _fmt(ests[m]["low"]), _fmt(ests[m]["high"])
                    r[f"{m}_n"] = ests[m]["n"]
                    r[f"{m}_failed"] = ests[m].get("failed", 0)
                target.append(r)
    weights = [{"strategy": name, **{m: _fmt(w[m]) for m in BEHAVIOR_METRICS},
                "user": name in t.get("user_strategies", [])} for name, w in t.get("strategy_weights", {}).items()]
    adjust = (t.get("p_adjust") or {}).get("description")
    paired = [{**{k: fmt_p(v) if k.startswith("p_") else _fmt(v) for k, v in row.items()}, "p_adjust": adjust}
              for row in t.get("paired", [])]
    return {"raw_metrics": raw, "strategies": strat, "strategy_weights": weights, "per_dataset": per_ds,
            "per_type": per_type, "paired_differences": paired}
