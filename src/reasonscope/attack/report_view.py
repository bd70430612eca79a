"""Attack (MATCHA) outputs for the xlsx, csv and HTML report.

Rate tables with CIs and explicit denominators, a grouped bar chart of the outcome rates per method, and the
per-item rows (perturbed question, both chains, both reasoning checks).

Every rate is over the *decided* attacks: attacked - clean reasoning already wrong - not judged -
invalid; the three excluded groups are columns of their own. A higher success rate means more fragile
reasoning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..report.cards import Card, CardLine, estimate_line, few_items_caveat
from ..report.numbers import estimate_cells
from ..report.plots import FULL, HALF, ci_bars, outside_legend, pyplot, save
from ..report.view import FamilyReport, SplitView, Table
from .catalogue import ATTACK
from .summary_model import AttackItem, AttackSummary

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
        row[o], row[f"{o}_low"], row[f"{o}_high"] = estimate_cells(r[o]["value"], r[o]["low"], r[o]["high"])
    bounds = r.get("success_bounds")
    row["success_bounds_with_not_judged"] = f"[{bounds['low']:.3f}, {bounds['high']:.3f}]" if bounds else None
    row["reading"] = DIRECTION_NOTE
    return row


def attack_sheets(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The attack family's flat tables.

    ``attack_rates`` (per model and method, with CIs), ``attack_items`` (per item) and ``attack_transfer``.
    """
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


def no_decided_attack_reason(t: dict[str, Any]) -> str:
    """Why no attack was decided, from the counts.

    No item answered correctly, or the excluded groups with their sizes.
    """
    models = t.get("models") or {}
    if not any(m.get("answered_correctly") for m in models.values()):
        return "no item was answered correctly, so none was attacked"
    totals = {"clean reasoning already wrong": 0, "not judged": 0, "invalid attack": 0}
    attacked = 0
    for m in models.values():
        for r in (m.get("rates") or {}).values():
            attacked += r.get("attacked", 0)
            c = r.get("counts") or {}
            totals["clean reasoning already wrong"] += c.get("clean_wrong", 0)
            totals["not judged"] += c.get("not_judged", 0)
            totals["invalid attack"] += c.get("invalid", 0)
    excluded = ", ".join(f"{k} {v}" for k, v in totals.items() if v)
    return f"all {attacked} attacks were excluded ({excluded or 'none attacked'})"


def attack_plot(t: dict[str, Any], folder: Path, gaps: list[str] | None = None) -> dict[str, Path]:
    """Grouped bars of the outcome rates per model and method.

    With no decided attack nothing is drawn and why is appended to ``gaps``.
    """
    bars = [(f"{model}\n{method}\nn={r['n']} of {r['attacked']}", r) for model, m in t["models"].items()
            for method, r in m["rates"].items() if r["n"]]
    if not bars:
        if gaps is not None:
            gaps.append(f"no rate plot: no decided attack: {no_decided_attack_reason(t)}")
        return {}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=HALF if len(bars) <= 3 else FULL)
    ci_bars(ax, [b for b, _ in bars], {o: {b: r[o] for b, r in bars} for o in RATED})
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of decided attacks (0-1; 95% CI)")
    ax.set_title(DIRECTION_NOTE, fontsize=9)
    outside_legend(ax)
    return {"attack_rates": save(fig, folder / "attack_rates.png")}


ATTACK_COUNTS = ("items", "answered_correctly", "attacked", "clean_reasoning_already_wrong", "not_judged",
                 "invalid_attack", "insertion_redrawn", "insertion_no_valid_draw")
"""Columns of ``attack_rates`` shown in their own table ("Attacks per model and method: the denominators")."""


def attack_card(t: dict[str, Any]) -> Card:
    """The attack card: each model's attack success rate of its first method, over the decided attacks.

    Higher = more fragile reasoning.
    """
    lines, decided = [], []
    for model, m in t.get("models", {}).items():
        method = next(iter(m.get("rates", {})), None)
        if method is None:
            lines.append(CardLine(model, "n/a (not attacked)"))
            continue
        r = m["rates"][method]
        decided.append(r["n"])
        line = estimate_line(f"{model} · {method}", r["success"], n=r["n"]) if r["n"] else \
            CardLine(f"{model} · {method}", "n/a (no decided attack)", f"n=0 of {r['attacked']} attacked")
        lines.append(line)
    return Card("attack", "Attack (MATCHA)", "attack", REPORT.spec("success").label,
                "higher = more fragile reasoning", lines, f"reasoning check: {t.get('reasoning_check')}",
                list(t.get("warnings", [])), few_items_caveat("decided attacks", max(decided, default=None)))


class AttackReport(FamilyReport):
    """The attack family's report: rate tables, the rate plot, the success-rate card and the attacked items."""

    name = "attack"
    title = "Attack (MATCHA)"
    metrics = ATTACK
    summary_type = AttackSummary
    records = {"attack_items": AttackItem}
    template = "attack.html.j2"
    column_labels = {"items": "Items"}
    tables = {
        "attack_rates": Table(
            "Outcome rates", "Rates over the decided attacks (attacked minus the excluded columns) with exact 95% "
            "Clopper-Pearson CIs; higher success = more fragile reasoning, higher unattackable = more robust.",
            ("reading", *ATTACK_COUNTS)),
        "attack_transfer": Table("Transfer to other models", "The successful perturbations replayed on each "
                                 "transfer model, rated the same way.", ("reading",)),
    }
    split_views = (SplitView(
        "attack_counts", "attack_rates", "Attacks per model and method: the denominators",
        "How the decided attacks of the rates above come about: decided = attacked - clean reasoning already wrong "
        "- not judged - invalid attack; insertions redrawn for the random baseline.",
        ("model", "method", *ATTACK_COUNTS, "decided (n)")),)

    def summary(self, artefact: dict[str, Any]) -> dict[str, Any]:
        """The tables without each model's per-item rows (those are ``attack_items.jsonl``)."""
        return {**artefact, "models": {m: {k: v for k, v in t.items() if k != "rows"}
                                       for m, t in artefact["models"].items()}}

    def record_rows(self, artefact: dict[str, Any]) -> dict[str, Any]:
        """``attack_items``: every model's attacked items."""
        return {"attack_items": (row for t in artefact["models"].values() for row in t["rows"])}

    def sheets(self, artefact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """:func:`attack_sheets`."""
        return attack_sheets(artefact)

    def plots(self, artefact: dict[str, Any], folder: Path, gaps: list[str]) -> dict[str, Path]:
        """:func:`attack_plot`."""
        return attack_plot(artefact, folder, gaps)

    def card(self, artefact: dict[str, Any]) -> Card:
        """:func:`attack_card`."""
        return attack_card(artefact)

    def section(self, artefact: dict[str, Any], sheets: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """``rows``: the attacked items as the ``attack_items`` sheet lists them (both chains)."""
        return {"rows": sheets.get("attack_items", [])}


REPORT = AttackReport()
