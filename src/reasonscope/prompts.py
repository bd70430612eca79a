"""Prompt templates for generation.

``TEMPLATE_VERSION`` is part of every cache key: change it when the wording changes, so that old completions
are not reused for a different prompt.

The model is asked to reason step by step, one step per line, and to end with a line
``Answer: <answer>`` in a format fixed by the item's answer type; :mod:`reasonscope.text.answers`
reads that line first.
"""

from __future__ import annotations

from .types import Item

TEMPLATE_VERSION = "qa-v1"

_FORMATS = {
    "number": "the final number only (digits, no units)",
    "math": "the final answer only (a number, or a LaTeX expression such as \\frac{3}{4})",
    "boolean": "yes or no",
    "choice": "the letter of the correct option",
    "text": "a short answer",
}


def answer_format(item: Item) -> str:
    """How the model is told to write its answer for the item's answer type (a label: one of its choices)."""
    if item.answer_type == "label":
        return "one of: " + ", ".join(item.choices or [])
    return _FORMATS[item.answer_type]


def question_block(item: Item, question: str) -> str:
    """The question with its options: lettered ``A.``, ``B.``... for a choice item, listed for a label."""
    if item.answer_type == "choice" and item.choices:
        opts = "\n".join(f"{chr(65 + i)}. {c}" for i, c in enumerate(item.choices))
        return f"{question}\n\nOptions:\n{opts}"
    if item.answer_type == "label" and item.choices:
        return f"{question}\n\nPossible answers: {', '.join(item.choices)}"
    return question


def build_messages(item: Item, question: str, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The chat messages that ask ``question`` of a model: optional system prompt, then the user turn.

    The user turn asks for one reasoning step per line and a last line ``Answer: ...`` in the item's
    answer format (:func:`answer_format`).
    """
    user = (f"{question_block(item, question)}\n\n"
            "Think step by step and write each step on its own line. "
            f"On the last line write \"Answer: \" followed by {answer_format(item)}.")
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": user})
    return messages
