"""Paired comparison of two runs: did the new model or prompt reason better or worse? A gate for CI.

``reasonscope compare BASE NEW`` on the command line; in Python, the package itself is callable::

    import reasonscope
    result = reasonscope.compare("runs/base", "runs/new", metrics=["CQ"])
    result.exit_code          # 0 no gating metric worse, 1 at least one worse, 2 cannot be compared

    from reasonscope.compare import compare_runs   # the same function
    result = compare_runs("runs/base", "runs/new", pairs={"old-name": "new-name"}, min_effect=0.02)

Both return a :class:`RunComparison` (:mod:`reasonscope.compare.model`, JSON Schema in
``docs/schemas/compare.schema.json``). The statistics and the gate are described in
:mod:`reasonscope.compare.core`; what is read, and how nothing is written into a run folder, in
:mod:`reasonscope.compare.source`; the renderings (terminal, Markdown, HTML) in
:mod:`reasonscope.compare.render` and :mod:`reasonscope.compare.html`.

The package module is an instance of :class:`CallableModule`, a :class:`types.ModuleType` whose call is
:func:`compare_runs`, so ``reasonscope.compare(base, new)`` works whether or not the package was imported
before.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "compare_runs": "core",
    "CompareError": "source",
    "RunComparison": "model",
    "MetricComparison": "model",
    "ItemChange": "model",
    "Mismatch": "model",
    "RunSide": "model",
    "SCHEMA_VERSION": "model",
    "json_schema": "model",
    "render_text": "render",
    "render_markdown": "render",
    "render_html": "html",
})


class CallableModule(types.ModuleType):
    """The ``reasonscope.compare`` package: a module that can be called like :func:`compare_runs`."""

    def __call__(self, base: str | Path, new: str | Path, **options: Any):
        """``reasonscope.compare(base, new, ...)``: :func:`reasonscope.compare.compare_runs` (same arguments)."""
        from .core import compare_runs

        return compare_runs(base, new, **options)


sys.modules[__name__].__class__ = CallableModule
