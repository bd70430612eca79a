"""Console summary of the attack family (MATCHA): rates per model and method, insertion redraws, transfer."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..cli.common import fmt_estimate


def print_summary(t: dict, out: Console, err: Console) -> None:
    """Print the ``attack`` section of ``summary.json`` (tables to ``out``, notes to ``err``)."""
    table = Table(title=f"attack (MATCHA; reasoning check: {t['reasoning_check']}; rates over decided attacks = "
                  "attacked - clean wrong - not judged - invalid [95% CI]; higher success = more fragile reasoning)")
    for col in ("model", "method", "attacked", "clean wrong", "not judged", "invalid", "decided", "success", "wrong",
                "unattackable", "s/item"):
        table.add_column(col)
    for model, m in t["models"].items():
        for method, r in m["rates"].items():
            secs = m["seconds_per_item"].get(method)
            c = r["counts"]
            table.add_row(model, method, f"{r['attacked']} of {m['answered_correctly']} correct ({m['items']} items)",
                          str(c["clean_wrong"]), str(c["not_judged"]), str(c["invalid"]), str(r["n"]),
                          *(fmt_estimate(r[o]) for o in ("success", "wrong", "unattackable")),
                          "n/a" if secs is None else f"{secs:.1f}")
    out.print(table)
    for model, m in t["models"].items():
        for method, ins in m.get("insertion", {}).items():
            if ins["attacks"]:
                out.print(f"{escape(model)} {method}: random insertion drawn again for {ins['redrawn']} of "
                          f"{ins['attacks']} items ({ins['rejected_meaning']} draws failed the meaning filter, "
                          f"{ins['rejected_retokenisation']} re-tokenisation); no valid draw for {ins['no_valid_draw']}")
    for model, tr in t.get("transfer", {}).items():
        for method, r in tr.get("rates", {}).items():
            out.print(f"transfer to {escape(model)} ({method}, decided {r['n']} of {r['attacked']}): success "
                      f"{fmt_estimate(r['success'])}, wrong {fmt_estimate(r['wrong'])} (higher success = more "
                      "fragile reasoning)")
    for w in t.get("warnings", []):
        err.print("[yellow]attack:[/yellow] " + escape(w))
