"""Console summary of the behavior family.

One row per metric, one column per model (the six metrics with CIs), n once per model, and a legend of
the abbreviations.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.labels import humanise
from ..report.numbers import format_column, format_counts, format_p
from .catalogue import BEHAVIOR_METRICS


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
        texts = format_column([beh["metrics"][model][m] for model in models])  # one rule per metric, as the page
        for model, text in zip(models, texts, strict=True):
            e = beh["metrics"][model][m]
            same = e["value"] is None or (e.get("n") == items[model] and not e.get("failed"))
            cells.append(text + ("" if same else format_counts(e)))
            if e["value"] is None:
                not_applicable.setdefault((m, e.get("reason") or "no item could be scored"), []).append(model)
        table.add_row(m, *cells)
    table.add_row("n items", *(str(items[model]) for model in models))
    out.print(table)
    _print_strategies(beh, models, out)
    _print_paired(beh, out)
    out.print("CQ correctness · CS consistency · RS robustness · LS logical soundness · ES efficiency · SS semantic "
              "stability (all 0-1, higher is better); a cell's n (and failed generations read) only where it differs "
              "from the model's items",
              highlight=False)
    for (m, why), names in not_applicable.items():
        err.print("[dim]n/a:[/dim] " + escape(f"{m} of {', '.join(names)}: {why}"))
    for w in beh.get("warnings", []):
        err.print("[yellow]note:[/yellow] " + escape(w))


def _print_strategies(beh: dict, models: list[str], out: Console) -> None:
    """Each weighted strategy per model (the user's own marked), one rounding rule per strategy."""
    strategies = beh.get("strategies") or {}
    names = list(dict.fromkeys(n for m in models for n in strategies.get(m, {})))
    if not names:
        return
    user = set(beh.get("user_strategies") or [])
    table = Table(title="strategies: weighted means of the metrics [95% item-bootstrap CI] (your own marked *)")
    table.add_column("strategy", overflow="fold")
    for model in models:
        table.add_column(escape(model), overflow="fold")
    for name in names:
        texts = format_column([strategies.get(m, {}).get(name) for m in models])
        left = {", ".join(strategies[m][name]["left_out"]) for m in models
                if strategies.get(m, {}).get(name, {}).get("left_out")}
        label = f"{name} *" if name in user else humanise(name)  # the user's own name as given
        table.add_row(escape(label + (f" (without {'; '.join(sorted(left))})" if left else "")), *texts)
    out.print(table)


def _print_paired(beh: dict, out: Console) -> None:
    """The paired differences A - B on the same items with their CIs and adjusted p-values."""
    rows = [r for r in beh.get("paired") or [] if r.get("difference") is not None]
    if not rows:
        return
    adjust = (beh.get("p_adjust") or {}).get("description", "")
    table = Table(title=f"paired differences A - B on the same items [95% CI]; p: sign-flip / permutation test, "
                        f"adjusted: {adjust}")
    for col in ("A - B", "metric", "difference", "p", "p adj."):
        table.add_column(col, overflow="fold")
    every = beh.get("paired") or []  # the page's difference column holds every row: the same rule here
    texts = format_column([{"value": r.get("difference"), "low": r.get("low"), "high": r.get("high")} for r in every])
    for r, text in zip(every, texts, strict=True):
        if r.get("difference") is not None:
            table.add_row(escape(f"{r['model_a']} - {r['model_b']}"), r["metric"], text, format_p(r.get("p_value")),
                          format_p(r.get("p_adjusted")))
    out.print(table)
