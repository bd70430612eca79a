"""Settings models every layer shares: models, datasets, statistics.

These are the pieces of the YAML plan that shared layers (providers, loaders, the report) read; they live
here, outside :mod:`reasonscope.plan`, so that a shared layer never imports a family (:mod:`reasonscope.plan`
assembles the families' settings). Each family's own settings live in ``<family>/settings.py``; the NLI and
similarity scorers' settings next to those scorers, in :mod:`reasonscope.scorers.settings` (their old names
here, ``NLIConfig`` and ``SimilarityConfig``, work with a :class:`DeprecationWarning` until the next release).
Every model refuses unknown keys (:class:`Strict`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._lazy import moved_name
from .types import AnswerType


class Strict(BaseModel):
    """Base of every plan section: unknown keys are refused and assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(Strict):
    """One model of a plan: provider spec, display name, endpoint, sampling settings and limits."""

    spec: str = Field(..., min_length=1, description="Provider spec: openai/<model>, anthropic/<model>, "
                      "hf/<id-or-path>, smollm2, mock/<kind>.")
    name: str | None = Field(None, description="Display name (defaults to the spec).")
    base_url: str | None = Field(None, description="OpenAI-compatible server URL (vLLM, Ollama, ...).")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key.")
    revision: str | None = None
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    max_tokens: int = Field(256, gt=0, le=1_000_000, description="Max new tokens; also the ES budget.")
    concurrency: int = Field(8, ge=1, le=4096, description="Requests in flight at once for this model.")
    batch_size: int | None = Field(None, ge=1, description="Requests per call for local (batched) backends.")
    max_retries: int = Field(8, ge=0, le=100, description="Retries of a request after a transient error (429, "
                             "408, 5xx, timeout, dropped connection, malformed response); see also retry_max_s.")
    retry_max_s: float = Field(120.0, gt=0, le=86_400, description="Stop retrying a request once this many seconds "
                               "have passed since its first attempt (or the next wait would pass them); the request "
                               "then stays pending and is sent again on the next run.")
    retry_after_cap_s: float = Field(60.0, ge=0, le=3600, description="Longest server-requested wait (Retry-After, "
                                     "retry-after-ms) that is honoured; a server asking for longer ends the retries "
                                     "at once (the request stays pending).")
    rpm: float | None = Field(None, gt=0, description="Requests per minute sent to this model (evenly spaced, "
                              "retries included); null = no limit besides concurrency.")
    tpm: float | None = Field(None, gt=0, description="Tokens per minute (prompt tokens estimated as characters / 4 "
                              "before sending, completion tokens as the provider reports them); null = no limit.")
    timeout_s: float = Field(60.0, gt=0, description="Deadline of one HTTP request (one attempt), in seconds: it bounds the whole "
                             "request, connection to last byte, not each read.")
    system_prompt: str | None = None
    structured: bool = Field(True, description="Honour the answer form a judge, evidence or baseline request asks "
                             "for (JSON schema, choice, regex) natively: constrained decoding on local models, "
                             "response_format / a forced tool on APIs. false = prompt only (the form is only asked "
                             "for in words); either way the choice is in the cache key and recorded per completion.")
    options: dict[str, Any] = Field(default_factory=dict, description="Provider-specific options.")
    runtime: Literal["auto", "torch", "llama-cpp"] = Field(
        "auto", description="Where the embedded model (smollm2) runs its generation and label log-probabilities: "
        "torch = transformers on the float32 weights dequantised from its Q4_1 GGUF file (the reference); llama-cpp = "
        "llama.cpp on a float32 copy of that file, the same weights (needs llama-cpp-python: pip install "
        "'reasonscope[fast]'; 1.2x-1.6x torch's generation speed, the same greedy texts up to float rounding (31 of 32 "
        "demo prompts) and label log-probabilities within 0.01 nats, cached apart from torch's); auto = llama-cpp when llama-cpp-python is installed, else "
        "torch (the reason logged once). Gradient work (the attack, integrated "
        "gradients, perplexity) always runs on torch. Other providers: auto or torch only.")

    @model_validator(mode="after")
    def _runtime_for_embedded(self) -> ModelConfig:
        if self.runtime == "llama-cpp" and self.spec.partition("/")[0] != "smollm2":
            raise ValueError(f"runtime llama-cpp is for the embedded model (spec smollm2) only, not {self.spec!r}")
        return self

    @property
    def display_name(self) -> str:
        """The model's name in outputs: ``name`` when set, else the spec."""
        return self.name or self.spec


