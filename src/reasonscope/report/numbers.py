"""How reasonscope writes a number: rounded to what its confidence interval supports.

The one rule of every output: the terminal tables, report.html, results.xlsx and tables/*.csv.

The rule (also in the docs' Reports page):

* A number with a 95% CI is shown as ``value [low, high]`` with as many decimals as the first
  significant digit of the CI's half-width ``h = (high - low) / 2`` needs:
  ``decimals = clamp(-floor(log10(h)), 0, 4)``. A half-width of 0.03 gives 2 decimals
  (``0.82 [0.79, 0.85]``), 0.3 gives 1, 0.004 gives 3, 12 (an Elo interval) gives 0. Digits below the
  first significant digit of the uncertainty are noise; the cap of 4 keeps very tight intervals
  readable. The bounds get the same number of decimals as the value.
* A degenerate CI (``h = 0``) or a number without a CI keeps :data:`DEFAULT_DECIMALS` decimals below
  10, 1 decimal below 1000 and none above (an Elo rating, a count of seconds).
* A value whose bounds are whole numbers too (a rank and its bootstrap rank bounds) keeps no decimals.
* p-values keep 2 significant digits and never round to 0 (``3e-07`` stays ``3.0e-07``); no other
  non-zero CI bound rounds to 0 either: it keeps its first significant digit (the exact interval of 1
  of 1 reads ``1.0 [0.03, 1.0]``, not ``[0.0, 1.0]``).
* One rule per column: every cell of a table column (a metric over models, a score over variants) is
  written with the same decimals, :func:`column_decimals`: the most that any cell's CI supports (a
  column never mixes ``0.9 [0.6, 1.0]`` and ``0.77 [0.68, 0.82]``: both get 2). A column without CIs
  takes the decimals of its largest magnitude (Elo ``1007`` and ``986`` alike). The terminal
  (:func:`format_column`), report.html, results.xlsx, tables/*.csv and the markdown and LaTeX tables
  all take their text from the same column rule (:mod:`reasonscope.report.columns`).

Text (:func:`format_estimate`, :func:`format_column`, :func:`format_p`) is what the terminal and
report.html print. The spreadsheet and csv cells stay numbers, rounded by the same column rule
(:mod:`reasonscope.report.columns`, :func:`round_p`), so a cell shows the digits the report shows;
``summary.json`` keeps every value unrounded for further computation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

DEFAULT_DECIMALS = 3
MAX_DECIMALS = 4


def ci_decimals(low: float | None, high: float | None) -> int | None:
    """Decimals that a CI ``[low, high]`` supports.

    ``-floor(log10(half-width))`` within ``[0, 4]``; None when there is no usable interval (a bound missing or
    not finite, or zero width).
    """
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    half = abs(high - low) / 2
    if half == 0:
        return None
    return max(0, min(MAX_DECIMALS, -math.floor(math.log10(half))))


def plain_decimals(value: float) -> int:
    """Decimals for a number without a CI.

    3 below 10 (more for a non-zero number below 0.001, down to its first significant digit: 0.0005 stays
    ``0.0005``, never ``0.001``), 1 below 1000, 0 above.
    """
    a = abs(value)
    if 0 < a < 10 ** -DEFAULT_DECIMALS:
        return -math.floor(math.log10(a))
    return DEFAULT_DECIMALS if a < 10 else 1 if a < 1000 else 0


def format_number(value: float | int | None, decimals: int | None = None) -> str:
    """``value`` with ``decimals`` (default: :func:`plain_decimals`); ``"n/a"`` for None, ints unchanged."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    d = plain_decimals(value) if decimals is None else decimals
    out = f"{value:.{d}f}"
    return "0" + out[2:] if out.startswith("-0") and float(out) == 0 else out  # never "-0.00"


def estimate_decimals(value: float | int, low: float | None = None, high: float | None = None) -> int:
    """Decimals of a value and its CI bounds (module docstring).

    0 for whole numbers with whole bounds, :func:`ci_decimals` of the bounds, else :func:`plain_decimals` of
    the value.
    """
    if all(isinstance(x, int) for x in (value, low, high) if x is not None):
        return 0
    d = ci_decimals(low, high)
    return plain_decimals(value) if d is None else d


