"""Integrated-gradients attributions (LAREV's leakage-term search), cached in the run's score cache.

Kind ``attribution`` of the store's score cache (:mod:`reasonscope.scorers.cache`): the scorer's identity
is the trained Phi_base it attributes (its folder name, which hashes everything that determines its
weights, and the folder's file fingerprint), the number of IG steps, a format version and the library
versions; an input is the pair (text, target label); the value is the token offsets and the
attributions. Rows are committed per batch, so a run killed during the attribution phase keeps every
finished batch, and a rerun (or ``information score`` after it) reads them instead of attributing again.
``reasonscope cache ls`` lists them; ``reasonscope cache clear --kind attribution`` drops them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..scorers.cache import ScoreCache, input_key, scorer_identity
from ..types import stable_hash

FORMAT = "ig-v1"
KIND = "attribution"

Attribution = tuple[list[tuple[int, int]], list[float]]


class AttributionCache:
    """The attributions of one Phi_base (``folder``) with ``n_steps`` IG steps, in ``store``'s score cache."""

    def __init__(self, store: Any, folder: str | Path, n_steps: int):
        folder = Path(folder)
        identity = scorer_identity(KIND, str(folder), {"format": FORMAT, "evaluator": folder.name,
                                                       "ig_steps": n_steps})
        self.scorer = stable_hash(identity, length=32)
        self.cache = ScoreCache(store)
        self.cache.register(self.scorer, KIND, f"integrated gradients ({n_steps} steps) on Phi_base {folder.name}",
                            identity)

    @staticmethod
    def key(text: str, target: str) -> str:
        """The cache key of one (text, target) attribution."""
        return input_key([text, target])

    def get_many(self, keys: list[str]) -> dict[str, Attribution]:
        """The cached attributions of ``keys`` (key -> (token offsets, attributions)); misses are absent."""
        found = self.cache.get_many(self.scorer, KIND, sorted(set(keys)))
        return {k: ([tuple(o) for o in offsets], attributions) for k, (offsets, attributions) in found.items()}

    def put_many(self, rows: dict[str, Attribution]) -> None:
        """Store attributions (key -> (token offsets, attributions)) in the score cache."""
        self.cache.put_many(self.scorer, KIND, {k: [[list(o) for o in offsets], attributions]
                                                for k, (offsets, attributions) in rows.items()})
