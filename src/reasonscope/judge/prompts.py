"""Judge prompt templates for the twelve attributes, on a 0-1 or a 0-10 scale (our own wording).

``TEMPLATE_VERSION`` enters the cache key of every judge call. The judge sees the question (and
context), the rationale under evaluation, the attribute definitions and the scale, and must answer
with one JSON object: ``{"<attribute>": {"score": <number>, "explanation": "<one sentence>"}, ...}``.
Higher always means better (see :mod:`reasonscope.judge.attributes`).
"""

from __future__ import annotations

from .attributes import ATTRIBUTES

# v2: arithmetic accuracy was 0 without a calculation; v3: that sentence removed (the publication's rubric)
TEMPLATE_VERSION = "judge-attributes-v3"
SCALES = {"0-1": (0.0, 1.0), "0-10": (0.0, 10.0)}


def judge_messages(question: str, rationale: str, *, scale: str = "0-1",
                   attributes: list[str] | None = None, context: str | None = None) -> list[dict[str, str]]:
    """The chat messages that ask a judge to score a rationale on each attribute.

    Args:
        question: the question the rationale answers.
        rationale: the reasoning to grade.
        scale: ``0-1`` (decimals) or ``0-10`` (whole numbers); higher is always better.
        attributes: the attributes to score; all twelve when None.
        context: extra context shown before the reasoning (such as the reference answer).

    Returns:
        A system and a user message asking for one JSON object with a score and an explanation per
        attribute.

    Raises:
        ValueError: for an unknown scale or attribute name.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; expected one of {sorted(SCALES)}")
    low, high = SCALES[scale]
    names = list(attributes or ATTRIBUTES)
    unknown = [a for a in names if a not in ATTRIBUTES]
    if unknown:
        raise ValueError(f"unknown attributes {unknown}; expected names from {sorted(ATTRIBUTES)}")
    numbers = "a number from 0 to 1 (decimals allowed)" if scale == "0-1" else "a whole number from 0 to 10"
    lines = "\n".join(f"- {a}: {ATTRIBUTES[a]}" for a in names)
    example = ", ".join(f'"{a}": {{"score": <{low:g}-{high:g}>, "explanation": "..."}}' for a in names[:2])
    system = ("You grade the reasoning written by another model. Judge only the reasoning shown, attribute by "
              "attribute, and answer with a single JSON object and nothing else.")
    user = (f"Question:\n{question}\n\n" + (f"Context:\n{context}\n\n" if context else "")
            + f"Reasoning to grade:\n{rationale}\n\n"
            f"Give each attribute {numbers}; higher is always better.\n{lines}\n\n"
            f"Answer format: {{{example}, ...}} with every attribute listed above.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


PAIRWISE_VERSION = "judge-pairwise-v1"


def pairwise_messages(question: str, first: str, second: str) -> list[dict[str, str]]:
    """Ask which of two answers to the same question reasons better overall.

    The caller runs it twice, with the answers swapped, to cancel position bias
    (:func:`reasonscope.judge.parse.combine_orders`).
    """
    system = ("You compare two answers written by other models to the same question. Judge the quality of "
              "their reasoning, not their length or style, and answer with a single JSON object and nothing else.")
    user = (f"Question:\n{question}\n\nAnswer 1:\n{first}\n\nAnswer 2:\n{second}\n\n"
            'Which answer reasons better? Answer format: {"winner": "1" | "2" | "tie", '
            '"explanation": "<one sentence>"}')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


REASONING_VERSION = "judge-reasoning-v2"


def reasoning_check_messages(question: str, answer: str, reasoning: str) -> list[dict[str, str]]:
    """Ask whether a chain of thought is correct and supports the answer (the MATCHA outcome check).

    The same prompt judges the clean and the perturbed chain, so no reference chain is shown.
    """
    system = ("You check the reasoning written by another model. Decide only whether the reasoning is correct "
              "and actually supports the given answer, and answer with a single JSON object and nothing else.")
    user = (f"Question:\n{question}\n\nAnswer given: {answer}\n\nReasoning to check:\n{reasoning}\n\n"
            'Is every step of the reasoning correct, and does it support the answer? Answer format: '
            '{"correct": true | false, "explanation": "<one sentence>"}')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def same_meaning_messages(original: str, perturbed: str) -> list[dict[str, str]]:
    """Ask whether a perturbed question still asks the same thing (stray words aside)."""
    system = "You compare two versions of a question. Answer with a single JSON object and nothing else."
    user = (f"Original question:\n{original}\n\nEdited question:\n{perturbed}\n\nIgnoring stray or meaningless "
            "words, does the edited question ask for the same thing with the same facts and numbers? Answer format: "
            '{"same": true | false}')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
