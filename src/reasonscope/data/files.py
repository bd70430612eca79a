"""Reading rows from dataset files.

JSONL, JSON, CSV/TSV (optionally gzipped), with the line of every row, size and depth limits, and the
file/line/field error messages of :mod:`reasonscope.data.loaders`.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from ..models.reported import MAX_COUNT as REPORTED_MAX_COUNT
from ..text.nesting import nesting_exceeds
from ..types import Item
from .paths import (  # noqa: F401  (their home is .paths, stdlib only; imported from here too)
    DatasetError,
    check_regular_file,
    describe_kind,
    file_digest,
    resolve_path,
)

T = TypeVar("T")
MAX_LINE_BYTES = 20 * 1024 * 1024
"""Longest line of a JSONL or CSV file (bytes); a longer JSONL line is a bad row, read past without being held."""
MAX_DECOMPRESSED_BYTES = 2 * 1024**3
"""Most bytes a ``.gz`` dataset may decompress to (a 1 MB file can hold 1 GiB of zeros)."""
MAX_DOCUMENT_BYTES = 1024**3
"""Largest ``.json`` document (read and parsed whole); ``.jsonl``, ``.csv`` and ``.tsv`` are streamed."""
MAX_INT_DIGITS = 4000
MAX_JSON_DEPTH = 100
MAX_COUNT = REPORTED_MAX_COUNT  # the one bound of counts (reasonscope.models.reported)


@dataclass
class BadRow:
    """A row skipped with ``skip_bad_rows``: its line (or row number), the field at fault and why."""
    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}{f', field {self.field!r}' if self.field else ''}: {self.message}"


@dataclass
class LoadResult:
    """The items read from a dataset file, the rows skipped as bad, and the file's name."""
    items: list[Item]
    bad_rows: list[BadRow] = field(default_factory=list)
    source: str = ""


class RowError(ValueError):
    """A row that cannot be converted: ``field`` names the field at fault (None: the row as a whole).

    The readers add the file and line (:func:`row_error_message`).
    """
    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field


# ----------------------------------------------------------------------------------------------
# Readers: yield (line number, row dict)


