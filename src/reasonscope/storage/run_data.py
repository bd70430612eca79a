"""Reading a run back from the store: items and interpreted generations.

:func:`load_run_data` joins ``run_generations`` with the request cache and the items, and
interprets every completion with :func:`interpret`: think blocks set aside, answer extracted by
type, trace split into steps. Interpretation happens at read time, so a fix to extraction applies
to old runs without calling any model again.

:func:`iter_run_chunks` reads the same run in chunks of whole items (every model's generations of an
item in one chunk, at most :data:`CHUNK_ITEMS` items each), so that the behaviour family and the
report hold one chunk at a time: their peak memory does not grow with the number of items.
:func:`load_if_small` reads a run that fits in one chunk at once, and :func:`run_chunks` gives the chunks
of a run, loaded or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..text.answers import Extraction, answers_match, extract_answer, parse_target
from ..text.steps import split_steps
from ..types import Generation, Item
from .store import Store


@dataclass
class RunData:
    """A run (or a chunk of one) as scoring and reports read it: run record, items, interpreted generations.

    ``missing`` counts linked requests with no stored completion (pending, or the run was interrupted);
    ``missing_by_model`` splits it by model.
    """

    run: dict[str, Any]
    items: dict[str, Item]  # "dataset/item id" -> item (only items this run generated for)
    generations: list[Generation]
    missing: int = 0  # linked requests with no stored completion: pending, or the run was interrupted
    datasets: list[str] = field(default_factory=list)
    missing_by_model: dict[str, int] = field(default_factory=dict)

    @property
    def models(self) -> list[str]:
        """The models of the generations, in order of first appearance."""
        seen: dict[str, None] = {}
        for g in self.generations:
            seen.setdefault(g.model, None)
        return list(seen)


def item_key(item: Item) -> str:
    """The key of an item in :attr:`RunData.items`: ``"<dataset>/<item id>"``."""
    return f"{item.group}/{item.id}"


def interpret(row: dict[str, Any], item: Item) -> Generation:
    """A stored completion row read for its item: the answer extracted, trace and steps split.

    A row with an error has no answer and the reason ``generation failed: <error>``; a completion that
    stopped at its token limit is marked truncated.
    """
    text = row.get("text") or ""
    truncated = row.get("finish_reason") in ("length", "max_tokens")
    error = row.get("error")
    ext: Extraction = extract_answer(text, item.answer_type, choices=item.choices, truncated=truncated,
                                     answer_pattern=item.metadata.get("answer_pattern"))
    answer, reason = ext.answer, ext.reason
    if error:
        answer, reason = None, f"generation failed: {error}"
    gen = Generation(
        model=row["model"], item_id=item_key(item), variant=row.get("variant") or "original",
        sample=int(row.get("sample") or 0), raw_text=text, answer=answer, answer_reason=reason, trace=ext.trace,
        think=ext.think, steps=split_steps(ext.trace) if not error else [],
        prompt_tokens=row.get("prompt_tokens"), completion_tokens=row.get("completion_tokens"),
        max_tokens=row.get("max_tokens"), latency_s=row.get("latency_s"), cost_usd=row.get("cost_usd"),
        finish_reason=row.get("finish_reason"), truncated=truncated, error=error,
        source=row.get("source") or "generated", key=row.get("key"))
    return gen


def is_correct(gen: Generation, item: Item, rel_tol: float = 1e-6) -> bool:
    """Whether the generation's answer matches the item's gold answer.

    Numbers match within the relative tolerance ``rel_tol``; a label item with several gold ``labels`` in its
    metadata matches any of them. A failed generation or one without an answer is never correct.
    """
    if gen.error or gen.answer is None:
        return False
    gold = parse_target(item.target, item.answer_type, item.choices)
    if item.answer_type == "label" and isinstance(item.metadata.get("labels"), list):
        return any(answers_match(gen.answer, lab, "label") for lab in item.metadata["labels"])
    return answers_match(gen.answer, gold, item.answer_type, rel_tol)


def _run_data(run: dict[str, Any], rows: Iterable[dict[str, Any]],
              item_of: Callable[[dict[str, Any]], Item | None]) -> RunData:
    """The rows of linked requests as :class:`RunData`.

    Rows whose item is not stored are left out, rows without a stored completion are counted as missing, the
    others interpreted.
    """
    items: dict[str, Item] = {}
    gens: list[Generation] = []
    missing: dict[str, int] = {}
    for row in rows:
        key = f"{row['dataset']}/{row['item_id']}"
        item = items.get(key) or item_of(row)
        if item is None:
            continue
        items[key] = item
        if not row["done"]:
            missing[row["model"]] = missing.get(row["model"], 0) + 1
            continue
        gens.append(interpret(row, item))
    return RunData(run=run, items=items, generations=gens, missing=sum(missing.values()),
                   datasets=sorted({it.group for it in items.values()}), missing_by_model=missing)


def load_run_data(store: Store, run_id: str | None = None) -> RunData:
    """The whole run, generations ordered by model, dataset, item, variant, sample."""
    run = store.run(run_id)
    stored = {f"{ds}/{it.id}": it for ds, lst in store.items().items() for it in lst}
    return _run_data(run, store.run_generations(run["run_id"]),
                     lambda row: stored.get(f"{row['dataset']}/{row['item_id']}"))


CHUNK_ITEMS = 1000
"""Items per chunk when a run is read chunk by chunk (a run with more items than this is never held in
memory whole by the behaviour family or the report)."""


def iter_run_chunks(store: Store, run_id: str | None = None,
                    items_per_chunk: int | None = None) -> Iterator[RunData]:
    """The run as :class:`RunData` chunks of at most ``items_per_chunk`` whole items, in (dataset, id) order.

    ``items_per_chunk`` defaults to :data:`CHUNK_ITEMS`. Within a chunk, generations are ordered by item,
    model, variant, sample. Each chunk's ``missing`` counts its own items only. Each chunk is one query
    (:meth:`Store.run_generations_between`), so the store may be written between chunks.
    """
    size = items_per_chunk or CHUNK_ITEMS
    run = store.run(run_id)
    keys = store.run_item_keys(run["run_id"])
    for start in range(0, len(keys), size):
        part = keys[start:start + size]
        yield _run_data(run, store.run_generations_between(run["run_id"], part[0], part[-1]),
                        lambda row: Item.model_validate_json(row["item"]) if row["item"] is not None else None)


def load_if_small(store: Store, run_id: str | None = None) -> RunData | None:
    """The whole run (:func:`load_run_data`) when it has at most :data:`CHUNK_ITEMS` items, else None."""
    run = store.run(run_id)
    if len(store.run_item_keys(run["run_id"])) <= CHUNK_ITEMS:
        return load_run_data(store, run["run_id"])
    return None


def run_chunks(store: Store, run_id: str | None = None, data: RunData | None = None) -> Iterable[RunData]:
    """``[data]`` when the run is already in memory, else :func:`iter_run_chunks`.

    The chunks are then read lazily, one at a time.
    """
    if data is not None:
        return [data]
    return iter_run_chunks(store, run_id)
