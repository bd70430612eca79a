"""The root of the command line: it only assembles. Core commands live one group per module
(:mod:`.run`, :mod:`.demo`, :mod:`.score`, :mod:`.report`, :mod:`.plan`, :mod:`.providers`,
:mod:`.cache`); each registered family (:mod:`reasonscope.families`) brings its own sub-app
(``<family>/cli.py``, through :meth:`reasonscope.family.Family.cli`).

A sub-app created with a name (``typer.Typer(name="information")``) becomes a command group
(``reasonscope information train``); an unnamed one contributes its commands at the top level
(``reasonscope run``, ``reasonscope attack``).
"""

from __future__ import annotations

import gc
from importlib import import_module

import typer

from ..families import all_families

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="reasonscope: measure the quality of a language model's reasoning, not only its answers.")

# Top-level commands and groups, in the order `reasonscope --help` lists them.
_CORE_BEFORE = ("run", "demo", "score")
_CORE_AFTER = ("report", "plan", "providers")


def mount(root: typer.Typer, sub: typer.Typer | None) -> None:
    """Add ``sub`` to ``root``: as a command group when it has a name, else command by command."""
    if sub is None:
        return
    if sub.info.name:
        root.add_typer(sub)
    else:
        root.registered_commands.extend(sub.registered_commands)


mount(app, import_module(".cache", __package__).app)
for _name in _CORE_BEFORE:
    mount(app, import_module(f".{_name}", __package__).app)
for _family in all_families():  # registry order
    mount(app, _family.cli())
for _name in _CORE_AFTER:
    mount(app, import_module(f".{_name}", __package__).app)


GC_THRESHOLDS = (50_000, 20, 10)
"""The cyclic collector's thresholds in a ``reasonscope`` process (Python's defaults: 700, 10, 10)."""


def tune_gc() -> None:
    """Set the cyclic garbage collector for a batch process, before any command runs.

    A run makes millions of short-lived objects (requests, completions, scores, rows) while the
    imported libraries hold millions of long-lived ones, which every full collection walks again.
    With Python's defaults the collector took 0.39 s of a 4.6 s run of the 900-item peer benchmark
    (``runtime: onnx``), and tearing the modules down at exit 0.27 s. So:

    * :func:`gc.freeze` moves what the command line imported into the permanent generation, which
      collections skip;
    * the first generation is collected after 50,000 net allocations instead of 700.

    Cyclic garbage is still collected, a little later; reference counting frees everything else at
    once, as before. Measured on that benchmark: collections 0.39 s to 0.04 s, wall time 4.65 s to
    4.15 s (docs/performance.md). Only the ``reasonscope`` process is tuned (:func:`main`): importing
    reasonscope as a library, or calling ``app`` in tests, leaves the collector as it is."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def main() -> None:  # pragma: no cover
    """The ``reasonscope`` command (console script and ``python -m reasonscope.cli``)."""
    tune_gc()
    try:
        app()
    finally:
        gc.freeze()  # the interpreter's teardown then skips walking what the command made
