"""A built-in synthetic topic-classification set (for the evidence family and its demo).

Four topics (sports, business, science, politics), each with its own vocabulary; a text is a few
template sentences filled with words drawn mostly from its topic (share ``purity``, default 0.8)
and otherwise from another topic, so that a TF-IDF logistic regression learns clear but imperfect
lexical evidence. Deterministic in ``seed``; ``metadata.type`` = "topic".
"""

from __future__ import annotations

import random

from ..types import Item

TOPICS: dict[str, list[str]] = {
    "sports": ["team", "coach", "match", "goal", "season", "league", "player", "stadium", "score", "championship",
               "striker", "referee", "tournament", "victory", "injury"],
    "business": ["market", "shares", "profit", "investor", "company", "revenue", "merger", "bank", "earnings",
                 "stock", "economy", "inflation", "startup", "quarter", "dividend"],
    "science": ["researchers", "study", "experiment", "telescope", "cells", "physics", "laboratory", "species",
                "climate", "molecule", "genome", "planet", "vaccine", "data", "fossil"],
    "politics": ["election", "minister", "parliament", "vote", "policy", "senator", "campaign", "government",
                 "treaty", "president", "law", "opposition", "reform", "coalition", "diplomat"],
}
TEMPLATES = [
    "The {a} and the {b} were discussed on Monday.",
    "Reports say the {a} changed after the {b}.",
    "A new {a} drew attention to the {b} this week.",
    "Officials linked the {a} to the {b}.",
    "Many people followed the {a} and its {b}.",
]


def topic_items(n: int = 40, seed: int = 0, purity: float = 0.8, prefix: str = "topic") -> list[Item]:
    """``n`` synthetic topic-classification items (module docstring), topics in turn.

    Args:
        n: the number of items.
        seed: seeds the texts.
        purity: the share of words drawn from the item's own topic.
        prefix: the item ids' prefix (``prefix-0``, ``prefix-1``...).

    Returns:
        Label items whose target is the topic.
    """
    rng = random.Random(seed)
    labels = list(TOPICS)
    items = []
    for i in range(n):
        label = labels[i % len(labels)]
        sentences = []
        for _ in range(rng.randint(2, 3)):
            words = []
            for _ in range(2):
                source = label if rng.random() < purity else rng.choice([t for t in labels if t != label])
                words.append(rng.choice(TOPICS[source]))
            sentences.append(rng.choice(TEMPLATES).format(a=words[0], b=words[1]))
        items.append(Item(id=f"{prefix}-{i}", input=" ".join(sentences), choices=labels, target=label,
                          answer_type="label", group="topics", metadata={"type": "topic"}))
    return items
