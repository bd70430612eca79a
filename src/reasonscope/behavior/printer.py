"""Console summary of the behavior family.

One row per metric, one column per model (the six metrics with CIs), n once per model, and a legend of
the abbreviations.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..metric_specs import BEHAVIOR_METRICS
from ..report.numbers import format_counts, format_estimate_of


def print_summary(tables: dict, out: Console, err: Console) -> None:
    """Print the ``behavior`` section of ``summary.json`` (tables to ``out``, notes to ``err``)."""
    beh = tables
    policy = (beh.get("settings") or {}).get("failed_generations", "wrong")
    reading = beh.get("settings", {}).get("efficiency", "corpus")
    table = Table(title=f"behavior (mean [95% CI]; failed generations: {policy}; ES = ES_{reading}: "
                        f"{'H(CQ, mean length score)' if reading == 'corpus' else 'mean of per-item H(CQ_i, L_i)'})")
    # one row per metric, one column per model: a model's name is a header (folded, never cut) and each
    # interval keeps one line at 80 columns; n is shown once per model, and in a cell only where it differs
    table.add_column("metric", overflow="fold")
    models = list(beh["metrics"])
    for model in models:
        table.add_column(escape(model), overflow="fold")
    not_applicable: dict[tuple[str, str], list[str]] = {}  # (metric, reason) -> models: each reason once
    items = {model: mets["CQ"].get("n") for model, mets in beh["metrics"].items()}
    for m in BEHAVIOR_METRICS:
        cells = []
        for model in models:
            e = beh["metrics"][model][m]
            same = e["value"] is None or (e.get("n") == items[model] and not e.get("failed"))
            cells.append(format_estimate_of(e) + ("" if same else format_counts(e)))
            if e["value"] is None:
                not_applicable.setdefault((m, e.get("reason") or "no item could be scored"), []).append(model)
        table.add_row(m, *cells)
    table.add_row("n items", *(str(items[model]) for model in models))
    out.print(table)
    out.print("CQ correctness · CS consistency · RS robustness · LS logical soundness · ES efficiency · SS semantic "
              "stability (all 0-1, higher is better); a cell's n (and failed generations read) only where it differs "
              "from the model's items",
              highlight=False)
    for (m, why), names in not_applicable.items():
        err.print("[dim]n/a:[/dim] " + escape(f"{m} of {', '.join(names)}: {why}"))
    for w in beh.get("warnings", []):
        err.print("[yellow]note:[/yellow] " + escape(w))
