"""Settings of the attack family, MATCHA (``families.attack`` in a plan), and the attacker's.

The attacker's are the same search parameters with the run's seed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..shared_settings import DatasetConfig, ModelConfig, Strict
from ..types import AnswerType


class AttackSearch(Strict):
    """The search parameters of the attacks, declared once.

    The plan's ``families.attack`` holds them (:class:`AttackConfig`) and the attacker reads them with the
    run's seed (:class:`AttackSettings`).
    """

    ratio: float = Field(0.2, gt=0, le=1, description="Inserted tokens per question token (at least 1).")
    steps: int = Field(5, ge=0, le=100, description="Gradient-guided replacement rounds (token level).")
    top_k: int = Field(8, ge=1, le=1024, description="Candidate tokens per inserted position and round.")
    candidates: int = Field(16, ge=1, le=4096, description="Candidates evaluated by a forward pass per round.")
    lam: float | None = Field(None, ge=0, description="lambda of L_c - lambda * L_a (default |CoT| / |answer|).")
    epsilon_p: float = Field(0.005, gt=0, le=1, description="eps = p * max token-embedding L-inf norm.")
    embedding_steps: int = Field(5, ge=1, le=100)
    min_similarity: float | None = Field(0.8, ge=-1, le=1, description="Reject token candidates whose MiniLM "
                                         "cosine to the original question is lower (null = off).")
    answer_tokens: int = Field(16, ge=1, le=256)
    cot_tokens: int = Field(96, ge=4, le=2048, description="Max tokens of each regenerated chain of thought.")
    insert_draws: int = Field(20, ge=1, le=1000, description="Random insertions drawn per item until one survives "
                              "re-tokenisation and passes the meaning filter; when none does the token and random "
                              "attacks of the item are invalid (excluded from the rates, counted).")


class AttackSettings(AttackSearch):
    """What the attacker reads: the search parameters and the seed of its random draws.

    Its ``model_dump()`` is what attack cache keys, stored requests and the attack table record.
    """

    seed: int = 0


class AttackConfig(AttackSearch):
    """Settings of MATCHA: answer-preserving attacks on the chain of thought of white-box models.

    From *Misaligning Reasoning with Answers* (arXiv:2505.17406).
    """

    methods: list[Literal["token", "embedding", "random"]] = Field(
        default_factory=lambda: ["token", "embedding", "random"], min_length=1,
        description="Attacks to run: token (gradient-guided token insertions), embedding (a perturbation in the "
        "embedding ball) and/or random (random token insertions, the baseline).")
    similarity_model: str = Field("embedded-minilm", description="Embedding model of the meaning filter.")
    judge: ModelConfig | None = Field(None, description="Judge of the clean and the perturbed reasoning (any "
                                      "provider), also of the transfer chains; without one only false equations are "
                                      "detected and a kept answer with no false equation is 'not judged'.")
    reference_check: bool = Field(False, description="Also decide each chain against the known steps of its item, "
                                  "read from a gold rationale that states every step as a true equation (the seeded "
                                  "word problems): a number outside the known values, a true equation that is no step or an "
                                  "unstated step result makes the reasoning wrong, else it is correct (reasonscope.attack.reference). Only for "
                                  "items whose steps are the only way to the answer.")
    meaning_judge: bool = Field(False, description="Also ask the judge whether a perturbed question keeps its "
                                "meaning; a changed one makes the attack invalid (excluded from the rates, counted).")
    transfer: list[ModelConfig] = Field(default_factory=list, description="Models (any provider) that receive the "
                                        "successful perturbed questions.")
    answer_types: list[AnswerType] | None = Field(None, description="Only attack items of these answer types.")
    limit: int | None = Field(None, gt=0, description="Attack at most this many items per dataset.")
    dataset: DatasetConfig | None = Field(None, description="Attack the items of this dataset (e.g. format "
                                          "word_problems) instead of the plan's datasets.")

    def reasoning_check(self) -> str:
        """The reasoning check in words, as the attack and transfer tables record it."""
        parts = ["arithmetic"] + ["reference"] * self.reference_check + ["judge"] * (self.judge is not None)
        return " + ".join(parts) if len(parts) > 1 else "arithmetic only (no judge)"

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
