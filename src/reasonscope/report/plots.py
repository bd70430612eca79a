"""PNG plots (matplotlib, Agg backend) and the one layout rule every plot of the report follows.

Layout rule: a figure is :data:`HALF` (5.6 x 4.0 in) or :data:`FULL` (11.2 x 4.4 in) wide, or a
:func:`tall` half for many labels, and is saved at :data:`DPI` (100) without cropping, so its PNG is
560 or 1120 pixels wide. The report shows every PNG at that natural size (two halves side by side fit
the 1200-pixel page) and only shrinks it, keeping its aspect ratio, on a narrower screen
(``max-width: 100%; height: auto``): no plot is ever stretched. Text is at least 8 pt (11 px).

Titles and labels are wrapped to the space they have and no text may cross the figure's edge
(:func:`clipped_texts`, recorded in :data:`CLIPPED`); a third-party figure (SHAP) is brought to the
half or full width (:func:`fit_width`). Legends go under the axis label (:func:`outside_legend`), never over a
bar; a missing value is written "n/a" where its bar would be, so it never reads as a zero.

Content rules: every axis names its quantity and unit; a number the tables give with a 95% CI is drawn
with that CI as an error bar; more than :data:`MAX_VERTICAL_LABELS` category labels go on the y axis of
a horizontal bar chart instead of being rotated; series identical to another are merged by the family
view before plotting (evidence matchers).
"""

from __future__ import annotations

import warnings
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ..storage.atomic_files import atomic_path

DPI = 100
HALF = (5.6, 4.0)
FULL = (11.2, 4.4)
MAX_VERTICAL_LABELS = 8
"""More category labels than this are drawn as a horizontal bar chart (labels on the y axis)."""


def tall(labels: int, series: int = 1) -> tuple[float, float]:
    """A half-width figure tall enough for ``labels`` horizontal bar groups of ``series`` bars each."""
    return HALF[0], max(HALF[1], 0.9 + 0.18 * labels * max(1, series))


RC = {"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8, "xtick.labelsize": 8,
      "ytick.labelsize": 8}
"""The report's font sizes, set in matplotlib's ``rcParams`` before a plot is made."""


class Figures:
    """The part of ``matplotlib.pyplot`` the report's plots use, without importing pyplot.

    ``subplots``, ``figure``, ``gcf``, ``tight_layout`` and ``close`` on :class:`matplotlib.figure.Figure`
    with the Agg canvas: the same figures (the same ``rcParams``, the same PNG bytes) as pyplot's on the
    Agg backend, without pyplot's import (its backend machinery: about 0.2 s of a run's start) or its
    global figure registry. A third-party plot that draws on pyplot's current figure (SHAP) takes
    :func:`pyplot_module` instead.
    """

    def __init__(self) -> None:
        """Set the report's font sizes (:data:`RC`)."""
        import matplotlib

        matplotlib.rcParams.update(RC)
        self.rcParams = matplotlib.rcParams
        self._current = None

    def figure(self, *args: Any, **kwargs: Any):
        """A new figure on the Agg canvas (``matplotlib.pyplot.figure``'s keyword arguments)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(*args, **kwargs)
        FigureCanvasAgg(fig)
        self._current = fig
        return fig

    def subplots(self, nrows: int = 1, ncols: int = 1, *, sharex: Any = False, sharey: Any = False,
                 squeeze: bool = True, width_ratios: Any = None, height_ratios: Any = None,
                 subplot_kw: Any = None, gridspec_kw: Any = None, **fig_kw: Any):
        """A new figure and its axes, as ``matplotlib.pyplot.subplots`` returns them."""
        fig = self.figure(**fig_kw)
        axs = fig.subplots(nrows=nrows, ncols=ncols, sharex=sharex, sharey=sharey, squeeze=squeeze,
                           subplot_kw=subplot_kw, gridspec_kw=gridspec_kw, height_ratios=height_ratios,
                           width_ratios=width_ratios)
        return fig, axs

    def gcf(self):
        """The figure made last (a new one when none was)."""
        return self._current if self._current is not None else self.figure()

    def tight_layout(self, **kwargs: Any) -> None:
        """``tight_layout`` of the current figure."""
        self.gcf().tight_layout(**kwargs)

    @staticmethod
    def close(fig: Any) -> None:
        """Free ``fig``: pyplot's registry forgets it when pyplot made it (a Figure of ours is in none)."""
        import sys

        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            plt.close(fig)


