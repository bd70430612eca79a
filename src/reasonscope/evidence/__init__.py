"""The evidence family, RACE: do rationales cite the evidence a TF-IDF classifier relies on? Public names are re-exported here, imported on first use."""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "EvidenceConfig": "settings",
    "ScoreEvidenceConfig": "settings",
    "run_evidence": "scoring",
    "Prediction": "scoring",
    "parse_prediction": "scoring",
    "score_evidence": "stored",
    "FAMILY": "entry",
    "REPORT": "report_view",
    "EvidenceReport": "report_view",
    "EVIDENCE": "catalogue",
    "EvidenceSummary": "summary_model",
    "EvidenceInstance": "summary_model",
    "exact_match": "matchers",
    "token_match": "matchers",
    "edit_match": "matchers",
    "edit_chars_match": "matchers",
})
