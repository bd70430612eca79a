"""The ``structured`` option on the API providers: the request body each sends (against local fake
servers), the unwrapped answer, and the recorded fallback when an OpenAI-compatible server rejects it."""

from __future__ import annotations

import asyncio
import json

import pytest

from reasonscope.models.base import GenerationRequest
from reasonscope.models.registry import create_model
from reasonscope.plan import ModelConfig
from reasonscope.testing import FakeAnthropicServer, FakeOpenAIServer

SCHEMA = {"type": "object", "properties": {"label": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["label"], "additionalProperties": False}


def _complete(spec: str, url: str, structured, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-test-0000")
    model = create_model(ModelConfig(spec=spec, base_url=url, api_key_env="FAKE_KEY", max_retries=0))
    req = GenerationRequest(messages=[{"role": "user", "content": "Is a robin a bird?"}], max_tokens=16,
                            temperature=0.0, structured=structured)

    async def go():
        try:
            return await model.generate([req])
        finally:
            await model.aclose()

    [c] = asyncio.run(go())
    return c


def test_openai_sends_the_schema_as_response_format(monkeypatch):
    with FakeOpenAIServer(reply=lambda body: '{"label": "yes"}') as srv:
        c = _complete("openai/gpt-test", srv.base_url, {"json_schema": SCHEMA}, monkeypatch)
    assert srv.bodies[0]["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "answer", "schema": SCHEMA, "strict": True}}
    assert (c.text, c.constraint, c.error) == ('{"label": "yes"}', "response_format", None)


def test_openai_choice_is_wrapped_and_unwrapped(monkeypatch):
    with FakeOpenAIServer(reply=lambda body: '{"value": "no"}') as srv:
        c = _complete("openai/gpt-test", srv.base_url, {"choice": ["yes", "no"]}, monkeypatch)
    schema = srv.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"] == {"value": {"type": "string", "enum": ["yes", "no"]}}
    assert c.text == "no"


def test_compatible_server_rejecting_response_format_falls_back_and_records_it(monkeypatch, capsys):
    def fault_for(n, body):
        if "response_format" in body:
            return {"status": 400, "body": {"error": {"message": "response_format is not supported"}}}
        return None

    with FakeOpenAIServer(fault_for=fault_for, reply=lambda body: "yes") as srv:
        c = _complete("openai-compatible/local", srv.base_url, {"choice": ["yes", "no"]}, monkeypatch)
    # the json_schema form, then the json_object form with the schema, then no response_format
    assert [b.get("response_format", {}).get("type") for b in srv.bodies] == ["json_schema", "json_object", None]
    assert c.error is None and c.text == "yes"
    assert c.constraint.startswith("prompt-only: the server rejected response_format") \
        and "response_format is not supported" in c.constraint
    assert "answers are parsed as free text" in capsys.readouterr().err
    # without a constraint the free request is sent once, untouched
    with FakeOpenAIServer(reply=lambda body: "yes") as srv:
        c = _complete("openai-compatible/local", srv.base_url, None, monkeypatch)
    assert "response_format" not in srv.bodies[0] and c.constraint is None


def test_server_taking_only_the_json_object_form_gets_the_schema_that_way():
    """llama-cpp-python's server answers a ``json_schema`` response_format with a 500 whose message names
    response_format (its request validation) and reads ``{"type": "json_object", "schema": ...}``."""
    def fault_for(n, body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return {"status": 500, "body": {"error": {"message": "1 validation error: {'loc': ('body', "
                                                      "'response_format', 'type'), 'msg': \"Input should be 'text' "
                                                      "or 'json_object'\"}", "type": "internal_server_error"}}}
        return None

    reqs = [GenerationRequest(messages=[{"role": "user", "content": q}], max_tokens=16, temperature=0.0,
                              structured={"choice": ["yes", "no"]}) for q in ("Is a robin a bird?", "Is a cat?")]
    with FakeOpenAIServer(fault_for=fault_for, reply=lambda body: '{"value": "no"}') as srv:
        model = create_model(ModelConfig(spec="openai-compatible/local", base_url=srv.base_url, max_retries=0))

        async def go():
            try:
                return [(await model.generate([r]))[0] for r in reqs]  # one after the other
            finally:
                await model.aclose()

        first, second = asyncio.run(go())
    forms = [b["response_format"]["type"] for b in srv.bodies]
    assert forms == ["json_schema", "json_object", "json_object"]  # the second request goes straight to the form
    assert srv.bodies[1]["response_format"]["schema"]["properties"] == {"value": {"type": "string",
                                                                                  "enum": ["yes", "no"]}}
    assert (first.text, first.constraint, first.error) == ("no", "response_format:json_object", None)
    assert (second.text, second.constraint) == ("no", "response_format:json_object")


def test_anthropic_forces_a_tool_whose_input_schema_is_the_schema(monkeypatch):
    answer = {"content": [{"type": "tool_use", "id": "t1", "name": "answer", "input": {"label": "no"}}],
              "stop_reason": "tool_use"}
    with FakeAnthropicServer(reply=lambda body: answer) as srv:
        c = _complete("anthropic/claude-test", srv.base_url, {"json_schema": SCHEMA}, monkeypatch)
    body = srv.bodies[0]
    assert body["tools"] == [{"name": "answer", "description": "Give the answer in the required form.",
                              "input_schema": SCHEMA}]
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert (json.loads(c.text), c.constraint, c.error) == ({"label": "no"}, "tool", None)


def test_anthropic_regex_is_wrapped_and_unwrapped(monkeypatch):
    answer = {"content": [{"type": "tool_use", "id": "t1", "name": "answer", "input": {"value": "Answer: 42"}}],
              "stop_reason": "tool_use"}
    with FakeAnthropicServer(reply=lambda body: answer) as srv:
        c = _complete("anthropic/claude-test", srv.base_url, {"regex": "Answer: [0-9]+"}, monkeypatch)
    assert srv.bodies[0]["tools"][0]["input_schema"]["properties"]["value"] == \
        {"type": "string", "pattern": "^(Answer: [0-9]+)$"}
    assert c.text == "Answer: 42"


@pytest.mark.parametrize("spec", ["openai/gpt-test", "anthropic/claude-test"])
def test_free_requests_send_no_constraint(spec, monkeypatch):
    server = FakeAnthropicServer if spec.startswith("anthropic") else FakeOpenAIServer
    with server(reply=lambda body: "Answer: 42") as srv:
        c = _complete(spec, srv.base_url, None, monkeypatch)
    assert not {"response_format", "tools", "tool_choice"} & set(srv.bodies[0]) and c.constraint is None


def test_openai_logprobs_from_top_logprobs_feed_the_expected_score(monkeypatch):
    import math

    from reasonscope.judge.logprob_scores import scale_values, score_by_expectation

    top = [{"token": "7", "logprob": math.log(0.6), "bytes": None},
           {"token": " 8", "logprob": math.log(0.3), "bytes": None},
           {"token": "cat", "logprob": math.log(0.1), "bytes": None}]

    class Server(FakeOpenAIServer):
        def response(self, n, body, answer, words):
            out = super().response(n, body, answer, words)
            out["choices"][0]["logprobs"] = {"content": [{"token": "7", "logprob": math.log(0.6), "bytes": None,
                                                          "top_logprobs": top}]}
            return out

    monkeypatch.setenv("FAKE_KEY", "sk-test-0000")
    with Server(reply=lambda body: "7") as srv:
        model = create_model(ModelConfig(spec="openai/gpt-test", base_url=srv.base_url, api_key_env="FAKE_KEY",
                                         max_retries=0))
        w = asyncio.run(score_by_expectation(model, "Score 0-10:", scale_values(0, 10)))
    body = srv.bodies[0]
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 20, 1)
    assert w.value == pytest.approx((0.6 * 7 + 0.3 * 8) / 0.9)  # "cat" and absent scores carry no weight
    assert w.valid_mass == pytest.approx(0.9)
