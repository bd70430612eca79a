"""The sha256 of a file's bytes, with the standard library only.

One helper for every file reasonscope digests: the embedded model's GGUF file
(:func:`reasonscope.storage.user_cache.file_sha256`, which remembers it), a dataset file
(:func:`reasonscope.data.paths.file_digest`, regular files only) and the plan file, ``summary.json`` and
``config.yaml`` of the fast re-run check (:mod:`reasonscope.pipeline.fast_rerun`, which imports nothing
heavier than this before it answers).
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: str | Path) -> str:
    """The sha256 (hex) of the bytes of the file at ``path``, streamed by :func:`hashlib.file_digest`.

    Raises:
        OSError: When the file cannot be opened or read.
    """
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
