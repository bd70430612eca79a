"""``results.xlsx`` and ``tables/*.csv``: tables as spreadsheets, with every text cell inert.

Model outputs, model names, judge replies and dataset rows are third-party text, and a spreadsheet
program runs a cell that starts with ``=`` (``=cmd|' /C calc'!A0``, ``=HYPERLINK(...)``) as a formula.
So no text ever becomes a formula, a link or a number:

* **xlsx** (XlsxWriter, ``strings_to_formulas``, ``strings_to_urls`` and ``strings_to_numbers`` off,
  ``constant_memory`` on): text is written with ``write_string``, so ``=1+1``, ``-5`` or
  ``http://...`` given as text are shown as that text. Control characters (ESC from coloured
  terminal output, NUL, every C0 character) are stored with the ``_xHHHH_`` escape of the file format
  instead of breaking the workbook. Python numbers and booleans are numbers and booleans; NaN and
  infinities, which a workbook cannot hold as numbers, are the text ``nan`` / ``inf`` / ``-inf``.
  Dicts and lists are JSON text. A cell holds at most :data:`MAX_CELL_CHARS` characters (Excel's limit
  is 32,767); longer text is cut there (``samples.jsonl`` keeps every text whole).
* **csv** (the OWASP recommendation for CSV injection): a text cell that starts with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading ``'``, which spreadsheet programs show as
  text and do not evaluate. Numbers are written as numbers (``-5`` stays ``-5``); only text is prefixed.
  Reading a table back for analysis: drop one leading ``'`` from a text cell whose next character is
  one of those six.

Sheet names are cut to Excel's 31 characters, stripped of the characters it forbids, and made unique.

Layout of results.xlsx (what a researcher pasting from it sees):

* every table sheet has its header row (the machine column keys, as in the csv files) frozen together
  with the first column, an autofilter over the header, and column widths from the longest of the
  header and the first :data:`WIDTH_SAMPLE_ROWS` cells (between :data:`MIN_WIDTH` and
  :data:`MAX_WIDTH` characters);
* every number of a column shows the same decimals (:func:`number_format`: those of its most precise
  cell, at most 4), whole values and counts included, so ``1.00`` stands beside ``0.60``; the cell
  keeps the number itself (rounded by the column rule, :mod:`reasonscope.report.columns`), and each
  estimate has a ready text column ``K_text`` (``0.50 [0.30, 0.80]``). p-value columns (``p_*``,
  ``*_p_value``, ``*_p_adjusted``) are shown as stored (2 significant digits: ``3.0e-07`` would read
  ``0.0000``);
* a ``columns`` sheet (written by the report) names every column of every table with its label, unit,
  direction and meaning;
* a table without rows gets no sheet: the ``metadata`` sheet lists the tables left out;
* ``metadata`` is a two-column table (key, value): nested values (the plan, the versions, the run's
  notes) are flattened into dotted keys (``config.families.behavior.samples``), a list of plain values
  is one comma-separated cell, so no cell holds a JSON blob.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Collection, Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from ..storage.atomic_files import atomic_open, atomic_path

MAX_CELL_CHARS = 32_000
WIDTH_SAMPLE_ROWS = 200
MIN_WIDTH, MAX_WIDTH = 6, 60
FLOAT_FORMAT = "0.0000"
"""The most decimals a cell shows (4); each column shows as many as its most precise cell (:func:`number_format`)."""
HEADER_FORMAT = {"bold": True, "bg_color": "#F3F3F3", "bottom": 1, "text_wrap": False}
"""The one header style of every sheet, the ``metadata`` and ``columns`` sheets included."""
CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")


def text_cell(v: Any) -> Any:
    """A value as it goes into a cell.

    Numbers, booleans and None unchanged, dicts and lists as JSON, everything else as (possibly cut) text.
    """
    if v is None or isinstance(v, bool | int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, dict | list | tuple):
        v = json.dumps(v, default=str, ensure_ascii=False)
    return str(v)[:MAX_CELL_CHARS]


def csv_cell(v: Any) -> Any:
    """:func:`text_cell`, and a leading ``'`` on text that a spreadsheet would read as a formula."""
    v = text_cell(v)
    if isinstance(v, str) and v.startswith(CSV_TRIGGERS):
        return "'" + v
    return v


