"""Where the white-box attack work runs: ``local`` (this process) or ``ray``.

Ray (``pip install 'reasonscope[ray]'``) runs ``workers`` Ray actors, one GPU each when the cluster has GPUs
(else one CPU each), each loading the target model and the meaning filter once; items are handed out
as actors free up and results are yielded as they finish, so the caller commits each at once.
``RAY_ADDRESS`` connects to an existing cluster.

``local`` takes the items ``batch_size`` at a time (the model's setting, default 8): their clean chains
are decoded as one batch, then each item is attacked and yielded in turn, so a crash loses at most one
item's attack and its batch's clean chains. A Ray actor attacks one item at a time, clean chain included.

The per-item work (:func:`reasonscope.attack.item.attack_item`, or the function given as ``attack``)
lives outside the family module, which calls this one: there is no import cycle.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from ..shared_settings import ModelConfig
from ..types import Item
from .item import attack_item
from .settings import AttackConfig, AttackSettings


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
    return Attacker(lm.model, lm.tokenizer, settings, similarity=similarity, batch_size=lm.batch_size)


AttackItem = Callable[..., dict]  # (attacker, item, item_key, methods, clean=None) -> the item's white-box record


def attack_items(model_cfg: ModelConfig, items: list[tuple[str, Item]], cfg: AttackConfig, settings: AttackSettings,
                 *, executor: str = "local", attack: AttackItem = attack_item) -> Iterator[tuple[str, dict]]:
    """Yield ``(item key, record)`` as each item's attack finishes.

    ``attack(attacker, item, key, methods)`` is run locally (with ``clean=``, the item's clean chain from its
    batch) or on Ray actors.
    """
    if executor == "local":
        attacker = make_attacker(model_cfg, cfg, settings)
        for start in range(0, len(items), attacker.batch_size):
            batch = items[start:start + attacker.batch_size]
            cleans = attacker.answer_first_many([attacker.layout_for(item.input) for _, item in batch])
            for (key, item), clean in zip(batch, cleans, strict=True):
                yield key, attack(attacker, item, key, cfg.methods, clean=clean)
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
            return key, attack(self.attacker, item, key, cfg.methods)

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
