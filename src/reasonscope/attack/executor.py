"""Where the white-box attack work runs: ``local`` (this process) or ``ray``.

Ray (``pip install 'reasonscope[ray]'``) runs ``workers`` Ray actors, one GPU each when the cluster has GPUs
(else one CPU each), each loading the target model and the meaning filter once; items are handed out
as actors free up and results are yielded as they finish, so the caller commits each at once.
``RAY_ADDRESS`` connects to an existing cluster.

``local`` takes the items ``batch_size`` at a time (the model's setting, else :data:`DECODE_ROWS`): their
clean chains are decoded as one batch, then each item's methods search one after the other, and the perturbed
chains of consecutive items are decoded together, as many items as fit in ``batch_size`` rows (one row per
method: 10 items with the three methods at 32), decoded as soon as the next item's would not fit, their records
yielded then. A crash loses at most the searches of the items whose chains were to be decoded together, and their
batch's clean chains. A Ray actor attacks one item at a time, clean chain included.

The per-item work (:func:`reasonscope.attack.item.search_item` and :func:`reasonscope.attack.item.finish_items`,
or the functions given as ``search`` and ``finish``) lives outside the family module, which calls this one: there
is no import cycle.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from ..shared_settings import ModelConfig
from ..types import Item
from .item import SearchedItem, finish_items, search_item
from .settings import AttackConfig, AttackSettings

DECODE_ROWS = 32
"""Rows the attack decodes together on torch when the model's settings name no ``batch_size``.

Its own number, not the model's generation batch (which for the embedded SmolLM2 follows the runtime it generates
on), so that the attack's batches do not depend on which runtimes are installed. Measured on the embedded SmolLM2
(``benchmarks/attack_speed.py --regeneration``): the perturbed chains of 8 items (24 rows) decoded together, stopped
rows leaving the batch, took 0.92 s per item against 1.96 s item by item with every row kept to the last step.
"""


def make_attacker(model_cfg: ModelConfig, cfg: AttackConfig, settings: AttackSettings):
    """Load the target model (and the meaning filter, when a method needs it) into an :class:`Attacker`.

    Raises:
        RuntimeError: The model's requirements are missing (the reason is the message).
    """
    from ..models.registry import create_model
    from .attacker import Attacker

    lm = create_model(model_cfg)
    why = lm.missing_requirements()
    if why:
        raise RuntimeError(why)
    lm.load()
    similarity = None
    if cfg.min_similarity is not None and {"token", "random"} & set(cfg.methods):
        from ..scorers.similarity import EmbeddingCosine

        similarity = EmbeddingCosine(cfg.similarity_model)
    return Attacker(lm.model, lm.tokenizer, settings, similarity=similarity,
                    batch_size=model_cfg.batch_size or DECODE_ROWS)


# (attacker, item, item_key, methods, clean=None) -> the item's searches, its chains not decoded yet
SearchItem = Callable[..., SearchedItem]
FinishItems = Callable[..., list[dict]]  # (attacker, searched items) -> their white-box records, in order


def attack_items(model_cfg: ModelConfig, items: list[tuple[str, Item]], cfg: AttackConfig, settings: AttackSettings,
                 *, executor: str = "local", search: SearchItem = search_item,
                 finish: FinishItems = finish_items) -> Iterator[tuple[str, dict]]:
    """Yield ``(item key, record)`` as each item's attack finishes.

    ``search(attacker, item, key, methods, clean=)`` runs an item's searches (locally with its clean chain from
    its batch) and ``finish(attacker, searched)`` decodes the perturbed chains of several searched items together
    into their records (module docstring); a Ray actor does both for one item at a time.
    """
    if executor == "local":
        attacker = make_attacker(model_cfg, cfg, settings)
        for start in range(0, len(items), attacker.batch_size):
            batch = items[start:start + attacker.batch_size]
            cleans = attacker.answer_first_many([attacker.layout_for(item.input) for _, item in batch])
            pending: list[SearchedItem] = []
            for (key, item), clean in zip(batch, cleans, strict=True):
                pending.append(search(attacker, item, key, cfg.methods, clean=clean))
                # decoded as soon as the next item's chains would not fit in the rows
                if sum(len(s.perturbations) for s in pending) + len(cfg.methods) > attacker.batch_size:
                    yield from zip((s.key for s in pending), finish(attacker, pending), strict=True)
                    pending = []
            if pending:
                yield from zip((s.key for s in pending), finish(attacker, pending), strict=True)
        return
    if executor != "ray":
        raise ValueError(f"unknown executor {executor!r}; expected local or ray")
    from ..execution.executors import ray_session

    ray = ray_session()
    gpus = int(ray.cluster_resources().get("GPU", 0))
    workers = max(1, min(len(items), gpus or int(os.environ.get("REASONSCOPE_RAY_WORKERS", "2"))))

    @ray.remote(num_gpus=1 if gpus else 0, num_cpus=0 if gpus else 1)
    class AttackActor:
        def __init__(self):
            self.attacker = make_attacker(model_cfg, cfg, settings)

        def attack(self, key, item):
            return key, finish(self.attacker, [search(self.attacker, item, key, cfg.methods)])[0]

    actors = [AttackActor.remote() for _ in range(workers)]
    queue = list(items)
    running = {}
    for actor in actors:
        if queue:
            key, item = queue.pop(0)
            running[actor.attack.remote(key, item)] = actor
    while running:
        ready, _ = ray.wait(list(running), num_returns=1)
        actor = running.pop(ready[0])
        yield ray.get(ready[0])
        if queue:
            key, item = queue.pop(0)
            running[actor.attack.remote(key, item)] = actor