def column_decimals(cells: Iterable[tuple[Any, Any, Any]]) -> int:
    """One number of decimals for a whole column of ``(value, low, high)`` cells (module docstring).

    The most decimals any cell's CI supports (:func:`ci_decimals`), so no cell loses a digit its own CI
    supports and the column reads at one precision; a column without any usable CI takes
    :func:`plain_decimals` of its largest magnitude (``1007`` beside ``986.1`` both whole), and a column of
    whole numbers with whole bounds (ranks) keeps none.
    """
    cells = [c for c in cells if isinstance(c[0], int | float) and not isinstance(c[0], bool)
             and math.isfinite(c[0])]
    if not cells:
        return DEFAULT_DECIMALS
    if all(isinstance(x, int) for c in cells for x in c if x is not None):
        return 0
    with_ci = [d for d in (ci_decimals(c[1], c[2]) for c in cells
                           if isinstance(c[1], int | float) and isinstance(c[2], int | float)) if d is not None]
    if with_ci:
        return max(with_ci)
    magnitudes = [abs(float(c[0])) for c in cells if c[0]]
    return plain_decimals(max(magnitudes)) if magnitudes else DEFAULT_DECIMALS


def format_column(estimates: Sequence[dict | None], unit: str = "") -> list[str]:
    """:func:`format_estimate` of each estimate dict of one column, all at the column's :func:`column_decimals`.

    What every terminal table prints, so that a terminal column and the same column on the page, in the
    workbook, the csv, markdown and LaTeX read alike.
    """
    d = column_decimals((e.get("value"), e.get("low"), e.get("high")) for e in estimates if e)
    return [format_estimate((e or {}).get("value"), (e or {}).get("low"), (e or {}).get("high"), unit, decimals=d)
            for e in estimates]


def nonzero_decimals(x: float, decimals: int) -> int:
    """``decimals``, or more when ``x`` is not 0 but would round to 0: down to its first significant digit.

    The exact interval of 1 of 1 is [0.025, 1]: at 1 decimal its lower end reads ``0.03``, never ``0.0``
    (a bound of 0 says the share could be none).
    """
    if x == 0 or not math.isfinite(x) or round(abs(x), decimals) != 0:
        return decimals
    return max(decimals, -math.floor(math.log10(abs(x))))


def round_kept(x: Any, decimals: int) -> Any:
    """``round(x, decimals)`` for a finite float, never rounding a non-zero number to 0 (:func:`nonzero_decimals`)."""
    if not isinstance(x, float) or not math.isfinite(x):
        return x
    return round(x, nonzero_decimals(x, decimals))


def format_estimate(value: float | None, low: float | None = None, high: float | None = None,
                    unit: str = "", decimals: int | None = None) -> str:
    """``"value [low, high] unit"``, rounded by :func:`estimate_decimals` (see the module docstring).

    ``"n/a"`` without a value, the value alone without both bounds; ``decimals`` (a column's
    :func:`column_decimals`) overrides the cell's own rule.
    """
    if value is None:
        return "n/a"
    d = estimate_decimals(value, low, high) if decimals is None else decimals
    text = format_number(float(value), d)
    if low is not None and high is not None:
        lo, hi = float(low), float(high)
        text += f" [{format_number(lo, nonzero_decimals(lo, d))}, {format_number(hi, nonzero_decimals(hi, d))}]"
    return f"{text} {unit}" if unit else text


def format_p(p: float | None) -> str:
    """A p-value to 2 significant digits, trailing zero kept (``1.0``, ``0.50``, never a bare ``1``).

    ``"n/a"`` for None.
    """
    if p is None:
        return "n/a"
    return f"{p:#.2g}" if p >= 1e-4 else f"{p:.1e}"


def format_counts(e: dict) -> str:
    """`` n=12`` and, when some were failed generations, ``, 2 failed`` (an estimate dict's counts)."""
    failed = e.get("failed") or 0
    if e.get("value") is None:
        return f" ({failed} failed)" if failed else ""
    return f" n={e['n']}" + (f", {failed} failed" if failed else "")


def format_estimate_of(e: dict) -> str:
    """:func:`format_estimate` of an estimate dict (``value``, ``low``, ``high``)."""
    return format_estimate(e.get("value"), e.get("low"), e.get("high"))


def estimate_cells(value, low=None, high=None) -> tuple:
    """The ``(value, low, high)`` cells of an estimate, unrounded.

    A sheet keeps its numbers whole until its column rule rounds every cell of a column alike
    (:func:`reasonscope.report.columns.round_columns`, applied where the sheets are written).
    """
    return value, low, high


def round_estimate(value, low=None, high=None) -> tuple:
    """``(value, low, high)`` as numbers rounded to :func:`estimate_decimals` (None and non-floats kept).

    The spreadsheet and csv cells of an estimate.
    """
    if not isinstance(value, float) or not math.isfinite(value):
        return value, low, high
    d = estimate_decimals(value, low, high)
    return tuple(round(x, d) if isinstance(x, float) and math.isfinite(x) else x for x in (value, low, high))


def round_p(p: float | None) -> float | None:
    """A p-value as a number with 2 significant digits (the digits :func:`format_p` prints); None kept."""
    return None if p is None else float(f"{p:.2g}")
