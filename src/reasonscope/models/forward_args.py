"""Helpers for running a transformers model's forward directly (label log-probabilities, the attack).

Whether the forward takes an optional argument, the name of its key/value cache argument and output, a
copy of a key/value cache for several rows, and a cache narrowed to some of its rows.

transformers 5.24 renamed the forward's ``past_key_values`` argument and output to ``cache`` (the old
name is deprecated, removed in 5.40); :func:`cache_argument` and :func:`output_cache` read either.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any


def forward_takes(model: Any, name: str) -> bool:
    """Whether ``model.forward`` has a parameter ``name`` (e.g. ``logits_to_keep``, ``past_key_values``).

    False when the model has no inspectable forward.
    """
    forward = getattr(model, "forward", None)
    try:
        return forward is not None and name in inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False


def cache_argument(model: Any) -> str | None:
    """The name under which ``model.forward`` takes a key/value cache.

    ``cache`` (transformers 5.24 and later), ``past_key_values`` (earlier), or None when it takes neither.
    """
    for name in ("cache", "past_key_values"):
        if forward_takes(model, name):
            return name
    return None


def output_cache(output: Any) -> Any:
    """The key/value cache a forward returned (``use_cache=True``).

    ``output.cache`` (transformers 5.24 and later) or ``output.past_key_values``.
    """
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def cache_for_rows(cache: Any, rows: int) -> Any:
    """A copy of a key/value cache of one row, repeated for ``rows`` rows.

    The original is left as it was (a forward appends to the cache it is given).
    """
    fresh = copy.deepcopy(cache)
    if rows > 1:
        fresh.batch_repeat_interleave(rows)
    return fresh


def select_cache_rows(cache: Any, rows: Any) -> Any:
    """The key/value cache of some of its rows only (``rows``: a tensor of row indices, in the order wanted).

    A :class:`transformers.Cache` is narrowed in place (``batch_select_indices``) and returned; the legacy per-layer
    tuples of older transformers are indexed into new tuples. Each kept row's keys and values are those it had.
    """
    if hasattr(cache, "batch_select_indices"):
        cache.batch_select_indices(rows)
        return cache
    return tuple(tuple(t[rows] for t in layer) for layer in cache)
