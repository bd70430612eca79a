"""The six behaviour metrics of the behavioural framework, per item.

The framework is *Measuring Reasoning Quality in Large Language Models: A Multi-Dimensional Behavioral
Framework* (Şenol, Agrawal, Liu, 2026). Corpus values are means over items, except ES (see
:mod:`reasonscope.behavior.efficiency`).

Notation: item i has K samples of the original question (sample 0 is the *primary* answer
``ŷ_i``) and P paraphrase completions ``ŷ_i^p``. All answers are typed extractions
(:mod:`reasonscope.text.answers`); ``match`` is typed equality.

CQ  correctness      CQ_i = 1[match(ŷ_i, y_i)]. Unparseable answers are 0 (and counted separately).
                     A failed generation (refusal, empty reply, rejected request) is no answer: left
                     out by default, 0 with ``stats.failed_generations: wrong`` (see
                     :mod:`reasonscope.behavior.scoring`). Range [0, 1], higher is better.
CS  consistency      CS_i = 2/(K'(K'-1)) Σ_{k<l} 1[match(ŷ_i^k, ŷ_i^l)] over the K' samples that did
                     not fail (a failed generation is never compared); a pair with an unparseable
                     answer does not agree. Needs K' >= 2. Higher is better.
RS  robustness       over items with 1[CQ_i = 1] and P'_i >= 1 paraphrase completions that did not
                     fail: RS_i = (1/P'_i) Σ_p 1[match(ŷ_i^p, ŷ_i)] (agreement with the model's own
                     original answer). Not applicable when no item qualifies. Higher is better.
LS  coherence        LS_i = 1 - mean_j ψ(s_j, s_{j+1}) over consecutive steps of the primary trace,
                     ψ = p(contradiction) from an NLI backend with (s_j, s_{j+1}) as (premise,
                     hypothesis). One step: LS_i = 1.0 by convention. No step (failed or empty
                     generation): not applicable. Higher is better.
ES  efficiency       L_i = 1 - min(1, T_i / B) (``conciseness``), T_i the completion tokens of the
                     primary answer in model tokens, B the request's max new tokens (a fixed budget,
                     so ES is comparable across models and runs); H(a, b) = 2ab/(a+b), 0 if a+b = 0.
                     Per item ES_i = H(CQ_i, L_i); the corpus ES is H(CQ, mean L) (``ES_corpus``,
                     default) or mean ES_i (``ES_item``): :mod:`reasonscope.behavior.efficiency`.
                     A failed primary generation: left out, or CQ_i = ES_i = 0 with no L_i under
                     ``failed_generations: wrong``.
SS  stability        SS_i = 2/(K'(K'-1)) Σ_{k<l} sim(T_i^k, T_i^l) over the traces of the K' samples
                     that did not fail; sim = BERTScore F1 (or embedding cosine, recorded). Needs
                     K' >= 2. Higher is better.
"""

from __future__ import annotations

from itertools import combinations

from ..text.answers import answers_match
from ..types import Generation, Item, is_question_variant


def pairs_agreement(answers: list, answer_type: str, rel_tol: float = 1e-6) -> float | None:
    """Share of answer pairs that agree: the per-item consistency CS_i.

    CS_i = 2 / (K (K - 1)) * sum over pairs k < l of 1[match(a_k, a_l)], ``match`` being typed
    equality (:func:`reasonscope.text.answers.answers_match`, numbers within ``rel_tol``).

    Args:
        answers: The K extracted answers of one item's samples; None is an unparseable answer.
        answer_type: The item's answer type (``number``, ``choice``...), which decides equality.
        rel_tol: Relative tolerance for numeric answers.

    Returns:
        A value in [0, 1], higher is better (1: every sample gives the same answer). A pair with an
        unparseable answer (None) never agrees, so all-None answers give 0.0. None when there are
        fewer than two answers (no pair).

    Examples:
        >>> pairs_agreement([4, 4, 5], "number")
        0.3333333333333333
        >>> pairs_agreement([None, None], "number")
        0.0
        >>> pairs_agreement([4], "number") is None
        True
    """
    if len(answers) < 2:
        return None
    pairs = list(combinations(answers, 2))
    agree = sum(1 for a, b in pairs if a is not None and b is not None and answers_match(a, b, answer_type, rel_tol))
    return agree / len(pairs)


