"""The white-box part of attacking one item: the clean answer-first chain, its correctness, and each
method's perturbed chain. It runs wherever the executor puts it (this process or a Ray actor) and
touches no store; :mod:`reasonscope.attack.family` caches its records."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..types import Item
from .answers import is_correct

# the version of the cached per-item record: 2 = insertions redrawn until they pass the meaning filter,
# validity recorded (records of version 1 are not reused)
RECORD_VERSION = 2


def attack_item(attacker, item: Item, item_key: str, methods: list[str]) -> dict:
    """The white-box part for one item: clean chain, correctness, and each method's perturbed chain."""
    layout = attacker.layout_for(item.input)
    clean = attacker.answer_first(layout)
    record: dict[str, Any] = {"version": RECORD_VERSION, "clean": asdict(clean),
                              "correct": is_correct(clean.answer, item), "methods": {}}
    if not record["correct"] or not clean.reasoning:
        record["skipped"] = "answered incorrectly" if not record["correct"] else "empty reasoning"
        return record
    full = attacker.layout_for(item.input, clean)
    record["tokens"] = {"question": len(full.question), "answer": len(full.answer), "cot": len(full.cot),
                        "lambda": attacker.lam(full)}
    for method in methods:
        if method == "token":
            res = attacker.token_attack(full, item_key, item.input)
        elif method == "embedding":
            res = attacker.embedding_attack(full, item_key)
        else:
            res = attacker.random_attack(full, item_key, item.input)
        record["methods"][method] = asdict(res)
    return record
