"""The provider protocol shared by every model backend.

A :class:`LanguageModel` turns :class:`GenerationRequest` objects into :class:`Completion` objects
(``async generate``, batched), and, where the backend can, scores continuations
(``async logprobs(prompt, continuations)`` -> summed log-probabilities).

Retries: API backends wrap each call in :meth:`LanguageModel.call_with_retries`: exponential
backoff with full jitter (base 0.5 s, cap 20 s) on the errors the backend marks retryable (429,
5xx, timeouts, dropped connections, malformed responses), at most ``max_retries`` retries. A call
that still fails becomes a ``Completion`` with ``error`` set: stored, and scored as wrong.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from ..config import ModelConfig
from ..types import Completion


class ProviderUnavailable(RuntimeError):
    """The model cannot be used in this environment (missing key, SDK or weights)."""


@dataclass
class GenerationRequest:
    messages: list[dict[str, str]]
    max_tokens: int
    temperature: float
    top_p: float | None = None
    seed: int = 0
    sample: int = 0
    item_id: str = ""
    variant: str = "original"
    meta: dict[str, Any] = field(default_factory=dict)  # for mock models only; never part of the key

    def gen_config(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "seed": self.seed}


class LanguageModel:
    """Base class of every provider. Subclasses implement :meth:`_generate_one` or :meth:`generate`."""

    provider: str = "base"
    retry_base_s: float = 0.5
    retry_cap_s: float = 20.0

    def __init__(self, model_id: str, config: ModelConfig):
        self.model_id = model_id
        self.config = config
        self.retry_base_s = float(config.options.get("retry_base_s", self.retry_base_s))
        self.retry_cap_s = float(config.options.get("retry_cap_s", self.retry_cap_s))

    # -- identity ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.config.display_name

    @property
    def concurrency(self) -> int:
        return self.config.concurrency

    @property
    def batch_size(self) -> int:
        return self.config.batch_size or 1

    def missing_requirements(self) -> str | None:
        """A message when this model cannot run here (no key, no SDK), else None. Checked before a run."""
        return None

    # -- generation -------------------------------------------------------------------------
    async def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Complete a batch of requests. The default runs :meth:`_generate_one` concurrently."""
        return list(await asyncio.gather(*(self._timed_one(r) for r in requests)))

    async def _timed_one(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()
        completion = await self.call_with_retries(lambda: self._generate_one(request))
        if completion.latency_s is None:
            completion.latency_s = time.perf_counter() - start
        return completion

    async def _generate_one(self, request: GenerationRequest) -> Completion:
        raise NotImplementedError

    async def logprobs(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Sum of log p(continuation tokens | prompt) for each continuation."""
        raise NotImplementedError(f"provider {self.provider!r} does not expose log-probabilities")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (weights, clients)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Close clients bound to the running event loop (called when a generation pass ends)."""

    # -- retries ----------------------------------------------------------------------------
    def is_retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, TimeoutError | ConnectionError)

    async def call_with_retries(self, fn: Callable[[], Awaitable[Completion]]) -> Completion:
        attempts = 0
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.config.max_retries + 1),
                wait=wait_random_exponential(multiplier=self.retry_base_s, max=self.retry_cap_s),
                retry=retry_if_exception(self.is_retryable),
                reraise=False,
            ):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    completion = await fn()
            completion.attempts = attempts
            return completion
        except RetryError as err:
            exc = err.last_attempt.exception()
            return Completion(error=self.redact(f"failed after {attempts} attempts: {describe_error(exc)}"),
                              attempts=attempts)
        except Exception as exc:  # not retryable: fail this request, never the run
            return Completion(error=self.redact(f"failed (not retryable): {describe_error(exc)}"),
                              attempts=max(attempts, 1))

    def secrets(self) -> list[str]:
        """Values that must never reach a log, the store or an output (API keys)."""
        return []

    def redact(self, text: str) -> str:
        for secret in self.secrets():
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
        return text


def unit_hash(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts (sha256)."""
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def describe_error(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {text[:300]}"
