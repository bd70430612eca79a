"""Settings of the evidence family, RACE (``families.evidence`` in a plan)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..shared_settings import DatasetConfig, Strict


class EvidenceConfig(Strict):
    """RACE settings (see reasonscope.evidence)."""

    train: DatasetConfig = Field(..., description="Labelled training split for the TF-IDF classifier.")
    test: DatasetConfig = Field(..., description="Test items the LLM labels and explains.")
    predictions: str | None = Field(None, description="JSONL of existing predictions: rows (id, label, rationale, "
                                    "optional model) or (id, output) with a raw model output; else the plan's "
                                    "models generate them.")
    k: int = Field(5, ge=1, le=1000, description="Top-k features per instance.")
    matchers: list[Literal["exact", "token", "edit", "edit_chars"]] = Field(
        default_factory=lambda: ["exact", "token", "edit", "edit_chars"], min_length=1,
        description="exact, token (lemmas), edit (normalised threshold delta), edit_chars (absolute threshold "
                    "delta_chars); all read the rationale through the classifier's token stream.")
    delta: float = Field(0.2, ge=0, le=1, description="Threshold of the edit matcher: normalised Levenshtein "
                         "distance (edits / length of the longer string).")
    delta_chars: int = Field(1, ge=0, le=50, description="Threshold of the edit_chars matcher: Levenshtein distance "
                             "in characters (the RACE paper's absolute threshold).")
    stop_words: Literal["function_words", "english", "none"] | list[str] = Field(
        "function_words", description="Words removed before the classifier forms n-grams (and from the stream the "
        "matchers read): function_words = scikit-learn's English list minus negations, number words and content "
        "words; english = scikit-learn's list; none; or a list of words.")
    text_fields: list[str] | None = Field(None, min_length=1, description="Fields holding the items' own text, "
                                          "each vectorised separately (metadata keys or input/choices/rationale); "
                                          "default: the fields the dataset format declares, else input.")
    target: Literal["predicted", "gold"] = Field("predicted", description="Class whose evidence is evaluated: "
                                                 "predicted (the LLM's label) or gold.")
    label_reading: Literal["sampled", "likelihood"] = Field(
        "sampled", description="How the LLM's label is read: 'sampled' = the label it writes; 'likelihood' = "
        "the class of highest log-likelihood after the same prompt (lm-eval's multiple-choice method; the "
        "rationale stays the written one; needs a model with log-probabilities: hf/..., smollm2, "
        "OpenAI-compatible).")
    min_df: int = Field(1, ge=1)
    max_features: int | None = Field(None, ge=1)
    C: float = Field(1.0, gt=0)
    sweep_k: list[int] = Field(default_factory=lambda: [3, 5, 10, 20])
    sweep_delta: list[float] = Field(default_factory=lambda: [0.0, 0.1, 0.2, 0.3, 0.4],
                                     description="Normalised thresholds swept with the edit matcher.")
    sweep_delta_chars: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5],
                                         description="Absolute thresholds (characters) swept with edit_chars.")
    n_permutations: int = Field(2000, ge=100, le=100_000)

    @field_validator("sweep_k")
    @classmethod
    def _positive_k(cls, v: list[int]) -> list[int]:
        if any(x < 1 for x in v):
            raise ValueError("sweep_k values must be >= 1")
        return v

    @field_validator("sweep_delta")
    @classmethod
    def _delta_range(cls, v: list[float]) -> list[float]:
        if any(not 0 <= x <= 1 for x in v):
            raise ValueError("sweep_delta values must lie in [0, 1]")
        return v

    @field_validator("sweep_delta_chars")
    @classmethod
    def _delta_chars_range(cls, v: list[int]) -> list[int]:
        if any(x < 0 for x in v):
            raise ValueError("sweep_delta_chars values must be >= 0")
        return v


class ScoreEvidenceConfig(EvidenceConfig):
    """Evidence settings for `reasonscope score`: the imported items are the test split."""

    test: DatasetConfig = Field(default_factory=lambda: DatasetConfig(name="imported", format="synthetic"),
                                description="Ignored: the imported items are the test split.")
