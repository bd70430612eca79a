"""ROSCOE-style automatic attribute metrics (Golovneva et al., 2023), following the paper's formulas.

Notation: source sentences s_1..s_T (the question / context), reasoning steps h_1..h_N (split by
:func:`reasonscope.text.steps.split_steps`), cos the cosine of sentence embeddings (the embedded
all-MiniLM-L6-v2 by default), and r-align(x -> Y) = (1 + max_y cos(x, y)) / 2, in [0, 1].
Every metric lies in [0, 1] and higher is better.

* faithfulness (Faithfulness-Step): (1/N) sum_i r-align(h_i -> s).
* informativeness (Info-Step): [(1/T) sum_t r-align(s_t -> h) + (1/N) sum_i r-align(h_i -> s)] / 2.
* repetition_step (Repetition-Step): 1 - max_{j<i} (1 + cos(h_i, h_j)) / 2.
* repetition_word: 1 - max_{j<i} |W_i ∩ W_j| / |W_i| over lower-cased word sets. ROSCOE's
  Repetition-Token aligns contextual token embeddings; this is its exact-word counterpart (stated).
* self_consistency (Self-Consistency): 1 - max_{i<j} p_contradiction(h_i, h_j) (NLI).
* source_consistency (Source-Consistency): 1 - max_{t,i} p_contradiction(s_t, h_i) (NLI).
* perplexity_chain: 1 / PPL(h_1 ... h_N) under a causal LM (ROSCOE reports inverse perplexity).

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

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, d) L2-normalised rows
Contradiction = Callable[[Sequence[tuple[str, str]]], list[float]]


def _r_align(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """(1 + max_y cos(x, y)) / 2 for each row of x."""
    return (1.0 + (x @ ys.T).max(axis=1)) / 2.0


def faithfulness(steps: list[str], source: list[str], embed: Embed) -> float | None:
    if not steps or not source:
        return None
    return float(_r_align(embed(steps), embed(source)).mean())


def informativeness(steps: list[str], source: list[str], embed: Embed) -> float | None:
    if not steps or not source:
        return None
    h, s = embed(steps), embed(source)
    return float((_r_align(s, h).mean() + _r_align(h, s).mean()) / 2)


def repetition_step(steps: list[str], embed: Embed) -> float | None:
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
    if not steps:
        return None
    pairs = list(combinations(steps, 2))
    return 1.0 if not pairs else 1.0 - max(contradiction(pairs))


def source_consistency(steps: list[str], source: list[str], contradiction: Contradiction) -> float | None:
    if not steps or not source:
        return None
    return 1.0 - max(contradiction([(s, h) for s in source for h in steps]))


def perplexity_chain(steps: list[str], token_logprobs: Callable[[str], list[float]]) -> float | None:
    """1 / PPL, PPL = exp(-mean token log-probability of the chain text)."""
    if not steps:
        return None
    lps = token_logprobs(" ".join(steps))
    if not lps:
        return None
    return 1.0 / math.exp(-sum(lps) / len(lps))
