"""Anthropic models through the official ``anthropic`` SDK (imported only when used).

The key comes from ``api_key_env`` (default ``ANTHROPIC_API_KEY``). System messages are passed as
the ``system`` parameter. Thinking blocks are kept as a ``<think>`` block before the answer text;
``stop_reason == "max_tokens"`` is reported as finish reason ``length``. The SDK's own retries are
disabled (``max_retries=0``): reasonscope's retry policy (``models.base``) is the only retry layer.

A ``structured`` request (:mod:`reasonscope.models.structured`) is sent with one tool, ``answer``, whose
``input_schema`` is the schema (choices and regexes wrapped in a one-field object schema), and
``tool_choice = {"type": "tool", "name": "answer"}``; the answer text is the tool call's input as JSON (the
unwrapped string for choices and regexes), ``constraint = "tool"``.

A reply with no answer is a failed generation with its reason, never an empty answer: ``stop_reason``
``refusal`` (any text given is kept as the raw text and quoted in the error), or no text block at all
(tool use only, or empty content). A reply cut at ``max_tokens`` is the model's answer even when it holds
no text block (e.g. thinking only). A reply of another shape (``content`` not a list of blocks, a text block
without text) is malformed (:mod:`reasonscope.models.replies`): retried, then pending. ``timeout_s`` bounds
each request whole (:meth:`~reasonscope.models.base.LanguageModel.bounded`). Replies are bounded once decoded
(``options.max_reply_bytes``) and a redirect to another origin is refused (:mod:`reasonscope.models.http`);
counts and stop reasons pass the rule of :mod:`reasonscope.models.reported`.
"""

from __future__ import annotations

import json
import os

from ..storage.scrub import register_secret_env
from ..types import Completion
from .base import GenerationRequest, LanguageModel, MalformedReply, ProviderUnavailable
from .http import max_reply_bytes
from .replies import MessagesReply, read_reply
from .structured import unwrap, wrapped_schema

TOOL_NAME = "answer"


class AnthropicModel(LanguageModel):
    """A model behind the Anthropic Messages API (``anthropic/<model>``), through the anthropic SDK.

    The API key is read from ``api_key_env`` (default ``ANTHROPIC_API_KEY``) and registered as a secret.
    """

    provider = "anthropic"

    def __init__(self, model_id, config):
        super().__init__(model_id, config)
        self._client_obj = None
        register_secret_env(*self.secret_envs())
        try:  # a bad limit is a setting error before any request, not a failed request
            max_reply_bytes(config.options)
        except ValueError as err:
            raise ValueError(f"{self.name}: {err}") from None

    def _env(self) -> str:
        return self.config.api_key_env or "ANTHROPIC_API_KEY"

    def missing_requirements(self) -> str | None:
        """Why the model cannot run here: the anthropic SDK missing or its key variable unset; else None."""
        try:
            import anthropic  # noqa: F401
        except ImportError:
            return f"{self.name}: the anthropic package is not installed (pip install anthropic); skipped"
        if not os.environ.get(self._env()):
            return f"{self.name}: environment variable {self._env()} is not set; this model is skipped"
        return None

    def _client(self):
        if self._client_obj is None:
            try:
                import anthropic
            except ImportError as err:
                raise ProviderUnavailable("the anthropic package is not installed") from err
            from .http import bounded_client  # httpx is imported when the first request is sent

            self._client_obj = anthropic.AsyncAnthropic(api_key=os.environ.get(self._env()),
                                                        base_url=self.config.base_url, max_retries=0,
                                                        timeout=self.config.timeout_s,
                                                        http_client=bounded_client(anthropic, self.config.options))
        return self._client_obj

    def secret_envs(self) -> list[str]:
        """The key's environment variable (``api_key_env``, default ``ANTHROPIC_API_KEY``)."""
        return [self._env()]

    def is_retryable(self, exc: BaseException) -> bool:
        """Transient: HTTP 408, 409, 429 or 5xx, a connection error, a timeout or a malformed reply."""
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        return isinstance(exc, anthropic.APIConnectionError | MalformedReply | TimeoutError | ConnectionError
                          | ValueError)

    def is_setup_error(self, exc: BaseException) -> bool:
        """The key, permissions or model were refused: HTTP 401, 403 or 404."""
        import anthropic

        return isinstance(exc, anthropic.APIStatusError) and exc.status_code in (401, 403, 404)

    async def _generate_one(self, request: GenerationRequest) -> Completion:
        system = "\n".join(m["content"] for m in request.messages if m["role"] == "system")
        messages = [m for m in request.messages if m["role"] != "system"]
        # sampling settings travel in the body: anthropic>=1.0 dropped them from create()'s signature,
        # and the body is what every SDK version sends as is
        sampling = {"temperature": request.temperature}
        if request.top_p is not None:
            sampling["top_p"] = request.top_p
        kwargs = {"model": self.model_id, "messages": messages, "max_tokens": request.max_tokens,
                  "extra_body": sampling}
        if system:
            kwargs["system"] = system
        wrapped = False
        if request.structured is not None:
            schema, wrapped = wrapped_schema(request.structured)
            kwargs["tools"] = [{"name": TOOL_NAME, "description": "Give the answer in the required form.",
                                "input_schema": schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        resp = read_reply(MessagesReply, await self.bounded(self._client().messages.create(**kwargs)))
        parts, thinking, tools, tool_input = [], [], [], None
        for block in resp.content:
            if block.type == "text":
                parts.append(block.text)
            elif block.type == "thinking":
                thinking.append(block.thinking)
            elif block.type == "tool_use":
                tools.append(block.name or "?")
                if request.structured is not None and block.name == TOOL_NAME:
                    tool_input = block.input
        if tool_input is not None:
            parts = [unwrap(tool_input, wrapped) if wrapped else json.dumps(tool_input, ensure_ascii=False)]
        text = "".join(parts)
        if thinking:
            text = f"<think>{''.join(thinking)}</think>\n{text}"
        finish = "length" if resp.stop_reason == "max_tokens" else resp.stop_reason
        error = None
        if resp.stop_reason == "refusal":
            error = "refusal" + (f": {''.join(parts)[:300]}" if parts else " (stop reason refusal, no text)")
        elif not parts and finish != "length":
            what = f"tool use only ({', '.join(tools)})" if tools else "no text block"
            error = f"no answer text: {what} (stop reason {resp.stop_reason})"
        usage = resp.usage
        return Completion(text=text, finish_reason=finish, error=error,
                          prompt_tokens=usage.input_tokens if usage else None,
                          completion_tokens=usage.output_tokens if usage else None,
                          constraint="tool" if request.structured is not None else None)

    async def aclose(self) -> None:
        """Close the SDK client (bound to the running event loop); the next request makes a new one."""
        client, self._client_obj = self._client_obj, None
        if client is not None:
            await client.close()
