"""Console summary of the information family (REV, LAREV): scores of the rationale variants and separations."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.cards import information_caveats


def _fmt_score(e: dict) -> str:
    if e["value"] is None:
        return "n/a"
    return f"{e['value']:+.4f}" if e["low"] is None else f"{e['value']:+.4f} [{e['low']:+.4f}, {e['high']:+.4f}]"


def print_summary(t: dict, out: Console, err: Console) -> None:
    """Print the ``information`` section of ``summary.json`` (tables to ``out``, notes to ``err``).

    The last row of the table is each method's evaluator accuracy with the gold rationales (Phi for REV,
    Phi_LA for LAREV: the share of test items whose true label it ranks first); a method whose evaluator
    is near chance is named in a red note.
    """
    reduction = "sum" if t["reduction"] == "sum" else "per-token mean"
    table = Table(title=f"information: log p(y | r, b) - log p(y | b), {reduction} over y's tokens "
                        f"(mean [95% CI], n={t['n_test']} test items)")
    table.add_column("variant", overflow="fold")
    for m in t["methods"]:
        table.add_column(m.upper(), overflow="fold")
    variants = list(next(iter(t["absolute"].values()), {}))
    for v in variants:
        table.add_row(v, *(_fmt_score(t["absolute"][m][v]) for m in t["methods"]))
    seps = list(next(iter(t["separation"].values()), {}))
    for pair in seps:
        table.add_row(pair.replace("-", " - ") if pair != "SUM" else "SUM of separations",
                      *(_fmt_score(t["separation"][m][pair]) for m in t["methods"]))
    accuracy = t.get("accuracy") or {}
    if variants and any(accuracy.get(m, {}).get("gold") is not None for m in t["methods"]):
        table.add_row("accuracy with gold r + b", *(
            "n/a" if accuracy.get(m, {}).get("gold") is None else f"{accuracy[m]['gold']:.3f}" for m in t["methods"]))
    if variants:
        out.print(table)
    for caveat in information_caveats(t):
        err.print("[bold red]information:[/bold red] " + escape(caveat))
    b = t.get("baseline_only") or {}
    if b.get("accuracy") is not None:
        out.print(f"baseline only: from b alone, Phi_base ranks the true label first for {b['accuracy']:.1%} of "
                  f"{b['n']} held-out {b['split']} items (mean p(y | b) {b['mean_p_label']:.3f})")
    if t.get("penalties"):
        p = t["penalties"]
        out.print(f"LAREV penalty weights: lambda_IRM {p['lambda_irm']}, lambda_probe {p['lambda_probe']} ({p['source']})")
    rules = t.get("baseline_rules") or {}
    if rules:
        out.print("baselines built by: " + ", ".join(f"{k} {v}" for k, v in sorted(rules.items())))
    tr = t.get("truncation") or {}
    if tr.get("inputs"):
        out.print(f"inputs over {tr['max_input_tokens']} tokens (rationale shortened, b kept): "
                  f"{tr['rationale_truncated']} of {tr['inputs']}")
    for w in t.get("warnings", []):
        style = "bold red" if w.startswith("the baseline alone gives the label away") else "yellow"
        err.print(f"[{style}]information:[/{style}] " + escape(w))
