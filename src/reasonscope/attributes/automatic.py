"""The ROSCOE-style automatic metrics of a rationale, with their backends (*Rethinking Human Preference
Evaluation of LLM Rationales*).

Formulas: :mod:`reasonscope.attributes.roscoe`. Backends, each a setting and each recorded:

* sentence embeddings (faithfulness, informativeness, repetition_step): L2-normalised sentence vectors of
  ``automatic.embedding`` (default: the embedded all-MiniLM-L6-v2), pooled as the model's own
  sentence-transformers configuration says (:class:`reasonscope.scorers.similarity.EmbeddingCosine`);
* NLI (self_consistency, source_consistency): the :mod:`reasonscope.scorers.nli` backend of
  ``automatic.nli`` (default ``none``: "not computed", never a word heuristic);
* perplexity: a causal LM through the ``hf`` provider (``automatic.perplexity``, e.g. ``smollm2``).

repetition_word needs no model. Source sentences are the question split by the step splitter;
steps are the generation's steps (trace split on lines and sentences).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import roscoe
from .settings import AutomaticAttributesConfig

AUTOMATIC_METRICS = ("faithfulness", "informativeness", "repetition_step", "repetition_word", "self_consistency",
                     "source_consistency", "perplexity_chain")
# The backend each metric needs (a key of AutomaticBackends.descriptions; None: no model).
METRIC_BACKEND = {"faithfulness": "embedding", "informativeness": "embedding", "repetition_step": "embedding",
                  "repetition_word": None, "self_consistency": "nli", "source_consistency": "nli",
                  "perplexity_chain": "perplexity"}


@dataclass
class AutomaticBackends:
    embed: Any = None
    nli: Any = None
    ppl: Any = None
    descriptions: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # metric -> reason


def load_backends(cfg: AutomaticAttributesConfig) -> AutomaticBackends:
    from ..scorers.nli import make_nli

    out = AutomaticBackends()
    embed_metrics = ("faithfulness", "informativeness", "repetition_step")
    if cfg.embedding:
        try:
            from ..scorers.similarity import EmbeddingCosine

            sim = EmbeddingCosine(cfg.embedding)
            out.embed = lambda texts: sim.embed(list(texts)).numpy()
            out.descriptions["embedding"] = sim.description
        except Exception as err:  # missing package or weights
            out.unavailable.update({m: f"embedding model {cfg.embedding} could not be loaded "
                                       f"({type(err).__name__}: {err})" for m in embed_metrics})
    else:
        out.unavailable.update({m: "no embedding model configured (automatic.embedding: null)" for m in embed_metrics})
    nli, why = make_nli(cfg.nli)
    if cfg.nli.backend == "none":
        why = "no NLI backend configured (families.attributes.automatic.nli.backend: none)"
    if nli is None:
        out.unavailable.update({m: why or "no NLI backend" for m in ("self_consistency", "source_consistency")})
    else:
        out.nli = nli.contradiction
        out.descriptions["nli"] = nli.description
    if cfg.perplexity:
        from ..models.registry import create_model

        try:
            model = create_model(cfg.perplexity)
            missing = model.missing_requirements()
            if missing or not hasattr(model, "token_logprobs"):
                raise RuntimeError(missing or f"{cfg.perplexity} exposes no token log-probabilities (use hf/ or smollm2)")
            model.load()
            out.ppl = model.token_logprobs
            out.descriptions["perplexity"] = f"causal-lm:{cfg.perplexity}"
        except Exception as err:
            out.unavailable["perplexity_chain"] = f"perplexity model {cfg.perplexity} could not be loaded ({err})"
    else:
        out.unavailable["perplexity_chain"] = "no perplexity model configured (automatic.perplexity: null)"
    return out


def automatic_metrics(steps: list[str], source: list[str], b: AutomaticBackends) -> dict[str, float | None]:
    """Every available metric of one rationale; None where a metric is undefined (empty chain)."""
    out: dict[str, float | None] = {"repetition_word": roscoe.repetition_word(steps)}
    if b.embed is not None:
        out["faithfulness"] = roscoe.faithfulness(steps, source, b.embed)
        out["informativeness"] = roscoe.informativeness(steps, source, b.embed)
        out["repetition_step"] = roscoe.repetition_step(steps, b.embed)
    if b.nli is not None:
        out["self_consistency"] = roscoe.self_consistency(steps, b.nli)
        out["source_consistency"] = roscoe.source_consistency(steps, source, b.nli)
    if b.ppl is not None:
        out["perplexity_chain"] = roscoe.perplexity_chain(steps, b.ppl)
    return out