@contextlib.contextmanager
def open_input(path: Path) -> Iterator[IO[bytes]]:
    """A regular file opened for binary reading, decompressed on the fly when its name ends in ``.gz``.

    The file is opened without blocking and checked with ``fstat`` on the open descriptor (so a FIFO or
    device put in its place after :func:`check_regular_file` is refused too, never read). Reading more
    than :data:`MAX_DECOMPRESSED_BYTES` decompressed bytes raises :class:`DatasetError`.
    """
    check_regular_file(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as err:
        raise DatasetError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DatasetError(f"{path}: not a regular file ({describe_kind(st.st_mode)}); expected a dataset file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        raw = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with raw:
        if path.suffix.lower() == ".gz":
            with _Bounded(gzip.GzipFile(fileobj=raw, mode="rb"), path) as bounded, \
                    io.BufferedReader(bounded, 1 << 20) as fh:
                yield fh
        else:
            yield raw


class _Bounded(io.RawIOBase):
    """A bounded decompressing stream.

    A decompressing stream that stops with :class:`DatasetError` past :data:`MAX_DECOMPRESSED_BYTES` and turns
    a damaged archive into :class:`DatasetError`.
    """

    def __init__(self, inner: IO[bytes], path: Path):
        self.inner, self.path, self.count = inner, path, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self.inner.read(len(buffer))
        except (OSError, EOFError, zlib.error) as err:
            raise DatasetError(f"{self.path}: not a readable gzip file ({err})") from None
        self.count += len(data)
        if self.count > MAX_DECOMPRESSED_BYTES:
            raise DatasetError(f"{self.path}: decompresses to more than {MAX_DECOMPRESSED_BYTES:,} bytes; a "
                               "compressed dataset is read up to that size (split the file, or raise "
                               "reasonscope.data.files.MAX_DECOMPRESSED_BYTES)")
        buffer[: len(data)] = data
        return len(data)

    def __enter__(self) -> _Bounded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()


def _decode(path: Path, number: int, offset: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DatasetError(f"{path}:{number}: not valid UTF-8 (byte {offset + err.start}); re-encode the file as "
                           "UTF-8") from None


def iter_lines(path: Path) -> Iterator[tuple[int, str | None]]:
    r"""The file's lines, read as they are consumed.

    (1-based number, text with its ``\n`` and a ``\r`` before it removed), or (number, None) for a line longer
    than :data:`MAX_LINE_BYTES` bytes, whose bytes are skipped without being held. Lines split on ``\n`` only;
    a UTF-8 byte order mark at the start is dropped; a line that is not valid UTF-8 raises
    :class:`DatasetError` naming the file, line and byte. An empty file (or one of blank lines only) raises
    :class:`DatasetError`.
    """
    limit = MAX_LINE_BYTES
    seen_text = False
    with open_input(path) as fh:
        reader = fh
        number, offset = 0, 0
        while True:
            raw = reader.readline(limit + 2)
            if not raw:
                break
            number += 1
            start = offset
            offset += len(raw)
            ended = raw.endswith(b"\n")
            body = raw[:-1] if ended else raw
            if body.endswith(b"\r"):
                body = body[:-1]
            if number == 1 and body.startswith(b"\xef\xbb\xbf"):
                body = body[3:]
            if len(body) > limit:
                while not ended:  # the rest of the line, a bounded piece at a time
                    rest = reader.readline(1 << 20)
                    offset += len(rest)
                    ended = not rest or rest.endswith(b"\n")
                seen_text = True
                yield number, None
                continue
            text = _decode(path, number, start, body)
            if text.strip():
                seen_text = True
            yield number, text
    if not seen_text:
        raise DatasetError(f"{path}: the file is empty")


def first_line(path: Path) -> str:
    """The file's first line that is not blank ('' when there is none), read without the rest."""
    for _, text in iter_lines(path):
        if text is None or text.strip():
            return text or ""
    return ""


def read_document(path: Path) -> str:
    """A whole file as text.

    For a ``.json`` document, which is parsed whole: at most :data:`MAX_DOCUMENT_BYTES` bytes after
    decompression; the checks of :func:`iter_lines` apply.
    """
    with open_input(path) as fh:
        raw = fh.read(MAX_DOCUMENT_BYTES + 1)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise DatasetError(f"{path}: a .json file is read whole, and this one holds more than "
                           f"{MAX_DOCUMENT_BYTES:,} bytes; write it as .jsonl (one record per line), which is read "
                           "line by line")
    if not raw.strip():
        raise DatasetError(f"{path}: the file is empty")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DatasetError(f"{path}:{line}: not valid UTF-8 (byte {err.start}); re-encode the file as UTF-8") from None


def _open_text(path: Path) -> str:
    """The whole file as text (kept for callers that need it; readers stream with :func:`iter_lines`)."""
    return read_document(path)


def row_error_message(source: str, line: int, err: RowError) -> str:
    """``source:line: field 'name': message`` for a :class:`RowError` (no field part when it names none)."""
    return f"{source}:{line}: {f'field {err.field!r}: ' if err.field else ''}{err}"


def convert_rows(rows: Iterator[tuple[int, Any]], source: str, convert: Callable[[dict], T], *,
                 skip_bad_rows: bool = False, limit: int | None = None) -> tuple[list[tuple[int, T]], list[BadRow]]:
    """Apply ``convert`` to every record.

    A bad one raises :class:`DatasetError` (file, line, field) or, with ``skip_bad_rows``, is listed in the
    returned bad rows. Stops after ``limit`` records.
    """
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
    """One JSON document.

    Integers longer than :data:`MAX_INT_DIGITS` digits are kept as strings; anything it cannot read, or a
    value nested deeper than :data:`MAX_JSON_DEPTH`, raises :class:`RowError` with the reason, never a
    ``RecursionError``.
    """
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
    """The records of a JSONL file, streamed.

    (line number, parsed record or :class:`RowError`) for every line that is not blank, streamed
    (:func:`iter_lines`): memory holds one line at a time.
    """
    for n, line in iter_lines(path):
        if line is None:
            yield n, RowError(None, f"line longer than {_size(MAX_LINE_BYTES)}")
            continue
        if not line.strip():
            continue
        try:
            yield n, parse_json(line)
        except RowError as err:
            yield n, err


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n:,} bytes"


def read_json(path: Path) -> Iterator[tuple[int, Any]]:
    """(1-based index, record) for every record of a JSON document.

    The document is an array of records, or an object holding one under ``data``, ``items``, ``examples``
    or ``rows``; the limits of :func:`read_document` and :data:`MAX_JSON_DEPTH` apply.

    Raises:
        DatasetError: for invalid JSON (naming the line and column), a value nested too deep, or a
            document that holds no array of records.
    """
    text = read_document(path)
    too_deep = f"{path}: invalid JSON value: nested deeper than {MAX_JSON_DEPTH} levels"
    try:
        data = _JSON.decode(text)
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise DatasetError(too_deep) from None
    del text
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


def _csv_lines(path: Path) -> Iterator[str]:
    r"""The file's lines with their ``\n`` for :mod:`csv`.

    The :mod:`csv` reader joins the lines of a quoted field; a line longer than :data:`MAX_LINE_BYTES` raises
    :class:`DatasetError` naming it.
    """
    for n, line in iter_lines(path):
        if line is None:
            raise DatasetError(f"{path}:{n}: line longer than {_size(MAX_LINE_BYTES)}")
        yield line + "\n"


def read_csv(path: Path, *, delimiter: str = ",", header: bool | None = None,
             columns: list[str] | None = None) -> Iterator[tuple[int, Any]]:
    """The rows of a CSV file, streamed.

    (row number, record) for every CSV row that is not blank, streamed: row 1 is the header (when there is
    one), a row's number counts rows, not lines (a quoted field may hold newlines).
    """
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    reader = csv.reader(_csv_lines(path), delimiter=delimiter)
    rows = iter(reader)

    def next_row() -> list[str] | None:
        try:
            return next(rows, None)
        except csv.Error as err:
            raise DatasetError(f"{path}:{reader.line_num}: not valid CSV ({err})") from None

    if header is None:
        header = True
    first = next_row()
    if first is None:
        raise DatasetError(f"{path}: the file is empty")
    names = [c.strip() for c in first] if header else list(columns or [])
    idx = 1
    row: list[str] | None = first
    if header:
        row = next_row()
        idx = 2
    while row is not None:
        if row and any(c.strip() for c in row):
            if len(row) != len(names):
                yield idx, RowError(None, f"expected {len(names)} columns ({', '.join(names)}), got {len(row)}")
            else:
                yield idx, dict(zip(names, row, strict=True))
        row = next_row()
        idx += 1


def file_suffix(path: Path) -> str:
    """The suffix that names the file type, looking through a final ``.gz`` (``a.csv.gz`` -> ``.csv``)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def read_file(path: Path) -> Iterator[tuple[int, Any]]:
    """The records of a dataset file by its type (suffix), streamed except for ``.json`` documents."""
    check_regular_file(path)
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
