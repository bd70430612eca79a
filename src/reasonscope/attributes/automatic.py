"""The ROSCOE-style automatic metrics of a rationale, with their backends.

The attributes follow *Rethinking Human Preference Evaluation of LLM Rationales*.

Formulas: :mod:`reasonscope.attributes.roscoe`. Backends, each a setting and each recorded:

* sentence embeddings (faithfulness, faithfulness_ww, informativeness, informativeness_chain,
  repetition_step): L2-normalised sentence vectors of ``automatic.embedding`` (default: the embedded
  all-MiniLM-L6-v2), pooled as the model's own sentence-transformers configuration says
  (:class:`reasonscope.scorers.similarity.EmbeddingCosine`);
* token embeddings (faithfulness_ww): the same encoder's contextual token vectors, L2-normalised, without
  [CLS] / [SEP] (:meth:`reasonscope.scorers.similarity.BERTScoreF1.vectors`, all layers), kept in memory
  for the run (not in the score cache);
* NLI (self_consistency, source_consistency): the :mod:`reasonscope.scorers.nli` backend of
  ``automatic.nli`` (default ``none``: "not computed", never a word heuristic);
* perplexity (perplexity_chain, perplexity_step, perplexity_step_max): a causal LM through the ``hf``
  provider (``automatic.perplexity``, e.g. ``smollm2``); the embedded model on its runtime (on llama.cpp its
  texts are decoded together, nothing of torch is loaded; its scores are cached apart from torch's).

repetition_word needs no model. Source sentences are the question split by the step splitter;
steps are the generation's steps (trace split on lines and sentences).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from . import roscoe
from .settings import AutomaticAttributesConfig

AUTOMATIC_METRICS = ("faithfulness", "faithfulness_ww", "informativeness", "informativeness_chain", "repetition_step",
                     "repetition_word", "self_consistency", "source_consistency", "perplexity_chain",
                     "perplexity_step", "perplexity_step_max")
# The backend each metric needs (a key of AutomaticBackends.descriptions; None: no model).
METRIC_BACKEND = {"faithfulness": "embedding", "faithfulness_ww": "tokens", "informativeness": "embedding",
                  "informativeness_chain": "embedding", "repetition_step": "embedding", "repetition_word": None,
                  "self_consistency": "nli", "source_consistency": "nli", "perplexity_chain": "perplexity",
                  "perplexity_step": "perplexity", "perplexity_step_max": "perplexity"}
EMBEDDING_METRICS = tuple(m for m, b in METRIC_BACKEND.items() if b in ("embedding", "tokens"))
PERPLEXITY_METRICS = tuple(m for m, b in METRIC_BACKEND.items() if b == "perplexity")


@dataclass
class AutomaticBackends:
    """The models behind the automatic metrics; a metric whose backend is missing is listed as unavailable.

    Attributes:
        embed: Cached sentence-embedding scorer (faithfulness, informativeness, repetition_step), or None.
        tokens: Token-vector scorer (faithfulness_ww, with ``embed``), or None.
        nli: Cached NLI scorer (self_consistency, source_consistency), or None.
        ppl: Cached perplexity scorer (perplexity_chain, perplexity_step, perplexity_step_max), or None.
        descriptions: Backend name -> what it is (model, pooling), as recorded in ``summary.json``.
        unavailable: Metric -> why it is not computed.
    """

    embed: Any = None
    tokens: Any = None
    nli: Any = None
    ppl: Any = None
    descriptions: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # metric -> reason


def load_backends(cfg: AutomaticAttributesConfig, store=None) -> AutomaticBackends:
    """The backends of ``cfg`` behind the store's score cache (:mod:`reasonscope.scorers.cache`).

    Nothing is loaded here; each model loads on its first cache miss (:func:`prefetch`).
    """
    from ..scorers.cache import CachedPerplexity, ScoreCache, runtime_settings
    from ..scorers.nli import cached_nli
    from ..scorers.similarity import cached_embedding

    cache = ScoreCache(store) if store is not None else None
    out = AutomaticBackends()
    if cfg.embedding:
        out.embed = cached_embedding(cfg.embedding, cache, label="attributes: embeddings")
        out.tokens = TokenVectors(cfg.embedding)
    else:
        out.unavailable.update({m: "no embedding model configured (automatic.embedding: null)"
                                for m in EMBEDDING_METRICS})
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
            out.unavailable.update({m: f"perplexity model {cfg.perplexity} could not be loaded ({err})"
                                    for m in PERPLEXITY_METRICS})
        else:
            runtime = runtime_settings(model)
            where = f" on {runtime['runtime']} ({runtime['weights']})" if runtime else ""
            out.ppl = CachedPerplexity(kind="perplexity", model=cfg.perplexity, settings={"bos": True, **runtime},
                                       load=lambda m=model: _perplexity_ready(m), compute=_token_logprobs,
                                       description=f"causal-lm:{cfg.perplexity}{where}", cache=cache, chunk=32,
                                       label="attributes: perplexity")
    else:
        out.unavailable.update({m: "no perplexity model configured (automatic.perplexity: null)"
                                for m in PERPLEXITY_METRICS})
    if out.tokens is not None:
        out.descriptions["tokens"] = out.tokens.description
    for name, backend in (("embedding", out.embed), ("nli", out.nli), ("perplexity", out.ppl)):
        if backend is not None:
            backend.keep = True  # per-rationale calls after prefetch read from memory
            out.descriptions[name] = backend.description
    return out


def _perplexity_ready(model: Any) -> Any:
    """``model`` with what its token log-probabilities run on loaded.

    On the embedded model's llama-cpp runtime: llama.cpp's model (the torch weights are not loaded); else the
    torch weights.
    """
    if getattr(model, "runtime_used", "torch") == "llama-cpp":
        model.llama()
    else:
        model.load()
    return model


def _token_logprobs(model: Any, texts: list[str]) -> list[list[float]]:
    """The token log-probabilities of each text: together where the model scores several at once."""
    many = getattr(model, "token_logprobs_many", None)
    return many(texts) if many is not None else [model.token_logprobs(t) for t in texts]


def prefetch(units: list[tuple[list[str], list[str]]], b: AutomaticBackends) -> None:
    """Score every input the rationales ``units`` (steps, source sentences) will ask for.

    Each backend gets one deduplicated, cached, batched request; a backend whose model fails to load
    becomes unavailable (the reason recorded for its metrics). Then the per-rationale calls of
    :func:`automatic_metrics` are memory reads.
    """
    from ..scorers.cache import ScorerUnavailable

    units = [(steps, source) for steps, source in units if steps]
    wanted = {
        "embed": lambda: b.embed.run([t for steps, source in units
                                      for t in (*steps, *source, " ".join(steps), " ".join(source))]),
        "tokens": lambda: b.tokens.run([t for steps, source in units for t in (*steps, *source)]),
        "nli": lambda: b.nli.run([[x, y] for steps, source in units
                                  for x, y in (*combinations(steps, 2), *((s, h) for s in source for h in steps))]),
        "ppl": lambda: b.ppl.run([t for steps, _ in units for t in (" ".join(steps), *steps)]),
    }
    names = {"embed": "embedding", "tokens": "tokens", "nli": "nli", "ppl": "perplexity"}
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
        if b.tokens is not None:
            out["faithfulness_ww"] = roscoe.faithfulness_ww(steps, source, b.embed.embed, b.tokens.vectors)
        out["informativeness"] = roscoe.informativeness(steps, source, b.embed.embed)
        out["informativeness_chain"] = roscoe.informativeness_chain(steps, source, b.embed.embed)
        out["repetition_step"] = roscoe.repetition_step(steps, b.embed.embed)
    if b.nli is not None:
        out["self_consistency"] = roscoe.self_consistency(steps, b.nli.contradiction)
        out["source_consistency"] = roscoe.source_consistency(steps, source, b.nli.contradiction)
    if b.ppl is not None:
        out["perplexity_chain"] = roscoe.perplexity_chain(steps, b.ppl.token_logprobs)
        out["perplexity_step"] = roscoe.perplexity_step(steps, b.ppl.token_logprobs)
        out["perplexity_step_max"] = roscoe.perplexity_step_max(steps, b.ppl.token_logprobs)
    return out


class TokenVectors:
    """Contextual token vectors of a sentence encoder, loaded on first use and kept per text for the run.

    Each text's L2-normalised last-layer token vectors without [CLS] / [SEP]
    (:meth:`reasonscope.scorers.similarity.BERTScoreF1.vectors` with all layers), for faithfulness_ww.
    """

    def __init__(self, model: str):
        self.model = model
        self.description = f"token-embeddings:{model}:all-layers"
        self._encoder = None
        self._memo: dict[str, Any] = {}

    def run(self, texts: list[str]) -> None:
        """Encode the texts not seen yet, in batches (raises ScorerUnavailable when the model cannot load)."""
        from ..scorers.cache import ScorerUnavailable

        todo = sorted({t for t in texts if t not in self._memo})
        if not todo:
            return
        if self._encoder is None:
            from ..scorers.similarity import BERTScoreF1

            try:
                self._encoder = BERTScoreF1(self.model, num_layers=None, batch_size=32)
            except Exception as err:  # a model that is not installed or not an encoder
                raise ScorerUnavailable(f"token embeddings of {self.model} could not be loaded ({err})") from err
        for text, (vecs, weight) in zip(todo, self._encoder.vectors(todo), strict=True):
            self._memo[text] = vecs[weight > 0]

    def vectors(self, texts) -> list:
        """Per text its token vectors (tokens x dim), encoding any text not seen yet."""
        self.run(list(texts))
        return [self._memo[t] for t in texts]
