"""Replies without an answer (refusals, null content, tool calls only) are failed generations with
their reason, from OpenAI- and Anthropic-shaped local servers; a reply cut at max_tokens is not."""

from __future__ import annotations

import asyncio

import pytest

from reasonscope.models.base import GenerationRequest
from reasonscope.models.registry import create_model
from reasonscope.plan import ModelConfig
from reasonscope.testing import FakeAnthropicServer, FakeOpenAIServer


def _req() -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": "What is 6 x 7?"}], max_tokens=16, temperature=0.0)


def _complete(spec: str, url: str, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-test-0000")
    model = create_model(ModelConfig(spec=spec, base_url=url, api_key_env="FAKE_KEY", max_retries=0))

    async def go():
        try:
            return await model.generate([_req()])
        finally:
            await model.aclose()

    [c] = asyncio.run(go())
    return c


@pytest.mark.parametrize("message, error", [
    ({"content": None, "refusal": "I can't help with that."}, "refusal: I can't help with that."),
    ({"content": None, "tool_calls": [{"id": "c1", "type": "function",
                                       "function": {"name": "calculator", "arguments": "{}"}}],
      "finish_reason": "tool_calls"}, "no answer text: tool calls only (calculator) (finish reason tool_calls)"),
    ({"content": None}, "no answer text: no content (finish reason stop)"),
    ({"content": "", "finish_reason": "content_filter"}, "blocked by the provider's content filter"),
])
def test_openai_reply_without_answer_is_a_failed_generation(monkeypatch, message, error):
    with FakeOpenAIServer(reply=lambda body: message) as srv:
        c = _complete("openai-compatible/fake", srv.base_url, monkeypatch)
    assert c.failed and not c.pending and c.error.startswith(error)
    assert srv.count == 1  # a refusal is an answer about this request: not retried
    if message.get("refusal"):
        assert c.text == message["refusal"]  # the raw text is kept


def test_openai_null_content_cut_at_max_tokens_is_the_models_answer(monkeypatch):
    with FakeOpenAIServer(reply=lambda body: {"content": None, "reasoning_content": "6 x 7 is",
                                              "finish_reason": "length"}) as srv:
        c = _complete("openai-compatible/fake", srv.base_url, monkeypatch)
    assert not c.failed and c.truncated and c.text.startswith("<think>6 x 7 is</think>")


@pytest.mark.parametrize("answer, error", [
    ({"content": [{"type": "text", "text": "I won't answer that."}], "stop_reason": "refusal"},
     "refusal: I won't answer that."),
    ({"content": [], "stop_reason": "refusal"}, "refusal (stop reason refusal, no text)"),
    ({"content": [{"type": "tool_use", "id": "t1", "name": "calculator", "input": {}}], "stop_reason": "tool_use"},
     "no answer text: tool use only (calculator) (stop reason tool_use)"),
    ({"content": [], "stop_reason": "end_turn"}, "no answer text: no text block (stop reason end_turn)"),
])
def test_anthropic_reply_without_answer_is_a_failed_generation(monkeypatch, answer, error):
    with FakeAnthropicServer(reply=lambda body: answer) as srv:
        c = _complete("anthropic/fake", srv.base_url, monkeypatch)
    assert c.failed and not c.pending and c.error == error
    assert srv.count == 1


def test_anthropic_text_and_thinking_only_at_max_tokens(monkeypatch):
    with FakeAnthropicServer(reply=lambda body: {"content": [{"type": "text", "text": "Answer: 42"}],
                                                 "stop_reason": "end_turn"}) as srv:
        c = _complete("anthropic/fake", srv.base_url, monkeypatch)
    assert c.error is None and c.text == "Answer: 42" and c.prompt_tokens == 10
    assert srv.bodies[0]["temperature"] == 0.0  # sent in the body (anthropic>=1.0 has no temperature argument)
    thinking = {"content": [{"type": "thinking", "thinking": "6 x 7", "signature": "s"}], "stop_reason": "max_tokens"}
    with FakeAnthropicServer(reply=lambda body: thinking) as srv:
        c = _complete("anthropic/fake", srv.base_url, monkeypatch)
    assert not c.failed and c.finish_reason == "length" and c.text.startswith("<think>6 x 7</think>")
