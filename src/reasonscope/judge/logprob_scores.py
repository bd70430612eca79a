"""Probability-weighted judge scores and labels from a model's log-probabilities.

Two readings of a model's answer that use its token probabilities instead of the one sampled text:

* **Expected score** (the method of *G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment*):
  with the valid scores s_1..s_n of a scale and lp_i = log p(s_i | prompt) (the summed log-probability
  of the score's tokens written after the prompt),

      p_i = exp(lp_i) / sum_j exp(lp_j)        (renormalised over the valid scores only)
      score = sum_i p_i * s_i

  Range: the scale's [min, max]; higher is better as for the sampled score. The mass the model puts on
  anything else is dropped by the renormalisation and reported as ``valid_mass = sum_j exp(lp_j)``.
* **Most likely label** (the multiple-choice method of lm-evaluation-harness): the label with the highest
  log-likelihood log p(label | prompt) (summed over its tokens, not length-normalised, as lm-eval's
  ``acc``); ties go to the first label in the given order.

Degenerate cases: no candidates, or every log-probability ``-inf`` or not finite -> ``None`` with the reason.
The functions take the log-probabilities as numbers, so any backend that gives them can be used
(``LanguageModel.logprobs(prompt, continuations)`` on HF models).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..models.base import LanguageModel


@dataclass
class Weighted:
    """A probability-weighted reading.

    ``value`` (the expected score, or the index of the chosen label), the renormalised probabilities, the
    probability mass on the valid candidates, and ``reason`` when None.
    """

    value: float | str | None
    probabilities: dict[str, float] = field(default_factory=dict)
    valid_mass: float = 0.0
    method: str = ""
    reason: str | None = None


def _normalise(logprobs: Mapping[str, float]) -> tuple[dict[str, float], float] | None:
    finite = {k: v for k, v in logprobs.items() if math.isfinite(v)}
    if not finite:
        return None
    top = max(finite.values())
    weights = {k: math.exp(v - top) for k, v in finite.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}, math.exp(top) * total


def expected_score(logprobs: Mapping[str, float], values: Mapping[str, float]) -> Weighted:
    """G-Eval expectation of ``values[s]`` under the renormalised ``exp(logprobs[s])`` (module docstring)."""
    method = "expected score over valid score tokens (G-Eval)"
    norm = _normalise({k: logprobs[k] for k in values if k in logprobs})
    if norm is None:
        return Weighted(None, method=method, reason="no finite log-probability for any valid score")
    probs, mass = norm
    return Weighted(sum(p * values[k] for k, p in probs.items()), probs, mass, method)


def most_likely_label(logprobs: Mapping[str, float], labels: Sequence[str]) -> Weighted:
    """The label of highest log-likelihood (first in ``labels`` on ties).

    Probabilities are renormalised over the labels.
    """
    method = "most likely label by log-likelihood (lm-eval multiple choice)"
    norm = _normalise({k: logprobs[k] for k in labels if k in logprobs})
    if norm is None:
        return Weighted(None, method=method, reason="no finite log-likelihood for any label")
    probs, mass = norm
    best = max((lab for lab in labels if lab in probs), key=lambda lab: (probs[lab], -labels.index(lab)))
    return Weighted(best, probs, mass, method)


async def score_by_expectation(model: LanguageModel, prompt: str, values: Mapping[str, float]) -> Weighted:
    """Ask ``model`` for log p(s | prompt) of every valid score string and take the expectation."""
    keys = list(values)
    lps = await model.logprobs(prompt, keys)
    return expected_score(dict(zip(keys, lps, strict=True)), values)


async def label_by_likelihood(model: LanguageModel, prompt: str, labels: Sequence[str]) -> Weighted:
    """Ask ``model`` for log p(label | prompt) of every label and take the most likely one."""
    lps = await model.logprobs(prompt, list(labels))
    return most_likely_label(dict(zip(labels, lps, strict=True)), labels)


def chat_prompt(model: LanguageModel, messages: list[dict[str, str]]) -> tuple[str, bool]:
    """The text whose continuation is read, and whether it is local.

    (text whose continuation is read, local): a local model's chat template up to its assistant turn, else the
    messages' contents joined (an API model answers them as one user message).
    """
    render = getattr(model, "prompt_text", None)
    if render is not None and getattr(model, "logprobs_sync", None) is not None:
        return render(messages), True
    return "\n\n".join(m["content"] for m in messages), False


def logprobs_many(model: LanguageModel, prompts: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
    """Log-probabilities of every continuation after every prompt.

    log p(c | prompt) of every continuation after every prompt: in this thread for a local model (all prompts
    through its ``logprobs_sync_many`` where it has one, as the embedded model on llama.cpp decodes them together;
    else one ``logprobs_sync`` call per prompt), else ``model.logprobs`` coroutines gathered with at most
    ``model.concurrency`` in flight (an API model answers them in parallel).
    """
    conts = list(continuations)
    many = getattr(model, "logprobs_sync_many", None)
    if many is not None:
        return many(list(prompts), conts)
    sync = getattr(model, "logprobs_sync", None)
    if sync is not None:
        return [sync(p, conts) for p in prompts]
    gate_n = max(1, int(getattr(model, "concurrency", 8) or 8))

    async def gather() -> list[list[float]]:
        gate = asyncio.Semaphore(gate_n)

        async def one(p: str) -> list[float]:
            async with gate:
                return await model.logprobs(p, conts)

        return list(await asyncio.gather(*(one(p) for p in prompts)))

    return asyncio.run(gather())


def scale_values(low: int = 0, high: int = 10) -> dict[str, float]:
    """The score strings of an integer scale and their values: ``{"0": 0.0, ..., "10": 10.0}``."""
    return {str(v): float(v) for v in range(low, high + 1)}
