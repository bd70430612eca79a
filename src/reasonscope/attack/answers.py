"""Typed answers of answer-first chains: read, compare with the gold answer, compare with each other."""

from __future__ import annotations

from typing import Any

from ..text.answers import answers_match, extract_answer, parse_target
from ..types import Item


def read_answer(text: str, item: Item) -> Any:
    """The typed answer of an ``Answer:`` line (None when it cannot be read)."""
    return extract_answer(f"Answer: {text}", item.answer_type, choices=item.choices).answer


def same_answer(a: str, b: str, item: Item) -> bool:
    """Two answer texts give the same typed answer (an unreadable one never matches)."""
    x, y = read_answer(a, item), read_answer(b, item)
    return x is not None and y is not None and answers_match(x, y, item.answer_type)


def is_correct(answer_text: str, item: Item) -> bool:
    """Whether the answer text reads as the item's gold answer (an unreadable one is never correct)."""
    gold = parse_target(item.target, item.answer_type, item.choices)
    x = read_answer(answer_text, item)
    return x is not None and gold is not None and answers_match(x, gold, item.answer_type)
