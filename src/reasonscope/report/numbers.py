"""How the HTML report writes a number: rounded to what its confidence interval supports.

The rule (also in the docs' Reports page):

* A number with a 95% CI is shown as ``value [low, high]`` with as many decimals as the first
  significant digit of the CI's half-width ``h = (high - low) / 2`` needs:
  ``decimals = clamp(-floor(log10(h)), 0, 4)``. A half-width of 0.03 gives 2 decimals
  (``0.82 [0.79, 0.85]``), 0.3 gives 1, 0.004 gives 3, 12 (an Elo interval) gives 0. Digits below the
  first significant digit of the uncertainty are noise; the cap of 4 keeps very tight intervals
  readable. The bounds get the same number of decimals as the value.
* A degenerate CI (``h = 0``, e.g. every item scored 1) or a number without a CI keeps
  :data:`DEFAULT_DECIMALS` decimals below 10, 1 decimal below 1000 and none above (an Elo rating,
  a count of seconds), so nothing is shown with more precision than the tables had before.
* A value whose bounds are whole numbers too (a rank and its bootstrap rank bounds) keeps no decimals.
* p-values keep 2 significant digits and never round to 0 (``3e-07`` stays ``3e-07``).

The xlsx and csv files keep the unrounded (4-decimal) values: rounding is for reading, not for
further computation.
"""

from __future__ import annotations

import math

DEFAULT_DECIMALS = 3
MAX_DECIMALS = 4


def ci_decimals(low: float | None, high: float | None) -> int | None:
    """Decimals that a CI ``[low, high]`` supports: ``-floor(log10(half-width))`` within ``[0, 4]``;
    None when there is no usable interval (a bound missing or not finite, or zero width)."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    half = abs(high - low) / 2
    if half == 0:
        return None
    return max(0, min(MAX_DECIMALS, -math.floor(math.log10(half))))


def plain_decimals(value: float) -> int:
    """Decimals for a number without a CI: 3 below 10, 1 below 1000, 0 above."""
    a = abs(value)
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


def format_estimate(value: float | None, low: float | None = None, high: float | None = None,
                    unit: str = "") -> str:
    """``"value [low, high] unit"``, rounded by :func:`ci_decimals` (see the module docstring)."""
    if value is None:
        return "n/a"
    whole = all(isinstance(x, int) for x in (value, low, high) if x is not None)
    d = 0 if whole else ci_decimals(low, high)
    if d is None:
        d = plain_decimals(value) if isinstance(value, float) else 0
    text = format_number(float(value), d)
    if low is not None and high is not None:
        text += f" [{format_number(float(low), d)}, {format_number(float(high), d)}]"
    return f"{text} {unit}" if unit else text


def format_p(p: float | None) -> str:
    """A p-value to 2 significant digits; ``"n/a"`` for None."""
    if p is None:
        return "n/a"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"
