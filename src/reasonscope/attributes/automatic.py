"""The ROSCOE-style automatic metrics of a rationale, with their backends.

The attributes follow *Rethinking Human Preference Evaluation of LLM Rationales*.

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
from itertools import combinations
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
    """The models behind the automatic metrics; a metric whose backend is missing is listed as unavailable.

    Attributes:
        embed: Cached sentence-embedding scorer (faithfulness, informativeness, repetition_step), or None.
        nli: Cached NLI scorer (self_consistency, source_consistency), or None.
        ppl: Cached perplexity scorer (perplexity_chain), or None.
        descriptions: Backend name -> what it is (model, pooling), as recorded in ``summary.json``.
        unavailable: Metric -> why it is not computed.
    """

    embed: Any = None
    nli: Any = None
    ppl: Any = None
    descriptions: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # metric -> reason


def load_backends(cfg: AutomaticAttributesConfig, store=None) -> AutomaticBackends:
    """The backends of ``cfg`` behind the store's score cache (:mod:`reasonscope.scorers.cache`).

    Nothing is loaded here; each model loads on its first cache miss (:func:`prefetch`).
    """
    from ..scorers.cache import CachedPerplexity, ScoreCache
    from ..scorers.nli import cached_nli
    from ..scorers.similarity import cached_embedding

    cache = ScoreCache(store) if store is not None else None
    out = AutomaticBackends()
    embed_metrics = ("faithfulness", "informativeness", "repetition_step")
    if cfg.embedding:
        out.embed = cached_embedding(cfg.embedding, cache, label="attributes: embeddings")
    else:
        out.unavailable.update({m: "no embedding model configured (automatic.embedding: null)" for m in embed_metrics})
    nli, why = cached_nli(cfg.nli, cache, label="attributes: NLI")
    if cfg.nli.backend == "none":
        why = "no NLI backend configured (families.attributes.automatic.nli.backend: none)"
    if nli is None:
        out.unavailable.update({m: why or "no NLI backend" for m in ("self_consistency", "source_consistency")})
    else:
        out.nli = nli
    if cfg.perplexity:
        from ..models.registry import create_model

        try:
            model = create_model(cfg.perplexity)
            missing = model.missing_requirements()
            if missing or not hasattr(model, "token_logprobs"):
                raise RuntimeError(missing or f"{cfg.perplexity} exposes no token log-probabilities (use hf/ or smollm2)")
        except Exception as err:
            out.unavailable["perplexity_chain"] = f"perplexity model {cfg.perplexity} could not be loaded ({err})"
        else:
            def load(m=model):
                m.load()
                return m

            out.ppl = CachedPerplexity(kind="perplexity", model=cfg.perplexity, settings={"bos": True}, load=load,
                                       compute=lambda m, texts: [m.token_logprobs(t) for t in texts],
                                       description=f"causal-lm:{cfg.perplexity}", cache=cache, chunk=32,
                                       label="attributes: perplexity")
    else:
        out.unavailable["perplexity_chain"] = "no perplexity model configured (automatic.perplexity: null)"
    for name, backend in (("embedding", out.embed), ("nli", out.nli), ("perplexity", out.ppl)):
        if backend is not None:
            backend.keep = True  # per-rationale calls after prefetch read from memory
            out.descriptions[name] = backend.description
    return out


def prefetch(units: list[tuple[list[str], list[str]]], b: AutomaticBackends) -> None:
    """Score every input the rationales ``units`` (steps, source sentences) will ask for.

    Each backend gets one deduplicated, cached, batched request; a backend whose model fails to load
    becomes unavailable (the reason recorded for its metrics). Then the per-rationale calls of
    :func:`automatic_metrics` are memory reads.
    """
    from ..scorers.cache import ScorerUnavailable

    units = [(steps, source) for steps, source in units if steps]
    wanted = {
        "embed": lambda: b.embed.run([t for steps, source in units for t in (*steps, *source)]),
        "nli": lambda: b.nli.run([[x, y] for steps, source in units
                                  for x, y in (*combinations(steps, 2), *((s, h) for s in source for h in steps))]),
        "ppl": lambda: b.ppl.run([" ".join(steps) for steps, _ in units]),
    }
    names = {"embed": "embedding", "nli": "nli", "ppl": "perplexity"}
    for attr, run in wanted.items():
        backend = getattr(b, attr)
        if backend is None:
            continue
        try:
            run()
        except ScorerUnavailable as err:
            setattr(b, attr, None)
            b.unavailable.update({m: str(err) for m, need in METRIC_BACKEND.items() if need == names[attr]})
            continue
        b.descriptions[names[attr]] = backend.description


def automatic_metrics(steps: list[str], source: list[str], b: AutomaticBackends) -> dict[str, float | None]:
    """Every available ROSCOE-style metric of one rationale (formulas: :mod:`reasonscope.attributes.roscoe`).

    Args:
        steps: The rationale's reasoning steps.
        source: The source sentences (the question split into sentences).
        b: The backends; a metric whose backend is None is left out of the result.

    Returns:
        Metric name -> value in [0, 1], higher is better; None where the metric is undefined (an empty
        chain, or no source sentence). ``repetition_word`` needs no model and is always present.
    """
    out: dict[str, float | None] = {"repetition_word": roscoe.repetition_word(steps)}
    if b.embed is not None:
        out["faithfulness"] = roscoe.faithfulness(steps, source, b.embed.embed)
        out["informativeness"] = roscoe.informativeness(steps, source, b.embed.embed)
        out["repetition_step"] = roscoe.repetition_step(steps, b.embed.embed)
    if b.nli is not None:
        out["self_consistency"] = roscoe.self_consistency(steps, b.nli.contradiction)
        out["source_consistency"] = roscoe.source_consistency(steps, source, b.nli.contradiction)
    if b.ppl is not None:
        out["perplexity_chain"] = roscoe.perplexity_chain(steps, b.ppl.token_logprobs)
    return out
