"""Errors that end a request's attempts at once with a stated outcome (see :mod:`reasonscope.models.base`)."""

from __future__ import annotations


class LeftPending(RuntimeError):
    """Nothing was learnt about the model, and trying again now cannot help: the request stays pending at once.

    Not retried; its message is the reason stored with the pending request (a cross-origin redirect, a rate
    limit wait past the run's patience). Not a ``ValueError`` or ``ConnectionError``, which providers retry.
    """
