"""Console summary of the attack family (MATCHA): rates per model and method, insertion redraws, transfer."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.numbers import format_column, format_estimate_of


def print_summary(t: dict, out: Console, err: Console) -> None:
    """Print the ``attack`` section of ``summary.json`` (tables to ``out``, notes to ``err``)."""
    counts = Table(title=f"attack (MATCHA): attacks per model and method; reasoning check: {t['reasoning_check']}")
    for col in ("model · method", "attacked", "clean wrong", "not judged", "invalid", "decided"):
        counts.add_column(col, overflow="fold")
    rates = Table(title="attack rates over decided attacks [95% CI]; higher success = more fragile reasoning")
    for col in ("model · method", "success", "wrong", "unattack.", "s/item"):
        rates.add_column(col, overflow="fold")
    every = [r for m in t["models"].values() for r in m["rates"].values()]
    columns = {o: iter(format_column([r[o] for r in every])) for o in ("success", "wrong", "unattackable")}
    for model, m in t["models"].items():
        for method, r in m["rates"].items():
            secs = m["seconds_per_item"].get(method)
            c = r["counts"]
            name = f"{escape(model)} · {method}"
            counts.add_row(name, f"{r['attacked']} of {m['answered_correctly']} correct ({m['items']} items)",
                           str(c["clean_wrong"]), str(c["not_judged"]), str(c["invalid"]), str(r["n"]))
            rates.add_row(f"{name} (n={r['n']})", *(next(columns[o]) for o in ("success", "wrong", "unattackable")),
                          "n/a" if secs is None else f"{secs:.1f}")
    if counts.row_count:  # every model left out: no table, only why (below)
        out.print(counts)
        out.print(rates)
        out.print("decided = attacked - clean wrong - not judged - invalid; wrong = answer changed; unattack. = "
                  "unattackable (answer kept, reasoning judged correct); s/item = seconds per attacked item",
                  highlight=False)
    for model, m in t["models"].items():
        for method, ins in m.get("insertion", {}).items():
            if ins["attacks"]:
                out.print(f"{escape(model)} {method}: random insertion drawn again for {ins['redrawn']} of "
                          f"{ins['attacks']} items ({ins['rejected_meaning']} draws failed the meaning filter, "
                          f"{ins['rejected_retokenisation']} re-tokenisation); no valid draw for {ins['no_valid_draw']}")
    for model, tr in t.get("transfer", {}).items():
        for method, r in tr.get("rates", {}).items():
            out.print(f"transfer to {escape(model)} ({method}, decided {r['n']} of {r['attacked']}): success "
                      f"{format_estimate_of(r['success'])}, wrong {format_estimate_of(r['wrong'])} (higher success = more "
                      "fragile reasoning)")
    for model, why in (t.get("skipped_models") or {}).items():
        err.print("[yellow]attack: left out[/yellow] " + escape(why if why.startswith(model) else f"{model}: {why}"))
    for w in t.get("warnings", []):
        err.print("[yellow]attack:[/yellow] " + escape(w))
