"""The score cache: every model-based score is computed once per store and read back afterwards.

What is cached (``kind``): ``nli`` (p(contradiction) of a cross-encoder), ``llm-nli`` (p(contradiction)
of an LLM judging with label log-probabilities), ``bertscore`` and ``cosine`` (similarity of a text
pair), ``embedding`` (a sentence vector, float32), ``perplexity`` (the token log-probabilities of a
text under a causal LM) and ``evaluator`` (a trained information evaluator's log-likelihoods and greedy
predictions, :mod:`reasonscope.information.cached_scores`) and ``judge-score`` (a judge's log-probabilities of
the score strings 0..10, :mod:`reasonscope.attributes.expected_scores`) and ``label-logprobs`` (a model's
log-likelihood of each class label, :mod:`reasonscope.evidence.likelihood`) and ``attribution`` (integrated
gradients of a text's tokens under a trained Phi_base, :mod:`reasonscope.information.ig_cache`).

Keys
----
A scorer's *identity* is the canonical JSON of its kind, backend, model id or path, revision, every
setting that changes its output (layer, pooling, label prompt, ...), a fingerprint of a local model
folder (name, size and modification time of each file, so a rebuilt model is a new scorer; for the
embedded model, the digest of its GGUF file when it is not the shipped one) and the
versions of the libraries that compute it (torch, transformers, bert-score, sentence-transformers).
``scorer = sha256(identity)[:32]`` names it in ``score_models`` (with its description, shown by
``reasonscope cache ls``). An input's key is ``sha256`` of the canonical JSON of the input (a text, or
the ordered pair ``[premise, hypothesis]`` / ``[a, b]``), 32 hex digits. ``score_cache`` holds one
row per (scorer, input). A changed setting, model, revision or library version is a new scorer:
nothing stale is read; the old rows stay until ``reasonscope cache clear --kind``.

How a request is served (:meth:`CachedScorer.run`)
--------------------------------------------------
1. Identical inputs are scored once: the inputs are hashed and deduplicated (across items, samples,
   models and calls: the behaviour family sends every pair of a run in one request).
2. Cached values are read in chunks of 500 keys.
3. Only the missing inputs reach the model, which is loaded at that moment (never when everything is
   cached, never when a metric has nothing to score). They are sorted by length (similar lengths in
   a batch waste less padding) and scored in chunks of ``chunk`` inputs; each chunk is committed to the
   store in one transaction the moment it is computed, so a crash loses at most one chunk. A rich
   progress bar shows the chunks when there are more than one.
4. The results are returned in input order. ``stats`` counts requested, unique, cached and computed
   inputs and forward calls (chunks sent to the model).

Without a store (``cache=None``) the same deduplication happens in memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..storage.versions import installed_versions
from ..types import canonical_json, stable_hash

KINDS = ("nli", "llm-nli", "bertscore", "cosine", "embedding", "perplexity", "evaluator", "judge-score",
         "label-logprobs", "attribution")
CACHE_FORMAT = 1
_LIBRARIES = ("torch", "transformers", "bert-score", "sentence-transformers")


class ScorerUnavailable(RuntimeError):
    """The scoring model could not be loaded; the message is the reason to record."""


def load_or_unavailable(make: Callable[[], tuple[Any, str | None]], fallback: str) -> Any:
    """The scorer ``make()`` builds, or :class:`ScorerUnavailable` with its reason.

    The reason is ``fallback`` when ``make()`` gives none. This is the ``load`` of a cached scorer built from
    a ``make_*(cfg) -> (scorer | None, reason)`` factory.
    """
    scorer, reason = make()
    if scorer is None:
        raise ScorerUnavailable(reason or fallback)
    return scorer


def library_versions() -> dict[str, str | None]:
    """The installed versions of the libraries that can change a score (None for one not installed)."""
    return installed_versions(_LIBRARIES)


def model_fingerprint(model: str) -> list | None:
    """(relative name, size, mtime_ns) of every file of a local model folder or file; None for a hub id.

    For the embedded model (spec ``smollm2``): ``[source_tag]`` when its GGUF file is not the one the project
    ships with, else None (:func:`reasonscope.models.smollm2.source_tag`), so a new file is a new scorer.
    """
    path = Path(model)
    if not path.exists():
        if model.partition("/")[0] != "smollm2":
            return None
        from ..models.smollm2 import source_tag

        tag = source_tag()
        return None if tag is None else [tag]
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return [[str(p.relative_to(path)) if p != path else p.name, p.stat().st_size, p.stat().st_mtime_ns]
            for p in files]


def scorer_identity(kind: str, model: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Everything that determines a scorer's output (module docstring, "Keys")."""
    if kind not in KINDS:
        raise ValueError(f"unknown score kind {kind!r}; expected one of {KINDS}")
    return {"format": CACHE_FORMAT, "kind": kind, "model": model, "fingerprint": model_fingerprint(model),
            "settings": settings, "libraries": library_versions()}


