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
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from ..atomic_files import atomic_open, atomic_path

MAX_CELL_CHARS = 32_000
CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")


def text_cell(v: Any) -> Any:
    """A value as it goes into a cell: numbers, booleans and None unchanged, dicts and lists as JSON,
    everything else as (possibly cut) text."""
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


def _write_row(ws: Any, row: int, values: list[Any]) -> None:
    for col, v in enumerate(values):
        v = text_cell(v)
        if v is None:
            continue
        if isinstance(v, bool):
            ws.write_boolean(row, col, v)
        elif isinstance(v, int | float):
            ws.write_number(row, col, v)
        else:
            ws.write_string(row, col, v)


def write_xlsx(path: Path, sheets: dict[str, Collection[dict[str, Any]]], metadata: dict[str, Any]) -> Path:
    """One worksheet per table (header row, then one row per dict), plus ``metadata`` (key, value)."""
    import xlsxwriter

    names = sheet_names([*sheets, "metadata"])
    with atomic_path(path) as tmp:
        wb = xlsxwriter.Workbook(str(tmp), {"strings_to_formulas": False, "strings_to_urls": False,
                                            "strings_to_numbers": False, "constant_memory": True})
        try:
            for name, rows in sheets.items():
                ws = wb.add_worksheet(names[name])
                if not rows:
                    _write_row(ws, 0, ["(no rows)"])
                    continue
                cols = _columns(rows)
                _write_row(ws, 0, cols)
                for i, r in enumerate(rows, start=1):
                    _write_row(ws, i, [r.get(c) for c in cols])
            ws = wb.add_worksheet(names["metadata"])
            for i, (k, v) in enumerate(metadata.items()):
                _write_row(ws, i, [k, v])
        finally:
            wb.close()
    return path


def write_csvs(folder: Path, sheets: dict[str, Collection[dict[str, Any]]]) -> dict[str, Path]:
    """``folder/<table>.csv`` per table (header from the union of the rows' keys)."""
    folder.mkdir(exist_ok=True)
    out = {}
    for name, rows in sheets.items():
        cols = _columns(rows)
        path = folder / f"{_BAD_SHEET_CHARS.sub('_', name)}.csv"
        with atomic_open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow([csv_cell(c) for c in cols])
            for r in rows:
                w.writerow([csv_cell(r.get(c)) for c in cols])
        out[name] = path
    return out
