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
the reply. An ``openai-compatible`` server that rejects ``response_format`` (HTTP 400 or 422, or a 500 naming
``response_format``, as llama-cpp-python's server answers ``json_schema``) gets the schema as
``{"type": "json_object", "schema": ...}`` (``constraint = "response_format:json_object"``, kept for the
model's later requests); one that rejects that too gets the request again without it: the answer is kept
with ``constraint = "prompt-only: <the server's message>"`` and a warning is printed once per model. On ``openai/...`` itself such a rejection is a failed generation.

``logprobs(prompt, continuations)`` asks for one token with ``logprobs=True, top_logprobs=20`` (the prompt as
one user message, temperature 0) and reads each continuation's log-probability from the first token's top
alternatives (leading spaces ignored): exact for continuations of one token (score digits, short labels),
``-inf`` for a continuation that is not among the top 20 or spans several tokens.

A reply with no answer text is a failed generation with its reason, never an empty answer:
``message.refusal`` (the refusal text is kept as the raw text and quoted in the error), finish reason
``content_filter``, or ``content`` null (tool calls only, or nothing). A reply cut at ``max_tokens``
(finish reason ``length``) is the model's answer even when it holds no text (e.g. reasoning only).
A reply of another shape (``choices`` not a non-empty list of objects with a ``message``, a ``content``
that is not a string, ...) is malformed (:mod:`reasonscope.models.replies`), like a body that is not
JSON: retried, then pending. ``timeout_s`` bounds each request whole, from sending it to the reply's last
byte (:meth:`~reasonscope.models.base.LanguageModel.bounded`). Replies are bounded once decoded
(``options.max_reply_bytes``) and a redirect to another origin is refused (:mod:`reasonscope.models.http`);
counts, log-probabilities and finish reasons pass the rule of :mod:`reasonscope.models.reported`.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys

from ..storage.scrub import register_secret_env
from ..types import Completion
from .base import GenerationRequest, LanguageModel, MalformedReply, ProviderUnavailable, describe_error
from .http import max_reply_bytes
from .replies import ChatMessage, ChatReply, read_reply
from .reported import ImplausibleReply, NumberOutOfRule
from .reported import logprob as reported_logprob
from .structured import unwrap, wrapped_schema

TOP_LOGPROBS = 20  # the most the chat-completions API returns per token


class OpenAIModel(LanguageModel):
    """A model behind the OpenAI chat completions API (``openai/<model>``, ``openai-compatible/<model>``).

    One SDK client per 16 requests in flight, spread over ``options.base_urls`` when several servers are
    given. :meth:`logprobs` reads only the first answer token's top alternatives.
    """

    provider = "openai"
    # logprobs() reads only the first answer token's top alternatives (callers compare labels by first token)
    logprobs_first_token = True

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
        self._schema_form = "json_schema"  # or "json_object" once a server rejected json_schema and took it
        register_secret_env(*self.secret_envs())
        try:  # a bad limit is a setting error before any request, not a failed request
            max_reply_bytes(config.options)
        except ValueError as err:
            raise ValueError(f"{self.name}: {err}") from None

    def _key_env(self) -> str | None:
        if self.config.api_key_env:
            return self.config.api_key_env
        return None if self._urls[0] else "OPENAI_API_KEY"

    def missing_requirements(self) -> str | None:
        """Why the model cannot run here, else None.

        An openai-compatible model needs ``base_url``; a model with a key variable needs it set.
        """
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
            from .http import bounded_client  # httpx is imported when the first request is sent

            self._clients = [openai.AsyncOpenAI(api_key=key or "EMPTY", base_url=url, max_retries=0,
                                                timeout=self.config.timeout_s,
                                                http_client=bounded_client(openai, self.config.options))
                             for url in self._urls]
        return self._clients[index]

    def secret_envs(self) -> list[str]:
        """The API key's environment variable, when the model uses one."""
        env = self._key_env()
        return [env] if env else []

    def is_retryable(self, exc: BaseException) -> bool:
        """Transient: HTTP 408, 409, 429 or 5xx, a connection error, a timeout, or a malformed reply."""
        import openai

        if isinstance(exc, openai.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        # a reply that is not JSON, or not of the expected shape, is malformed: transient, whatever is wrong
        return isinstance(exc, openai.APIConnectionError | openai.APIResponseValidationError | json.JSONDecodeError
                          | MalformedReply | TimeoutError | ConnectionError | ValueError)

    def is_setup_error(self, exc: BaseException) -> bool:
        """The key, permissions or model were refused: HTTP 401, 403 or 404."""
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
            kwargs["response_format"] = _response_format(schema, self._schema_form)
            constraint = "response_format" if self._schema_form == "json_schema" else "response_format:json_object"
        try:
            resp = await self.bounded(client.chat.completions.create(**kwargs))
        except Exception as exc:
            if not (constraint and self._compatible and _rejected(exc)):
                raise
            resp = None
            if self._schema_form == "json_schema":
                # llama-cpp-python's server (and Anyscale-style servers) take the schema as
                # {"type": "json_object", "schema": ...}; the form that worked is kept for the later requests
                kwargs["response_format"] = _response_format(schema, "json_object")
                try:
                    resp = await self.bounded(client.chat.completions.create(**kwargs))
                    self._schema_form, constraint = "json_object", "response_format:json_object"
                except Exception as again:
                    if not _rejected(again):
                        raise
            if resp is None:
                constraint = f"prompt-only: the server rejected response_format ({describe_error(exc)[:200]})"
                if not self._warned_fallback:
                    self._warned_fallback = True
                    print(self.redact(f"warning: {self.name}: {constraint}; structured requests are sent without "
                                      "it, answers are parsed as free text"), file=sys.stderr)
                kwargs.pop("response_format")
                wrapped = False
                resp = await self.bounded(client.chat.completions.create(**kwargs))
        reply = read_reply(ChatReply, resp)
        choice = reply.choices[0]
        message = choice.message
        reasoning = message.reasoning_content
        text = message.content or message.refusal or ""
        if reasoning:
            text = f"<think>{reasoning}</think>\n{text}"
        if wrapped and message.content:
            try:
                text = unwrap(json.loads(message.content), True)
            except json.JSONDecodeError:
                pass  # kept as sent: the parser downstream counts it as unparseable
        usage = reply.usage
        return Completion(text=text, finish_reason=choice.finish_reason, error=_no_answer(message, choice.finish_reason),
                          prompt_tokens=usage.prompt_tokens if usage else None,
                          completion_tokens=usage.completion_tokens if usage else None, constraint=constraint)

    @property
    def _compatible(self) -> bool:
        """An OpenAI-compatible server (not api.openai.com): a rejected response_format falls back to the prompt."""
        url = self._urls[0] or ""
        return self.config.spec.startswith("openai-compatible/") or bool(url and "api.openai.com" not in url)

    async def logprobs(self, prompt: str, continuations) -> list[float]:
        """Log p(continuation | prompt) from the first generated token's ``top_logprobs``.

        See the module docstring.
        """
        client = self._client(next(self._next))

        async def attempt() -> Completion:
            resp = await self.bounded(client.chat.completions.create(
                model=self.model_id, messages=[{"role": "user", "content": prompt}], max_tokens=1, temperature=0.0,
                logprobs=True, top_logprobs=TOP_LOGPROBS))
            choice = read_reply(ChatReply, resp).choices[0]
            content = choice.logprobs.content if choice.logprobs else None
            if not content:
                raise MalformedReply("malformed response: no logprobs")
            top = {}
            for i, alt in enumerate(content[0].top_logprobs):
                try:
                    value = reported_logprob(alt.logprob, f"logprobs.content.0.top_logprobs.{i}.logprob")
                except NumberOutOfRule as err:
                    raise ImplausibleReply(f"the reply to {self.name}'s log-probability request breaks the rule for "
                                           f"log-probabilities: {err.field}: {err}") from None
                top.setdefault(alt.token.strip(), value)
            return Completion(text=json.dumps(top))

        done = await self.call_with_retries(attempt)
        if done.error:
            raise RuntimeError(f"{self.name}: log-probabilities unavailable: {done.error}")
        top = json.loads(done.text)
        return [top.get(c.strip(), -math.inf) for c in continuations]

    async def aclose(self) -> None:
        """Close the SDK clients (bound to the running event loop); the next request makes new ones."""
        clients, self._clients = self._clients, None
        for c in clients or []:
            await c.close()

    def close(self) -> None:
        """Forget the SDK clients."""
        self._clients = None


def _rejected(exc: BaseException) -> bool:
    """The server does not take the request as sent (e.g. an unknown response_format).

    A 400 or 422, or a 500 whose message names ``response_format`` (llama-cpp-python's server answers request
    validation errors with 500).
    """
    status = getattr(exc, "status_code", None)
    return status in (400, 422) or (status == 500 and "response_format" in str(getattr(exc, "message", "")))


def _response_format(schema: dict, form: str) -> dict:
    """``response_format`` for a JSON schema.

    OpenAI's ``json_schema`` form (strict), or the ``json_object`` form with a ``schema`` field that
    llama-cpp-python's server reads.
    """
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}


def _no_answer(message: ChatMessage, finish_reason: str | None) -> str | None:
    """Why a chat-completion message holds no answer, or None when it does."""
    if message.refusal:
        return f"refusal: {message.refusal[:300]}"
    if finish_reason == "content_filter":
        return "blocked by the provider's content filter (finish reason content_filter)"
    if message.content is None and finish_reason != "length":
        calls = [(c.function.name if c.function else None) or "?" for c in (message.tool_calls or [])]
        what = f"tool calls only ({', '.join(calls)})" if calls else "no content"
        return f"no answer text: {what} (finish reason {finish_reason})"
    return None
