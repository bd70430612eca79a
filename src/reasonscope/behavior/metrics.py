"""The six behaviour metrics of the behavioural framework (Şenol, Agrawal, Liu, *Measuring Reasoning
Quality in Large Language Models: A Multi-Dimensional Behavioral Framework*, 2026), per item. Corpus
values are means over items, except ES (see :mod:`reasonscope.behavior.efficiency`).

Notation: item i has K samples of the original question (sample 0 is the *primary* answer
``ŷ_i``) and P paraphrase completions ``ŷ_i^p``. All answers are typed extractions
(:mod:`reasonscope.text.answers`); ``match`` is typed equality.

CQ  correctness      CQ_i = 1[match(ŷ_i, y_i)]. Unparseable answers are 0 (and counted separately).
                     A failed generation (refusal, empty reply, rejected request) is no answer: left
                     out by default, 0 with ``stats.failed_generations: wrong`` (see
                     :mod:`reasonscope.behavior.family`). Range [0, 1], higher is better.
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
    if len(answers) < 2:
        return None
    pairs = list(combinations(answers, 2))
    agree = sum(1 for a, b in pairs if a is not None and b is not None and answers_match(a, b, answer_type, rel_tol))
    return agree / len(pairs)


def robustness(original_answer, paraphrase_answers: list, answer_type: str, rel_tol: float = 1e-6) -> float | None:
    if not paraphrase_answers:
        return None
    same = sum(1 for a in paraphrase_answers
               if a is not None and answers_match(a, original_answer, answer_type, rel_tol))
    return same / len(paraphrase_answers)


def coherence(contradiction_probs: list[float], n_steps: int) -> float | None:
    if n_steps == 0:
        return None
    if n_steps == 1:
        return 1.0
    return 1.0 - sum(contradiction_probs) / len(contradiction_probs)


def harmonic(a: float, b: float) -> float:
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def length_score(tokens: int | None, budget: int | None) -> float | None:
    """L_i = 1 - min(1, T_i / B); None without a token count or a budget."""
    if tokens is None or not budget:
        return None
    return 1.0 - min(1.0, tokens / budget)


def efficiency(correct: float, tokens: int | None, budget: int | None) -> float | None:
    """ES_i = H(CQ_i, L_i), the per-item reading; None without a token count or a budget."""
    length = length_score(tokens, budget)
    return None if length is None else harmonic(correct, length)


def consecutive_pairs(steps: list[str]) -> list[tuple[str, str]]:
    return list(zip(steps, steps[1:], strict=False))


def split_variants(generations: list[Generation]) -> tuple[list[Generation], list[Generation]]:
    """(the K samples of the original question in sample order, the paraphrase completions)."""
    originals = sorted((g for g in generations if g.variant == "original"), key=lambda g: g.sample)
    return originals, [g for g in generations if g.variant != "original"]


def group_by_item(generations: list[Generation], items: dict[str, Item]) -> dict[tuple[str, str], list[Generation]]:
    out: dict[tuple[str, str], list[Generation]] = {}
    for g in generations:
        if g.item_id in items and is_question_variant(g.variant):
            out.setdefault((g.model, g.item_id), []).append(g)
    return out
