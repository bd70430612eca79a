"""PNG plots (matplotlib, Agg backend): radar of the six metrics per model, grouped bars with the
95% CIs as error bars."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..atomic_files import atomic_path
from ..settings import BEHAVIOR_METRICS


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (every plot of reasonscope is a PNG file)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: Path, dpi: int = 110) -> Path:
    """Write the figure as PNG (atomically: beside ``path``, then renamed) and free it."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format="png")
    finally:
        pyplot().close(fig)
    return path


def radar(metrics: dict[str, dict[str, Any]], path: Path) -> Path:
    plt = pyplot()
    labels = list(BEHAVIOR_METRICS)
    angles = [2 * math.pi * i / len(labels) for i in range(len(labels))] + [0.0]
    fig = plt.figure(figsize=(5.5, 5.5))
    ax = fig.add_subplot(111, polar=True)
    for model, mets in metrics.items():
        vals = [mets[m]["value"] if mets[m]["value"] is not None else 0.0 for m in labels]
        ax.plot(angles, vals + vals[:1], label=model)
        ax.fill(angles, vals + vals[:1], alpha=0.12)
    ax.set_xticks(angles[:-1], [m + ("" if all(mets[m]["value"] is not None for mets in metrics.values()) else "*")
                                for m in labels])
    ax.set_ylim(0, 1)
    ax.set_title("Behaviour metrics (* = not applicable for some model, drawn as 0)", fontsize=9)
    ax.legend(loc="lower right", bbox_to_anchor=(1.3, -0.1), fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def ci_bars(ax, keys: list[str], series: dict[str, dict[str, Any]], *, labels: list[str] | None = None,
            points: bool = False, capsize: int = 3, **tick_kw) -> None:
    """Grouped bars (or points) with CI error bars: one group per key, one bar per series; a series maps
    key -> estimate (``value``, ``low``, ``high``; a missing key or value None draws nothing)."""
    width = 0.8 / max(1, len(series))
    for j, (name, row) in enumerate(series.items()):
        xs, ys, lo, hi = [], [], [], []
        for i, k in enumerate(keys):
            e = row.get(k)
            if not e or e.get("value") is None:
                continue
            xs.append(i + j * width)
            ys.append(e["value"])
            lo.append(e["value"] - e["low"] if e.get("low") is not None else 0)
            hi.append(e["high"] - e["value"] if e.get("high") is not None else 0)
        if points:
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=capsize, label=name)
        else:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=capsize, label=name)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(keys))], labels or keys, **tick_kw)


def grouped_bars(metrics: dict[str, dict[str, Any]], path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    ci_bars(ax, list(BEHAVIOR_METRICS), metrics)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (95% bootstrap CI)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def behavior_plots(metrics: dict[str, dict[str, Any]], folder: Path, gaps: list[str]) -> dict[str, Path]:
    """The radar and the grouped bars of the behaviour metrics; when no metric has a value for any model
    neither is drawn and why is appended to ``gaps``."""
    if not any(mets[m]["value"] is not None for mets in metrics.values() for m in BEHAVIOR_METRICS):
        gaps.append("no behaviour plots: every metric is n/a for every model (see the reasons in the table)")
        return {}
    return {"behavior_radar": radar(metrics, folder / "behavior_radar.png"),
            "behavior_bars": grouped_bars(metrics, folder / "behavior_bars.png")}