class DatasetConfig(Strict):
    """One dataset of a plan: its name, format and where its rows come from (local file or Hugging Face)."""

    name: str = Field(..., min_length=1)
    format: Literal["synthetic", "topics", "word_problems", "jsonl", "json", "csv", "gsm8k", "strategyqa", "mmlu", "esnli", "ecqa",
                    "goemotions", "agnews", "imdb"]
    path: str | None = Field(None, description="Local file (or, for synthetic, unused).")
    hf_id: str | None = Field(None, description="Hugging Face dataset id, loaded with `datasets` when online.")
    hf_config: str | None = None
    split: str = "test"
    limit: int | None = Field(None, gt=0)
    mapping: dict[str, str] = Field(default_factory=dict, description="Item field -> column name.")
    answer_type: AnswerType | None = None
    size: int = Field(4, gt=0, le=10_000, description="Synthetic: items per kind; word_problems: items.")
    seed: int | None = None
    skip_bad_rows: bool = Field(False, description="Skip malformed rows (counted and listed) instead of failing.")

    @model_validator(mode="after")
    def _source(self) -> DatasetConfig:
        if self.format not in ("synthetic", "topics", "word_problems") and not (self.path or self.hf_id):
            raise ValueError(f"dataset {self.name!r} of format {self.format!r} needs `path` or `hf_id`")
        return self


class StatsConfig(Strict):
    """Intervals and tests of every table (see docs/statistics.md)."""

    failed_generations: Literal["exclude", "wrong"] = Field(
        "exclude", description="How generations that failed for good (refusals, empty replies, rejected requests) "
        "enter the metrics: exclude = left out of every metric (counted and shown next to each number); wrong = "
        "counted as wrong answers (CQ = 0, ES = 0, evidence accuracy). Pairwise metrics (CS, RS, SS) never compare "
        "a failed generation.")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="Confidence level of every interval.")
    n_resamples: int = Field(2000, ge=100, le=100_000, description="Bootstrap resamples of every interval.")
    method: Literal["auto", "percentile", "basic", "BCa"] = Field(
        "auto", description="Interval of a mean that is neither a share (0/1 values: always Clopper-Pearson) nor "
        "of equal values: auto = the quasi-binomial score interval within the values' range (Student t and "
        "bootstrap-t without one; coverage measured in docs/statistics.md); percentile, basic or BCa = that "
        "scipy bootstrap interval.")
    n_permutations: int = Field(9999, ge=99, le=1_000_000, description="Paired sign-flip tests: all 2^n sign "
                                "patterns when 2^n is at most this (and always for lattice data such as 0/1 "
                                "correctness), else this many random ones.")
    p_adjust: Literal["holm", "none"] = Field("holm", description="Multiple-comparison adjustment over the "
                                              "p-values of one table (model pairs x metrics; separations): Holm's "
                                              "step-down (family-wise error rate) or none. Both p and the "
                                              "adjusted p are reported, with the method and m.")


MOVED_TO_SCORERS = ("NLIConfig", "SimilarityConfig")
"""Names that moved to :mod:`reasonscope.scorers.settings`; still found here, with a warning, for one release."""


def __getattr__(name: str) -> Any:
    """``NLIConfig`` and ``SimilarityConfig`` from their new home, with a :class:`DeprecationWarning`."""
    if name in MOVED_TO_SCORERS:
        return moved_name(__name__, name, "reasonscope.scorers.settings", old="path")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
