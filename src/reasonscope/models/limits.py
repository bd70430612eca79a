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

Bounded wait: before it waits, a request works out the least time its charge needs,
``(charge - tpm) / (tpm / 60)`` seconds (the time to drain what does not fit in an empty bucket). When
that passes the run's patience (the model's ``retry_max_s``, default 120 s) it does not wait at all: it
raises :class:`RateLimitWait` and the request stays pending with the reason (what it would wait, what
earlier replies reported, which setting to raise); what is owed stays owed, so the limit is still kept.
A charge that is paid takes at most that least time plus one bucket (60 s) of the limiter's time, so a
reply reporting an absurd count can no longer hold a run for years. Counts themselves are checked before they are owed
(:mod:`reasonscope.models.reported`: at most 2**31 - 1).

aiolimiter binds a limiter to the event loop it first runs in; each generation pass runs its own
loop, so the buckets are created anew for each loop (a pass starts with an empty bucket).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import LeftPending

if TYPE_CHECKING:
    import asyncio

    from aiolimiter import AsyncLimiter


def prompt_token_estimate(messages: Sequence[dict[str, Any]]) -> int:
    """``ceil(characters / 4)`` over the messages' contents: the usual rough count for English text."""
    return math.ceil(sum(len(str(m.get("content") or "")) for m in messages) / 4)


class RateLimitWait(LeftPending):
    """The ``tpm`` limit would hold a request longer than the run's patience: it stays pending at once."""


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

    async def before(self, messages: Sequence[dict[str, Any]], patience_s: float = math.inf) -> int:
        """Wait for room to send one request (paying what earlier replies owe).

        Returns the prompt tokens charged for it (the estimate). Raises :class:`RateLimitWait`, without
        waiting, when the ``tpm`` charge needs more than ``patience_s`` seconds (module docstring).
        """
        requests, tokens = self._buckets()
        if tokens is not None:
            estimate = prompt_token_estimate(messages)
            amount = estimate + self.owed
            least_s = (amount - tokens.max_rate) * 60.0 / tokens.max_rate
            if least_s > patience_s:
                raise RateLimitWait(
                    f"the tpm limit ({self.tpm:g} tokens per minute) would hold this request for at least "
                    f"{least_s:,.0f} s ({amount:,} tokens: its prompt, about {estimate:,}, and {self.owed:,} "
                    f"reported by earlier replies), more than the run's patience, retry_max_s ({patience_s:g} s); "
                    "raise tpm or retry_max_s if the counts are real")
        if requests is not None:
            await requests.acquire()
        if tokens is None:
            return 0
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
