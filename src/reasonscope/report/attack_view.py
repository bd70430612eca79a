"""Attack (MATCHA) outputs: rate tables with CIs and explicit denominators, a grouped bar chart of the
outcome rates per method, and the per-item rows (perturbed question, both chains, both reasoning
checks) for the xlsx, csv and HTML report.

Every rate is over the *decided* attacks: attacked - clean reasoning already wrong - not judged -
invalid; the three excluded groups are columns of their own. A higher success rate means more fragile
reasoning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plots import ci_bars, pyplot, save

RATED = ("success", "wrong", "unattackable")
DIRECTION_NOTE = "higher success = more fragile reasoning; higher unattackable = more robust"


def _r(v):
    return round(v, 4) if isinstance(v, float) else v


def rate_columns(r: dict[str, Any]) -> dict[str, Any]:
    """One rate entry as flat columns: the denominator and its exclusions, then each rate with its CI."""
    c = r["counts"]
    row = {"attacked": r["attacked"], "clean_reasoning_already_wrong": c["clean_wrong"],
           "not_judged": c["not_judged"], "invalid_attack": c["invalid"], "decided (n)": r["n"]}
    for o in RATED:
        row.update({o: _r(r[o]["value"]), f"{o}_low": _r(r[o]["low"]), f"{o}_high": _r(r[o]["high"])})
    bounds = r.get("success_bounds")
    row["success_bounds_with_not_judged"] = f"[{bounds['low']:.3f}, {bounds['high']:.3f}]" if bounds else None
    row["reading"] = DIRECTION_NOTE
    return row


def attack_sheets(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    rates, items, transfer = [], [], []
    for model, m in t["models"].items():
        for method, r in m["rates"].items():
            ins = m.get("insertion", {}).get(method, {})
            rates.append({"model": model, "method": method, "items": m["items"],
                          "answered_correctly": m["answered_correctly"], **rate_columns(r),
                          "insertion_redrawn": ins.get("redrawn"), "insertion_no_valid_draw": ins.get("no_valid_draw"),
                          "seconds_per_item": _r(m["seconds_per_item"].get(method))})
        for row in m["rows"]:
            items.append({"model": model, "item": row["item"], "method": row["method"], "outcome": row["outcome"],
                          "why": row["why"], "question": row["question"],
                          "perturbed_question": row["perturbed_question"] or "(embedding perturbation: no text)",
                          "clean_answer": row["clean"]["answer"], "clean_reasoning": row["clean"]["reasoning"],
                          "new_answer": row["perturbed"]["answer"], "new_reasoning": row["perturbed"]["reasoning"],
                          "clean_equations_checked": row["clean_check"]["checked"],
                          "new_false_equations": "; ".join(row["perturbed_check"]["false_equations"]),
                          "clean_judge": row["clean_check"]["judge"], "new_judge": row["perturbed_check"]["judge"],
                          "objective_before": _r(row["objective_before"]), "objective_after": _r(row["objective_after"])})
    for model, tr in t.get("transfer", {}).items():
        for method, r in tr.get("rates", {}).items():
            transfer.append({"transfer_model": model, "method": method, **rate_columns(r)})
    return {"attack_rates": rates, "attack_items": items, "attack_transfer": transfer}


def attack_plot(t: dict[str, Any], folder: Path, gaps: list[str] | None = None) -> dict[str, Path]:
    """Grouped bars of the outcome rates per model and method; with no decided attack nothing is drawn and
    why is appended to ``gaps``."""
    bars = [(f"{model}\n{method}\nn={r['n']} of {r['attacked']}", r) for model, m in t["models"].items()
            for method, r in m["rates"].items() if r["n"]]
    if not bars:
        if gaps is not None:
            gaps.append("no rate plot: no decided attack (no item was answered correctly, so none was attacked, or "
                        "every attack was excluded: clean reasoning already wrong, not judged or invalid)")
        return {}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(bars)), 3.8))
    ci_bars(ax, [b for b, _ in bars], {o: {b: r[o] for b, r in bars} for o in RATED}, fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("rate over decided attacks (95% CI)", fontsize=8)
    ax.set_title(DIRECTION_NOTE, fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return {"attack_rates": save(fig, folder / "attack_rates.png")}
