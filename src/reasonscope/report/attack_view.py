"""Attack (MATCHA) outputs: rate tables with CIs, a grouped bar chart of the outcome rates per method,
and the per-item rows (perturbed question, both chains) for the xlsx, csv and HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plots import ci_bars, pyplot, save


def _r(v):
    return round(v, 4) if isinstance(v, float) else v


def attack_sheets(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    rates, items, transfer = [], [], []
    for model, m in t["models"].items():
        for method, r in m["rates"].items():
            row = {"model": model, "method": method, "items": m["items"], "answered_correctly": m["answered_correctly"],
                   "attacked": r["n"], "seconds_per_item": _r(m["seconds_per_item"].get(method))}
            for o in ("success", "wrong", "unattackable"):
                row.update({o: _r(r[o]["value"]), f"{o}_low": _r(r[o]["low"]), f"{o}_high": _r(r[o]["high"])})
            rates.append(row)
        for row in m["rows"]:
            items.append({"model": model, "item": row["item"], "method": row["method"], "outcome": row["outcome"],
                          "why": row["why"], "question": row["question"],
                          "perturbed_question": row["perturbed_question"] or "(embedding perturbation: no text)",
                          "clean_answer": row["clean"]["answer"], "clean_reasoning": row["clean"]["reasoning"],
                          "new_answer": row["perturbed"]["answer"], "new_reasoning": row["perturbed"]["reasoning"],
                          "objective_before": _r(row["objective_before"]), "objective_after": _r(row["objective_after"])})
    for model, tr in t.get("transfer", {}).items():
        for method, r in tr.get("rates", {}).items():
            transfer.append({"transfer_model": model, "method": method, "n": r["n"],
                             **{o: _r(r[o]["value"]) for o in ("success", "wrong", "unattackable")}})
    return {"attack_rates": rates, "attack_items": items, "attack_transfer": transfer}


def attack_plot(t: dict[str, Any], folder: Path) -> dict[str, Path]:
    bars = [(f"{model}\n{method}", r) for model, m in t["models"].items() for method, r in m["rates"].items()
            if r["n"]]
    if not bars:
        return {}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(bars)), 3.8))
    ci_bars(ax, [b for b, _ in bars], {o: {b: r[o] for b, r in bars} for o in ("success", "wrong", "unattackable")},
            fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("rate over correctly answered items (95% CI)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return {"attack_rates": save(fig, folder / "attack_rates.png")}
