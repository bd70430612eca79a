"""Files that are either the old version or the complete new one, never a half-written mix.

Every output of a run (``summary.json``, ``samples.jsonl``, ``results.xlsx``, ``tables/*.csv``, the
PNG plots, ``report.html``, ``config.yaml``) is written to a temporary file in the same folder and
then renamed over the target with :func:`os.replace`, which POSIX and Windows make atomic within
one file system. A process killed while writing (``kill -9``, a power cut after the ``fsync``) leaves
the previous file in place plus, at worst, a hidden temporary file
``.<name>.<pid>-<random>.tmp``; :func:`remove_stale_temporaries` deletes those whose writer is gone.

* :func:`atomic_path`: a temporary path for writers that want a file name (XlsxWriter, matplotlib).
* :func:`atomic_open`: a file object, for writers that stream (JSONL, CSV).
* :func:`write_text`, :func:`write_bytes`: whole contents at once.
* :func:`replace_together`: inside this block the renames wait until the block ends and then happen
  one after the other, so a report's files are replaced as a set (a crash while the report is being
  written leaves the whole previous report, not a mix of two runs). :func:`read_staged` reads a file
  written in the block before it is in place.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")
_STAGED: ContextVar[dict[Path, Path] | None] = ContextVar("reasonscope_staged_files", default=None)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not possible on every platform (Windows); the rename is atomic anyway
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``.

    When the block ends without an exception, the file written there is flushed to disk and renamed onto
    ``path``. On an exception it is removed and ``path`` keeps its previous contents (or stays absent). Inside
    :func:`replace_together` the rename waits for the end of that block.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"{tmp}: the writer created no file")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    staged = _STAGED.get()
    if staged is None:
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    else:
        old = staged.pop(path, None)
        if old is not None:
            old.unlink(missing_ok=True)
        staged[path] = tmp


@contextlib.contextmanager
def replace_together() -> Iterator[None]:
    """Defer the renames of every :func:`atomic_path` in the block to its end (see module docstring).

    On an exception no file is replaced and the temporary files are removed.
    """
    staged: dict[Path, Path] = {}
    token = _STAGED.set(staged)
    try:
        yield
    except BaseException:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        raise
    finally:
        _STAGED.reset(token)
    for path, tmp in staged.items():
        os.replace(tmp, path)
    for folder in {path.parent for path in staged}:
        _fsync_dir(folder)


def read_staged(path: str | Path) -> bytes:
    """The bytes of ``path`` as written in the current :func:`replace_together` block (or on disk)."""
    staged = _STAGED.get() or {}
    return Path(staged.get(Path(path), path)).read_bytes()


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open(path, mode)`` whose result replaces ``path`` only once the block has completed.

    ``mode`` is ``"w"`` or ``"wb"``; text mode defaults to UTF-8 (pass ``newline=""`` for CSV).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files; mode {mode!r} is not 'w' or 'wb'")
    if mode == "w":
        kwargs.setdefault("encoding", "utf-8")
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_open`): readers see the old file or the new one.

    Returns:
        The path written, as a :class:`~pathlib.Path`.
    """
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_open`): readers see the old file or the new one.

    Returns:
        The path written, as a :class:`~pathlib.Path`.
    """
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def remove_stale_temporaries(folder: str | Path) -> list[Path]:
    """Delete the temporary files of :func:`atomic_path` in ``folder`` whose writing process is gone.

    Such a file was left by a writer killed between creating and renaming it. Files of live processes are
    kept.
    """
    from .processes import pid_alive

    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for p in folder.iterdir():
        m = _TEMP.match(p.name)
        if m and not pid_alive(int(m["pid"])):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed
