"""The user cache folder of converted models (SmolLM2 in safetensors, scoring models in ONNX).

``platformdirs.user_cache_dir("reasonscope")``; ``REASONSCOPE_CACHE_DIR`` overrides it. Scores are not
kept here: they live in each run folder's store (the score cache).

A conversion is named after what it converts (its source's digest, or the hash of the source folder's files), so a
changed source is converted anew instead of being served from the old conversion. :func:`file_sha256` digests a
source file once per version of it (:func:`file_version`: the digest with the file's stat fields, so that a
conversion can tell whether its source changed while it was read, :func:`same_version`); :func:`publish_folder`
puts a conversion written in a temporary folder in place.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from .digests import sha256_file

DIGESTS_FILE = "digests.json"
"""The cache file of :func:`file_sha256`: a file's path -> its stat fields and sha256."""
_digests: dict[str, tuple[list[int], str]] = {}
SETTLED_NS = 2_000_000_000
"""A file changed less than this before it is read is not remembered (:func:`file_sha256`): a file system's
clock moves in ticks (a few milliseconds on Linux, up to 2 s on some), and a file rewritten in place within the
tick it was digested in keeps its size and times; git's index treats such "racily clean" entries alike."""


def cache_root() -> Path:
    """The reasonscope cache folder: ``$REASONSCOPE_CACHE_DIR`` when set, else the user cache directory."""
    env = os.environ.get("REASONSCOPE_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("reasonscope"))


def _stat_fields(path: Path) -> list[int]:
    """What changes when a file is replaced or rewritten: size, modification and change times, device, inode."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino]


class FileVersion(NamedTuple):
    """A version of a file: its stat fields (size, modification and change times, device, inode) and its sha256."""

    stat: list[int]
    sha256: str


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of the file at ``path``, computed once per version of the file (:func:`file_version`).

    Raises:
        FileNotFoundError: When ``path`` does not exist.
    """
    return file_version(path).sha256


def file_version(path: str | Path) -> FileVersion:
    """The stat fields of the file at ``path`` and its sha256, the digest computed once per version of the file.

    The digest is remembered in this process and in the cache folder's :data:`DIGESTS_FILE` together with the
    file's size, modification and change times (nanoseconds), device and inode; while all of them are the same,
    the remembered digest is returned without reading the file (hashing the embedded model's 98 MB GGUF file
    takes about 0.1 s from the page cache, reading a remembered digest 0.2 ms). A rewritten or replaced file
    changes its change time at least, so it is digested again; a file changed less than :data:`SETTLED_NS`
    before it was read is not remembered (a rewrite within the same clock tick keeps every field). The cache file
    is replaced atomically; an unreadable one is ignored. The stat fields returned are those taken before the
    file was read: a file that changed while it was read no longer has them (:func:`same_version` tells).

    Raises:
        FileNotFoundError: When ``path`` does not exist.
    """
    from .atomic_files import write_text

    path = Path(path).resolve()
    stat = _stat_fields(path)
    known = _digests.get(str(path))
    if known is not None and known[0] == stat:
        return FileVersion(stat, known[1])
    store = cache_root() / DIGESTS_FILE
    try:
        table = json.loads(store.read_text())
        entry = table.get(str(path)) if isinstance(table, dict) else None
    except (OSError, ValueError):
        table, entry = {}, None
    if isinstance(entry, dict) and entry.get("stat") == stat and isinstance(entry.get("sha256"), str):
        digest = entry["sha256"]
    else:
        started = time.time_ns()
        digest = sha256_file(path)
        if _stat_fields(path) != stat or started - max(stat[1], stat[2]) < SETTLED_NS:  # changed, or may change unseen
            return FileVersion(stat, digest)
        table = table if isinstance(table, dict) else {}
        table[str(path)] = {"stat": stat, "sha256": digest}
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
            write_text(store, json.dumps(table, indent=1, sort_keys=True))
        except OSError:  # a read-only cache folder: the digest is remembered in this process only
            pass
    _digests[str(path)] = (stat, digest)
    return FileVersion(stat, digest)


def same_version(path: str | Path, version: FileVersion) -> bool:
    """Whether the file at ``path`` is still ``version``: the same stat fields and, read again, the same sha256.

    What a conversion named after its source's digest asks once it has read the source, before it is put in
    place: a source replaced or rewritten meanwhile has other stat fields (or, rewritten within the clock tick
    of its last change, other bytes), and the conversion may hold other bytes than those its name says. Reading
    again takes about 0.1 s for the embedded model's GGUF file, against 10 to 25 s for its conversions.
    """
    try:
        return _stat_fields(Path(path).resolve()) == version.stat and sha256_file(path) == version.sha256
    except OSError:  # gone
        return False


def publish_folder(tmp: Path, target: Path, complete: Callable[[Path], bool]) -> Path:
    """Rename the folder ``tmp`` (a finished conversion) to ``target``; returns ``target``.

    When another process put its conversion of the same source there first (``complete(target)``), that one
    is kept and ``tmp`` is removed: both processes end with the same complete folder. A folder is never
    renamed over another (``os.replace`` refuses a non-empty one), so a reader never sees a mix of two.
    """
    if complete(target):
        shutil.rmtree(tmp, ignore_errors=True)
        return target
    try:
        tmp.replace(target)
    except OSError:
        if not complete(target):  # not a conversion that won the race: a real error
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    return target
