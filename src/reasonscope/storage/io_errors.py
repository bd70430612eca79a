"""What the command line says when the run directory cannot be read or written.

A full disk, a read-only folder, a damaged store. One sentence naming the file and what to do, and an exit
code, never a traceback.

Exit codes (:mod:`reasonscope.pipeline.run_outcome` has the others):

====  ==========================================================================================
2     the store is not a reasonscope store (truncated, overwritten, a folder in its place): an
      invalid input, as a bad plan or dataset is
74    a file of the run directory could not be written or read (``EX_IOERR``): the disk or quota is
      full, the folder is read-only or not writable by this user, an I/O error
====  ==========================================================================================

:func:`explain` reads both :class:`sqlite3.DatabaseError` (its SQLite result code: ``SQLITE_FULL``,
``SQLITE_READONLY``, ``SQLITE_CANTOPEN``, ``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, ``SQLITE_IOERR``; else its
message) and :class:`OSError` (its ``errno``). Anything else is not a storage error (None).
"""

from __future__ import annotations

import errno
import sqlite3
from dataclasses import dataclass
from pathlib import Path

IO_EXIT = 74  # EX_IOERR
INVALID_EXIT = 2

_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG}
_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
_SQLITE_FULL, _SQLITE_READONLY, _SQLITE_CANTOPEN, _SQLITE_CORRUPT, _SQLITE_NOTADB, _SQLITE_IOERR, _SQLITE_PERM = \
    13, 8, 14, 11, 26, 10, 3


@dataclass(frozen=True)
class StorageProblem:
    """A storage error explained: its ``kind``, the message for the user, and the exit code.

    ``kind`` is one of full, read-only, corrupt, io.
    """

    kind: str
    message: str
    code: int


def _kind(err: BaseException) -> str | None:
    if isinstance(err, sqlite3.DatabaseError):
        code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF
        text = str(err).lower()
        if code == _SQLITE_FULL or "disk is full" in text or "disk full" in text:
            return "full"
        if code in (_SQLITE_READONLY, _SQLITE_PERM) or "readonly" in text or "read-only" in text:
            return "read-only"
        if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in text or "not a database" in text:
            return "corrupt"
        if code == _SQLITE_CANTOPEN or "unable to open" in text:
            return "cannot-open"
        if code == _SQLITE_IOERR or "disk i/o" in text:
            return "io"
        return "corrupt" if type(err) is sqlite3.DatabaseError else None
    if isinstance(err, OSError) and not isinstance(err, ConnectionError | TimeoutError):
        if err.errno in _FULL:
            return "full"
        if err.errno in _READ_ONLY:
            return "read-only"
        if err.errno in (errno.EIO, errno.EISDIR, errno.ENOTDIR):
            return "io"
    return None


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` is a full disk: SQLite's full-disk error, or an OSError with a disk-full errno."""
    return _kind(err) == "full"


def explain(err: BaseException, store: Path | None = None) -> StorageProblem | None:
    """The user's message for a storage error (module docstring).

    ``store``: the store file the command used (named when the error does not name a file). None when ``err``
    is not a storage error.
    """
    kind = _kind(err)
    if kind is None:
        return None
    where = getattr(err, "filename", None) or store or "the run directory"
    reason = getattr(err, "strerror", None) or str(err)
    if kind == "full":
        return StorageProblem(kind, f"{where}: no space left ({reason}). Free space on that disk (or raise the "
                              "quota), or move the run directory to another disk (output_dir), and run the same "
                              "command again: what the store holds is not requested again.", IO_EXIT)
    if kind == "read-only":
        return StorageProblem(kind, f"{where}: cannot write ({reason}): the folder or file is read-only or not "
                              "writable by this user. Make it writable, or write the run elsewhere "
                              "(--output-dir / experiment.output_dir); a copy of the run directory can be "
                              "reported there.", IO_EXIT)
    if kind == "cannot-open":
        if store is not None and Path(store).is_dir():
            return StorageProblem(kind, f"{store}: a folder, not a store file ({reason}). Move it away (it is not "
                                  "a reasonscope store) and run the plan again.", INVALID_EXIT)
        return StorageProblem(kind, f"{store or where}: cannot be opened ({reason}): the folder is not writable "
                              "by this user, or the path is not a file. Fix the folder's permissions, or write the "
                              "run elsewhere (--output-dir / experiment.output_dir).", IO_EXIT)
    if kind == "corrupt":
        name = Path(store) if store is not None else Path(str(where))
        return StorageProblem(kind, f"{name}: not a readable reasonscope store ({reason}): it is damaged (cut "
                              "short or overwritten). Restore it from a copy, or move it away "
                              f"(mv {name} {name}.damaged) and run the plan again, which sends every request "
                              "again.", INVALID_EXIT)
    return StorageProblem(kind, f"{where}: input/output error ({reason}); check the disk, then run the same "
                          "command again.", IO_EXIT)


def explain_chain(err: BaseException, store: Path | None = None) -> StorageProblem | None:
    """:func:`explain` of ``err`` or of the first storage error it was raised from or while handling."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        found = explain(e, store)
        if found is not None:
            return found
        e = e.__cause__ or e.__context__
    return None
