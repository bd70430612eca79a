"""Settings of the behavior family (``families.behavior`` in a plan).

Also the validation of weighting strategies.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator

from ..scorers.settings import NLIConfig, SimilarityConfig
from ..shared_settings import Strict
from .catalogue import BEHAVIOR_METRICS

# The long metric names the behavioural framework's YAML uses, mapped to the short ones.
METRIC_ALIASES: dict[str, str] = {
    "cq": "CQ", "correctness": "CQ",
    "cs": "CS", "consistency": "CS",
    "rs": "RS", "robustness": "RS",
    "ls": "LS", "logical_coherence": "LS", "coherence": "LS",
    "es": "ES", "efficiency": "ES",
    "ss": "SS", "stability": "SS",
}


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
    """Settings of the behaviour family (``families.behavior`` in a plan).

    Read by :class:`~reasonscope.behavior.entry.BehaviorFamily` for generation (K samples, P paraphrases)
    and by :mod:`reasonscope.behavior.scoring` (scorers, strategies, numeric tolerance, ES reading).
    """

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
