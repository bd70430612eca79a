"""Console summary of the information family (REV, LAREV): scores of the rationale variants and separations."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.numbers import format_column, format_number
from .report_view import information_caveats


def _signed(text: str) -> str:
    """A leading ``+`` on a positive number and on each positive bound (scores and separations are signed)."""
    import re

    return re.sub(r"(^|\[|, )(?=\d)", lambda m: m.group(1) + "+", text)


def print_summary(t: dict, out: Console, err: Console) -> None:
    """Print the ``information`` section of ``summary.json`` (tables to ``out``, notes to ``err``).

    The scores and the separations in nats, each table at one rounding rule (the page's: every score
    of the score column, every separation of the separation column); the evaluators' accuracy with the
    gold rationales (Phi for REV, Phi_LA for LAREV: the share of test items whose true label it ranks
    first) is a line of its own, not a row of a table in nats; a method whose evaluator is near chance
    is named in a red note.
    """
    reduction = "sum" if t["reduction"] == "sum" else "per-token mean"
    n = t["n_test"]
    clusters = t.get("n_clusters")
    size = f"n={n} test items" + (f" from {clusters} {t.get('clustered_by') or 'groups'}" if clusters and clusters != n
                                   else "")
    table = Table(title=f"information: log p(y | r, b) - log p(y | b) in nats, {reduction} over y's tokens "
                        f"(mean [95% CI], {size})")
    table.add_column("variant", overflow="fold")
    for m in t["methods"]:
        table.add_column(m.upper(), no_wrap=True, overflow="fold")  # one line unless it cannot fit
    variants = list(next(iter(t["absolute"].values()), {}))
    methods = [m for m in t["methods"] if m in t["absolute"]]
    scores = format_column([t["absolute"][m][v] for m in methods for v in variants])
    for i, v in enumerate(variants):
        table.add_row(v, *(_signed(scores[j * len(variants) + i]) for j in range(len(methods))))
    seps = list(next(iter(t["separation"].values()), {}))
    sep_texts = format_column([t["separation"][m][p] for m in methods for p in seps])
    if seps:
        table.add_section()
    for i, pair in enumerate(seps):
        table.add_row(pair.replace("-", " - ") if pair != "SUM" else "SUM of separations",
                      *(_signed(sep_texts[j * len(seps) + i]) for j in range(len(methods))))
    accuracy = t.get("accuracy") or {}
    if variants:
        out.print(table)
    gold = {m.upper(): accuracy.get(m, {}).get("gold") for m in t["methods"]}
    if any(a is not None for a in gold.values()):
        out.print("evaluator accuracy with gold r + b (share of test items whose label it ranks first): "
                  + ", ".join(f"{m} {format_number(a, 3)}" for m, a in gold.items()), highlight=False)
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