def robustness(original_answer, paraphrase_answers: list, answer_type: str, rel_tol: float = 1e-6) -> float | None:
    """Share of paraphrase answers that agree with the original answer: the per-item robustness RS_i.

    RS_i = (1 / P) * sum over paraphrases p of 1[match(a_p, a_orig)], agreement with the model's own
    answer to the original question (not with the gold answer). The caller keeps only items answered
    correctly (CQ_i = 1), as the framework defines RS.

    Args:
        original_answer (Any): The primary answer to the original question (a typed answer, as parsed).
        paraphrase_answers: The answers to the P paraphrases; None is an unparseable answer, which never
            agrees.
        answer_type: The item's answer type, which decides equality.
        rel_tol: Relative tolerance for numeric answers.

    Returns:
        A value in [0, 1], higher is better (1: no paraphrase changes the answer). None when there is no
        paraphrase answer.

    Examples:
        >>> robustness(12, [12, 12.0, 13, None], "number")
        0.5
        >>> robustness("B", [], "choice") is None
        True
    """
    if not paraphrase_answers:
        return None
    same = sum(1 for a in paraphrase_answers
               if a is not None and answers_match(a, original_answer, answer_type, rel_tol))
    return same / len(paraphrase_answers)


def coherence(contradiction_probs: list[float], n_steps: int) -> float | None:
    """One minus the mean contradiction probability between consecutive steps: the per-item LS_i.

    LS_i = 1 - (1 / (S - 1)) * sum over j of psi(s_j, s_{j+1}), psi the NLI backend's p(contradiction)
    with step s_j as premise and s_{j+1} as hypothesis.

    Args:
        contradiction_probs: psi for each of the S - 1 consecutive step pairs of the primary trace.
        n_steps: S, the number of steps in the trace.

    Returns:
        A value in [0, 1], higher is better (1: no step contradicts the one before). A single step is 1.0
        by convention (nothing to contradict); no step (a failed or empty generation) gives None.

    Examples:
        >>> coherence([0.1, 0.3], 3)
        0.8
        >>> coherence([], 1)
        1.0
        >>> coherence([], 0) is None
        True
    """
    if n_steps == 0:
        return None
    if n_steps == 1:
        return 1.0
    return 1.0 - sum(contradiction_probs) / len(contradiction_probs)


def harmonic(a: float, b: float) -> float:
    """Harmonic mean H(a, b) = 2ab / (a + b) of two values in [0, 1]; 0.0 when a + b = 0.

    Examples:
        >>> harmonic(1.0, 0.5)
        0.6666666666666666
        >>> harmonic(0.0, 0.0)
        0.0
    """
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def length_score(tokens: int | None, budget: int | None) -> float | None:
    """Conciseness L_i = 1 - min(1, T_i / B) of one completion: T_i tokens against a budget of B.

    Args:
        tokens: T_i, the completion tokens of the primary answer (model tokens).
        budget: B, the request's max new tokens.

    Returns:
        A value in [0, 1], higher is shorter (0: the whole budget or more was used). None without a token
        count or a budget (None or 0).

    Examples:
        >>> length_score(16, 64)
        0.75
        >>> length_score(80, 64)
        0.0
        >>> length_score(None, 64) is None
        True
    """
    if tokens is None or not budget:
        return None
    return 1.0 - min(1.0, tokens / budget)


def efficiency(correct: float, tokens: int | None, budget: int | None) -> float | None:
    """Per-item efficiency ES_i = H(CQ_i, L_i): harmonic mean of correctness and conciseness.

    The corpus ES defaults to H(CQ, mean L) instead (:mod:`reasonscope.behavior.efficiency`); this is the
    per-item reading behind ``ES_item``.

    Args:
        correct: CQ_i, 1.0 for a correct answer, 0.0 otherwise.
        tokens: T_i, the completion tokens.
        budget: B, the request's max new tokens.

    Returns:
        A value in [0, 1], higher is better; 0.0 for a wrong answer. None without a token count or a
        budget.

    Examples:
        >>> efficiency(1.0, 32, 64)
        0.6666666666666666
        >>> efficiency(0.0, 32, 64)
        0.0
    """
    length = length_score(tokens, budget)
    return None if length is None else harmonic(correct, length)


def consecutive_pairs(steps: list[str]) -> list[tuple[str, str]]:
    """The (s_j, s_{j+1}) pairs of a trace's steps, in order, that LS scores.

    Examples:
        >>> consecutive_pairs(["a", "b", "c"])
        [('a', 'b'), ('b', 'c')]
    """
    return list(zip(steps, steps[1:], strict=False))


def split_variants(generations: list[Generation]) -> tuple[list[Generation], list[Generation]]:
    """(the K samples of the original question in sample order, the paraphrase completions)."""
    originals = sorted((g for g in generations if g.variant == "original"), key=lambda g: g.sample)
    return originals, [g for g in generations if g.variant != "original"]


def group_by_item(generations: list[Generation], items: dict[str, Item]) -> dict[tuple[str, str], list[Generation]]:
    """(model, item id) -> that model's generations of the item's question variants, for known items."""
    out: dict[tuple[str, str], list[Generation]] = {}
    for g in generations:
        if g.item_id in items and is_question_variant(g.variant):
            out.setdefault((g.model, g.item_id), []).append(g)
    return out