def pyplot() -> Figures:
    """The report's figure maker (:class:`Figures`: pyplot's ``subplots`` and ``close`` on the Agg canvas)."""
    import matplotlib

    matplotlib.use("Agg")
    return Figures()


def pyplot_module():
    """matplotlib.pyplot itself on the non-interactive Agg backend, for third-party plots that draw on it (SHAP)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(RC)
    return plt


EXTRA_FORMATS: ContextVar[tuple[str, ...]] = ContextVar("EXTRA_FORMATS", default=())
"""Vector copies :func:`save` writes beside each PNG (``("svg", "pdf")`` for ``reasonscope report --format``)."""
CLIPPED: dict[str, list[str]] = {}
"""Plot file name -> the texts that still cross the figure's edge after :func:`save` laid it out (empty: none)."""
CHAR_WIDTH = 0.6
"""Width of an average character in units of the font size, to wrap a title or a label to its space."""


def fit_width(fig) -> None:
    """Snap the figure's width to :data:`HALF` or :data:`FULL` (a third-party plot, SHAP's, picks its own).

    The height scales along, so the plot keeps its proportions.
    """
    w, h = fig.get_size_inches()
    target = HALF[0] if w < 7.5 else FULL[0]
    if abs(w - target) > 1e-6:
        fig.set_size_inches(target, h * target / w)


def wrap_labels(fig) -> None:
    """Wrap each axes' title and axis labels and the figure's titles to the space they have (no clipping)."""
    import textwrap

    width_pt = fig.get_size_inches()[0] * 72

    def wrap(text_artist, space_pt: float) -> None:
        text = text_artist.get_text()
        if not text or "\n" in text or "$" in text:
            return
        chars = max(12, int(space_pt / (CHAR_WIDTH * text_artist.get_fontsize())))
        if len(text) > chars:
            text_artist.set_text(textwrap.fill(text, chars))

    for t in (getattr(fig, "_suptitle", None), getattr(fig, "_supxlabel", None)):
        if t is not None:
            wrap(t, width_pt * 0.95)
    for ax in fig.axes:
        pos = ax.get_position()
        ax_w, ax_h = pos.width * width_pt, pos.height * fig.get_size_inches()[1] * 72
        for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label):
            wrap(t, ax_w * 0.98)  # centred on the axes: it may not be wider than they are
        wrap(ax.yaxis.label, ax_h * 1.1)


def _undrawn_tick_labels(fig) -> set[int]:
    """Ids of tick labels outside their axis' view limits (kept by matplotlib, never drawn)."""
    out = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            tol = (hi - lo) * 1e-6
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - tol <= tick.get_loc() <= hi + tol:
                    out.update((id(tick.label1), id(tick.label2)))
    return out


