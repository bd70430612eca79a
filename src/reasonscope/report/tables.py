"""Flat tables (lists of row dicts) derived from a family's stored result, shared by the xlsx, csv
and HTML writers so that every output shows the same numbers."""

from __future__ import annotations

from typing import Any

from ..config import BEHAVIOR_METRICS


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
        c = t.get("counts", {}).get(model, {})
        row.update({"items": c.get("items"), "failed": c.get("failed"), "unparseable": c.get("unparseable"),
                    "truncated": c.get("truncated")})
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
                target.append(r)
    weights = [{"strategy": name, **{m: _fmt(w[m]) for m in BEHAVIOR_METRICS},
                "user": name in t.get("user_strategies", [])} for name, w in t.get("strategy_weights", {}).items()]
    adjust = (t.get("p_adjust") or {}).get("description")
    paired = [{**{k: fmt_p(v) if k.startswith("p_") else _fmt(v) for k, v in row.items()}, "p_adjust": adjust}
              for row in t.get("paired", [])]
    return {"raw_metrics": raw, "strategies": strat, "strategy_weights": weights, "per_dataset": per_ds,
            "per_type": per_type, "paired_differences": paired}
