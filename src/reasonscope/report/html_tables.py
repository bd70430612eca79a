"""Flat table rows (the ones the xlsx and csv hold) turned into what the HTML report shows.

:func:`table_view` takes the machine rows of one sheet and returns a :class:`TableView`: human column
labels (:func:`reasonscope.report.labels.column_label`), each estimate and its 95% CI merged into one
``value [low, high]`` cell rounded by :func:`reasonscope.report.numbers.format_estimate`, its ``n``,
failed count, not-applicable reason or left-out metrics as a small note under the value, p-values to
two significant digits, per-run settings (``setting_*``) moved out of the table into a settings line,
columns empty in every row dropped, a descriptive column with the same text in every row (a test's
paragraph: :data:`SAID_ONCE`) written once in the line under the table (with a few different texts:
a mark ``(a)`` per row and each text once under the table), and a "how computed" note: the sheet's own note followed by the
catalogue description of each metric column it shows.

Every column is rounded by one rule (:func:`reasonscope.report.columns.round_columns`): an estimate
cell prints the sheet's ready ``K_text``, a plain number the column's decimals. A metric column's
header carries its direction (:data:`ARROWS`, from the catalogue). Columns merged into a cell: ``K_low``/``K_high`` (the CI of ``K``), plain ``low``/``high`` (the CI of
the first of ``value``, ``score``, ``bt``, ``difference``), ``K_n``, ``K_failed``, ``K_reason`` and
``K_left_out``. The template escapes every text (Jinja2 autoescaping).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .columns import round_columns
from .labels import column_label, column_spec, humanise
from .numbers import column_decimals, format_estimate, format_number, format_p

if TYPE_CHECKING:
    from .view import FamilyReport

P_COLUMNS = ("p_value", "p_adjusted", "alpha_p_value", "alpha_p_adjusted")
PLAIN_CI_OWNERS = ("value", "score", "bt", "difference")
ATTACHED = ("_low", "_high", "_n", "_failed", "_reason", "_left_out", "_text")
SAID_ONCE = ("test", "null", "alpha_test", "alpha_null", "p_adjust", "log p reduction", "reading",
             "failed_generations", "label_reading", "ES_reading", "threshold")
"""Descriptive columns (a test's paragraph, its null hypothesis, the adjustment, how to read a rate): when
every row holds the same text it is written once, in the line under the table, not on every row."""


ARROWS = {True: "↑", False: "↓"}
"""The direction mark of a metric column's header: higher is better, lower is better."""
MARKED = ("test", "null", "alpha_test", "alpha_null", "p_adjust")
MAX_NOTED = 5
"""A descriptive column with at most this many different texts shows a mark per row, ``(a)``, and each
text once under the table."""


def _said_once(key: str, rows: list[dict[str, Any]]) -> bool:
    return key in SAID_ONCE and len({str(r.get(key)) for r in rows}) == 1 and rows[0].get(key) not in (None, "")


@dataclass
class Cell:
    """One cell of an HTML table: text, an optional second line (``sub``), and whether it is right-aligned."""

    text: str
    sub: str = ""
    numeric: bool = True  # right-aligned; text (names, labels, test descriptions) is left-aligned


@dataclass
class TableView:
    """One table of the HTML report."""

    key: str
    title: str
    headers: list[str]
    rows: list[list[Cell]]
    note: str = ""
    settings: list[tuple[str, str]] = field(default_factory=list)
    directions: list[str] = field(default_factory=list)
    """Per column: ``↑`` higher is better, ``↓`` lower is better, ``""`` neither or not a metric."""


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    return list(keys)


def _ci_keys(key: str, keys: set[str], plain_owner: str | None) -> tuple[str, str] | None:
    if f"{key}_low" in keys and f"{key}_high" in keys:
        return f"{key}_low", f"{key}_high"
    if key == plain_owner:
        return "low", "high"
    return None


def _text(v: Any) -> str:
    if isinstance(v, float | int | bool) or v is None:
        return format_number(v)
    if isinstance(v, list | tuple):
        return ", ".join(str(x) for x in v)
    return str(v)


def table_view(key: str, rows: list[dict[str, Any]], family: FamilyReport | None, title: str, note: str = "",
               hide: tuple[str, ...] = ()) -> TableView | None:
    """The HTML view of one sheet of ``family`` (see the module docstring); None when ``rows`` is empty.

    ``family``: the report part of the family the sheet belongs to (its labels and catalogue), or None.
    """
    if not rows:
        return None
    rows = round_columns(rows)  # one rounding rule per column (a sheet already rounded keeps its texts)
    keys = _columns(rows)
    present = set(keys)
    plain_owner = next((k for k in PLAIN_CI_OWNERS if k in present), None) if {"low", "high"} <= present else None
    consumed = {"low", "high"} if plain_owner else set()
    shown: list[str] = []
    for k in keys:
        if k in hide or k.startswith("setting_") or k in consumed or _said_once(k, rows):
            continue
        if any(k.endswith(s) and k[: -len(s)] in present for s in ATTACHED):
            continue
        if all(r.get(k) in (None, "") for r in rows) and column_spec(k, family) is None:
            continue  # a column empty in every row says nothing
        shown.append(k)
    headers, directions = [], []
    for k in shown:
        spec = column_spec(k, family)
        label = column_label(k, family)
        if _ci_keys(k, present, plain_owner):
            label += " [95% CI]"
        if spec and spec.unit and f"({spec.unit})" not in label:
            label += f" ({spec.unit})"
        headers.append(label)
        directions.append(ARROWS.get(spec.higher_is_better if spec else None, ""))
    decimals = {k: column_decimals((r.get(k), None, None) for r in rows) for k in shown
                if any(isinstance(r.get(k), float) for r in rows)}
    out_rows = [[_cell(r, k, present, plain_owner, family, decimals.get(k)) for k in shown] for r in rows]
    settings = [(column_label(k, family), _text(rows[0].get(k))) for k in keys if k not in hide and _said_once(k, rows)]
    for col, k in enumerate(shown):  # a descriptive column with a few texts: a mark per row, each text once below
        texts = list(dict.fromkeys(str(r.get(k)) for r in rows if r.get(k) not in (None, "")))
        if k in MARKED and 1 < len(texts) <= MAX_NOTED and len(rows) > len(texts):
            marks = {t: f"({chr(ord('a') + i)})" for i, t in enumerate(texts)}
            for row, r in zip(out_rows, rows, strict=True):
                if r.get(k) not in (None, ""):
                    row[col] = Cell(marks[str(r.get(k))], numeric=False)
            settings += [(f"{column_label(k, family)} {marks[t]}", t) for t in texts]
    for k in keys:
        if k.startswith("setting_"):
            values = list(dict.fromkeys(", ".join(map(str, v)) if isinstance(v, list | tuple) else str(v)
                                        for v in (r.get(k) for r in rows)))
            settings.append((column_label(k, family).removeprefix("Setting: "), " / ".join(values)))
    described = [column_spec(k, family) for k in shown]
    how = " ".join([note] + [f"{s.label}: {s.description}." for s in described if s and s.description]).strip()
    return TableView(key, title, headers, out_rows, how, settings, directions)


def _cell(r: dict[str, Any], k: str, present: set[str], plain_owner: str | None, family: FamilyReport | None = None,
          decimals: int | None = None) -> Cell:
    v = r.get(k)
    subs = []
    if v is None and r.get(f"{k}_reason"):
        subs.append(str(r[f"{k}_reason"]))
    if r.get(f"{k}_n") is not None:
        subs.append(f"n={r[f'{k}_n']}")
    if r.get(f"{k}_failed"):
        subs.append(f"{r[f'{k}_failed']} failed")
    if r.get(f"{k}_left_out"):
        subs.append(f"without {r[f'{k}_left_out']}")
    ci = _ci_keys(k, present, plain_owner)
    if k in P_COLUMNS:
        text = format_p(v) if isinstance(v, float | int) else _text(v)
    elif ci and isinstance(v, float | int) and not isinstance(v, bool):
        text = r.get(f"{k}_text") or format_estimate(v, r.get(ci[0]), r.get(ci[1]))
    elif k == "strategy" and isinstance(v, str) and not r.get("user"):
        text = humanise(v)  # a built-in strategy's key, "safety_priority", reads "Safety priority"
    elif isinstance(v, str) and family is not None and (label := family.value_label(k, v)) is not None:
        text = label  # the family's label of the value (a metric's, an attribute's), never the snake_case key
    elif isinstance(v, float) and decimals is not None:
        text = format_number(v, decimals)
    else:
        text = _text(v)
    numeric = v is None or (isinstance(v, float | int) and not isinstance(v, bool))
    return Cell(text, "; ".join(subs), numeric)
