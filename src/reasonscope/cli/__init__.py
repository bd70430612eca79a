"""The ``reasonscope`` command line (typer + rich).

Every family is reached through a plan (``reasonscope run``), and ``reasonscope score`` scores outputs the
user already has; families with commands of their own mount them here (``reasonscope evidence``, ``reasonscope
information train``).

``reasonscope.cli:main`` is the entry point (:mod:`.process`: it sets the garbage collector for a batch
process, then imports and runs ``app``); ``python -m reasonscope.cli`` runs it too. The root app is
built on first access (:mod:`.root`). A family's commands live here, ``cli/<family>.py``; the
families never import the command line. Exit codes and the run-directory lock: see :mod:`.common`.
"""

from __future__ import annotations

from typing import Any

from .process import main

__all__ = ["LOCKED_EXIT", "app", "fail", "main"]


def __getattr__(name: str) -> Any:
    # imported on first access, so the entry point (:func:`main`) tunes the collector before the imports
    if name == "app":
        from .root import app

        return app
    if name in ("LOCKED_EXIT", "fail"):
        from . import common

        return getattr(common, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
