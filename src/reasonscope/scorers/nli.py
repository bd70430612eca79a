"""Contradiction probabilities for (premise, hypothesis) sentence pairs.

Backends (``NLIConfig.backend``):

* ``hf``: a cross-encoder NLI model (``AutoModelForSequenceClassification``; default
  ``cross-encoder/nli-deberta-v3-small``, or a local path). Premise and hypothesis are encoded as a
  sentence pair; p(contradiction) is the softmax probability of the label whose name contains
  "contradiction" in ``config.id2label``. Batched. ``runtime: onnx`` runs the same model converted to
  ONNX (verified against torch at conversion) without importing torch or transformers
  (:mod:`reasonscope.scorers.onnx_scorers`).
* ``llm``: any provider with log-probabilities judges the pair. The prompt asks for one of
  entailment / neutral / contradiction; p(contradiction) is the softmax over the three labels'
  summed continuation log-probabilities (a three-way normalisation: mass on other words is ignored).
* ``none``: no backend. Metrics that need NLI are "not computed" with the reason. reasonscope never
  replaces NLI with a word heuristic.

:func:`make_nli` returns ``(scorer, None)`` or ``(None, reason)``; the scorer's ``description``
is recorded next to every score it produced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..models.loading import model_loading
from .base import NLIScorer
from .runtime_choice import resolve_runtime
from .settings import NLIConfig

NLI_LABELS = ("entailment", "neutral", "contradiction")


class HFCrossEncoderNLI(NLIScorer):
    """A Hugging Face cross-encoder NLI model on torch.

    The model must have exactly one label containing "contradict" (else ``ValueError`` on loading); pairs
    are scored in batches of ``batch_size``, truncated to 512 tokens.
    """
    def __init__(self, model: str, batch_size: int = 16):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        with model_loading():
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForSequenceClassification.from_pretrained(model).eval()
        labels = {int(i): str(n).lower() for i, n in self.model.config.id2label.items()}
        idx = [i for i, n in labels.items() if "contradict" in n]
        if len(idx) != 1:
            raise ValueError(f"{model}: no 'contradiction' label among {sorted(labels.values())}")
        self.index = idx[0]
        self.batch_size = batch_size
        self.description = f"hf-cross-encoder:{model}"

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """p(contradiction) = softmax(logits)[contradiction label] of each pair, in [0, 1]."""
        import torch

        out: list[float] = []
        for i in range(0, len(pairs), self.batch_size):
            chunk = pairs[i:i + self.batch_size]
            enc = self.tokenizer([p for p, _ in chunk], [h for _, h in chunk], padding=True, truncation=True,
                                 max_length=512, return_tensors="pt")
            with torch.no_grad():
                probs = torch.softmax(self.model(**enc).logits.float(), dim=-1)
            out.extend(float(x) for x in probs[:, self.index])
        return out


def judge_prompt(premise: str, hypothesis: str) -> str:
    """The completion prompt that asks an LLM for the relation of ``hypothesis`` to ``premise``.

    The continuation read after it is `` entailment``, `` neutral`` or `` contradiction``.
    """
    return ("Decide how the second statement relates to the first.\n"
            f"First statement: {premise}\nSecond statement: {hypothesis}\n"
            "If the first makes the second true, say entailment; if they cannot both be true, say contradiction; "
            "otherwise say neutral.\nRelation:")


class LLMJudgeNLI(NLIScorer):
    """An LLM as NLI judge.

    The pairs of one call are sent together through the model's concurrent path (``logprobs`` coroutines
    gathered, at most ``model.concurrency`` in flight: an API model answers them in parallel); a white-box
    model with ``logprobs_sync`` scores them in this thread, one pair (three continuations in one forward
    pass) at a time, or all pairs together where it has ``logprobs_sync_many`` (the embedded model on llama.cpp). Caching, deduplication and the progress bar come from
    :class:`reasonscope.scorers.cache.CachedNLI` (:func:`cached_nli`).
    """

    def __init__(self, model: Any):
        self.model = model
        self.description = f"llm-judge-logprobs:{model.config.spec}"

    @staticmethod
    def _probability(lp: Sequence[float]) -> float:
        top = max(lp)
        weights = [math.exp(v - top) for v in lp]
        return weights[2] / sum(weights)

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """p(contradiction) of each pair, in [0, 1].

        The probability of the `` contradiction`` continuation renormalised over the three labels.
        """
        from ..judge.logprob_scores import logprobs_many

        conts = [" " + lab for lab in NLI_LABELS]
        lps = logprobs_many(self.model, [judge_prompt(p, h) for p, h in pairs], conts)
        return [self._probability(lp) for lp in lps]


def make_nli(cfg: NLIConfig) -> tuple[NLIScorer | None, str | None]:
    """The NLI scorer of ``cfg``: ``(scorer, None)`` or ``(None, reason)``.

    ``hf`` builds a cross-encoder (on ONNX Runtime with ``runtime: onnx``); any other backend uses
    ``cfg.model`` as an LLM judge. ``none``, a judge with missing requirements or a model that fails to
    load gives the reason instead of raising. ``runtime: auto`` is resolved here
    (:func:`~reasonscope.scorers.runtime_choice.resolve_runtime`); settings resolved already, as
    :func:`cached_nli` hands them on, are taken as they are.
    """
    if cfg.backend == "none":
        return None, "no NLI backend configured (families.behavior.nli.backend: none)"
    try:
        cfg, _ = resolve_runtime(cfg)
        if cfg.backend == "hf" and cfg.runtime == "onnx":
            from .onnx_scorers import OnnxCrossEncoderNLI

            return OnnxCrossEncoderNLI(cfg.model, cfg.batch_size), None
        if cfg.backend == "hf":
            return HFCrossEncoderNLI(cfg.model, cfg.batch_size), None
        from ..models.registry import create_model

        model = create_model(cfg.model)
        why = model.missing_requirements()
        if why:
            return None, f"NLI judge unavailable: {why}"
        return LLMJudgeNLI(model), None
    except Exception as err:  # missing weights offline, bad path, no torch
        return None, f"NLI backend {cfg.backend}:{cfg.model} could not be loaded ({type(err).__name__}: {err})"


def resolve_nli(cfg: NLIConfig) -> tuple[NLIConfig, str | None]:
    """Deprecated: ``resolve_runtime(cfg)`` (:mod:`reasonscope.scorers.runtime_choice`), the one resolver.

    Returns the settings with ``runtime`` decided and, when ``auto`` fell back to torch, why.
    """
    import warnings

    warnings.warn("reasonscope.scorers.nli.resolve_nli is replaced by reasonscope.scorers.runtime_choice."
                  "resolve_runtime; the old name works until the next release", DeprecationWarning, stacklevel=2)
    cfg, choice = resolve_runtime(cfg)
    return cfg, choice.reason


def nli_description(cfg: NLIConfig, fallback: str | None = None) -> str:
    """The description of ``cfg``'s NLI backend, as its scorer reports it (without loading it).

    ``fallback`` is why ``runtime: auto`` runs on torch (shown in brackets).
    """
    if cfg.backend == "hf":
        from .runtime_choice import runtime_suffix

        return f"hf-cross-encoder:{cfg.model}" + runtime_suffix(cfg.runtime, fallback)
    return f"llm-judge-logprobs:{cfg.model}"


def cached_nli(cfg: NLIConfig, cache=None, *, label: str = "NLI") -> tuple[Any, str | None]:
    """The NLI backend of ``cfg`` behind the score cache.

    A :class:`reasonscope.scorers.cache.CachedNLI`, loaded on its first cache miss; ``(None, reason)`` for
    ``backend: none``. A backend that fails to load raises
    :class:`~reasonscope.scorers.cache.ScorerUnavailable` at that moment. The runtime is resolved here, once:
    the loader and the Ray actors (its ``config``) get the resolved settings.
    """
    from .cache import CachedNLI, load_or_unavailable

    if cfg.backend == "none":
        return None, "no NLI backend configured (families.behavior.nli.backend: none)"
    cfg, choice = resolve_runtime(cfg)

    def load() -> NLIScorer:
        return load_or_unavailable(lambda: make_nli(cfg), "NLI backend unavailable")

    kind = "nli" if cfg.backend == "hf" else "llm-nli"
    settings = ({"backend": cfg.backend} | choice.identity()
                if cfg.backend == "hf" else {
        "backend": cfg.backend, "prompt": judge_prompt("{premise}", "{hypothesis}"), "labels": list(NLI_LABELS)})
    return CachedNLI(kind=kind, model=cfg.model, settings=settings, load=load,
                     compute=lambda scorer, pairs: scorer.contradiction([(p, h) for p, h in pairs]),
                     description=nli_description(cfg, choice.reason), cache=cache, libraries=choice.libraries,
                     chunk=max(cfg.batch_size * 16, 64) if kind == "nli" else 16,  # an LLM judge is slow: small chunks
                     label=label, config=cfg), None
