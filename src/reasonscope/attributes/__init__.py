"""The attributes family: rationale attributes, ROSCOE-style metrics, SHAP on preferences, attribute Elo.

Public names are re-exported here, imported on first use.
"""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "AttributesConfig": "settings",
    "AutomaticAttributesConfig": "settings",
    "score_attributes": "scoring",
    "rebuild_ratings": "scoring",
    "FAMILY": "entry",
    "REPORT": "report_view",
    "AttributesReport": "report_view",
    "ATTRIBUTES": "catalogue",
    "attribute_label": "catalogue",
    "AttributesSummary": "summary_model",
    "AttributesJudgement": "summary_model",
})
