"""Anthropic models through the official ``anthropic`` SDK (imported only when used).

The key comes from ``api_key_env`` (default ``ANTHROPIC_API_KEY``). System messages are passed as
the ``system`` parameter. Thinking blocks are kept as a ``<think>`` block before the answer text;
``stop_reason == "max_tokens"`` is reported as finish reason ``length``.
"""

from __future__ import annotations

import os

from ..types import Completion
from .base import GenerationRequest, LanguageModel, ProviderUnavailable


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
            return exc.status_code in (408, 429) or exc.status_code >= 500
        return isinstance(exc, anthropic.APIConnectionError | TimeoutError | ConnectionError | ValueError)

    async def _generate_one(self, request: GenerationRequest) -> Completion:
        system = "\n".join(m["content"] for m in request.messages if m["role"] == "system")
        messages = [m for m in request.messages if m["role"] != "system"]
        kwargs = {"model": self.model_id, "messages": messages, "max_tokens": request.max_tokens,
                  "temperature": request.temperature}
        if system:
            kwargs["system"] = system
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        resp = await self._client().messages.create(**kwargs)
        parts, thinking = [], []
        for block in resp.content:
            if getattr(block, "type", None) == "text":
                parts.append(block.text)
            elif getattr(block, "type", None) == "thinking":
                thinking.append(block.thinking)
        text = "".join(parts)
        if thinking:
            text = f"<think>{''.join(thinking)}</think>\n{text}"
        finish = "length" if resp.stop_reason == "max_tokens" else resp.stop_reason
        return Completion(text=text, finish_reason=finish, prompt_tokens=resp.usage.input_tokens,
                          completion_tokens=resp.usage.output_tokens)

    async def aclose(self) -> None:
        client, self._client_obj = self._client_obj, None
        if client is not None:
            await client.close()