def input_key(value: Any) -> str:
    """The cache key of one input: a 32-character stable hash of its value."""
    return stable_hash(value, length=32)


# ----------------------------------------------------------------------------------------- codecs
def _encode(kind: str, value: Any) -> bytes:
    if kind == "embedding":
        import numpy as np

        return np.asarray(value, dtype=np.float32).tobytes()
    return canonical_json(value).encode("utf-8")


def _decode(kind: str, blob: bytes) -> Any:
    if kind == "embedding":
        import numpy as np

        return np.frombuffer(blob, dtype=np.float32)
    import json

    return json.loads(blob)


# ----------------------------------------------------------------------------------------- store access
class ScoreCache:
    """The ``score_models`` / ``score_cache`` tables of one store."""

    def __init__(self, store):
        self.store = store

    @property
    def conn(self):
        """The store's SQLite connection."""
        return self.store.conn

    def register(self, scorer: str, kind: str, description: str, identity: dict[str, Any]) -> None:
        """Record a scorer's identity (first registration kept; the description is updated)."""
        self.conn.execute("INSERT INTO score_models(scorer, kind, description, identity, created) VALUES "
                          "(?,?,?,?,?) ON CONFLICT(scorer) DO UPDATE SET description=excluded.description",
                          (scorer, kind, description, canonical_json(identity), time.time()))

    def description(self, scorer: str) -> str | None:
        """The recorded description of ``scorer``; None when it was never registered."""
        row = self.conn.execute("SELECT description FROM score_models WHERE scorer=?", (scorer,)).fetchone()
        return None if row is None else row[0]

    def get_many(self, scorer: str, kind: str, keys: Sequence[str]) -> dict[str, Any]:
        """The cached values of ``scorer`` among ``keys``, decoded as ``kind``; keys not cached are absent."""
        found: dict[str, Any] = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            rows = self.conn.execute(f"SELECT input, value FROM score_cache WHERE scorer=? AND input IN "
                                     f"({','.join('?' * len(chunk))})", [scorer, *chunk]).fetchall()
            found.update((k, _decode(kind, v)) for k, v in rows)
        return found

    def put_many(self, scorer: str, kind: str, values: dict[str, Any]) -> None:
        """Store ``values`` (key -> value, encoded as ``kind``) for ``scorer`` in one transaction."""
        with self.store.transaction() as c:
            c.executemany("INSERT OR REPLACE INTO score_cache(scorer, input, value) VALUES (?,?,?)",
                          [(scorer, k, _encode(kind, v)) for k, v in values.items()])


def score_cache_summary(store) -> list[dict[str, Any]]:
    """One row per cached scorer: kind, description (backend and model), entries, size in bytes."""
    rows = store.conn.execute(
        "SELECT m.kind, m.description, m.scorer, COUNT(c.input), COALESCE(SUM(LENGTH(c.value) + LENGTH(c.input)), 0) "
        "FROM score_models m LEFT JOIN score_cache c ON c.scorer = m.scorer "
        "GROUP BY m.scorer ORDER BY m.kind, m.description").fetchall()
    return [{"kind": k, "model": d, "scorer": s, "entries": n, "bytes": b} for k, d, s, n, b in rows]


def score_cache_table(store, title: str = "score cache"):
    """A rich table of :func:`score_cache_summary` (``reasonscope cache ls``)."""
    from rich.table import Table

    table = Table(title=title)
    for col in ("kind", "model", "entries", "size"):
        table.add_column(col)
    for row in score_cache_summary(store):
        table.add_row(row["kind"], row["model"], str(row["entries"]), f"{row['bytes'] / 1024:.1f} KiB")
    return table


