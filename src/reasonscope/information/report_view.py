"""Information (REV, LAREV) outputs.

The absolute score table (method x variant), the separation table (Gold - X and SUM) with CIs, both naming the
log-likelihood reduction, accuracy per variant, the baseline-only check on held-out items, how baselines and
antonym environments were built (stand-ins flagged), truncated inputs, training summary and penalty weights,
and a grouped bar chart of REV and LAREV side by side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..report.cards import Card, estimate_line, few_items_caveat
from ..report.numbers import estimate_cells, format_number, round_p
from ..report.plots import FULL, ci_bars, outside_legend, pyplot, save
from ..report.view import FamilyReport, Table
from .catalogue import INFORMATION
from .summary_model import InformationSummary


def _r(v):
    return round(v, 4) if isinstance(v, float) else v


def _reduction(t: dict[str, Any]) -> str:
    return {"sum": "sum over y's tokens", "mean": "mean per y token"}.get(t.get("reduction"), str(t.get("reduction")))


def information_sheets(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """One table per sheet; every score table names its reduction in a column."""
    absolute, separation, accuracy, training = [], [], [], []
    reduction = _reduction(t)
    for m, row in t["absolute"].items():
        for v, e in row.items():
            score, low, high = estimate_cells(e["value"], e["low"], e["high"])
            absolute.append({"method": m.upper(), "variant": v, "score": score, "low": low, "high": high, "n": e["n"],
                             "interval": e.get("method"), "log p reduction": reduction})
    for m, row in t["separation"].items():
        for pair, e in row.items():
            value, low, high = estimate_cells(e["value"], e["low"], e["high"])
            separation.append({"method": m.upper(), "separation": pair.replace("-", " - "), "value": value,
                               "low": low, "high": high, "n": e["n"], "interval": e.get("method"),
                               "p_value": round_p(e["p_value"]),
                               "p_adjusted": round_p(e.get("p_adjusted")), "test": e.get("test"), "null": e.get("null"),
                               "log p reduction": reduction})
    for m, row in t["accuracy"].items():
        accuracy.append({"method": m.upper(), **{v: _r(a) for v, a in row.items()},
                         "phi_base_on_b": _r(t["baseline_accuracy"])})
    for name, info in t["training"].items():
        if isinstance(info, dict) and "best_val_loss" in info:
            training.append({"model": name, "best_epoch": info.get("best_epoch"),
                             "best_val_loss": _r(info.get("best_val_loss")),
                             "examples_per_s": _r(info.get("examples_per_s"))})
    b = t.get("baseline_only") or {}
    limit = (t.get("settings") or {}).get("baseline_warn_accuracy")
    baseline_only = [{"held-out split": b.get("split"), "n": b.get("n"), "Phi_base accuracy on b": _r(b.get("accuracy")),
                      "mean p(y | b)": _r(b.get("mean_p_label")), "warn at": limit,
                      "label given away": None if b.get("accuracy") is None or limit is None
                      else b["accuracy"] >= limit}] if b else []
    return {"information_scores": absolute, "information_separation": separation,
            "information_accuracy": accuracy, "information_baseline_only": baseline_only,
            "information_substitutions": substitution_rows(t), "information_truncation": truncation_rows(t),
            "information_training": training,
            "information_penalties": [t["penalties"]] if t.get("penalties") else []}


def substitution_rows(t: dict[str, Any]) -> list[dict[str, Any]]:
    """How every baseline and antonym environment was built; stand-ins are flagged."""
    rows = []
    flagged = set(t.get("substitutes") or [])
    for what, counts in (("baseline", t.get("baseline_rules") or {}),
                         ("antonym environment (E3)", (t.get("training") or {}).get("antonym_sources") or {})):
        for source, n in sorted(counts.items()):
            rows.append({"what": what, "built by": source, "count": n, "of": sum(counts.values()),
                         "substitution": source in flagged})
    return rows


def truncation_rows(t: dict[str, Any]) -> list[dict[str, Any]]:
    """How many inputs were shortened to the evaluator's input limit, in training and per variant."""
    tr = t.get("truncation") or {}
    rows = []
    for scope, counts in [("training (Phi)", tr.get("training")), *[(f"scoring: {v}", c)
                                                                     for v, c in (tr.get("scoring") or {}).items()]]:
        if counts:
            rows.append({"inputs": scope, "n": counts["inputs"], "rationale shortened": counts["rationale_truncated"],
                         "b over the limit": counts["baseline_over_limit"], "limit (tokens)": tr.get("max_input_tokens")})
    return rows


