"""Where a plan's dataset files are read from, and what a dataset's items are made from: the standard library only.

:mod:`reasonscope.data.files` (the readers) and the fast re-run check (:mod:`reasonscope.pipeline.fast_rerun`,
which answers before pydantic is imported) both take these: how a plan's relative path is resolved
(:func:`resolve_path`), which files may be read (:func:`check_regular_file`), a file's digest
(:func:`file_digest`) and a dataset's source digest (:func:`source_digest`: a file's :func:`file_source`, or
:data:`GENERATED` for the built-in generated formats, :data:`GENERATED_FORMATS`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..storage.digests import sha256_file

GENERATED = "generated"
"""The source digest of a generated dataset: its items are a function of its settings and the seed (both in the
plan) and of reasonscope's code (in the versions)."""
GENERATED_FORMATS = ("synthetic", "topics", "word_problems")
"""The dataset formats whose items are generated, not read (:mod:`reasonscope.data.loaders`)."""
DATASET_FILE = "a dataset file (.jsonl, .json, .csv or .tsv, optionally .gz)"


class DatasetError(ValueError):
    """A dataset file that cannot be read; the message names file, line and field."""


def resolve_path(path: str | Path, base_dir: str | Path | None) -> Path:
    """A plan's file path as read.

    A relative path that does not exist from the working directory is taken from ``base_dir`` (the plan's
    folder), when given.
    """
    path = Path(path)
    if base_dir is not None and not path.is_absolute() and not path.exists():
        return Path(base_dir) / path
    return path


def describe_kind(mode: int) -> str:
    """What a file system entry is, from its ``st_mode``: ``a directory``, ``a FIFO``, ... ."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular_file(path: str | Path, expected: str = DATASET_FILE) -> os.stat_result:
    """The ``stat`` of ``path`` when it is a regular file.

    Symbolic links are followed; anything else raises :class:`DatasetError` naming the path, what it is and
    ``expected``. Reading a FIFO would block until a writer comes, and a device such as ``/dev/zero`` never
    ends: neither is opened.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except OSError as err:
        raise DatasetError(f"{path}: cannot read ({err.strerror or err})") from None
    if not stat.S_ISREG(st.st_mode):
        raise DatasetError(f"{path}: not a regular file ({describe_kind(st.st_mode)}); expected {expected}")
    return st


def file_digest(path: str | Path) -> str:
    """sha256 (hex) of a regular file's bytes.

    Streamed (:func:`reasonscope.storage.digests.sha256_file`); :class:`DatasetError` for anything else
    (:func:`check_regular_file`).
    """
    check_regular_file(path)
    return sha256_file(path)


def file_source(path: str | Path, base_dir: str | Path | None) -> str | None:
    """The source digest of a dataset read from the file at ``path``: the first 16 hex digits of its sha256.

    The path resolved by :func:`resolve_path`; None when it cannot be read as a regular file.
    """
    try:
        return file_digest(resolve_path(path, base_dir))[:16]
    except (OSError, DatasetError):
        return None


def source_digest(fmt: str, path: str | Path | None, base_dir: str | Path | None) -> str | None:
    """What the items of a dataset of format ``fmt`` read from ``path`` are made from, without reading a row.

    :data:`GENERATED` for a generated format, else :func:`file_source` of its file; None when it has no path
    (a Hub dataset) or its file cannot be read as a regular file.
    """
    if fmt in GENERATED_FORMATS:
        return GENERATED
    return file_source(path, base_dir) if path else None
