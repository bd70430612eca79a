"""The run directory: its name, its place, and the lock that gives it one writer at a time.

Run names
---------
A run directory is ``OUTPUT_DIR/NAME``. ``NAME`` must be one ordinary path component, so that
nothing a run writes can land outside ``OUTPUT_DIR``: letters, digits, ``_``, ``.`` and ``-``,
at most 128 characters, and not ``.`` or ``..`` (which name the output folder itself or its
parent). :func:`check_run_name` is the only check; the plan's ``experiment.name`` validator calls it,
and every command builds a plan, so it holds for ``run``, ``score``, ``demo``, ``evidence``,
``attack``, ``attributes`` and ``information`` alike.

The lock
--------
Two processes working in one run directory would both send the requests the store does not hold
yet, paying for them twice. Every command that writes a run (``run``, ``score``, the family commands,
``attributes elo``, ``cache clear``) therefore holds :class:`RunDirLock`, an exclusive
:class:`filelock.FileLock` on ``RUN_DIR/.reasonscope.lock`` (``flock(2)`` on POSIX), for as long as it
works. A second writer stops at once with :class:`RunDirLocked`, whose message names the holder
(pid, host, command, start time, read from ``RUN_DIR/.reasonscope.lock.json``) and says how to wait
(``--wait-lock SECONDS``) or where else to go (another ``--name`` / ``output_dir``).

The operating system releases an ``flock`` when its process ends, however it ends (``kill -9``
included), so a crashed run never leaves a stale lock on a local file system: the next writer takes
the lock at once and overwrites the holder record. A writer that ends normally removes the lock file
(while it still holds it) and its holder record, so a finished run folder holds neither.

``report`` holds the lock too: it rewrites the outputs, and a report written while a run works would
put the previous finished run's outputs over the ones the run writes (or, after a run on a changed plan
is killed, beside that plan's ``config.yaml``). It stops at once with exit 75 naming the run, or waits
with ``--wait-lock``; the outputs it writes, ``config.yaml`` included, are those of one stored run
(:mod:`reasonscope.report.build`). ``cache ls`` only reads the store (SQLite's WAL gives it a consistent
snapshot while a writer works) and takes no lock.

Processes
---------
:func:`reasonscope.storage.processes.this_process` identifies the current process (pid, host, start time,
command) for the lock record and for the store's ``runs`` table; :func:`reasonscope.storage.processes.process_gone`
tells whether a recorded process has ended (on this host: its pid is not running, or runs a younger process; on another host it cannot
tell and answers False).
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .processes import ProcessInfo, process_gone, this_process
from .run_files import LOCK_FILENAME

RUN_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
OWNER_FILENAME = ".reasonscope.lock.json"


def check_run_name(name: str) -> str:
    """Return ``name`` if it is a safe run name, else raise ValueError saying why.

    A safe run name is one path component (see the module docstring).
    """
    if not isinstance(name, str) or not RUN_NAME_PATTERN.match(name):
        raise ValueError(f"run name {name!r} must be 1-128 characters from letters, digits, '_', '.' and '-' "
                         "(one folder name: no '/', '\\', spaces or absolute paths)")
    if name in (".", ".."):
        raise ValueError(f"run name {name!r} would name the output folder itself or its parent; "
                         "choose a folder name such as 'my-eval'")
    return name


def check_output_dir(path: str | Path, what: str = "output_dir") -> None:
    """Raise ValueError when no folder can be created at ``path``.

    That is when ``path`` or one of its parents exists and is not a directory, or is a symbolic link that
    leads nowhere: a dangling link (its target does not exist) or a loop of links. ``validate`` and ``run``
    both reach this check through the plan, so both refuse the same folders with the same words.
    """
    p = Path(path)
    for q in (p, *p.parents):
        where = what if q == p else f"{what}'s parent {q}"
        if q.is_symlink():
            try:
                q.stat()
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise ValueError(f"{where} is a symbolic link in a loop (it leads back to itself): {q} -> "
                                     f"{_link_target(q)} (replace the link or choose another {what})") from None
                if err.errno == errno.ENOENT:
                    raise ValueError(f"{where} is a dangling symbolic link (its target does not exist): {q} -> "
                                     f"{_link_target(q)} (create the target, remove the link or choose another "
                                     f"{what})") from None
                raise ValueError(f"{where} cannot be read: {q} ({err.strerror or err})") from None
        if q.exists() and not q.is_dir():
            raise ValueError(f"{where} exists and is not a directory: {q} (remove it or choose another {what})")


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def check_run_dir(output_dir: str | Path, name: str) -> None:
    """The checks of ``output_dir/name`` before anything is written (raises ValueError)."""
    check_run_name(name)
    check_output_dir(output_dir)
    check_output_dir(Path(output_dir) / name, "the run directory")


def make_run_dir(path: str | Path) -> Path:
    """Create a run directory (and its parents).

    An obstacle gives the same ValueError as the plan check, never an OSError traceback.
    """
    path = Path(path)
    check_output_dir(path, "the run directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"cannot create the run directory {path}: {err.strerror or err}") from None
    return path


# ------------------------------------------------------------------------------------------ processes


# ------------------------------------------------------------------------------------------ the lock


class RunDirLocked(RuntimeError):
    """Another process holds the run directory. The message is meant for the user as is."""


class RunDirLock:
    """Exclusive lock on a run directory, held by the process that writes it (see module docstring).

    ``wait``: seconds to wait for a holder to finish (0: fail at once; ``float('inf')``: forever).
    Use as a context manager; it creates the directory.
    """

    def __init__(self, run_dir: str | Path, *, wait: float = 0.0):
        self.run_dir = Path(run_dir)
        self.wait = wait
        self._lock: Any = None

    @property
    def owner_path(self) -> Path:
        """The file beside the lock naming the process that holds it."""
        return self.run_dir / OWNER_FILENAME

    def holder(self) -> ProcessInfo | None:
        """The process recorded as holding the lock (None when no record can be read)."""
        try:
            return ProcessInfo(**json.loads(self.owner_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None

    def acquire(self) -> RunDirLock:
        """Take the run directory's lock (creating the directory) and record this process as its holder.

        Waits up to ``wait`` seconds (``inf``: for ever).

        Raises:
            RunDirLocked: When another process still holds the lock after ``wait`` seconds (the message
                names it).
        """
        from filelock import FileLock, Timeout

        from .atomic_files import write_text

        make_run_dir(self.run_dir)
        lock = FileLock(str(self.run_dir / LOCK_FILENAME))
        try:
            lock.acquire(timeout=-1 if self.wait == float("inf") else max(0.0, self.wait), poll_interval=0.2)
        except Timeout:
            raise RunDirLocked(self._busy_message()) from None
        self._lock = lock
        try:
            write_text(self.owner_path, json.dumps(asdict(this_process())))
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        """Remove the holder record and release the lock; nothing when it is not held."""
        if self._lock is None:
            return
        try:
            self.owner_path.unlink(missing_ok=True)
            # Removed while still held, so a finished run keeps no empty lock file. A writer that was
            # waiting on the removed file finds it unlinked after its flock succeeds and takes the new
            # file instead (filelock >= 4 checks the link count), so two writers never both hold it.
            (self.run_dir / LOCK_FILENAME).unlink(missing_ok=True)
        finally:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> RunDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _busy_message(self) -> str:
        holder = self.holder()
        who = holder.describe() if holder else "a process that left no record"
        if holder and process_gone(holder.pid, holder.host, holder.started):
            who += " (that process has ended; a process it started still holds the lock)"
        waited = f" after waiting {self.wait:g} s" if self.wait else ""
        return (f"the run directory {self.run_dir} is in use{waited} by {who}. Two processes on one run directory "
                "would send the same model calls twice. Wait for it with --wait-lock SECONDS (e.g. --wait-lock inf), "
                "or write to another run directory (--name / --output-dir, or experiment.name / output_dir in the "
                "plan).")
