"""Console summary of the evidence family (RACE): one table per model, coverage by matcher and group."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.numbers import format_column, format_p
from .report_view import merged_matchers


def print_summary(tables: dict, out: Console, err: Console) -> None:
    """Print the ``evidence`` section of ``summary.json`` (tables to ``out``, notes to ``err``)."""
    for model, t in tables.items():
        llm = t["llm"]
        acc = "n/a" if llm["accuracy"] is None else f"{llm['accuracy']:.2f}"
        failed = f", {llm['failed']} failed" if llm.get("failed") else ""
        table = Table(title=f"evidence: {model} (classifier acc {t['classifier']['test_accuracy']:.2f}, "
                            f"LLM acc {acc}, n={llm['n']}{failed}"
                            + (", labels by log-likelihood" if llm.get("label_reading") == "likelihood" else "")
                            + "; coverage: mean [95% CI]; A = support - contradict)")
        for col in ("matcher", "group (n)"):
            table.add_column(col, overflow="fold")
        for col in ("support", "contradict", "A", "p (adj.)"):
            table.add_column(col, no_wrap=True, overflow="fold")  # an interval on one line unless it cannot fit
        merged = merged_matchers(t["coverage"])  # identical matchers: one row, "a = b" (one test for Holm too)
        cells = [(m, g) for m in merged for g in ("correct", "incorrect")]
        # one rule per column over the whole table, as the page's coverage columns
        support = format_column([merged[m][g]["support"] for m, g in cells])
        contradict = format_column([merged[m][g]["contradict"] for m, g in cells])
        asym = format_column([{"value": merged[m][g]["asymmetry"]} for m, g in cells])
        for i, (matcher, group) in enumerate(cells):
            d = merged[matcher]["asymmetry_difference"]
            # p over its adjusted value: the column stays narrow
            p = f"{format_p(d.get('p_value'))}\n({format_p(d.get('p_adjusted'))})" if group == "correct" else ""
            table.add_row(matcher if group == "correct" else "", f"{group} ({merged[matcher][group]['n']})",
                          support[i], contradict[i], asym[i], p)
        out.print(table)
        out.print("p: A(correct) - A(incorrect), two-group permutation test, two-sided; (adj.): "
                  + str(next(iter(merged.values()), {}).get("asymmetry_difference", {}).get("p_adjust") or "none"),
                  highlight=False)
        for w in t.get("warnings", []):
            err.print("[yellow]note:[/yellow] " + escape(w))
