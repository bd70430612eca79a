"""ROSCOE-style automatic attribute metrics, following the paper's formulas.

The paper is *ROSCOE: A Suite of Metrics for Scoring Step-by-Step Reasoning* (Golovneva et al., 2023).

Notation: source sentences s_1..s_T (the question / context), reasoning steps h_1..h_N (split by
:func:`reasonscope.text.steps.split_steps`), cos the cosine of sentence embeddings (the embedded
all-MiniLM-L6-v2 by default), and r-align(x -> Y) = (1 + max_y cos(x, y)) / 2, in [0, 1].
Every metric lies in [0, 1] and higher is better.

* faithfulness (Faithfulness-Step): (1/N) sum_i r-align(h_i -> s).
* faithfulness_ww (Faithfulness-Token): [sum_i r-align(h_i -> s) + sum_{k=1..M} r-align(w_k -> u)] / (N + M),
  the steps aligned to the source sentences and the chain's M tokens w_k to the source's tokens u, with
  contextual token embeddings (the same encoder's last hidden states, special tokens left out).
* informativeness (Info-Step): [(1/T) sum_t r-align(s_t -> h) + (1/N) sum_i r-align(h_i -> s)] / 2.
* informativeness_chain (Info-Chain): (1 + cos(H, S)) / 2, H the embedding of the whole chain (steps
  joined by spaces) and S that of the whole source.
* repetition_step (Repetition-Step): 1 - max_{j<i} (1 + cos(h_i, h_j)) / 2.
* repetition_word: 1 - max_{j<i} |W_i ∩ W_j| / |W_i| over lower-cased word sets. ROSCOE's
  Repetition-Token aligns contextual token embeddings; this is its exact-word counterpart (stated).
* self_consistency (Self-Consistency): 1 - max_{i<j} p_contradiction(h_i, h_j) (NLI).
* source_consistency (Source-Consistency): 1 - max_{t,i} p_contradiction(s_t, h_i) (NLI).
* perplexity_chain: 1 / PPL(h_1 ... h_N) under a causal LM (ROSCOE reports inverse perplexity).
* perplexity_step: (1/N) sum_i 1 / PPL(h_i), each step scored on its own.
* perplexity_step_max: min_i 1 / PPL(h_i) = 1 / max_i PPL(h_i), the least fluent step.

Chains with fewer than two steps make the pairwise metrics (repetition, self-consistency) 1.0 by
convention; an empty chain makes every metric None. Where the ROSCOE code departs from the paper
(e.g. its repetition scores use 1 - max alignment over *all* pairs including the step itself in some
versions), the paper is followed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from itertools import combinations

import numpy as np

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> an (n, d) array of L2-normalised sentence embeddings, one row per text."""
Contradiction = Callable[[Sequence[tuple[str, str]]], list[float]]
"""(premise, hypothesis) pairs -> p(contradiction) of each pair, in [0, 1]."""


