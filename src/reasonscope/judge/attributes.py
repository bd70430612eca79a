"""The twelve rationale attributes, in our own words.

The twelve rationale attributes (*Rethinking Human Preference Evaluation of LLM Rationales*), in our own
words. They live in the judge layer (prompts and parsing use them); the attributes family re-exports them.

Every attribute is oriented so that **higher is better**: for hallucination and repetition the
score measures their *absence* (1 = no invented content / no needless repetition).

Arithmetic accuracy asks, as the publication's rubric does, only whether the calculations are correct; it
says nothing of a rationale without calculations, and neither do we. (Template v2 added "0 when no
calculation is performed"; the publication shows that 0 only in a judge output it lists as an error.
``benchmarks/attributes_arithmetic_definition.py`` scores rationales with and without calculations under
both wordings.)

Our wording departs from the publication's questions in form, not in what is asked: each definition is
a statement of the good case, so that "higher is better" reads directly (the publication's "Does the
rationale introduce information not present...?" is a question whose yes is bad). The departures
table of the attributes docs page lists each definition beside the publication's.
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
    "arithmetic_accuracy": "The calculations in the reasoning are carried out correctly.",
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
