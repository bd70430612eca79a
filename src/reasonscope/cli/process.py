"""The ``reasonscope`` process: its entry point (:func:`main`) and its garbage-collector settings.

This module imports nothing of reasonscope, so :func:`main` sets the collector before the command line's
imports (pydantic's model classes, typer, rich) make their objects, and answers an up-to-date re-run before
them (:mod:`reasonscope.pipeline.fast_rerun`).
"""

from __future__ import annotations

import gc

GC_THRESHOLDS = (50_000, 20, 10)
"""The cyclic collector's thresholds in a ``reasonscope`` process (Python's defaults: 700, 10, 10)."""


def tune_gc() -> None:
    """Set the cyclic garbage collector for a batch process, before the command line is imported.

    A run makes millions of short-lived objects (requests, completions, scores, rows) while the
    imported libraries hold millions of long-lived ones, which every full collection walks again.
    With Python's defaults the collector took 0.39 s of a 4.6 s run of the 900-item peer benchmark
    (``runtime: onnx``), and tearing the modules down at exit 0.27 s. So:

    * the first generation is collected after 50,000 net allocations instead of 700, from the first
      import on (importing the command line with the defaults ran collections for about 10 ms);
    * :func:`main` then calls :func:`gc.freeze`, which moves what the command line imported into the
      permanent generation, which collections skip.

    Cyclic garbage is still collected, a little later; reference counting frees everything else at
    once, as before. Measured on that benchmark: collections 0.39 s to 0.04 s, wall time 4.65 s to
    4.15 s (docs/performance.md). Only the ``reasonscope`` process is tuned (:func:`main`): importing
    reasonscope as a library, or calling ``app`` in tests, leaves the collector as it is.
    """
    gc.set_threshold(*GC_THRESHOLDS)


def main() -> None:  # pragma: no cover
    """The ``reasonscope`` command (console script ``reasonscope.cli:main`` and ``python -m reasonscope.cli``).

    ``reasonscope run PLAN`` on a finished run that is up to date is answered before the command line is
    imported (:func:`reasonscope.pipeline.fast_rerun.answer`: the standard library, the store and a record
    written by the run); anything else, or any doubt, goes on to the command line at once.
    """
    tune_gc()
    import sys

    from ..pipeline import fast_rerun

    fast_rerun.startup_state()  # the environment before any import sets a variable
    if fast_rerun.answer(sys.argv[1:]):
        return
    from .root import app

    gc.freeze()
    try:
        app()
    finally:
        gc.freeze()  # the interpreter's teardown then skips walking what the command made
