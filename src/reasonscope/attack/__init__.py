"""The attack family, MATCHA: answer-preserving attacks on the chain of thought of white-box models. Public names are re-exported here, imported on first use."""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "AttackConfig": "settings",
    "score_attack": "scoring",
    "check_arithmetic": "arithmetic",
    "find_equations": "arithmetic",
    "FAMILY": "entry",
    "REPORT": "report_view",
    "AttackReport": "report_view",
    "ATTACK": "catalogue",
    "AttackSummary": "summary_model",
    "AttackItem": "summary_model",
})
