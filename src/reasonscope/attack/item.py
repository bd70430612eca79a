"""The white-box part of attacking items.

The clean answer-first chain, its correctness, and each method's perturbed chain. It runs wherever the
executor puts it (this process or a Ray actor) and touches no store; :mod:`reasonscope.attack.scoring` caches
its records.

An item is attacked in two parts: :func:`search_item` runs the methods' searches, :func:`finish_items` decodes
the perturbed chains of one or several searched items as one batch (:meth:`Attacker.regenerate
<reasonscope.attack.attacker.Attacker.regenerate>`) and completes their records. :func:`attack_item` does both
for one item.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..types import Item
from .answers import is_correct
from .attacker import Chain, Perturbation

# the version of the cached per-item record: 2 = insertions redrawn until they pass the meaning filter,
# validity recorded (records of version 1 are not reused)
RECORD_VERSION = 2


@dataclass
class SearchedItem:
    """An item whose searches are done: its record so far and the perturbations whose chains are still to decode.

    ``perturbations`` is empty when the item is not attacked (``record["skipped"]`` says why).
    """

    key: str
    record: dict[str, Any]
    perturbations: list[Perturbation] = field(default_factory=list)


def search_item(attacker, item: Item, item_key: str, methods: list[str], clean: Chain | None = None) -> SearchedItem:
    """An item's searches: its perturbed inputs, their chains left to :func:`finish_items`.

    The clean chain (``clean`` when the caller decoded it already, in a batch of items), its correctness, and each
    method's search, one after the other.
    """
    if clean is None:
        clean = attacker.answer_first(attacker.layout_for(item.input))
    record: dict[str, Any] = {"version": RECORD_VERSION, "clean": asdict(clean),
                              "correct": is_correct(clean.answer, item), "methods": {}}
    if not record["correct"] or not clean.reasoning:
        record["skipped"] = "answered incorrectly" if not record["correct"] else "empty reasoning"
        return SearchedItem(item_key, record)
    full = attacker.layout_for(item.input, clean)
    record["tokens"] = {"question": len(full.question), "answer": len(full.answer), "cot": len(full.cot),
                        "lambda": attacker.lam(full)}
    return SearchedItem(item_key, record, [attacker.search(method, full, item_key, item.input) for method in methods])


def finish_items(attacker, searched: list[SearchedItem]) -> list[dict]:
    """The records of ``searched``, in order: every perturbed chain of these items decoded as one batch.

    The batch is split into the attacker's ``batch_size`` rows (:meth:`Attacker.answer_first_many
    <reasonscope.attack.attacker.Attacker.answer_first_many>`); each method's ``seconds`` gets the batch's wall
    time divided by its chains.
    """
    perturbations = [p for s in searched for p in s.perturbations]
    results = iter(attacker.regenerate(perturbations) if perturbations else [])
    for s in searched:
        for _ in s.perturbations:
            res = next(results)
            s.record["methods"][res.method] = asdict(res)
    return [s.record for s in searched]


def attack_item(attacker, item: Item, item_key: str, methods: list[str], clean: Chain | None = None) -> dict:
    """The white-box part for one item, as its record: :func:`search_item`, then :func:`finish_items`."""
    return finish_items(attacker, [search_item(attacker, item, item_key, methods, clean)])[0]
