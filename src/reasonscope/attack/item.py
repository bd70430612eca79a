"""The white-box part of attacking one item.

The clean answer-first chain, its correctness, and each method's perturbed chain. It runs wherever the
executor puts it (this process or a Ray actor) and touches no store; :mod:`reasonscope.attack.scoring` caches
its records.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..types import Item
from .answers import is_correct
from .attacker import Chain

# the version of the cached per-item record: 2 = insertions redrawn until they pass the meaning filter,
# validity recorded (records of version 1 are not reused)
RECORD_VERSION = 2


def attack_item(attacker, item: Item, item_key: str, methods: list[str], clean: Chain | None = None) -> dict:
    """The white-box part for one item, as its record.

    Clean chain (``clean`` when the caller decoded it already, in a batch of items), correctness, and each
    method's perturbed chain. The methods search one after the other, then their perturbed chains are
    regenerated as one batch (:meth:`Attacker.regenerate`).
    """
    if clean is None:
        clean = attacker.answer_first(attacker.layout_for(item.input))
    record: dict[str, Any] = {"version": RECORD_VERSION, "clean": asdict(clean),
                              "correct": is_correct(clean.answer, item), "methods": {}}
    if not record["correct"] or not clean.reasoning:
        record["skipped"] = "answered incorrectly" if not record["correct"] else "empty reasoning"
        return record
    full = attacker.layout_for(item.input, clean)
    record["tokens"] = {"question": len(full.question), "answer": len(full.answer), "cot": len(full.cot),
                        "lambda": attacker.lam(full)}
    searched = [attacker.search(method, full, item_key, item.input) for method in methods]
    for res in attacker.regenerate(searched):
        record["methods"][res.method] = asdict(res)
    return record
