"""Console summary of the behavior family: one row per model, the six metrics with CIs and counts."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..cli.common import fmt_counts, fmt_estimate


def print_summary(tables: dict, out: Console, err: Console) -> None:
    """Print the ``behavior`` section of ``summary.json`` (tables to ``out``, notes to ``err``)."""
    beh = tables
    policy = (beh.get("settings") or {}).get("failed_generations", "wrong")
    reading = beh.get("settings", {}).get("efficiency", "corpus")
    table = Table(title=f"behavior (mean [95% CI], n items; failed generations: {policy}; ES = ES_{reading}: "
                        f"{'H(CQ, mean length score)' if reading == 'corpus' else 'mean of per-item H(CQ_i, L_i)'})")
    table.add_column("model")
    for m in ("CQ", "CS", "RS", "LS", "ES", "SS"):
        table.add_column(m)
    not_applicable = []
    for model, mets in beh["metrics"].items():
        cells = []
        for m in ("CQ", "CS", "RS", "LS", "ES", "SS"):
            e = mets[m]
            cells.append(fmt_estimate(e) + fmt_counts(e))
            if e["value"] is None:
                not_applicable.append(f"{model} {m}: {e.get('reason') or 'no item could be scored'}")
        table.add_row(model, *cells)
    out.print(table)
    for line in not_applicable:
        err.print("[dim]n/a:[/dim] " + escape(line))
    for w in beh.get("warnings", []):
        err.print("[yellow]note:[/yellow] " + escape(w))