def clipped_texts(fig) -> list[str]:
    """Every visible text of ``fig`` that crosses the figure's edge (as drawn), as ``"text" (side)``."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    undrawn = _undrawn_tick_labels(fig)
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or not t.get_figure() or id(t) in undrawn:
            continue
        bb = t.get_window_extent(renderer)
        sides = [s for s, bad in (("left", bb.x0 < -1), ("right", bb.x1 > W + 1), ("bottom", bb.y0 < -1),
                                  ("top", bb.y1 > H + 1)) if bad]
        if sides:
            out.append(f"{t.get_text()[:60]!r} ({', '.join(sides)})")
    return out


def save(fig, path: Path, dpi: int = DPI) -> Path:
    """Write the figure as PNG at :data:`DPI` atomically and free it.

    The layout rule: the width snapped to :data:`HALF` or :data:`FULL` (:func:`fit_width`), titles and
    labels wrapped to their space (:func:`wrap_labels`), laid out, never cropped, so the PNG has the
    figure's size in inches times the DPI. Texts still crossing the edge are recorded in
    :data:`CLIPPED`. Written beside ``path``, then renamed; with :data:`EXTRA_FORMATS` set, an SVG and a
    PDF copy beside it. ``dpi`` is accepted for callers of the old signature and ignored.
    """
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    del dpi
    path = Path(path)
    try:
        fit_width(fig)
        clipped: list[str] = []
        for _ in range(4):  # wrap to the space the last layout left, lay out again, until nothing crosses the edge
            wrap_labels(fig)
            fig.canvas.draw()
            _anchor_legends_below(fig)
            if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
                with warnings.catch_warnings():  # a layout that cannot fit everything says so: CLIPPED records it
                    warnings.simplefilter("ignore", UserWarning)
                    fig.tight_layout()
            fig.canvas.draw()
            clipped = clipped_texts(fig)
            if not clipped:
                break
        CLIPPED[path.name] = clipped
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=DPI, format="png")
        for fmt in EXTRA_FORMATS.get():
            with atomic_path(path.with_suffix(f".{fmt}")) as tmp:
                fig.savefig(tmp, format=fmt)
    finally:
        pyplot().close(fig)
    return path


def text_colour(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba``.

    Black when the relative luminance is above 0.5.
    """
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"


def ci_bars(ax, keys: list[str], series: dict[str, dict[str, Any]], *, labels: list[str] | None = None,
            points: bool = False, capsize: int = 3, horizontal: bool = False, **tick_kw) -> None:
    """Grouped bars (or points) with CI error bars.

    One group per key, one bar per series; a series maps key -> estimate (``value``, ``low``, ``high``; a
    missing key or value None draws nothing). ``horizontal``: groups along the y axis (first key on top),
    values along x.
    """
    width = 0.8 / max(1, len(series))
    for j, (name, row) in enumerate(series.items()):
        xs, ys, lo, hi, missing = [], [], [], [], []
        for i, k in enumerate(keys):
            e = row.get(k)
            if not e or e.get("value") is None:
                missing.append(i + j * width)
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
        for x in missing:  # no value: written "n/a", so that an empty slot never reads as a zero
            if horizontal:
                ax.annotate("n/a", (0, x), xytext=(2, 0), textcoords="offset points", va="center", fontsize=8,
                            color="grey")
            else:
                ax.annotate("n/a", (x, 0), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=8,
                            color="grey", rotation=90)
    ticks = [i + width * (len(series) - 1) / 2 for i in range(len(keys))]
    if horizontal:  # long category labels on two lines, so the bars keep their width
        import textwrap

        ax.set_yticks(ticks, [textwrap.fill(str(x), 32) for x in (labels or keys)], **tick_kw)
        ax.invert_yaxis()
    else:
        ax.set_xticks(ticks, labels or keys, **tick_kw)


def outside_legend(ax, columns: int | None = None) -> None:
    """The legend under the axis label (:func:`save` anchors it there), never over a bar or a point."""
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=columns or min(4, len(handles)),
                  frameon=False, fontsize=8)
        ax.legend_below = True


def _anchor_legends_below(fig) -> None:
    """Move each :func:`outside_legend` legend just under its axes' tick labels and axis label, as laid out."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not getattr(ax, "legend_below", False):
            continue
        bottom = ax.xaxis.get_tightbbox(renderer)
        if bottom is None:
            continue
        y = ax.transAxes.inverted().transform((0, bottom.y0 - 4))[1]
        legend.set_bbox_to_anchor((0.5, y), transform=ax.transAxes)


__all__ = ["DPI", "FULL", "HALF", "MAX_VERTICAL_LABELS", "ci_bars", "clipped_texts", "outside_legend", "pyplot", "pyplot_module", "save",
           "tall", "text_colour"]

