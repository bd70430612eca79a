"""The information family: REV and LAREV. Public names are re-exported here, imported on first use."""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "InformationConfig": "settings",
    "run_information": "scoring",
    "FAMILY": "entry",
    "REPORT": "report_view",
    "InformationReport": "report_view",
    "INFORMATION": "catalogue",
    "InformationSummary": "summary_model",
})
