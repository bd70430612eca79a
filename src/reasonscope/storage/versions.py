"""What computed a run: the versions recorded with every run record.

They are compared by the up-to-date check (:mod:`reasonscope.pipeline.up_to_date`).

* :func:`installed_versions`: each named distribution's installed version (the ``Version`` field of its
  core metadata, found by ``importlib.metadata``), None when it is not installed.
* :func:`source_digest`: a digest of reasonscope's own installed files. An editable install keeps its
  version number while its code changes; the digest does not.
* :func:`package_versions`: what a run records: Python, :data:`RECORDED` and the source digest.
"""

from __future__ import annotations

import hashlib
import os
import platform
from collections.abc import Iterable
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
"""The folder of the ``reasonscope`` package, whose files :func:`source_digest` hashes."""

RECORDED = ("reasonscope", "torch", "transformers", "tokenizers", "sentence-transformers", "bert-score",
            "onnxruntime", "accelerate", "openai", "anthropic", "llguidance", "numpy", "scipy", "scikit-learn",
            "sympy", "math-verify", "rapidfuzz", "pysbd", "nltk", "simplemma", "lemminflect", "pydantic",
            "captum", "shap", "lightgbm", "krippendorff")
"""Distributions whose version every run records: the providers' SDKs and every library that computes
or parses a number reasonscope reports (answer checking, step splitting, lemmas, scorers, statistics,
classifiers, attributions)."""


def installed_versions(names: Iterable[str]) -> dict[str, str | None]:
    """Each distribution's installed version, None when it is not installed.

    The value ``importlib.metadata.version`` gives, read from the ``Version`` field in the header of the
    distribution's core metadata (the lines before the first blank one) instead of parsing the whole file with
    the e-mail parser, which took 20 ms for :data:`RECORDED` against 3 ms (the long descriptions after the
    header are most of those files); a header without the field falls back to ``importlib.metadata``.
    ``importlib.metadata`` is imported here, not with the module: the re-run check
    (:mod:`reasonscope.pipeline.fast_rerun`) computes :func:`source_digest` without it.
    """
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in names:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            out[name] = None
            continue
        out[name] = _header_version(dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "") \
            or dist.version
    return out


def _header_version(text: str) -> str | None:
    """The ``Version`` field of a core-metadata header, as the e-mail parser gives it; None when absent.

    The header is RFC 822 style: ``Name: value`` lines up to the first blank line. Leading blanks are dropped,
    trailing ones kept. None when the header has no such field or folds it onto a continuation line (the
    caller then asks ``importlib.metadata``).
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            return None
        if line[:1] in (" ", "\t"):  # a continuation of the field before
            continue
        key, sep, value = line.partition(":")
        if sep and key.lower() == "version":
            folded = i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t")
            return None if folded else value.lstrip(" \t")
    return None


def source_digest(root: Path | None = None) -> str:
    """sha256 over the package's files, first 16 hex digits.

    Each file's path within the package (/-separated) and its bytes are hashed, in path order; ``__pycache__``
    folders aside. Linked folders are followed, each real folder once (a link back to an ancestor is not a
    loop). A package that is not a folder on disk (imported from a zip) gives the digest of no file: there
    only the version numbers tell two installs apart. ``root``: another folder (tests); by default
    :data:`PACKAGE_ROOT`, the whole package.
    """
    root = str(root or PACKAGE_ROOT)
    files: dict[str, str] = {}  # path within the package -> path on disk
    seen: set[tuple[int, int]] = set()
    for folder, subfolders, names in os.walk(root, followlinks=True):
        st = os.stat(folder)
        if (st.st_dev, st.st_ino) in seen:
            subfolders[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        inside = os.path.relpath(folder, root).replace(os.sep, "/")
        for name in names:
            files[name if inside == "." else f"{inside}/{name}"] = os.path.join(folder, name)
    digest = hashlib.sha256()
    for name in sorted(files):
        with open(files[name], "rb") as fh:
            digest.update(name.encode() + b"\0" + fh.read() + b"\0")
    return digest.hexdigest()[:16]


def package_versions() -> dict[str, str | None]:
    """The versions a run records.

    :data:`RECORDED` (None: not installed), ``python`` and ``reasonscope-source`` (:func:`source_digest`).
    """
    return {**installed_versions(RECORDED), "python": platform.python_version(),
            "reasonscope-source": source_digest()}
