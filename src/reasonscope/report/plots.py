"""PNG plots (matplotlib, Agg backend) and the one layout rule every plot of the report follows.

Layout rule: a figure is :data:`HALF` (5.6 x 4.0 in) or :data:`FULL` (11.2 x 4.4 in) wide, or a
:func:`tall` half for many labels, and is saved at :data:`DPI` (100) without cropping, so its PNG is
560 or 1120 pixels wide. The report shows every PNG at that natural size (two halves side by side fit
the 1200-pixel page) and only shrinks it, keeping its aspect ratio, on a narrower screen
(``max-width: 100%; height: auto``): no plot is ever stretched. Text is at least 8 pt (11 px).

Content rules: every axis names its quantity and unit; a number the tables give with a 95% CI is drawn
with that CI as an error bar; more than :data:`MAX_VERTICAL_LABELS` category labels go on the y axis of
a horizontal bar chart instead of being rotated; series identical to another are merged by the family
view before plotting (evidence matchers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..atomic_files import atomic_path
from ..metric_specs import BEHAVIOR_METRICS, find_spec

DPI = 100
HALF = (5.6, 4.0)
FULL = (11.2, 4.4)
MAX_VERTICAL_LABELS = 8
"""More category labels than this are drawn as a horizontal bar chart (labels on the y axis)."""


def tall(labels: int, series: int = 1) -> tuple[float, float]:
    """A half-width figure tall enough for ``labels`` horizontal bar groups of ``series`` bars each."""
    return HALF[0], max(HALF[1], 0.9 + 0.18 * labels * max(1, series))


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (every plot of reasonscope is a PNG file)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
                         "xtick.labelsize": 8, "ytick.labelsize": 8})
    return plt


def save(fig, path: Path, dpi: int = DPI) -> Path:
    """Write the figure as PNG at :data:`DPI` atomically and free it.

    The layout rule: never cropped, so the PNG has the figure's size in inches times the DPI. Written beside
    ``path``, then renamed. ``dpi`` is accepted for callers of the old signature and ignored.
    """
    del dpi
    try:
        if fig.get_layout_engine() is None:
            fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=DPI, format="png")
    finally:
        pyplot().close(fig)
    return path


def text_colour(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba``.

    Black when the relative luminance is above 0.5.
    """
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"


def metric_label(family: str, key: str) -> str:
    """The catalogue's label of a metric (:mod:`reasonscope.metric_specs`), else the key."""
    spec = find_spec(family, key)
    return spec.label if spec else key


def ci_bars(ax, keys: list[str], series: dict[str, dict[str, Any]], *, labels: list[str] | None = None,
            points: bool = False, capsize: int = 3, horizontal: bool = False, **tick_kw) -> None:
    """Grouped bars (or points) with CI error bars.

    One group per key, one bar per series; a series maps key -> estimate (``value``, ``low``, ``high``; a
    missing key or value None draws nothing). ``horizontal``: groups along the y axis (first key on top),
    values along x.
    """
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
        if horizontal:
            if points:
                ax.errorbar(ys, xs, xerr=[lo, hi], fmt="o", capsize=capsize, label=name)
            else:
                ax.barh(xs, ys, width, xerr=[lo, hi], capsize=capsize, label=name)
        elif points:
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=capsize, label=name)
        else:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=capsize, label=name)
    ticks = [i + width * (len(series) - 1) / 2 for i in range(len(keys))]
    if horizontal:
        ax.set_yticks(ticks, labels or keys, **tick_kw)
        ax.invert_yaxis()
    else:
        ax.set_xticks(ticks, labels or keys, **tick_kw)


def grouped_bars(metrics: dict[str, dict[str, Any]], path: Path) -> Path:
    """The six behaviour metrics per model as grouped bars with their 95% CIs.

    A metric n/a for a model has no bar (its reason is in the table).
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=FULL)
    ci_bars(ax, list(BEHAVIOR_METRICS), metrics, labels=[metric_label("behavior", m) for m in BEHAVIOR_METRICS])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean over items (0-1; 95% CI)")
    ax.set_title("Behaviour metrics per model (higher is better; no bar = n/a, see the table)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(fig, path)


def behavior_plots(metrics: dict[str, dict[str, Any]], folder: Path, gaps: list[str]) -> dict[str, Path]:
    """The grouped bars of the behaviour metrics, with their CIs (a radar cannot show intervals).

    When no metric has a value for any model nothing is drawn and why is appended to ``gaps``.
    """
    if not any(mets[m]["value"] is not None for mets in metrics.values() for m in BEHAVIOR_METRICS):
        gaps.append("no behaviour plots: every metric is n/a for every model (see the reasons in the table)")
        return {}
    return {"behavior_bars": grouped_bars(metrics, folder / "behavior_bars.png")}


__all__ = ["DPI", "FULL", "HALF", "MAX_VERTICAL_LABELS", "behavior_plots", "ci_bars", "grouped_bars",
           "metric_label", "pyplot", "save", "tall", "text_colour"]

