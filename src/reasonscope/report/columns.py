"""One rounding rule per column for every table the report writes.

:func:`round_columns` takes the flat rows of one sheet (machine keys, unrounded numbers) and returns
them with each column rounded to a single number of decimals
(:func:`reasonscope.report.numbers.column_decimals`):

* an estimate column ``K`` with ``K_low`` / ``K_high`` (or ``value``, ``score``, ``bt``, ``difference``
  with plain ``low`` / ``high``) is rounded, bounds included, to the decimals the column's CIs support
  (a non-zero bound never to 0: :func:`reasonscope.report.numbers.round_kept`),
  and gains a ready text column ``K_text`` = ``"0.50 [0.30, 0.80]"`` beside its bounds (in the workbook
  and the csv: what a paper pastes; report.html, markdown and LaTeX print exactly this text);
* a p-value column keeps 2 significant digits (:func:`reasonscope.report.numbers.round_p`);
* any other column of floats is rounded to the decimals of its largest magnitude; whole numbers
  (counts, ranks) stay whole.

Rows that already hold ``K_text`` keep it (the rule is applied once, where the sheet is written).
"""

from __future__ import annotations

import math
from typing import Any

from .numbers import column_decimals, format_estimate, round_kept, round_p
from .spreadsheets import is_p_column

PLAIN_CI_OWNERS = ("value", "score", "bt", "difference")
TEXT = "_text"


def keys_of(rows: list[dict[str, Any]]) -> list[str]:
    """Every key of ``rows`` in first-seen order."""
    return list(dict.fromkeys(k for r in rows for k in r))


def estimate_columns(keys: list[str]) -> dict[str, tuple[str, str]]:
    """Estimate column -> its (low, high) columns: ``K_low``/``K_high``, or the first plain owner's ``low``/``high``."""
    present = set(keys)
    out = {k: (f"{k}_low", f"{k}_high") for k in keys if f"{k}_low" in present and f"{k}_high" in present}
    if {"low", "high"} <= present:
        owner = next((k for k in PLAIN_CI_OWNERS if k in present), None)
        if owner is not None:
            out[owner] = ("low", "high")
    return out


def _round(x: Any, d: int) -> Any:
    return round_kept(x, d)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def round_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with one rounding rule per column and a ``K_text`` column per estimate (module docstring)."""
    if not rows or not isinstance(rows, list):
        return rows
    keys = keys_of(rows)
    estimates = estimate_columns(keys)
    bound_owner = {b: o for o, pair in estimates.items() for b in pair}  # a bound column -> its estimate
    decimals: dict[str, int] = {}
    for k, (lo, hi) in estimates.items():
        decimals[k] = column_decimals((r.get(k), r.get(lo), r.get(hi)) for r in rows)
    for k in keys:
        if k in estimates or k in bound_owner or k.endswith(TEXT) or is_p_column(k):
            continue
        values = [r.get(k) for r in rows if _is_number(r.get(k))]
        if values and any(isinstance(v, float) for v in values):
            decimals[k] = column_decimals((v, None, None) for v in values)
    high_owner = {hi: o for o, (_, hi) in estimates.items()}
    out = []
    for r in rows:
        new: dict[str, Any] = {}
        for k, v in r.items():
            if is_p_column(k) and isinstance(v, float):
                new[k] = round_p(v)
            elif k in estimates:
                new[k] = round(v, decimals[k]) if isinstance(v, float) and math.isfinite(v) else v
            elif k in bound_owner:
                new[k] = _round(v, decimals[bound_owner[k]])
            elif k in decimals:
                new[k] = _round(v, decimals[k])
            else:
                new[k] = v
            owner = high_owner.get(k)
            if owner is not None and f"{owner}{TEXT}" not in r:
                new[f"{owner}{TEXT}"] = None if r.get(owner) is None else format_estimate(
                    r.get(owner), r.get(estimates[owner][0]), r.get(estimates[owner][1]), decimals=decimals[owner])
        out.append(new)
    return out


def round_sheets(sheets: dict[str, Any]) -> dict[str, Any]:
    """:func:`round_columns` of every sheet that is a list of rows (a streamed sheet is left as it is)."""
    return {name: round_columns(rows) if isinstance(rows, list) else rows for name, rows in sheets.items()}
