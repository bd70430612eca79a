"""Which folders under the viewer's root are runs, and the one way a URL names one.

A run is a folder holding ``store.sqlite`` (:data:`reasonscope.storage.store.STORE_FILENAME`). The viewer walks
its root recursively (:func:`discover_runs`) and names each run by its path relative to the root, with
``/`` between folders (``"."`` for the root itself): the *run key* URLs carry.

Nothing outside the root is ever read:

* the walk follows no symbolic link to a folder, and skips a run whose folder or store resolves
  outside the root (a store linked from elsewhere);
* a key from a URL (:func:`resolve_run`) is refused when it is absolute, holds ``..``, a backslash or
  a NUL, resolves outside the root, or is not one of the runs the walk found. The refusal is a
  :class:`RunNotFound` whose message says which rule it broke; the server answers 404 with it.

Hidden folders (a name starting with ``.``) are not walked.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from ..storage.store import STORE_FILENAME

__all__ = ["RunNotFound", "discover_runs", "inside", "resolve_run"]


class RunNotFound(LookupError):
    """A run key that names no run under the root (the message says why)."""


def inside(root: Path, path: Path) -> bool:
    """Whether ``path``, with every symbolic link resolved, is ``root`` or below it (``root`` resolved)."""
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def discover_runs(root: str | Path) -> dict[str, Path]:
    """Every run under ``root``: run key -> run folder, sorted by key.

    Symbolic links to folders are not followed; a run whose folder or ``store.sqlite`` resolves outside
    ``root`` is left out (module docstring).
    """
    base = Path(root).resolve()
    found: dict[str, Path] = {}
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(folder)
        if STORE_FILENAME in files and inside(base, here) and inside(base, here / STORE_FILENAME):
            found[here.relative_to(base).as_posix()] = here
    return dict(sorted(found.items()))


def resolve_run(root: Path, runs: dict[str, Path], key: str) -> Path:
    """The folder of the run ``key`` names under ``root`` (resolved), or :class:`RunNotFound` saying why.

    ``runs`` is :func:`discover_runs`'s answer; only its keys are accepted.
    """
    if not key or "\x00" in key or "\\" in key:
        raise RunNotFound(f"run {key!r}: not a run key (one relative path, '/' between folders)")
    pure = PurePosixPath(key)
    if pure.is_absolute() or key.startswith("/"):
        raise RunNotFound(f"run {key!r}: absolute paths are refused; name a run relative to the viewed folder")
    if ".." in pure.parts:
        raise RunNotFound(f"run {key!r}: '..' is refused; only runs inside the viewed folder are shown")
    folder = runs.get(key)
    if folder is None:
        raise RunNotFound(f"run {key!r}: no such run in the viewed folder")
    if not (inside(root, folder) and inside(root, folder / STORE_FILENAME)):
        raise RunNotFound(f"run {key!r}: its folder or store leads outside the viewed folder; refused")
    return folder