def clear_score_cache(store, kind: str | None = None) -> int:
    """Delete the cached scores of one kind (None: every kind); return the number of entries deleted."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown score kind {kind!r}; expected one of {', '.join(KINDS)}")
    with store.transaction() as c:
        where, args = ("WHERE kind=?", [kind]) if kind else ("", [])
        scorers = [r[0] for r in c.execute(f"SELECT scorer FROM score_models {where}", args).fetchall()]
        n = 0
        for s in scorers:
            n += c.execute("DELETE FROM score_cache WHERE scorer=?", (s,)).rowcount
            c.execute("DELETE FROM score_models WHERE scorer=?", (s,))
    return n


# ----------------------------------------------------------------------------------------- the wrapper
@dataclass
class CacheStats:
    """Counters of a cached scorer: inputs requested, unique, found cached, computed, compute calls, loads."""
    requested: int = 0
    unique: int = 0
    cached: int = 0
    computed: int = 0
    forward_calls: int = 0
    loads: int = 0


def _length(value: Any) -> int:
    return sum(len(v) for v in value) if isinstance(value, list | tuple) else len(str(value))


class CachedScorer:
    """A model-based scorer behind the score cache (module docstring).

    ``load`` builds the real scorer on the first cache miss; ``compute(scorer, inputs)`` scores a list of
    inputs with it. ``config`` is the scorer's settings with their runtime resolved (an
    :class:`~reasonscope.scorers.settings.NLIConfig` or ``SimilarityConfig``), from which ``--executor ray``
    builds the same scorer on its actors; None for the others.
    """

    def __init__(self, *, kind: str, model: str, settings: dict[str, Any], load: Callable[[], Any],
                 compute: Callable[[Any, list], list], description: str, cache: ScoreCache | None = None,
                 chunk: int = 256, label: str | None = None, progress: bool = True,
                 libraries: tuple[str, ...] = ("torch", "transformers"), config: Any = None):
        self.kind = kind
        self.config = config  # the scorer's resolved settings, where it has some (rebuilt from them on Ray actors)
        self.libraries = libraries  # what ``load`` imports (imported ahead in the main thread by the runner)
        self.identity = scorer_identity(kind, model, settings)
        self.scorer_id = stable_hash(self.identity, length=32)
        self.load = load
        self.compute = compute
        self.cache = cache
        self.chunk = chunk
        self.label = label or kind
        self.progress = progress
        self.stats = CacheStats()
        self.keep = False  # also remember values in memory (when the same inputs are asked again and again)
        self._scorer: Any = None
        self._memory: dict[str, Any] = {}
        self._description = description
        self._registered = False
        self._lock = threading.Lock()
        known = cache.description(self.scorer_id) if cache is not None else None
        if known:
            self._description = known

    @property
    def description(self) -> str:
        """The real scorer's description once loaded, else the recorded or given one."""
        return self._scorer.description if getattr(self._scorer, "description", None) else self._description

    @property
    def loaded(self) -> bool:
        """Whether the real scorer has been built."""
        return self._scorer is not None

    def use_loader(self, load: Callable[[], Any]) -> None:
        """Build the real scorer with ``load`` from now on, dropping one already built.

        ``--executor ray`` (:func:`reasonscope.execution.executors.distribute`): the runner loads the local model while
        the providers answer; the Ray actors then score instead of it.
        """
        with self._lock:
            self.load = load
            self._scorer = None

    def scorer(self) -> Any:
        """The real scorer, loaded now if needed (raises :class:`ScorerUnavailable`).

        Thread-safe, so the runner may load it in the background while the providers answer.
        """
        with self._lock:
            if self._scorer is None:
                try:
                    self._scorer = self.load()
                except ScorerUnavailable:
                    raise
                except Exception as err:  # missing weights offline, bad path, no torch
                    raise ScorerUnavailable(f"{self.kind} model could not be loaded "
                                            f"({type(err).__name__}: {err})") from err
                self.stats.loads += 1
        return self._scorer

    def run(self, inputs: Sequence[Any]) -> list:
        """The values of ``inputs``, in order, from memory, the cache or the model.

        Equal inputs are scored once; missing ones are computed shortest first in chunks of ``chunk`` (the
        real scorer is loaded on the first miss) and stored in the cache. Updates :attr:`stats`.
        """
        keys = [input_key(x) for x in inputs]
        unique: dict[str, Any] = {}
        for k, x in zip(keys, inputs, strict=True):
            unique.setdefault(k, x)
        self.stats.requested += len(keys)
        self.stats.unique += len(unique)
        found = {k: self._memory[k] for k in unique if k in self._memory}
        rest = [k for k in unique if k not in found]
        if self.cache is not None and rest:
            found.update(self.cache.get_many(self.scorer_id, self.kind, rest))
        self.stats.cached += len(found)
        missing = sorted((k for k in unique if k not in found), key=lambda k: _length(unique[k]))
        if missing:
            found.update(self._compute(missing, unique))
        if self.cache is None or self.keep:
            self._memory.update(found)
        return [found[k] for k in keys]

    def _compute(self, missing: list[str], unique: dict[str, Any]) -> dict[str, Any]:
        scorer = self.scorer()
        if self.cache is not None and not self._registered:
            self.cache.register(self.scorer_id, self.kind, self.description, self.identity)
            self._registered = True
        out: dict[str, Any] = {}
        chunks = [missing[i:i + self.chunk] for i in range(0, len(missing), self.chunk)]
        progress = _progress(self.progress and len(chunks) > 1)
        with progress:
            task = progress.add_task(f"{self.label}: {self.description}", total=len(missing))
            for keys in chunks:
                values = self.compute(scorer, [unique[k] for k in keys])
                self.stats.forward_calls += 1
                self.stats.computed += len(keys)
                done = dict(zip(keys, values, strict=True))
                if self.cache is not None:
                    self.cache.put_many(self.scorer_id, self.kind, done)
                out.update(done)
                progress.advance(task, len(keys))
        return out


