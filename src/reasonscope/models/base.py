"""The provider protocol shared by every model backend.

A :class:`LanguageModel` turns :class:`GenerationRequest` objects into :class:`Completion` objects
(``async generate``, batched), and, where the backend can, scores continuations
(``async logprobs(prompt, continuations)`` -> summed log-probabilities).

Outcomes of a request
---------------------
API backends send each request through :meth:`LanguageModel.call_with_retries` (tenacity). This
layer is the only one that retries: the SDK clients are built with ``max_retries=0``, so retries
never multiply. A request ends in one of three ways:

* **answered**: a completion (an empty text, or one cut at ``max_tokens``, is still the model's answer);
* **failed** (``error`` set): the reply says something about this request but holds no answer: a
  refusal, a reply with no text (tool calls only), a content filter, a rejected request (400, 422),
  or an unexpected error. Stored as a failed generation, never re-sent unless ``--retry-failed``;
* **pending** (``error`` set and ``pending``): nothing was learnt about the model: transient errors
  (429, 408, 409, 5xx, timeouts, dropped connections, malformed responses) outlasted the retries, or
  the key, permissions or endpoint were refused (401, 403, 404; not retried). Not stored, so the
  next run sends it again.

Retry policy (transient errors only): attempt ``n`` (1-based) that fails is followed by a wait of

* the server's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date) when the error carries
  one, plus a jitter uniform in ``[0, retry_base_s]``; a server asking for more than
  ``retry_after_cap_s`` (default 60 s) ends the retries at once (the request stays pending);
* else a full-jitter exponential backoff, uniform in ``[0, min(retry_cap_s, retry_base_s * 2**(n-1))]``
  (``retry_base_s`` 0.5 s, ``retry_cap_s`` 20 s: provider options, tests shorten them).

Retries stop after ``max_retries`` retries (default 8, so 9 attempts) or when the next wait would end
more than ``retry_max_s`` (default 120 s) after the first attempt began, whichever comes first. The
attempts and seconds a pending request reports count every attempt, the first included, from the moment
the first one began. Every attempt also passes the model's rate limits (:mod:`reasonscope.models.limits`).

Bounded attempts: an API provider sends each HTTP request through :meth:`LanguageModel.bounded`, so
``timeout_s`` bounds the whole request, from sending it to the last byte of the reply (the HTTP
client's own timeout bounds each read only: a body trickling one byte a second never trips it). A
request that passes ``timeout_s`` raises :class:`RequestTimeout`, a transient error.

Malformed replies: a reply that is not JSON, or whose JSON is not of the expected shape
(:mod:`reasonscope.models.replies`), raises :class:`MalformedReply`, a transient error, whatever is wrong
with it: retried, then pending. So does a reply whose body, once decoded, passes ``options.max_reply_bytes``
(:mod:`reasonscope.models.http`), read no further than that.

Untrusted numbers and waits: every completion passes :func:`reasonscope.models.reported.check_completion`
before the rate limiter or the store sees it; token counts that break the rule make the request **failed**
(:class:`~reasonscope.models.reported.ImplausibleReply`, not retried). A request that trying again now cannot
help raises :class:`~reasonscope.models.errors.LeftPending` and is **pending** at once with that reason: a
redirect to another origin, or a ``tpm`` wait longer than ``retry_max_s``
(:class:`~reasonscope.models.limits.RateLimitWait`). An SDK that wraps such an error of its HTTP client
(``APIConnectionError`` ... ``from err``) has it unwrapped first, so its outcome and words are its own.

Error messages are passed through :meth:`LanguageModel.redact` (configured secrets masked as
``[masked:NAME]``, lone surrogates replaced: :mod:`reasonscope.storage.scrub`) before they are stored or printed.
"""

from __future__ import annotations

import email.utils
import hashlib
import math
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..shared_settings import ModelConfig
from ..storage.scrub import mask_secrets, register_secret_env
from ..text.sanitize import replace_lone_surrogates
from ..types import Completion
from .errors import LeftPending
from .limits import RateLimits
from .reported import ImplausibleReply, check_completion