def _r_align(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """(1 + max_y cos(x, y)) / 2 for each row of x."""
    return (1.0 + (x @ ys.T).max(axis=1)) / 2.0


def faithfulness(steps: list[str], source: list[str], embed: Embed) -> float | None:
    """Faithfulness-Step: how well each reasoning step is grounded in some source sentence.

    faithfulness = (1/N) * sum_i r-align(h_i -> s), r-align(x -> Y) = (1 + max_y cos(x, y)) / 2.

    Args:
        steps: The reasoning steps h_1..h_N.
        source: The source sentences s_1..s_T (the question split into sentences).
        embed: Sentence embedder returning L2-normalised rows.

    Returns:
        A value in [0, 1], higher is better (1: every step repeats a source sentence's meaning). None when
        there is no step or no source sentence.

    Examples:
        >>> vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
        >>> embed = lambda texts: np.array([vectors[t] for t in texts])
        >>> faithfulness(["a", "b"], ["a"], embed)
        0.75
        >>> faithfulness([], ["a"], embed) is None
        True
    """
    if not steps or not source:
        return None
    return float(_r_align(embed(steps), embed(source)).mean())


def informativeness(steps: list[str], source: list[str], embed: Embed) -> float | None:
    """Info-Step: how much of the source the chain covers, and how much of the chain the source supports.

    informativeness = [(1/T) sum_t r-align(s_t -> h) + (1/N) sum_i r-align(h_i -> s)] / 2.

    Args:
        steps: The reasoning steps h_1..h_N.
        source: The source sentences s_1..s_T.
        embed: Sentence embedder returning L2-normalised rows.

    Returns:
        A value in [0, 1], higher is better. None when there is no step or no source sentence.

    Examples:
        >>> vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
        >>> embed = lambda texts: np.array([vectors[t] for t in texts])
        >>> informativeness(["a"], ["a", "b"], embed)
        0.875
    """
    if not steps or not source:
        return None
    h, s = embed(steps), embed(source)
    return float((_r_align(s, h).mean() + _r_align(h, s).mean()) / 2)


def repetition_step(steps: list[str], embed: Embed) -> float | None:
    """Repetition-Step: one minus the highest similarity of a step to an earlier step.

    repetition_step = 1 - max_{j<i} (1 + cos(h_i, h_j)) / 2.

    Args:
        steps: The reasoning steps h_1..h_N.
        embed: Sentence embedder returning L2-normalised rows.

    Returns:
        A value in [0, 1], higher is better (less repetition; 0: a step repeats an earlier one exactly).
        A single step gives 1.0 by convention; no step gives None.

    Examples:
        >>> vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
        >>> embed = lambda texts: np.array([vectors[t] for t in texts])
        >>> repetition_step(["a", "b"], embed)
        0.5
        >>> repetition_step(["a", "a"], embed)
        0.0
    """
    if not steps:
        return None
    if len(steps) < 2:
        return 1.0
    h = embed(steps)
    sims = h @ h.T
    worst = max(sims[i, j] for i in range(len(steps)) for j in range(i))
    return float(1.0 - (1.0 + worst) / 2.0)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def repetition_word(steps: list[str]) -> float | None:
    """Word repetition: one minus the largest share of a step's words already used by an earlier step.

    repetition_word = 1 - max_{j<i} |W_i ∩ W_j| / |W_i|, W the lower-cased word set of a step. ROSCOE's
    Repetition-Token aligns contextual token embeddings; this is its exact-word counterpart, with no model.

    Args:
        steps: The reasoning steps h_1..h_N.

    Returns:
        A value in [0, 1], higher is better (less repetition). A single step gives 1.0 by convention; no
        step gives None. A step with no word is skipped.

    Examples:
        >>> repetition_word(["Ana has 3 apples.", "Ana gets 5 more apples."])  # 2 of 5 words repeated
        0.6
        >>> repetition_word(["One step."])
        1.0
    """
    if not steps:
        return None
    if len(steps) < 2:
        return 1.0
    worst = 0.0
    for i in range(1, len(steps)):
        wi = _words(steps[i])
        if not wi:
            continue
        for j in range(i):
            worst = max(worst, len(wi & _words(steps[j])) / len(wi))
    return 1.0 - worst


def self_consistency(steps: list[str], contradiction: Contradiction) -> float | None:
    """Self-Consistency: one minus the highest contradiction probability between two steps of the chain.

    self_consistency = 1 - max_{i<j} p_contradiction(h_i, h_j), from an NLI backend.

    Args:
        steps: The reasoning steps h_1..h_N.
        contradiction: NLI backend: (premise, hypothesis) pairs -> p(contradiction).

    Returns:
        A value in [0, 1], higher is better (1: no two steps contradict). A single step gives 1.0 by
        convention; no step gives None.

    Examples:
        >>> self_consistency(["a", "b", "c"], lambda pairs: [0.1, 0.7, 0.2])
        0.30000000000000004
        >>> self_consistency(["a"], lambda pairs: [])
        1.0
    """
    if not steps:
        return None
    pairs = list(combinations(steps, 2))
    return 1.0 if not pairs else 1.0 - max(contradiction(pairs))


def source_consistency(steps: list[str], source: list[str], contradiction: Contradiction) -> float | None:
    """Source-Consistency: one minus the highest contradiction probability between source and steps.

    source_consistency = 1 - max_{t,i} p_contradiction(s_t, h_i), source sentence as premise.

    Args:
        steps: The reasoning steps h_1..h_N.
        source: The source sentences s_1..s_T.
        contradiction: NLI backend: (premise, hypothesis) pairs -> p(contradiction).

    Returns:
        A value in [0, 1], higher is better (1: no step contradicts the source). None when there is no step
        or no source sentence.

    Examples:
        >>> source_consistency(["h1", "h2"], ["s"], lambda pairs: [0.25, 0.5])
        0.5
    """
    if not steps or not source:
        return None
    return 1.0 - max(contradiction([(s, h) for s in source for h in steps]))


def perplexity_chain(steps: list[str], token_logprobs: Callable[[str], list[float]]) -> float | None:
    """Inverse perplexity of the whole chain under a causal language model.

    perplexity_chain = 1 / PPL, PPL = exp(-(1/M) sum_m log p(w_m | w_<m)) over the M tokens of the steps
    joined by spaces (ROSCOE reports inverse perplexity so that higher is better).

    Args:
        steps: The reasoning steps h_1..h_N.
        token_logprobs: Text -> the natural-log probability of each of its tokens.

    Returns:
        A value in (0, 1], higher is better (more fluent under the model). None when there is no step or
        the model gives no token.

    Examples:
        >>> perplexity_chain(["a b"], lambda text: [math.log(0.5), math.log(0.5)])
        0.5
    """
    if not steps:
        return None
    lps = token_logprobs(" ".join(steps))
    if not lps:
        return None
    return 1.0 / math.exp(-sum(lps) / len(lps))


TokenVectors = Callable[[Sequence[str]], list[np.ndarray]]
"""Texts -> for each text an (n_tokens, d) array of L2-normalised contextual token embeddings (no special tokens)."""


def faithfulness_ww(steps: list[str], source: list[str], embed: Embed, tokens: TokenVectors) -> float | None:
    """Faithfulness-Token: step and token alignment to the source, averaged over steps and tokens together.

    faithfulness_ww = [sum_i r-align(h_i -> s) + sum_k r-align(w_k -> u)] / (N + M), where h_i are the N
    steps aligned to the source sentences s (sentence embeddings) and w_k the M tokens of the chain aligned
    to the tokens u of the source (contextual token embeddings of each step and each source sentence).

    Args:
        steps: The reasoning steps h_1..h_N.
        source: The source sentences s_1..s_T.
        embed: Sentence embedder returning L2-normalised rows.
        tokens: Token embedder: per text, its L2-normalised token vectors.

    Returns:
        A value in [0, 1], higher is better. None when there is no step or no source sentence.

    Examples:
        >>> vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
        >>> embed = lambda texts: np.array([vectors[t] for t in texts])
        >>> tokens = lambda texts: [np.array([vectors[t], vectors[t]]) for t in texts]  # two tokens each
        >>> faithfulness_ww(["a", "b"], ["a"], embed, tokens)  # steps 1, 0.5; tokens 1, 1, 0.5, 0.5
        0.75
    """
    if not steps or not source:
        return None
    step_scores = _r_align(embed(steps), embed(source))
    chain = [v for v in tokens(steps) if len(v)]
    src = [v for v in tokens(source) if len(v)]
    if not chain or not src:
        return float(step_scores.mean())
    token_scores = _r_align(np.concatenate(chain), np.concatenate(src))
    return float((step_scores.sum() + token_scores.sum()) / (len(step_scores) + len(token_scores)))


def informativeness_chain(steps: list[str], source: list[str], embed: Embed) -> float | None:
    """Info-Chain: the similarity of the whole chain to the whole source.

    informativeness_chain = (1 + cos(H, S)) / 2, H the embedding of the steps joined by spaces, S that of the
    source sentences joined by spaces.

    Args:
        steps: The reasoning steps h_1..h_N.
        source: The source sentences s_1..s_T.
        embed: Sentence embedder returning L2-normalised rows.

    Returns:
        A value in [0, 1], higher is better. None when there is no step or no source sentence.

    Examples:
        >>> vectors = {"a b": [1.0, 0.0], "c": [0.6, 0.8]}
        >>> informativeness_chain(["a", "b"], ["c"], lambda texts: np.array([vectors[t] for t in texts]))
        0.8
    """
    if not steps or not source:
        return None
    h, s = embed([" ".join(steps), " ".join(source)])
    return float((1.0 + h @ s) / 2.0)


def _inverse_perplexities(steps: list[str], token_logprobs: Callable[[str], list[float]]) -> list[float]:
    out = []
    for step in steps:
        lps = token_logprobs(step)
        if lps:
            out.append(1.0 / math.exp(-sum(lps) / len(lps)))
    return out


def perplexity_step(steps: list[str], token_logprobs: Callable[[str], list[float]]) -> float | None:
    """Inverse perplexity of each step on its own, averaged over the chain.

    perplexity_step = (1/N) sum_i 1 / PPL(h_i), PPL(h) = exp(-(1/M) sum_m log p(w_m | w_<m)) over the M tokens of
    step h alone (a step the model gives no token is left out).

    Args:
        steps: The reasoning steps h_1..h_N.
        token_logprobs: Text -> the natural-log probability of each of its tokens.

    Returns:
        A value in (0, 1], higher is better (more fluent steps). None when no step has a token.

    Examples:
        >>> lp = {"a": [math.log(0.5)], "b": [math.log(0.25)]}
        >>> perplexity_step(["a", "b"], lambda text: lp[text])
        0.375
    """
    inv = _inverse_perplexities(steps, token_logprobs)
    return sum(inv) / len(inv) if inv else None


def perplexity_step_max(steps: list[str], token_logprobs: Callable[[str], list[float]]) -> float | None:
    """Inverse of the largest step perplexity: the least fluent step decides.

    perplexity_step_max = 1 / max_i PPL(h_i) = min_i 1 / PPL(h_i) (ROSCOE's maximum perplexity among the steps,
    inverted so that higher is better).

    Args:
        steps: The reasoning steps h_1..h_N.
        token_logprobs: Text -> the natural-log probability of each of its tokens.

    Returns:
        A value in (0, 1], higher is better. None when no step has a token.

    Examples:
        >>> lp = {"a": [math.log(0.5)], "b": [math.log(0.25)]}
        >>> perplexity_step_max(["a", "b"], lambda text: lp[text])
        0.25
    """
    inv = _inverse_perplexities(steps, token_logprobs)
    return min(inv) if inv else None
