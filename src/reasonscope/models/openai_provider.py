"""OpenAI and OpenAI-compatible servers (vLLM, Ollama, llama.cpp, DeepSeek, Groq, ...), official SDK.

``openai/<model>`` reads the key from ``api_key_env`` (default ``OPENAI_API_KEY``). With a
``base_url`` and no ``api_key_env``, no key is required (local servers) and ``"EMPTY"`` is sent.
``options.base_urls`` (a list) spreads requests round-robin over several servers (data parallel).
Requests rotate over one SDK client per 16 in flight (per URL): httpcore scans its whole connection
pool on each request, so small pools keep the client's CPU cost flat at high concurrency.
The SDK's own retries are disabled (``max_retries=0``): reasonscope's retry policy (see
``models.base``) is the only retry layer, and it honours the server's ``retry-after(-ms)`` as the SDK does.
Reasoning content returned beside the answer (``reasoning_content``) is kept as a ``<think>`` block.

A ``structured`` request (:mod:`reasonscope.models.structured`) sends ``response_format`` with a
``json_schema`` (strict); choices and regexes are wrapped in a one-field object schema and unwrapped from
the reply. An ``openai-compatible`` server that rejects ``response_format`` (HTTP 400 or 422) gets the request
again without it: the answer is kept with ``constraint = "prompt-only: <the server's message>"`` and a
warning is printed once per model. On ``openai/...`` itself such a rejection is a failed generation.

``logprobs(prompt, continuations)`` asks for one token with ``logprobs=True, top_logprobs=20`` (the prompt as
one user message, temperature 0) and reads each continuation's log-probability from the first token's top
alternatives (leading spaces ignored): exact for continuations of one token (score digits, short labels),
``-inf`` for a continuation that is not among the top 20 or spans several tokens.

A reply with no answer text is a failed generation with its reason, never an empty answer:
``message.refusal`` (the refusal text is kept as the raw text and quoted in the error), finish reason
``content_filter``, or ``content`` null (tool calls only, or nothing). A reply cut at ``max_tokens``
(finish reason ``length``) is the model's answer even when it holds no text (e.g. reasoning only).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys

from ..types import Completion
from .base import GenerationRequest, LanguageModel, ProviderUnavailable, describe_error
from .structured import unwrap, wrapped_schema

TOP_LOGPROBS = 20  # the most the chat-completions API returns per token


class OpenAIModel(LanguageModel):
    provider = "openai"

    def __init__(self, model_id, config):
        super().__init__(model_id, config)
        urls = list(config.options.get("base_urls") or ([config.base_url] if config.base_url else [None]))
        # one SDK client per 16 requests in flight: httpcore scans its whole pool on every request,
        # so several small pools cost less CPU than one large one at high concurrency
        per_url = max(1, math.ceil(config.concurrency / (16 * len(urls))))
        self._urls = [u for u in urls for _ in range(per_url)]
        self._clients = None
        self._next = itertools.cycle(range(len(self._urls)))
        self._warned_fallback = False

    def _key_env(self) -> str | None:
        if self.config.api_key_env:
            return self.config.api_key_env
        return None if self._urls[0] else "OPENAI_API_KEY"

    def missing_requirements(self) -> str | None:
        if self.config.spec.startswith("openai-compatible/") and not self._urls[0]:
            return f"{self.name}: openai-compatible models need `base_url`"
        env = self._key_env()
        if env and not os.environ.get(env):
            return f"{self.name}: environment variable {env} is not set; this model is skipped"
        return None

    def _client(self, index: int):
        if self._clients is None:
            try:
                import openai
            except ImportError as err:  # pragma: no cover - openai is a core dependency
                raise ProviderUnavailable("the openai package is not installed") from err
            env = self._key_env()
            key = os.environ.get(env, "") if env else "EMPTY"
            self._clients = [openai.AsyncOpenAI(api_key=key or "EMPTY", base_url=url, max_retries=0,
                                                timeout=self.config.timeout_s) for url in self._urls]
        return self._clients[index]

    def secrets(self) -> list[str]:
        env = self._key_env()
        return [os.environ[env]] if env and os.environ.get(env) else []

    def is_retryable(self, exc: BaseException) -> bool:
        import openai

        if isinstance(exc, openai.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        return isinstance(exc, openai.APIConnectionError | openai.APIResponseValidationError | json.JSONDecodeError
                          | TimeoutError | ConnectionError | ValueError)

    def is_setup_error(self, exc: BaseException) -> bool:
        import openai

        return isinstance(exc, openai.APIStatusError) and exc.status_code in (401, 403, 404)

    async def _generate_one(self, request: GenerationRequest) -> Completion:
        client = self._client(next(self._next))
        kwargs = {"model": self.model_id, "messages": request.messages, "max_tokens": request.max_tokens,
                  "temperature": request.temperature, "seed": request.seed}
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        wrapped, constraint = False, None
        if request.structured is not None:
            schema, wrapped = wrapped_schema(request.structured)
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "answer", "schema": schema, "strict": True}}
            constraint = "response_format"
        try:
            resp = await client.chat.completions.create(**kwargs)
        except Exception as exc:
            if not (constraint and self._compatible and _rejected(exc)):
                raise
            constraint = f"prompt-only: the server rejected response_format ({describe_error(exc)[:200]})"
            if not self._warned_fallback:
                self._warned_fallback = True
                print(f"warning: {self.name}: {constraint}; structured requests are sent without it, "
                      "answers are parsed as free text", file=sys.stderr)
            kwargs.pop("response_format")
            wrapped = False
            resp = await client.chat.completions.create(**kwargs)
        if not getattr(resp, "choices", None):
            raise ValueError("malformed response: no choices")
        choice = resp.choices[0]
        message = choice.message
        reasoning = getattr(message, "reasoning_content", None)
        text = message.content or getattr(message, "refusal", None) or ""
        if reasoning:
            text = f"<think>{reasoning}</think>\n{text}"
        if wrapped and message.content:
            try:
                text = unwrap(json.loads(message.content), True)
            except json.JSONDecodeError:
                pass  # kept as sent: the parser downstream counts it as unparseable
        usage = getattr(resp, "usage", None)
        return Completion(text=text, finish_reason=choice.finish_reason, error=_no_answer(message, choice.finish_reason),
                          prompt_tokens=getattr(usage, "prompt_tokens", None),
                          completion_tokens=getattr(usage, "completion_tokens", None), constraint=constraint)

    @property
    def _compatible(self) -> bool:
        """An OpenAI-compatible server (not api.openai.com): a rejected response_format falls back to the prompt."""
        url = self._urls[0] or ""
        return self.config.spec.startswith("openai-compatible/") or bool(url and "api.openai.com" not in url)

    async def logprobs(self, prompt: str, continuations) -> list[float]:
        """log p(continuation | prompt) from the first generated token's ``top_logprobs`` (see module docstring)."""
        client = self._client(next(self._next))

        async def attempt() -> Completion:
            resp = await client.chat.completions.create(
                model=self.model_id, messages=[{"role": "user", "content": prompt}], max_tokens=1, temperature=0.0,
                logprobs=True, top_logprobs=TOP_LOGPROBS)
            content = resp.choices[0].logprobs.content if resp.choices and resp.choices[0].logprobs else None
            if not content:
                raise ValueError("malformed response: no logprobs")
            top = {}
            for alt in content[0].top_logprobs:
                top.setdefault(alt.token.strip(), alt.logprob)
            return Completion(text=json.dumps(top))

        done = await self.call_with_retries(attempt)
        if done.error:
            raise RuntimeError(f"{self.name}: log-probabilities unavailable: {done.error}")
        top = json.loads(done.text)
        return [top.get(c.strip(), -math.inf) for c in continuations]

    async def aclose(self) -> None:
        clients, self._clients = self._clients, None
        for c in clients or []:
            await c.close()

    def close(self) -> None:
        self._clients = None


def _rejected(exc: BaseException) -> bool:
    """A 400/422 from the server (it does not take the request as sent, e.g. an unknown response_format)."""
    return getattr(exc, "status_code", None) in (400, 422)


def _no_answer(message, finish_reason: str | None) -> str | None:
    """Why a chat-completion message holds no answer, or None when it does."""
    refusal = getattr(message, "refusal", None)
    if refusal:
        return f"refusal: {str(refusal)[:300]}"
    if finish_reason == "content_filter":
        return "blocked by the provider's content filter (finish reason content_filter)"
    if message.content is None and finish_reason != "length":
        calls = [getattr(getattr(c, "function", None), "name", None) or "?" for c in (message.tool_calls or [])]
        what = f"tool calls only ({', '.join(calls)})" if calls else "no content"
        return f"no answer text: {what} (finish reason {finish_reason})"
    return None