def information_plot(t: dict[str, Any], folder: Path, gaps: list[str] | None = None) -> dict[str, Path]:
    """REV and LAREV per rationale variant and their separations, side by side (95% CIs).

    With no score nothing is drawn and why is appended to ``gaps``.
    """
    methods = [m for m in t["absolute"] if any(e.get("value") is not None for e in t["absolute"][m].values())]
    if not methods:
        if gaps is not None:
            gaps.append("no score plot: no rationale variant was scored (no test item)")
        return {}
    variants = list(t["absolute"][methods[0]])
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=FULL)
    seps = list(t["separation"][methods[0]])
    unit = f"nats, {_reduction(t)}; 95% CI"
    for ax, keys, rows, title, ylabel in (
            (axes[0], variants, t["absolute"], "Score per rationale variant", f"log p(y|r,b) - log p(y|b) ({unit})"),
            (axes[1], seps, t["separation"], "Separation Gold - X (> 0: Gold adds more)",
             f"score(Gold) - score(X) ({unit})")):
        ci_bars(ax, keys, {m.upper(): rows[m] for m in methods}, rotation=20, ha="right",
                labels=[k.replace("gold_leaky", "gold-leaky").replace("generated:", "gen:") for k in keys])
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        outside_legend(ax)
    return {"information_scores": save(fig, folder / "information_scores.png")}


CHANCE_MARGIN = 0.1
"""An evaluator within this much of chance accuracy on the gold rationales makes REV/LAREV meaningless."""
MAX_LISTED_LABELS = 20
"""The information family ranks at most this many labels; with more, labels are decoded (chance ~ 0)."""


def information_caveats(t: dict[str, Any]) -> list[str]:
    """Why REV or LAREV cannot be read: its evaluator's accuracy on the gold rationales near chance.

    Chance is 1 / number of labels (0 when the labels are decoded, more than :data:`MAX_LISTED_LABELS`).
    One caveat naming every method whose evaluator (Phi for REV, Phi_LA for LAREV) ranks the true label
    first for at most chance + :data:`CHANCE_MARGIN` of the test items; the other methods stay readable.
    """
    labels = t.get("labels") or []
    chance = 1 / len(labels) if 0 < len(labels) <= MAX_LISTED_LABELS else 0.0
    gold = {m.upper(): acc.get("gold") for m, acc in (t.get("accuracy") or {}).items() if acc.get("gold") is not None}
    near = {m: a for m, a in gold.items() if a <= chance + CHANCE_MARGIN}
    if not near:
        return []
    accs = ", ".join(f"{m} {format_number(a, 2)}" for m, a in near.items())
    which = "these scores cannot" if len(near) == len(gold) else f"the {' and '.join(near)} scores cannot"
    return [f"{which} mean much: with the gold rationales the evaluators rank the true label first for "
            f"{accs} of the test items (chance {format_number(chance, 2)}); an evaluator that has not learnt the task "
            "gives log-probability differences that carry no label information, however tight their intervals"]


def information_card(t: dict[str, Any]) -> Card:
    """The information card: REV and LAREV of the gold rationales in nats (higher = more label info)."""
    lines = [estimate_line(m.upper(), row.get("gold"), "nats") for m, row in t.get("absolute", {}).items()]
    return Card("information", "Information (REV, LAREV)", "information", "Score of the gold rationales",
                "higher = more new label information", lines,
                f"evaluator: {t.get('evaluator')}; baseline: {t.get('baseline')}; log p {t.get('reduction')} over y's "
                "tokens", list(t.get("warnings", [])),
                information_caveats(t) + few_items_caveat("test items", t.get("n_test")))


class InformationReport(FamilyReport):
    """The information family's report: score and separation tables, the score plot, the gold-rationale card."""

    name = "information"
    title = "Information (REV, LAREV)"
    metrics = INFORMATION
    summary_type = InformationSummary
    template = "information.html.j2"
    column_labels = {"value": "Separation (nats)", "n": "Test items", "score": "Score (nats)", "interval": "Interval"}
    spec_aliases = {"score": "REV", "value": "separation"}
    tables = {
        "information_scores": Table(
            "Score per rationale variant", "Mean over test items with a 95% CI (no known range: the wider of the t "
            "and bootstrap-t intervals; the interval column names it), in nats."),
        "information_separation": Table(
            "Separations", "Mean paired difference Gold - X over the test items, 95% CI (the interval column names "
            "its method); p from the paired sign-flip permutation test."),
        "information_accuracy": Table("Evaluator accuracy per variant", "Share of test items whose label the "
                                      "evaluator ranks first."),
        "information_baseline_only": Table("Baseline-only check", "Phi_base alone on held-out items: a high "
                                           "accuracy means b gives the label away."),
        "information_substitutions": Table("How baselines and antonym environments were built",
                                           "Stand-ins are flagged in the Substitution column."),
        "information_truncation": Table("Truncated inputs", "Inputs longer than the evaluator's budget."),
        "information_training": Table("Training", "Best epoch by validation loss."),
        "information_penalties": Table("LAREV penalty weights", "lambda IRM and lambda probe as used."),
    }

    def sheets(self, artefact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """:func:`information_sheets`."""
        return information_sheets(artefact)

    def plots(self, artefact: dict[str, Any], folder: Path, gaps: list[str]) -> dict[str, Path]:
        """:func:`information_plot`."""
        return information_plot(artefact, folder, gaps)

    def card(self, artefact: dict[str, Any]) -> Card:
        """:func:`information_card`."""
        return information_card(artefact)

    def scored(self, artefact: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
        """The test set's name -> the test items scored (the plan's size and what was scored can differ)."""
        test = (settings or {}).get("test") or {}
        return {test["name"]: artefact.get("n_test")} if test.get("name") else {}


REPORT = InformationReport()
