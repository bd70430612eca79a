"""reasonscope: measure the quality of a language model's reasoning, not only its answers.

The top-level API, imported on first use::

    from reasonscope import load_plan, Runner
    summary = Runner(load_plan("plan.yaml")).run()
"""

from importlib.metadata import PackageNotFoundError, version

from ._lazy import lazy_exports

try:
    __version__ = version("reasonscope")
except PackageNotFoundError:  # pragma: no cover  (running from a source tree that is not installed)
    __version__ = "0+unknown"

_all, __getattr__, __dir__ = lazy_exports(__name__, {
    "load_plan": "config",
    "parse_plan": "config",
    "Plan": "config",
    "PlanError": "config",
    "ScorePlan": "config",
    "Runner": "runner",
    "RunSummary": "runner",
    "score_file": "importer",
    "score_run": "scoring",
    "Store": "store",
    "Item": "types",
    "Generation": "types",
    "Score": "types",
    "extract_answer": "text.answers",
    "Family": "family",
    "get_family": "families",
    "all_families": "families",
})
__all__ = ["__version__", *_all]
