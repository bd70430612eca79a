"""Reusable model-based scorers.

NLI and similarity (BERTScore, embedding cosine), on torch or, for the NLI cross-encoder and BERTScore, on
ONNX Runtime (``runtime: onnx``); their settings (:mod:`.settings`) and the one resolver of their runtime
(:mod:`.runtime_choice`). Public names are re-exported here, imported on first use.
"""

from .._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "NLIScorer": "base",
    "HFCrossEncoderNLI": "nli",
    "LLMJudgeNLI": "nli",
    "make_nli": "nli",
    "Similarity": "base",
    "BERTScoreF1": "similarity",
    "EmbeddingCosine": "similarity",
    "make_similarity": "similarity",
    "OnnxCrossEncoderNLI": "onnx_scorers",
    "OnnxBERTScoreF1": "onnx_scorers",
    "ConversionError": "onnx_export",
    "NLIConfig": "settings",
    "SimilarityConfig": "settings",
    "RuntimeChoice": "runtime_choice",
    "resolve_runtime": "runtime_choice",
})