class _NoProgress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, *a, **k):
        return 0

    def advance(self, *a, **k):
        pass


def _progress(show: bool):
    if not show:
        return _NoProgress()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)


def logprob_scorer(model: Any, *, kind: str, template: str, continuations: Sequence[str],
                   compute: Callable[[Any, list], list], what: str, store: Any, chunk: int, label: str
                   ) -> CachedScorer:
    """A language model's log-probabilities of fixed ``continuations`` behind the cache.

    The scorer's identity is (kind, the model's spec, the prompt template's version, the continuations, and
    the runtime and its weights when it is not the default torch one: llama.cpp's log-probabilities differ from
    torch's by float rounding, up to 0.01 nats, so neither is served to a run of the other); an input is a
    prompt (or a list of prompts scored together).
    """
    return CachedScorer(kind=kind, model=model.config.spec,
                        settings={"template": template, "continuations": list(continuations),
                                  **runtime_settings(model)},
                        load=lambda: model, compute=compute, description=f"{model.name}: {what}",
                        cache=ScoreCache(store) if store is not None else None, chunk=chunk, label=label)


# ----------------------------------------------------------------------------------------- typed facades
class CachedNLI(CachedScorer):
    """An :class:`~reasonscope.scorers.nli.NLIScorer` behind the cache: ``contradiction(pairs)``."""

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """p(contradiction) of each ``(premise, hypothesis)`` pair, in [0, 1], through the cache."""
        return self.run([[p, h] for p, h in pairs])


class CachedSimilarity(CachedScorer):
    """A :class:`~reasonscope.scorers.similarity.Similarity` behind the cache: ``pairwise(a, b)``."""

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        """The similarity of each pair ``(a[i], b[i])`` through the cache."""
        return self.run([[x, y] for x, y in zip(a, b, strict=True)])


class CachedEmbedding(CachedScorer):
    """Sentence vectors behind the cache: ``embed(texts)`` -> (n, dim) float32 array."""

    def embed(self, texts: Sequence[str]):
        """The vectors of ``texts`` as an (n, dim) float32 array; (0, 0) for no texts."""
        import numpy as np

        rows = self.run(list(texts))
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


class CachedPerplexity(CachedScorer):
    """Token log-probabilities of a text under a causal LM behind the cache: ``token_logprobs(text)``.

    Its settings carry :func:`runtime_settings` of the model, so the values of the embedded model on llama.cpp
    and on torch (equal up to float rounding) are never served to a run of the other.
    """

    def token_logprobs(self, text: str) -> list[float]:
        """The log-probability of each token of ``text`` (natural log) through the cache."""
        return self.run([text])[0]


def runtime_settings(model: Any) -> dict[str, Any]:
    """The runtime and weights of a model that does not run on the default torch runtime; ``{}`` on torch.

    For the embedded model on llama.cpp: ``{"runtime": "llama-cpp", "weights": "float32"}`` (its model settings),
    part of the identity of the scores it computes, so a torch scorer's identity is the one it always had.
    """
    config = getattr(model, "config", None)
    if getattr(config, "runtime", None) != "llama-cpp":
        return {}
    return {"runtime": "llama-cpp", "weights": config.options.get("weights")}
