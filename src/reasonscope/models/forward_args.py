"""Two helpers for running a transformers model's forward directly (label log-probabilities, the attack):
whether the forward takes an optional argument, and a copy of a key/value cache for several rows."""

from __future__ import annotations

import copy
import inspect
from typing import Any


def forward_takes(model: Any, name: str) -> bool:
    """Whether ``model.forward`` has a parameter ``name`` (e.g. ``logits_to_keep``, ``past_key_values``);
    False when the model has no inspectable forward."""
    forward = getattr(model, "forward", None)
    try:
        return forward is not None and name in inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False


def cache_for_rows(cache: Any, rows: int) -> Any:
    """A copy of a key/value cache of one row, repeated for ``rows`` rows; the original is left as it was
    (a forward appends to the cache it is given)."""
    fresh = copy.deepcopy(cache)
    if rows > 1:
        fresh.batch_repeat_interleave(rows)
    return fresh
