"""The comparison as a terminal table (readable at 80 columns) and as Markdown for a pull request.

Numbers: means and differences with 3 decimals (``+`` on a positive difference), p-values with 2 significant
digits (``<0.001`` below 0.001). The verdict is the catalogue's direction applied to the Holm-adjusted p-value
(:mod:`reasonscope.compare.core`); a metric that fails the gate is marked ``worse !``.
"""

from __future__ import annotations

import re

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .model import MetricComparison, RunComparison

VERDICT_STYLE = {"worse": "bold red", "better": "green", "changed": "yellow", "no change": "", "not compared": "dim"}
GATE_WORDS = {0: "pass", 1: "FAIL", 2: "cannot compare"}


def number(value: float | None, signed: bool = False) -> str:
    """A mean or difference with 3 decimals; ``-`` when missing."""
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def p_text(p: float | None) -> str:
    """A p-value with 2 significant digits, ``<0.001`` below 0.001; ``-`` when missing."""
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.2g}"


def interval(row: MetricComparison) -> str:
    """``[low, high]`` of the difference, signed; ``-`` when there is none."""
    if row.ci_low is None or row.ci_high is None:
        return "-"
    return f"[{row.ci_low:+.3f}, {row.ci_high:+.3f}]"


def verdict_text(row: MetricComparison) -> str:
    """The verdict, ``worse !`` when it fails the gate, with ``°`` when the metric does not gate."""
    text = "worse !" if row.fails_gate else row.verdict
    return text if row.gates else f"{text}°"


NAME_WIDTH = 16
"""Characters of the terminal's metric column at 80 columns; a longer key is broken after its ``.`` and ``:``."""


def metric_name(row: MetricComparison, result: RunComparison, width: int | None = None) -> str:
    """The stored metric key, with the model pair when the comparison has more than one.

    With ``width``, a key longer than it is broken into lines after each ``.`` and ``:``, and the model pair
    goes on a line of its own.
    """
    pair = ""
    if len(result.pairs) > 1:
        pair = f"({row.base_model}" + ("" if row.base_model == row.new_model else f"->{row.new_model}") + ")"
    name = f"{row.metric} {pair}".strip()
    if width is None or len(name) <= width:
        return name
    lines = re.sub(r"([.:])", "\\1\n", row.metric).splitlines()
    return "\n".join([*lines, pair] if pair else lines)


def gate_line(result: RunComparison) -> str:
    """``gate: pass (exit 0): reason``."""
    return f"gate: {GATE_WORDS[result.exit_code]} (exit {result.exit_code}): {result.reason}"


def notes(result: RunComparison) -> list[str]:
    """The lines under the table: the runs, pairs, unshared items, mismatches, method."""
    b, n = result.base, result.new
    out = [f"BASE {b.path} (run {b.run_id}, {b.status}); NEW {n.path} (run {n.run_id}, {n.status})"]
    renamed = [f"{k} -> {v}" for k, v in result.pairs.items() if k != v]
    if renamed:
        out.append("models paired: " + ", ".join(renamed))
    if result.items_only_in_base or result.items_only_in_new:
        out.append(f"items only in BASE: {len(result.items_only_in_base)}, only in NEW: "
                   f"{len(result.items_only_in_new)} (left out of the paired tests)")
    out += [f"mismatch ({m.kind}): {m.message}" for m in result.mismatches]
    out += result.not_checked
    unpaired = [r for r in result.metrics if not r.paired]
    if unpaired:
        out.append("UNPAIRED: the runs share no item; the differences are two-sample comparisons")
    out.append(f"difference = NEW - BASE on the shared items; {int(result.confidence * 100)}% intervals; p: paired "
               f"sign-flip test (exact McNemar for 0/1 values), {result.holm}")
    if result.metrics_selected:
        out.append(f"° not gating: --metrics {','.join(result.metrics_selected)} selects what gates")
    if result.min_effect:
        out.append(f"--min-effect {result.min_effect:g}: a worse difference within it is reported, not failed")
    return out


def render_text(result: RunComparison, console: Console) -> None:
    """Print the comparison table, its notes and the gate line to ``console``."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 0, 0, 1), header_style="bold")
    table.add_column("Metric", overflow="fold")
    for name in ("n", "Base", "New", "Diff", "95% CI", "p Holm"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("Verdict", no_wrap=True)
    family = None
    for row in result.metrics:
        if row.family != family:
            if family is not None:
                table.add_section()
            family = row.family
            table.add_row(Text(family, style="bold"))
        ci = "-" if row.ci_low is None or row.ci_high is None else f"[{row.ci_low:+.2f}, {row.ci_high:+.2f}]"
        table.add_row(metric_name(row, result, NAME_WIDTH), str(row.n_shared) if row.paired else "unp.", number(row.base_mean),
                      number(row.new_mean), number(row.difference, True), ci, p_text(row.p_holm),
                      Text(verdict_text(row), style=VERDICT_STYLE[row.verdict] if row.gates else "dim"))
    if result.metrics:
        console.print(table)
        console.print()
    else:
        console.print("no metric compared: the runs have no item-level metric with values in common")
    for line in notes(result):
        console.print(line, highlight=False, soft_wrap=False)
    style = {0: "green", 1: "bold red", 2: "bold yellow"}[result.exit_code]
    console.print(Text(gate_line(result), style=style))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: RunComparison) -> str:
    """The comparison as GitHub-flavoured Markdown: a heading, the table, the notes and the gate."""
    lines = [f"### reasonscope compare: {GATE_WORDS[result.exit_code]} (exit {result.exit_code})", "",
             f"{_cell(result.reason)}", "",
             "| Metric | Models | n | Base | New | Diff (NEW - BASE) | 95% CI | p (Holm) | Effect d | Verdict |",
             "|---|---|--:|--:|--:|--:|---|--:|--:|---|"]
    for row in result.metrics:
        models = row.base_model if row.base_model == row.new_model else f"{row.base_model} -> {row.new_model}"
        effect = "-" if row.effect_size is None else f"{row.effect_size:+.2f}"
        verdict = f"**{verdict_text(row)}**" if row.verdict in ("worse", "better") else verdict_text(row)
        lines.append(f"| {_cell(row.label)} ({row.family}) | {_cell(models)} | "
                     f"{row.n_shared if row.paired else 'unpaired'} | {number(row.base_mean)} | "
                     f"{number(row.new_mean)} | {number(row.difference, True)} | {interval(row)} | "
                     f"{p_text(row.p_holm)} | {effect} | {verdict} |")
    lines.append("")
    lines += [f"- {_cell(line)}" for line in notes(result)]
    return "\n".join(lines) + "\n"
