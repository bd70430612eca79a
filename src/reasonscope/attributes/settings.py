"""Settings of the attributes family (``families.attributes`` in a plan)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..scorers.settings import NLIConfig
from ..shared_settings import ModelConfig, Strict


class AutomaticAttributesConfig(Strict):
    """ROSCOE-style automatic metrics (see reasonscope.attributes.automatic)."""

    embedding: str | None = Field("embedded-minilm", description="Sentence-embedding model for faithfulness, "
                                  "informativeness and step repetition (HF id or path); null = off.")
    nli: NLIConfig = Field(default_factory=lambda: NLIConfig(backend="none"),
                           description="NLI backend for self- and source-consistency (none = not computed).")
    perplexity: str | None = Field(None, description="Causal LM spec for perplexity (e.g. smollm2, hf/<path>); "
                                   "null = off.")


class AttributesConfig(Strict):
    """Settings of the attributes family.

    Rationale attributes (*Rethinking Human Preference Evaluation of LLM Rationales*): twelve attributes by
    LLM judges, ROSCOE-style metrics, SHAP on human preferences, attribute-specific Elo.
    """

    judges: list[ModelConfig] = Field(default_factory=list, description="Judge models (any providers). Their "
                                      "temperature defaults to 0 and their seed is the experiment seed.")
    scale: Literal["0-1", "0-10"] = Field("0-1", description="Scale the judges answer on; normalised to 0-1.")
    scoring: Literal["sampled", "expected"] = Field(
        "sampled", description="How a judge's score is read: 'sampled' = the score it writes (JSON, "
        "constrained where the backend can); 'expected' = the probability-weighted score over the valid "
        "scores 0..10 from the judge's log-probabilities, one attribute per prompt (G-Eval; needs scale "
        "0-10 and a judge with log-probabilities: hf/..., smollm2, OpenAI-compatible).")
    attributes: list[str] | None = Field(None, description="Attributes to judge (default: all twelve).")
    show_reference: bool = Field(False, description="Show the gold answer to the judge as context (off by "
                                 "default, as in the publication's prompts; recorded with every score).")
    automatic: AutomaticAttributesConfig | None = Field(default_factory=AutomaticAttributesConfig)
    preferences: str | None = Field(None, description="Human pairwise preferences (MT-Bench human judgments, "
                                    "Chatbot Arena battles, or JSONL question/response_a/response_b/model_a/"
                                    "model_b/winner): explained with LightGBM + SHAP and judged pairwise.")
    pairwise: bool = Field(True, description="Also judge each preference pair in both orders.")
    margin: float = Field(0.0, ge=0, le=1, description="Scores whose difference is at most this margin (+1e-9) "
                          "tie in attribute battles; 0 = only equal scores tie, as in the publication.")
    rating_resamples: int = Field(100, ge=10, le=10_000, description="Bootstrap rounds of Bradley-Terry.")
    folds: int = Field(5, ge=2, le=20, description="Cross-validation folds of the preference classifier.")

    @field_validator("attributes")
    @classmethod
    def _known_attributes(cls, value: list[str] | None) -> list[str] | None:
        from ..judge.attributes import ATTRIBUTES

        if value is not None:
            unknown = [a for a in value if a not in ATTRIBUTES]
            if unknown or not value:
                raise ValueError(f"unknown attributes {unknown}; expected names from {sorted(ATTRIBUTES)}")
        return value

    @model_validator(mode="after")
    def _expected_needs_whole_scores(self) -> AttributesConfig:
        if self.scoring == "expected" and self.scale != "0-10":
            raise ValueError("scoring: expected reads the probabilities of the whole-number scores 0..10: "
                             "set scale: 0-10 (scores are normalised to 0-1 as always)")
        return self

    @field_validator("judges")
    @classmethod
    def _judge_defaults(cls, value: list[ModelConfig]) -> list[ModelConfig]:
        out = []
        for m in value:
            fields = m.model_fields_set
            out.append(m.model_copy(update={k: v for k, v in (("temperature", 0.0), ("max_tokens", 600))
                                            if k not in fields}))
        names = [m.display_name for m in out]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"judge names must be unique; repeated: {dupes}")
        return out

    @property
    def names(self) -> list[str]:
        """The attributes to judge: the configured ones, else all twelve."""
        from ..judge.attributes import ATTRIBUTES

        return list(self.attributes or ATTRIBUTES)
