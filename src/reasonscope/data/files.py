"""Reading rows from dataset files: JSONL, JSON, CSV/TSV (optionally gzipped), with the line of every
row, size and depth limits, and the file/line/field error messages of :mod:`reasonscope.data.loaders`."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..text.nesting import nesting_exceeds
from ..types import Item

T = TypeVar("T")
MAX_LINE_BYTES = 20 * 1024 * 1024
MAX_INT_DIGITS = 4000
MAX_JSON_DEPTH = 100
MAX_COUNT = 2**31 - 1


class DatasetError(ValueError):
    """A dataset file that cannot be read; the message names file, line and field."""


@dataclass
class BadRow:
    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}{f', field {self.field!r}' if self.field else ''}: {self.message}"


@dataclass
class LoadResult:
    items: list[Item]
    bad_rows: list[BadRow] = field(default_factory=list)
    source: str = ""


class RowError(ValueError):
    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field


# ----------------------------------------------------------------------------------------------
# Readers: yield (line number, row dict)


def resolve_path(path: str | Path, base_dir: Path | None) -> Path:
    """A plan's file path as read: a relative path that does not exist from the working directory is taken
    from ``base_dir`` (the plan's folder), when given."""
    path = Path(path)
    if base_dir is not None and not path.is_absolute() and not path.exists():
        return base_dir / path
    return path


def _open_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    if path.suffix.lower() == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise DatasetError(f"{path}: not a readable gzip file ({err})") from None
    if not raw.strip():
        raise DatasetError(f"{path}: the file is empty")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DatasetError(f"{path}:{line}: not valid UTF-8 (byte {err.start}); re-encode the file as UTF-8") from None


def row_error_message(source: str, line: int, err: RowError) -> str:
    return f"{source}:{line}: {f'field {err.field!r}: ' if err.field else ''}{err}"


def convert_rows(rows: Iterator[tuple[int, Any]], source: str, convert: Callable[[dict], T], *,
                 skip_bad_rows: bool = False, limit: int | None = None) -> tuple[list[tuple[int, T]], list[BadRow]]:
    """Apply ``convert`` to every record; a bad one raises :class:`DatasetError` (file, line, field)
    or, with ``skip_bad_rows``, is listed in the returned bad rows. Stops after ``limit`` records."""
    out: list[tuple[int, T]] = []
    bad: list[BadRow] = []
    for line, row in rows:
        try:
            if isinstance(row, RowError):
                raise row
            if not isinstance(row, dict):
                raise RowError(None, f"expected an object, got {type(row).__name__}")
            out.append((line, convert(row)))
        except RowError as err:
            if not skip_bad_rows:
                raise DatasetError(row_error_message(source, line, err)) from None
            bad.append(BadRow(line, err.field, str(err)))
        if limit and len(out) >= limit:
            break
    return out, bad


def _json_int(digits: str) -> int | str:
    # Python refuses to convert integers of more than 4,300 digits (a ValueError inside the decoder): such a
    # number is kept as its digits, so a numeric field reports it with its name and nothing is lost elsewhere.
    return int(digits) if len(digits) <= MAX_INT_DIGITS else digits


_JSON = json.JSONDecoder(parse_int=_json_int)


def parse_json(text: str) -> Any:
    """One JSON document (integers longer than :data:`MAX_INT_DIGITS` digits kept as strings); anything it
    cannot read, or a value nested deeper than :data:`MAX_JSON_DEPTH`, raises :class:`RowError` with the
    reason, never a ``RecursionError``."""
    too_deep = f"invalid JSON value: nested deeper than {MAX_JSON_DEPTH} levels"
    try:
        value = _JSON.decode(text)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}" if err.lineno > 1 else f"column {err.colno}"
        raise RowError(None, f"invalid JSON ({err.msg} at {where}); truncated line?") from None
    except RecursionError:
        raise RowError(None, too_deep) from None
    if nesting_exceeds(value, MAX_JSON_DEPTH):
        raise RowError(None, too_deep)
    return value


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    text = _open_text(path)
    for n, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            yield n, RowError(None, f"line longer than {MAX_LINE_BYTES // 2**20} MiB")
            continue
        try:
            yield n, parse_json(line)
        except RowError as err:
            yield n, err


def read_json(path: Path) -> Iterator[tuple[int, Any]]:
    text = _open_text(path)
    too_deep = f"{path}: invalid JSON value: nested deeper than {MAX_JSON_DEPTH} levels"
    try:
        data = _JSON.decode(text)
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise DatasetError(too_deep) from None
    if nesting_exceeds(data, MAX_JSON_DEPTH + 1):  # + 1: the array that holds the records
        raise DatasetError(too_deep)
    if isinstance(data, dict):
        for key in ("data", "items", "examples", "rows"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of records (or {{'data': [...]}})")
    yield from enumerate(data, 1)


def read_csv(path: Path, *, delimiter: str = ",", header: bool | None = None,
             columns: list[str] | None = None) -> Iterator[tuple[int, Any]]:
    text = _open_text(path)
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        rows = list(reader)
    except csv.Error as err:
        raise DatasetError(f"{path}:{reader.line_num}: not valid CSV ({err})") from None
    if not rows:
        raise DatasetError(f"{path}: the file is empty")
    if header is None:
        header = True
    names = [c.strip() for c in rows[0]] if header else list(columns or [])
    start = 1 if header else 0
    for idx, row in enumerate(rows[start:], start + 1):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(names):
            yield idx, RowError(None, f"expected {len(names)} columns ({', '.join(names)}), got {len(row)}")
            continue
        yield idx, dict(zip(names, row, strict=True))


def file_suffix(path: Path) -> str:
    """The suffix that names the file type, looking through a final ``.gz`` (``a.csv.gz`` -> ``.csv``)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def read_file(path: Path) -> Iterator[tuple[int, Any]]:
    suffix = file_suffix(path)
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".json":
        return read_json(path)
    if suffix == ".tsv":
        return read_csv(path, delimiter="\t")
    if suffix == ".csv":
        return read_csv(path)
    raise DatasetError(f"{path}: unknown file type {suffix!r}; expected .jsonl, .json, .csv or .tsv (optionally .gz)")
