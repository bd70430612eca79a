"""reasonscope: measure the quality of a language model's reasoning, not only its answers.

The top-level API, imported on first use::

    from reasonscope import load_plan, Runner, compare
    summary = Runner(load_plan("plan.yaml")).run()
    result = compare("runs/base", "runs/new")   # paired comparison of two runs; result.exit_code gates
"""

from typing import Any

from ._lazy import lazy_exports
from ._moved import install as _install_moved

_install_moved(__name__)  # the old module paths (before the move into packages) keep working, with a warning

_all, _export, __dir__ = lazy_exports(__name__, {
    "load_plan": "plan",
    "parse_plan": "plan",
    "Plan": "plan",
    "PlanError": "plan",
    "ScorePlan": "plan",
    "Runner": "pipeline.runner",
    "RunSummary": "pipeline.runner",
    "score_file": "pipeline.score_imported",
    "score_run": "pipeline.family_scoring",
    "Store": "storage.store",
    "Item": "types",
    "Generation": "types",
    "Score": "types",
    "extract_answer": "text.answers",
    "Family": "family",
    "get_family": "registry",
    "all_families": "registry",
})
__all__ = ["__version__", "compare", *_all]


def __getattr__(name: str) -> Any:
    if name == "compare":  # the package, callable as compare_runs: reasonscope.compare(base, new)
        from importlib import import_module

        return import_module(".compare", __name__)
    if name == "__version__":  # read on first use: the ``reasonscope`` command tunes its collector first
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("reasonscope")
        except PackageNotFoundError:  # pragma: no cover  (a source tree that is not installed)
            value = "0+unknown"
        globals()["__version__"] = value
        return value
    return _export(name)