if TYPE_CHECKING:
    from tenacity import RetryCallState


class ProviderUnavailable(RuntimeError):
    """The model cannot be used in this environment (missing key, SDK or weights)."""


class MalformedReply(ValueError):
    """The server's reply cannot be read: not JSON, or not of the expected shape.

    Transient (retried, then pending): it says nothing about the model.
    """


class RequestTimeout(TimeoutError):
    """No complete reply within ``timeout_s`` of sending the request. Transient (retried, then pending)."""


@dataclass
class GenerationRequest:
    """One request to a model: chat messages, sampling settings, and the item, variant and sample it answers.

    ``meta`` is read by mock models only and is never part of the cache key.
    """

    messages: list[dict[str, str]]
    max_tokens: int
    temperature: float
    top_p: float | None = None
    seed: int = 0
    sample: int = 0
    item_id: str = ""
    variant: str = "original"
    meta: dict[str, Any] = field(default_factory=dict)  # for mock models only; never part of the key
    # the answer's form: {"json_schema": ...} | {"choice": [...]} | {"regex": ...} (models.structured)
    structured: dict[str, Any] | None = None

    def gen_config(self) -> dict[str, Any]:
        """The settings that determine the completion (all in the cache key).

        ``structured`` only when set, so the keys of free requests are unchanged.
        """
        config = {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                  "seed": self.seed}
        if self.structured is not None:
            config["structured"] = self.structured
        return config


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
        self.limits = RateLimits(config.rpm, config.tpm)

    # -- identity ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The model's display name (:attr:`reasonscope.shared_settings.ModelConfig.display_name`)."""
        return self.config.display_name

    @property
    def concurrency(self) -> int:
        """How many requests may be in flight at once (``concurrency`` of the model's settings)."""
        return self.config.concurrency

    @property
    def batch_size(self) -> int:
        """Requests per :meth:`generate` call (``batch_size`` of the model's settings, default 1)."""
        return self.config.batch_size or 1

    def missing_requirements(self) -> str | None:
        """A message when this model cannot run here (no key, no SDK), else None. Checked before a run."""
        return None

    # -- generation -------------------------------------------------------------------------
    async def generate(self, requests: Sequence[GenerationRequest],
                       on_done: Callable[[int], None] | None = None) -> list[Completion]:
        """Complete a batch of requests.

        The default runs :meth:`_generate_one` concurrently. ``on_done(n)``, when given, is called as requests
        of the batch finish (``n`` more finished), so a progress bar moves inside a long batch; a backend may
        call it from a worker thread.
        """

        async def one(r: GenerationRequest) -> Completion:
            completion = await self._timed_one(r)
            if on_done is not None:
                on_done(1)
            return completion

        import asyncio  # imported when first generating: an up-to-date re-run makes models but never calls them

        return list(await asyncio.gather(*(one(r) for r in requests)))

    async def _timed_one(self, request: GenerationRequest) -> Completion:
        start = time.perf_counter()

        async def attempt() -> Completion:
            charged = await self.limits.before(request.messages, patience_s=self.config.retry_max_s)
            completion = await self._generate_one(request)
            check_completion(completion, self.request_name(request))  # before the limiter or the store sees it
            self.limits.after(charged, completion.prompt_tokens, completion.completion_tokens)
            return completion

        completion = await self.call_with_retries(attempt)
        if completion.latency_s is None:
            completion.latency_s = time.perf_counter() - start
        return completion

    async def _generate_one(self, request: GenerationRequest) -> Completion:
        raise NotImplementedError

    def request_name(self, request: GenerationRequest) -> str:
        """The request in words, for error messages: model, item, variant and sample."""
        return f"{self.name} (item {request.item_id or '?'}, {request.variant}, sample {request.sample})"

    async def logprobs(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Sum of log p(continuation tokens | prompt) for each continuation."""
        raise NotImplementedError(f"provider {self.provider!r} does not expose log-probabilities")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (weights, clients)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Close clients bound to the running event loop (called when a generation pass ends)."""

    # -- retries ----------------------------------------------------------------------------
    def is_retryable(self, exc: BaseException) -> bool:
        """A transient error worth another attempt (providers add their SDK's 429 / 5xx errors)."""
        return isinstance(exc, TimeoutError | ConnectionError | MalformedReply)

    async def bounded(self, awaitable: Awaitable[Any]) -> Any:
        """``await awaitable`` (one HTTP request), ended after ``timeout_s`` seconds.

        On timeout it raises :class:`RequestTimeout`. The bound covers the whole request, however slowly
        its reply trickles.
        """
        import asyncio

        limit = self.config.timeout_s
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                return await awaitable
        except TimeoutError:
            if not deadline.expired():  # a timeout of the request itself (the HTTP client's): as it is
                raise
            raise RequestTimeout(f"no complete reply within timeout_s ({limit:g} s)") from None

    def _retryable(self, exc: BaseException) -> bool:
        """:meth:`is_retryable`, except that a reply breaking the number rule or a request left pending never is."""
        return not isinstance(exc, ImplausibleReply | LeftPending) and self.is_retryable(exc)

    def is_setup_error(self, exc: BaseException) -> bool:
        """The key, permissions or endpoint were refused (401, 403, 404): not retried, left pending."""
        return False

    async def call_with_retries(self, fn: Callable[[], Awaitable[Completion]]) -> Completion:
        """Run ``fn`` under the retry policy of the module docstring; never raises for a request's error.

        The first attempt runs outside tenacity (building the retry machinery cost ~1 ms of CPU per call,
        a third of the mock's whole generation time); only a retryable error enters the retry loop, whose
        first attempt re-raises that error instead of calling again, so attempts, waits and limits are
        exactly those of the policy. Attempts and seconds are counted from the first attempt's start.
        """
        start = time.monotonic()
        fn = _own_errors_unwrapped(fn)
        try:
            completion = await fn()
        except ProviderUnavailable:
            raise
        except Exception as exc:
            first: list[BaseException] = [exc]
        else:
            completion.attempts = 1
            return completion

        async def replay_then_call() -> Completion:
            if first:
                raise first.pop()
            return await fn()

        return await self._retry_loop(replay_then_call, start)

    async def _retry_loop(self, fn: Callable[[], Awaitable[Completion]], start: float) -> Completion:
        """The retries of a request whose first attempt began at ``start`` (``time.monotonic()``) and failed.

        Tenacity's attempt 1 is that first attempt (``fn`` re-raises its error).
        """
        from tenacity import (
            AsyncRetrying,
            RetryError,
            retry_if_exception,
            stop_after_attempt,
            wait_random_exponential,
        )

        cfg = self.config
        backoff = wait_random_exponential(multiplier=self.retry_base_s, max=self.retry_cap_s)

        def past_retry_max(rs: RetryCallState) -> bool:  # the next wait would end past retry_max_s from `start`
            return time.monotonic() - start + (rs.upcoming_sleep or 0.0) >= cfg.retry_max_s

        retrying = AsyncRetrying(
            stop=stop_after_attempt(cfg.max_retries + 1) | past_retry_max
            | (lambda rs: _asked_wait(rs) > cfg.retry_after_cap_s),
            wait=lambda rs: _server_wait(rs, backoff, self.retry_base_s),
            retry=retry_if_exception(self._retryable),
            reraise=False,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    completion = await fn()
            completion.attempts = attempt.retry_state.attempt_number
            return completion
        except RetryError as err:
            state = err.last_attempt
            attempts = state.attempt_number
            exc = state.exception()
            asked = retry_after_s(exc)
            if asked is not None and asked > cfg.retry_after_cap_s:
                why = f"the server asked to wait {asked:.0f} s, more than retry_after_cap_s ({cfg.retry_after_cap_s:g} s)"
            else:
                why = f"no answer after {attempts} attempt{'s' if attempts > 1 else ''} in " \
                      f"{time.monotonic() - start:.1f} s"
                if attempts < cfg.max_retries + 1:
                    why += f" (the next wait would pass retry_max_s, {cfg.retry_max_s:g} s)"
            return Completion(error=self.redact(f"pending: {why}: {describe_error(exc)}"), attempts=attempts,
                              pending=True)
        except ProviderUnavailable:
            raise
        except Exception as exc:  # not retryable: this request ends here, never the run
            attempts = attempt.retry_state.attempt_number
            if isinstance(exc, LeftPending):
                return Completion(error=self.redact(f"pending: {exc}"), attempts=attempts, pending=True)
            if self.is_setup_error(exc):
                return Completion(error=self.redact(f"pending: refused, check the key, model name and endpoint: "
                                                    f"{describe_error(exc)}"), attempts=attempts, pending=True)
            return Completion(error=self.redact(f"failed (not retryable): {describe_error(exc)}"), attempts=attempts)

    def secret_envs(self) -> list[str]:
        """The environment variables holding this model's secrets (API keys).

        Their values must never reach a log, the store or an output. Providers register them with
        :mod:`reasonscope.storage.scrub`.
        """
        return []

    def secrets(self) -> dict[str, str]:
        """``{variable: value}`` of this model's secrets that are set."""
        return {env: os.environ[env] for env in self.secret_envs() if os.environ.get(env)}

    def redact(self, text: str) -> str:
        """``text`` with every configured secret masked and lone surrogates replaced, fit to print and store.

        Secrets (this model's included) become ``[masked:NAME]``, lone surrogates U+FFFD
        (:mod:`reasonscope.storage.scrub`).
        """
        register_secret_env(*self.secret_envs())
        text, _ = mask_secrets(text)
        return replace_lone_surrogates(text)[0]


def _own_errors_unwrapped(fn: Callable[[], Awaitable[Completion]]) -> Callable[[], Awaitable[Completion]]:
    """``fn`` raising reasonscope's own reply errors as themselves.

    An SDK may wrap an error its HTTP client raised (the anthropic SDK turns any into ``APIConnectionError``):
    a :class:`MalformedReply` (a reply too large) or a :class:`LeftPending` (a cross-origin redirect) found
    among the error's causes is raised instead, so its outcome and message are the ones stated for it.
    """

    async def call() -> Completion:
        try:
            return await fn()
        except Exception as exc:
            cause = exc.__cause__  # `raise APIConnectionError(...) from err`: the explicit cause chain only
            for _ in range(8):
                if cause is None:
                    break
                if isinstance(cause, MalformedReply | LeftPending):
                    raise cause from None
                cause = cause.__cause__
            raise

    return call


def unit_hash(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts (sha256)."""
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def retry_after_s(exc: BaseException | None) -> float | None:
    """The wait a server asked for on an error response, in seconds.

    ``retry-after-ms``, else ``Retry-After`` as seconds or as an HTTP date; None when absent or unreadable.
    """
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        ms, value = headers.get("retry-after-ms"), headers.get("retry-after")
    except Exception:  # a headers object that is not a mapping
        return None
    for raw, scale in ((ms, 0.001), (value, 1.0)):
        try:
            seconds = float(raw) * scale
        except (TypeError, ValueError):
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    if isinstance(value, str):
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is not None and when.tzinfo is not None:
            return max(0.0, when.timestamp() - time.time())
    return None


def _asked_wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome is not None else None
    asked = retry_after_s(exc)
    return -1.0 if asked is None else asked


def _server_wait(state: RetryCallState, backoff: Callable[[RetryCallState], float], jitter_s: float) -> float:
    """The server's requested wait plus a small jitter, else the exponential backoff."""
    asked = _asked_wait(state)
    return backoff(state) if asked < 0 else asked + random.uniform(0, jitter_s)


def describe_error(exc: BaseException | None) -> str:
    """An error in one line: type, HTTP status when it has one, first line of its text (300 characters)."""
    if exc is None:
        return "unknown error"
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {text[:300]}"
