"""The terminal's view of the family: its section of ``summary.json`` as one table, notes on stderr."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from reasonscope.report.numbers import format_column

from .metrics import METRICS


def print_summary(tables: dict[str, Any], out: Console, err: Console) -> None:
    """Print one row per model: each metric as ``mean [95% CI]``, then the answers measured and failed."""
    models = list(tables.get("models") or {})
    if not models:
        return
    table = Table(title=f"trace length (mean [95% CI]; unexplained: fewer than {tables['min_steps']} steps)")
    table.add_column("model", overflow="fold")
    columns = {}
    for spec in METRICS:
        arrow = {True: " (higher is better)", False: " (lower is better)"}.get(spec.higher_is_better, "")
        table.add_column(spec.label + arrow, overflow="fold")
        columns[spec.key] = format_column([tables["models"][m][spec.key] for m in models])
    table.add_column("answers")
    table.add_column("failed")
    for i, m in enumerate(models):
        row = tables["models"][m]
        table.add_row(escape(m), *(columns[s.key][i] for s in METRICS), str(row["answers"]), str(row["failed"]))
    out.print(table)
    for note in tables.get("warnings") or ():
        err.print(f"[yellow]trace_length:[/yellow] {escape(note)}")
