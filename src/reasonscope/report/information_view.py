"""Information (REV, LAREV) outputs: the absolute score table (method x variant), the separation table
(Gold - X and SUM) with CIs, accuracy per variant, training summary, and a grouped bar chart of REV
and LAREV side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plots import ci_bars, pyplot, save
from .tables import fmt_p


def _r(v):
    return round(v, 4) if isinstance(v, float) else v


def information_sheets(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    absolute, separation, accuracy, training = [], [], [], []
    for m, row in t["absolute"].items():
        for v, e in row.items():
            absolute.append({"method": m.upper(), "variant": v, "score": _r(e["value"]), "low": _r(e["low"]),
                             "high": _r(e["high"]), "n": e["n"]})
    for m, row in t["separation"].items():
        for pair, e in row.items():
            separation.append({"method": m.upper(), "separation": pair.replace("-", " - "), "value": _r(e["value"]),
                               "low": _r(e["low"]), "high": _r(e["high"]), "n": e["n"], "p_value": fmt_p(e["p_value"]),
                               "p_adjusted": fmt_p(e.get("p_adjusted")), "test": e.get("test"), "null": e.get("null")})
    for m, row in t["accuracy"].items():
        accuracy.append({"method": m.upper(), **{v: _r(a) for v, a in row.items()},
                         "phi_base_on_b": _r(t["baseline_accuracy"])})
    for name, info in t["training"].items():
        if isinstance(info, dict) and "best_val_loss" in info:
            training.append({"model": name, "best_epoch": info.get("best_epoch"),
                             "best_val_loss": _r(info.get("best_val_loss")),
                             "examples_per_s": _r(info.get("examples_per_s"))})
    return {"information_scores": absolute, "information_separation": separation,
            "information_accuracy": accuracy, "information_training": training}


def information_plot(t: dict[str, Any], folder: Path) -> dict[str, Path]:
    methods = [m for m in t["absolute"] if t["absolute"][m]]
    if not methods:
        return {}
    variants = list(t["absolute"][methods[0]])
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    seps = list(t["separation"][methods[0]])
    for ax, keys, rows, title in ((axes[0], variants, t["absolute"], "score per rationale variant"),
                                  (axes[1], seps, t["separation"], "separation (Gold - X)")):
        ci_bars(ax, keys, {m.upper(): rows[m] for m in methods}, rotation=20, fontsize=7,
                labels=[k.replace("gold_leaky", "gold-leaky").replace("generated:", "gen:") for k in keys])
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    axes[0].set_ylabel(f"log p(y|r,b) - log p(y|b) ({t['reduction']} per token; 95% CI)")
    fig.tight_layout()
    return {"information_scores": save(fig, folder / "information_scores.png")}
