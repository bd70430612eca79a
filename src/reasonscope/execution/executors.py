"""Executors for per-item scoring work: ``local`` (default) and ``ray`` (``pip install 'reasonscope[ray]'``).

The model-based scoring of a run (NLI over consecutive steps, similarity over trace pairs) is a
list of independent inputs. The local executor scores them in this process. The Ray executor
starts ``workers`` Ray actors (one CPU each, or one GPU each with ``gpus_per_worker``), each of
which loads the scoring model once from its settings, splits the inputs into contiguous chunks,
scores them in parallel and returns the results in input order, so the output equals the local
executor's (up to floating-point batching effects). Both executors read and write the same score
cache (:func:`distribute`). ``ray.init`` connects to ``RAY_ADDRESS`` when
set (an existing cluster), else starts a local instance.

On a cluster the actors are spread over the nodes (Ray's ``SPREAD`` strategy). An actor whose node
dies (or whose process is killed) is restarted by Ray on a node that is still up, up to
:data:`ACTOR_RESTARTS` times, and the chunks it had not returned are sent to it again; a chunk's
result is taken once. Actors only compute scores: every model request and every write to the store
happens in the driver, so a lost node costs recomputed scores, never a request paid twice
(``tests/test_cluster_ray.py`` kills a worker node in the middle of a run).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

ACTOR_RESTARTS = 3
"""How often Ray restarts a scoring actor that died with its node or process (and re-sends its unfinished chunks)."""

def _ray():
    try:
        import ray
    except ImportError:
        raise RuntimeError("--executor ray needs Ray: pip install 'reasonscope[ray]'") from None
    return ray


def ray_session(num_cpus: int | None = None):
    """Ray, connected to ``RAY_ADDRESS`` when set (an existing cluster), else to a local instance.

    The local instance is started with ``num_cpus`` CPUs (None: all); a running Ray is reused.
    """
    ray = _ray()
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                 log_to_driver=False, ignore_reinit_error=True)
    return ray


def _make_scorer(kind: str, settings: dict[str, Any]):
    from ..scorers.nli import make_nli
    from ..scorers.settings import NLIConfig, SimilarityConfig
    from ..scorers.similarity import make_similarity

    scorer, reason = make_nli(NLIConfig(**settings)) if kind == "nli" else make_similarity(SimilarityConfig(**settings))
    if scorer is None:
        raise RuntimeError(reason)
    return scorer


class _ScorerActor:
    """Holds the scoring models of a run (loaded on first use, once per actor)."""

    def __init__(self, settings: dict[str, dict[str, Any]]):
        self.settings = settings
        self.scorers: dict[str, Any] = {}

    def _get(self, kind: str):
        if kind not in self.scorers:
            self.scorers[kind] = _make_scorer(kind, self.settings[kind])
        return self.scorers[kind]

    def contradiction(self, pairs):
        return self._get("nli").contradiction(pairs)

    def pairwise(self, a, b):
        return self._get("similarity").pairwise(a, b)


class RayPool:
    """``workers`` actors (one CPU each, or ``gpus_per_worker`` GPUs) shared by every scorer of a run.

    The actors are spread over the cluster's nodes and restarted (with their unfinished chunks) when a
    node dies (module docstring).
    """

    def __init__(self, settings: dict[str, dict[str, Any]], *, workers: int = 2, gpus_per_worker: float = 0.0):
        ray = ray_session(workers)
        actor = ray.remote(num_cpus=1, num_gpus=gpus_per_worker, max_restarts=ACTOR_RESTARTS,
                           max_task_retries=ACTOR_RESTARTS, scheduling_strategy="SPREAD")(_ScorerActor)
        self.actors = [actor.remote(settings) for _ in range(workers)]

    def map(self, method: str, *columns: Sequence) -> list:
        """Split the columns into contiguous chunks, one per actor; results in input order."""
        ray = _ray()
        n = len(columns[0])
        if n == 0:
            return []
        size = -(-n // len(self.actors))
        refs = [getattr(actor, method).remote(*(list(c[i:i + size]) for c in columns))
                for actor, i in zip(self.actors, range(0, n, size), strict=False)]
        return [x for part in ray.get(refs) for x in part]


class RayScorer:
    """A scorer with the local scorer's interface whose work runs on a :class:`RayPool`."""

    def __init__(self, pool: RayPool, description: str):
        self.pool = pool
        self.description = description

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Contradiction probability of each (premise, hypothesis) pair, computed on the pool, in order."""
        return self.pool.map("contradiction", pairs)

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        """Similarity of ``a[i]`` and ``b[i]`` for each i, computed on the pool, in input order."""
        return self.pool.map("pairwise", a, b)


def distribute(models, scorer_settings, executor: str, workers: int = 2):
    """Make the scoring models' cache misses run on Ray actors (same settings) when ``executor == 'ray'``.

    The scorers stay behind the store's score cache (:mod:`reasonscope.scorers.cache`): cached inputs
    are read in this process and only the missing ones are sent to the actors, whose results are
    committed to the same store. The pool (and Ray itself) starts on the first miss, so a fully
    cached re-run starts no Ray at all. A scoring model the runner already loaded in this process
    (it loads them while the providers answer) is dropped: the actors score instead of it.
    ``scorer_settings`` is any settings object with ``nli`` and ``similarity`` fields (a family's own
    settings); ``None`` leaves the models as they are.
    """
    if executor == "local":
        return models
    if executor != "ray":
        raise ValueError(f"unknown executor {executor!r}; expected local or ray")
    if scorer_settings is None:
        return models
    # the settings as the scorers resolved them (runtime decided once, here): the actors take them as they are
    settings = {"nli": (getattr(models.nli, "config", None) or scorer_settings.nli).model_dump(),
                "similarity": (getattr(models.sim, "config", None) or scorer_settings.similarity).model_dump()}
    pools: list[RayPool] = []

    def pool() -> RayPool:
        if not pools:
            pools.append(RayPool(settings, workers=workers))
        return pools[0]

    for scorer in (models.nli, models.sim):
        if scorer is not None:
            description = scorer.description
            scorer.use_loader(lambda d=description: RayScorer(pool(), d))  # a model loaded here is dropped
    return models
