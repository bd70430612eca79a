"""The behavior family: CQ, CS, RS, LS, ES, SS and weighted strategies. Public names are re-exported here, imported on first use."""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "BehaviorConfig": "settings",
    "normalize_weights": "settings",
    "score_behavior": "scoring",
    "FAMILY": "entry",
    "REPORT": "report_view",
    "BehaviorReport": "report_view",
    "BEHAVIOR": "catalogue",
    "BEHAVIOR_METRICS": "catalogue",
    "BehaviorSummary": "summary_model",
    "all_strategies": "strategies",
    "composite": "strategies",
})
