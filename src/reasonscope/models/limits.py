"""Per-model request and token rate limits (``rpm``, ``tpm`` in the model's settings), with aiolimiter.

Concurrency bounds how many requests are in flight; these bound how fast they are sent.

``rpm``  Requests are spaced evenly, one every ``60 / rpm`` seconds (a leaky bucket of capacity 1),
         so no burst exceeds the rate. Every attempt counts, retries included: providers count
         them too.
``tpm``  A leaky bucket of ``tpm`` tokens draining at ``tpm / 60`` tokens per second. Before a request
         is sent its prompt is charged at ``ceil(characters / 4)`` tokens (the provider's count is not
         known yet). A reply's completion tokens as the provider reports them, plus its prompt tokens
         beyond the estimate, are owed and paid by the next request before it is sent: a reply is never
         held back (it is stored at once), the requests after it wait. A reply that reports no usage
         owes nothing. A charge larger than the whole bucket is paid in bucket-sized parts.

aiolimiter binds a limiter to the event loop it first runs in; each generation pass runs its own
loop, so the buckets are created anew for each loop (a pass starts with an empty bucket).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from aiolimiter import AsyncLimiter


def prompt_token_estimate(messages: Sequence[dict[str, Any]]) -> int:
    """``ceil(characters / 4)`` over the messages' contents: the usual rough count for English text."""
    return math.ceil(sum(len(str(m.get("content") or "")) for m in messages) / 4)


class RateLimits:
    """The ``rpm`` / ``tpm`` limits of one model (either may be None = no limit)."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None):
        self.rpm = rpm
        self.tpm = tpm
        self.owed = 0  # tokens reported by replies and not charged yet
        self._loop: asyncio.AbstractEventLoop | None = None
        self._requests: AsyncLimiter | None = None
        self._tokens: AsyncLimiter | None = None

    def _buckets(self) -> tuple[AsyncLimiter | None, AsyncLimiter | None]:
        import asyncio  # imported on first use, like aiolimiter: making a model sends nothing

        from aiolimiter import AsyncLimiter

        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._requests = AsyncLimiter(1, 60.0 / self.rpm) if self.rpm else None
            self._tokens = AsyncLimiter(self.tpm, 60.0) if self.tpm else None
        return self._requests, self._tokens

    async def before(self, messages: Sequence[dict[str, Any]]) -> int:
        """Wait for room to send one request (paying what earlier replies owe).

        Returns the prompt tokens charged for it (the estimate).
        """
        requests, tokens = self._buckets()
        if requests is not None:
            await requests.acquire()
        if tokens is None:
            return 0
        estimate = prompt_token_estimate(messages)
        amount, self.owed = estimate + self.owed, 0
        while amount > 0:
            part = min(amount, tokens.max_rate)
            await tokens.acquire(part)
            amount -= part
        return estimate

    def after(self, charged: int, prompt_tokens: int | None, completion_tokens: int | None) -> None:
        """Record what a reply reports beyond what :meth:`before` charged (paid by the next request)."""
        if self.tpm:
            self.owed += max(0, (prompt_tokens or 0) - charged) + (completion_tokens or 0)
