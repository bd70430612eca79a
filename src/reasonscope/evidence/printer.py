"""Console summary of the evidence family (RACE): one table per model, coverage by matcher and group."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.evidence_view import merged_matchers
from ..report.numbers import format_p


def print_summary(tables: dict, out: Console, err: Console) -> None:
    """Print the ``evidence`` section of ``summary.json`` (tables to ``out``, notes to ``err``)."""
    for model, t in tables.items():
        llm = t["llm"]
        acc = "n/a" if llm["accuracy"] is None else f"{llm['accuracy']:.2f}"
        failed = f", {llm['failed']} failed" if llm.get("failed") else ""
        table = Table(title=f"evidence: {model} (classifier acc {t['classifier']['test_accuracy']:.2f}, "
                            f"LLM acc {acc}, n={llm['n']}{failed}"
                            + (", labels by log-likelihood" if llm.get("label_reading") == "likelihood" else "") + ")")
        for col in ("matcher", "group", "support", "contradict", "asymmetry", "A(c)-A(i) p (perm., 2-sided)"):
            table.add_column(col, overflow="fold")
        for matcher, tab in merged_matchers(t["coverage"]).items():  # identical matchers: one row, "a = b"
            for group in ("correct", "incorrect"):
                g = tab[group]
                fmt = lambda e: "n/a" if e["value"] is None else f"{e['value']:.3f}"  # noqa: E731
                p = tab["asymmetry_difference"]["p_value"]
                table.add_row(matcher, f"{group} ({g['n']})", fmt(g["support"]), fmt(g["contradict"]),
                              "n/a" if g["asymmetry"] is None else f"{g['asymmetry']:.3f}",
                              format_p(p) if group == "correct" else "")
        out.print(table)
        for w in t.get("warnings", []):
            err.print("[yellow]note:[/yellow] " + escape(w))
