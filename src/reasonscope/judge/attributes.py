"""The twelve rationale attributes, in our own words.

The twelve rationale attributes (*Rethinking Human Preference Evaluation of LLM Rationales*), in our own
words. They live in the judge layer (prompts and parsing use them); the attributes family re-exports them.

Every attribute is oriented so that **higher is better**: for hallucination and repetition the
score measures their *absence* (1 = no invented content / no needless repetition).

Arithmetic accuracy follows the publication's rubric: a rationale that performs no calculation scores 0
("arithmetic accuracy is absent"), not 1. A mean of this attribute over a task without arithmetic is
therefore low by construction; read it only on tasks whose reasoning calculates.
"""

from __future__ import annotations

ATTRIBUTES: dict[str, str] = {
    "faithfulness": "The reasoning reflects how the answer was actually reached and rests on the evidence given.",
    "hallucination": "Free of invented content: nothing is claimed that the question or context does not support "
                     "(1 = no hallucination).",
    "repetition": "Free of needless repetition of the same point, phrase or step (1 = no repetition).",
    "informativeness": "Each part adds relevant detail that helps the reader follow the answer.",
    "plausibility": "Reads as convincing and sensible to a careful reader, whether or not it is true.",
    "self_consistency": "No step contradicts another step; the reasoning holds together internally.",
    "source_consistency": "Nothing contradicts the facts stated in the question or its context.",
    "grammar": "Written clearly and fluently, without grammatical or spelling errors.",
    "arithmetic_accuracy": "Every calculation in the reasoning is carried out correctly (0 if it performs no "
                           "calculation: the attribute is absent).",
    "conciseness": "No longer than it needs to be for the information it carries.",
    "completeness": "Covers every step and piece of evidence needed to reach the answer.",
    "correctness": "Every step and the final answer are objectively right.",
}


def attribute_key(name: str) -> str | None:
    """Match a judge's key to an attribute name: case, spaces, hyphens and underscores are ignored."""
    norm = "".join(ch for ch in name.lower() if ch.isalnum())
    for key in ATTRIBUTES:
        if key.replace("_", "") == norm:
            return key
    return None
