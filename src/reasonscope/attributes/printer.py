"""Console summary of the attributes family: attribute scores, ratings, preference explanation."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.numbers import format_column
from .catalogue import attribute_label


def print_summary(t: dict, out: Console, err: Console) -> None:
    """Print the ``attributes`` section of ``summary.json`` (tables to ``out``, notes to ``err``)."""
    if t.get("scores"):
        models = list(t["scores"])
        table = Table(title=f"attributes (mean [95% CI]; judges: {', '.join(t['judges']) or 'none'})")
        table.add_column("attribute", overflow="fold")
        for m in models:
            table.add_column(m, overflow="fold")
        attrs = list(next(iter(t["scores"].values())))
        # one rule per model column, as the page's model x attribute grid
        texts = {m: format_column([t["scores"][m][a] for a in attrs]) for m in models}
        for i, a in enumerate(attrs):
            table.add_row(attribute_label(a), *(texts[m][i] for m in models))
        out.print(table)
        n = {m: sorted({t["scores"][m][a].get("n") or 0 for a in attrs}) for m in models}
        out.print("n (answers with a score) per model: " + ", ".join(
            f"{escape(m)} {'-'.join(str(x) for x in (v[0], v[-1]) if v) if v[0] != v[-1] else v[0]}"
            for m, v in n.items()), highlight=False)
    if t.get("ratings"):
        table = Table(title=f"attribute ratings (Bradley-Terry MLE [95% bootstrap CI], rank [95% bounds]; "
                            f"ties: |difference| <= {t['margin']} + 1e-9)")
        for col in ("attribute", "model", "rating", "rank", "elo", "battles"):
            table.add_column(col, overflow="fold")
        rows = [(a, m, bt, r) for a, r in t["ratings"].items()
                for m, bt in sorted(r["bradley_terry"].items(), key=lambda kv: kv[1]["rank"])]
        # one rule per column over every attribute, as the page's rating and Elo columns
        ratings = format_column([{"value": bt["rating"], "low": bt["low"], "high": bt["high"]} for _, _, bt, _ in rows])
        elo = format_column([{"value": r["elo"].get(m)} for _, m, _, r in rows])
        for (a, m, bt, r), rating, e in zip(rows, ratings, elo, strict=True):
            bounds = f" ({bt['rank_low']}-{bt['rank_high']})" if bt["rank_low"] is not None else ""
            table.add_row(attribute_label(a), m, rating, f"{bt['rank']}{bounds}", e, str(r["battles"]))
        out.print(table)
    pref = t.get("preferences") or {}
    _print_preference_ratings(pref.get("ratings"), out)
    exp = pref.get("explain")
    if exp:
        acc = "n/a" if exp["cv_accuracy"] is None else f"{exp['cv_accuracy']:.3f}"
        auc = "n/a" if exp["cv_auc"] is None else f"{exp['cv_auc']:.3f}"
        table = Table(title=f"what explains human preferences (LightGBM, {exp['folds']}-fold accuracy {acc}, AUC {auc}, "
                            f"n={exp['n']})")
        for col in ("attribute", "mean |SHAP|", "direction"):
            table.add_column(col, overflow="fold")
        shap_texts = format_column([{"value": r["mean_abs_shap"]} for r in exp["importance"]])
        for r, text in zip(exp["importance"], shap_texts, strict=True):
            table.add_row(attribute_label(r["attribute"]), text, r["direction"])
        out.print(table)
    for j, p in pref.get("pairwise", {}).items():
        agree = "n/a" if p["agreement_with_human"] is None else f"{p['agreement_with_human']:.3f}"
        out.print(f"pairwise judge {escape(j)}: {p['consistent']} consistent, {p['inconsistent']} inconsistent across "
                  f"orders, {p['unparsed']} unparsed; agreement with humans {agree} (n={p['compared']})")
    for w in t.get("warnings", []):
        err.print("[yellow]attributes:[/yellow] " + escape(w))


def _print_preference_ratings(p: dict | None, out: Console) -> None:
    if not p or not p.get("human"):
        return
    table = Table(title="preference battles decided by each attribute vs by the human label (Bradley-Terry MLE; "
                        "rank correlation of the ratings over models)")
    for col in ("decided by", "battles", "ties", "Spearman vs human", "Kendall vs human", "top model"):
        table.add_column(col, overflow="fold")
    human = p["human"]
    top = lambda r: min(r["bradley_terry"], key=lambda m: r["bradley_terry"][m]["rank"])  # noqa: E731
    table.add_row("human label", str(human["battles"]), str(human["ties"]), "", "", top(human))
    for a, r in p["attributes"].items():
        ag = r["agreement_with_human"]
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        table.add_row(attribute_label(a), str(r["battles"]), str(r["ties"]), fmt(ag["spearman"]), fmt(ag["kendall"]),
                      top(r))
    out.print(table)