def _columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def sheet_names(names: list[str]) -> dict[str, str]:
    """Table name -> a valid, unique worksheet name."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = _BAD_SHEET_CHARS.sub("_", str(name)).strip("'")[:31] or "sheet"
        candidate, n = base, 1
        while candidate.lower() in used:
            n += 1
            candidate = f"{base[:31 - len(str(n)) - 1]}~{n}"
        used.add(candidate.lower())
        out[name] = candidate
    return out


def is_p_column(key: str) -> bool:
    """Whether column ``key`` holds p-values (shown as stored, never as ``0.0000``)."""
    return key.startswith("p_") or key.endswith(("_p_value", "_p_adjusted"))


def _write_row(ws: Any, row: int, values: list[Any], formats: list[Any] | None = None) -> None:
    for col, v in enumerate(values):
        v = text_cell(v)
        if v is None:
            continue
        if isinstance(v, bool):
            ws.write_boolean(row, col, v)
        elif isinstance(v, int | float):
            ws.write_number(row, col, v, formats[col] if formats else None)
        else:
            ws.write_string(row, col, v)


def shown_decimals(v: float) -> int:
    """Decimals of ``v`` as stored (at most 4, the most any table keeps): ``0.25`` -> 2, ``3.0`` -> 0."""
    text = f"{v:.4f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def number_format(key: str, values: Iterable[Any]) -> str | None:
    """The one number format of a column: as many decimals as its most precise cell, for every cell of it.

    A column of whole numbers is ``0``; a column of rounded estimates (:mod:`reasonscope.report.columns`)
    shows each value with the column's decimals, whole values included (``1.00`` beside ``0.60``, never a
    General ``1``); p-value columns and columns without numbers keep the General format (None).
    """
    if is_p_column(key):
        return None
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)
               and math.isfinite(v)]
    if not numbers:
        return None
    d = max((shown_decimals(v) for v in numbers if isinstance(v, float)), default=0)
    return "0" if d == 0 else "0." + "0" * d


def _shown_width(v: Any) -> int:
    """Characters a cell needs: 4 decimals for a float, the longest line of a text."""
    v = text_cell(v)
    if v is None:
        return 0
    if isinstance(v, float) and not v.is_integer():
        return len(f"{v:.4f}")
    return max((len(line) for line in str(v).splitlines()), default=0)


def column_widths(cols: list[str], rows: Iterable[dict[str, Any]]) -> list[int]:
    """Width per column: the longest of the header and the first :data:`WIDTH_SAMPLE_ROWS` cells, bounded.

    The width is kept within [:data:`MIN_WIDTH`, :data:`MAX_WIDTH`].
    """
    widths = [len(c) for c in cols]
    for i, r in enumerate(rows):
        if i >= WIDTH_SAMPLE_ROWS:
            break
        widths = [max(w, _shown_width(r.get(c))) for w, c in zip(widths, cols, strict=True)]
    return [min(MAX_WIDTH, max(MIN_WIDTH, w + 2)) for w in widths]


def flatten(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, cell value)`` rows of a nested value.

    Dicts by key, lists of dicts by index (``models[0].spec``), a list of plain values as one comma-separated
    text, an empty one as ``(none)``.
    """
    if isinstance(value, dict):
        if not value:
            return [(key, "(none)")]
        return [row for k, v in value.items() for row in flatten(v, f"{key}.{k}" if key else str(k))]
    if isinstance(value, list | tuple):
        if any(isinstance(v, dict | list | tuple) for v in value):
            return [row for i, v in enumerate(value) for row in flatten(v, f"{key}[{i}]")]
        return [(key, ", ".join(str(v) for v in value) if value else "(none)")]
    return [(key, value)]


def write_xlsx(path: Path, sheets: dict[str, Collection[dict[str, Any]]], metadata: dict[str, Any]) -> Path:
    """One worksheet per table with rows, plus a ``metadata`` sheet.

    Each table: a header row, then one row per dict (layout in the module docstring). ``metadata``: a (key,
    value) table of ``metadata`` flattened, and the tables left out.
    """
    import xlsxwriter

    kept = {name: rows for name, rows in sheets.items() if len(rows)}
    omitted = [name for name in sheets if name not in kept]
    names = sheet_names([*kept, "metadata"])
    with atomic_path(path) as tmp:
        wb = xlsxwriter.Workbook(str(tmp), {"strings_to_formulas": False, "strings_to_urls": False,
                                            "strings_to_numbers": False, "constant_memory": True})
        try:
            bold = wb.add_format(HEADER_FORMAT)
            for name, rows in kept.items():
                ws = wb.add_worksheet(names[name])
                cols = _columns(rows)
                for col, width in enumerate(column_widths(cols, rows)):
                    ws.set_column(col, col, width)
                ws.freeze_panes(1, 1)
                ws.autofilter(0, 0, len(rows), len(cols) - 1)
                for col, key in enumerate(cols):
                    ws.write_string(0, col, key, bold)
                sample = rows if isinstance(rows, list) else list(islice(rows, WIDTH_SAMPLE_ROWS))
                formats = [wb.add_format({"num_format": f}) if (f := number_format(c, (r.get(c) for r in sample)))
                           else None for c in cols]
                for i, r in enumerate(rows, start=1):
                    _write_row(ws, i, [r.get(c) for c in cols], formats)
            ws = wb.add_worksheet(names["metadata"])
            meta = flatten(metadata) + [("tables without rows (no sheet)", ", ".join(omitted) or "(none)")]
            ws.set_column(0, 0, min(MAX_WIDTH, max(len(k) for k, _ in meta) + 2))
            ws.set_column(1, 1, MAX_WIDTH)
            ws.freeze_panes(1, 0)
            ws.write_string(0, 0, "key", bold)
            ws.write_string(0, 1, "value", bold)
            for i, (k, v) in enumerate(meta, start=1):
                _write_row(ws, i, [k, v])
        finally:
            wb.close()
    return path


def write_csvs(folder: Path, sheets: dict[str, Collection[dict[str, Any]]]) -> dict[str, Path]:
    """``folder/<table>.csv`` per table with rows (header from the union of the rows' keys), and ``index.csv``.

    A table without rows gets no file (a file holding only a newline is no table pandas can read; a
    previous run's file of that name is removed); ``index.csv`` lists every table with its row count and
    file, the empty ones with none.
    """
    folder.mkdir(exist_ok=True)
    out = {}
    index = []
    for name, rows in sheets.items():
        path = folder / f"{_BAD_SHEET_CHARS.sub('_', name)}.csv"
        if not len(rows):
            path.unlink(missing_ok=True)
            index.append({"table": name, "rows": 0, "file": ""})
            continue
        cols = _columns(rows)
        n = 0
        with atomic_open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow([csv_cell(c) for c in cols])
            for r in rows:
                w.writerow([csv_cell(r.get(c)) for c in cols])
                n += 1
        out[name] = path
        index.append({"table": name, "rows": n, "file": path.name})
    with atomic_open(folder / "index.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["table", "rows", "file"])
        for r in index:
            w.writerow([csv_cell(r[k]) for k in ("table", "rows", "file")])
    return out
