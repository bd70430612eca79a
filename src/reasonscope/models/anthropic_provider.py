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
no text block (e.g. thinking only).
"""

from __future__ import annotations

import json
import os

from ..types import Completion
from .base import GenerationRequest, LanguageModel, ProviderUnavailable
from .structured import unwrap, wrapped_schema

TOOL_NAME = "answer"


class AnthropicModel(LanguageModel):
    provider = "anthropic"

    def __init__(self, model_id, config):
        super().__init__(model_id, config)
        self._client_obj = None

    def _env(self) -> str:
        return self.config.api_key_env or "ANTHROPIC_API_KEY"

    def missing_requirements(self) -> str | None:
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
            self._client_obj = anthropic.AsyncAnthropic(api_key=os.environ.get(self._env()),
                                                        base_url=self.config.base_url, max_retries=0,
                                                        timeout=self.config.timeout_s)
        return self._client_obj

    def secrets(self) -> list[str]:
        env = self._env()
        return [os.environ[env]] if env and os.environ.get(env) else []

    def is_retryable(self, exc: BaseException) -> bool:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        return isinstance(exc, anthropic.APIConnectionError | TimeoutError | ConnectionError | ValueError)

    def is_setup_error(self, exc: BaseException) -> bool:
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
        resp = await self._client().messages.create(**kwargs)
        parts, thinking, tools, tool_input = [], [], [], None
        for block in resp.content or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                parts.append(block.text)
            elif kind == "thinking":
                thinking.append(block.thinking)
            elif kind == "tool_use":
                tools.append(getattr(block, "name", None) or "?")
                if request.structured is not None and block.name == TOOL_NAME:
                    tool_input = getattr(block, "input", None)
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
        usage = getattr(resp, "usage", None)
        return Completion(text=text, finish_reason=finish, error=error,
                          prompt_tokens=getattr(usage, "input_tokens", None),
                          completion_tokens=getattr(usage, "output_tokens", None),
                          constraint="tool" if request.structured is not None else None)

    async def aclose(self) -> None:
        client, self._client_obj = self._client_obj, None
        if client is not None:
            await client.close()
