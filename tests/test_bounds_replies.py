"""Untrusted sizes and numbers from providers, bounded where they enter.

Replies bounded once decoded (real gzip bodies from a local server), cross-origin redirects refused, token
counts / log-probabilities / finish reasons checked by one rule shared with the importer, and the rate
limiter's wait bounded by the run's patience.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import time
import zlib

import pytest

from reasonscope.data.loaders import DatasetError
from reasonscope.data.predictions import read_predictions
from reasonscope.execution.calls import complete_cached, planned_request
from reasonscope.models.base import GenerationRequest
from reasonscope.models.http import DEFAULT_MAX_REPLY_BYTES, max_reply_bytes
from reasonscope.models.registry import create_model
from reasonscope.models.reported import NumberOutOfRule, finish_reason, logprob, whole_number
from reasonscope.plan import ModelConfig
from reasonscope.storage.store import Store
from reasonscope.testing import FakeAnthropicServer, FakeOpenAIServer, RawServer
from reasonscope.types import Item

FAST = {"retry_base_s": 0.01, "retry_cap_s": 0.02}


def chat_body(content: str = "Answer: 42", usage: dict | None = None, finish: str = "stop", **extra) -> dict:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish,
                         **extra}],
            "usage": usage if usage is not None else {"prompt_tokens": 5, "completion_tokens": 3}}


def model_at(url: str, monkeypatch, spec: str = "openai-compatible/fake", **kw):
    monkeypatch.setenv("FAKE_KEY", "sk-bounds-0123456789")
    options = {**FAST, **kw.pop("options", {})}
    return create_model(ModelConfig(spec=spec, base_url=url, api_key_env="FAKE_KEY", options=options, **kw))


def generate(model, n: int = 1):
    async def go():
        try:
            return await model.generate([GenerationRequest(messages=[{"role": "user", "content": f"{i} x 7?"}],
                                                           max_tokens=8, temperature=0.0, item_id=f"q{i}")
                                         for i in range(n)])
        finally:
            await model.aclose()
    return asyncio.run(go())


def gzipped(payload: dict, pad: int) -> bytes:
    """The JSON of ``payload`` plus ``pad`` spaces of padding, gzip-compressed (spaces compress ~1000:1)."""
    text = json.dumps(payload).encode()
    return gzip.compress(text[:-1] + b" " * pad + b"}", compresslevel=9)


# -- replies bounded after decoding --------------------------------------------------------------
def test_a_small_gzip_reply_that_decodes_past_the_limit_is_pending_and_names_request_and_limit(tmp_path, monkeypatch):
    body = gzipped(chat_body(), 8 * 1024**2)  # ~8 KB on the wire, 8 MiB decoded
    assert len(body) < 64 * 1024
    with RawServer(lambda path: (200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, body)) as srv:
        model = model_at(srv.root + "/v1", monkeypatch, max_retries=1, options={"max_reply_bytes": 1024**2})
        [c] = generate(model)
    assert c.pending and not c.failed and c.text == "", c
    assert "ReplyTooLarge" in c.error and "max_reply_bytes (1,048,576 bytes)" in c.error, c.error
    assert "POST http://127.0.0.1:" in c.error and "/v1/chat/completions" in c.error and "gzip" in c.error
    assert len(srv.paths) == 2  # retryable: retried once, then pending
    assert srv.paths[0][2] == "gzip, deflate"  # only encodings that can be bounded are asked for


def test_a_gzip_reply_within_the_limit_is_read_and_an_unbounded_encoding_is_refused(monkeypatch):
    ok = gzipped(chat_body("Answer: 7"), 1000)
    with RawServer(lambda path: (200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, ok)) as srv:
        [c] = generate(model_at(srv.root + "/v1", monkeypatch))
    assert c.error is None and c.text == "Answer: 7"
    deflated = zlib.compress(json.dumps(chat_body("Answer: 8")).encode())
    with RawServer(lambda path: (200, {"Content-Type": "application/json", "Content-Encoding": "deflate"},
                                 deflated)) as srv:
        [c] = generate(model_at(srv.root + "/v1", monkeypatch))
    assert c.error is None and c.text == "Answer: 8"
    with RawServer(lambda path: (200, {"Content-Type": "application/json", "Content-Encoding": "br"}, b"xx")) as srv:
        [c] = generate(model_at(srv.root + "/v1", monkeypatch, max_retries=0))
    assert c.pending and "Content-Encoding br" in c.error, c.error


def test_a_plain_reply_past_the_limit_is_pending_too(monkeypatch):
    body = json.dumps(chat_body("x" * 300_000)).encode()
    with RawServer(lambda path: (200, {"Content-Type": "application/json"}, body)) as srv:
        [c] = generate(model_at(srv.root + "/v1", monkeypatch, max_retries=0, options={"max_reply_bytes": 100_000}))
    assert c.pending and "larger than max_reply_bytes (100,000 bytes)" in c.error, c.error


def test_an_anthropic_reply_is_bounded_too(monkeypatch):
    payload = {"id": "m", "type": "message", "role": "assistant", "model": "fake",
               "content": [{"type": "text", "text": "Answer: 42"}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 5, "output_tokens": 3}}
    body = gzipped(payload, 4 * 1024**2)
    with RawServer(lambda path: (200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, body)) as srv:
        model = model_at(srv.root, monkeypatch, spec="anthropic/fake", max_retries=0,
                         options={"max_reply_bytes": 1024**2})
        [c] = generate(model)
    assert c.pending and "max_reply_bytes (1,048,576 bytes)" in c.error and "/v1/messages" in c.error, c.error


def test_max_reply_bytes_is_a_checked_setting_outside_the_cache_key():
    from reasonscope.storage.store import cache_key

    assert max_reply_bytes({}) == DEFAULT_MAX_REPLY_BYTES == 64 * 1024**2
    with pytest.raises(ValueError, match="options.max_reply_bytes: expected a whole number of bytes >= 1024"):
        max_reply_bytes({"max_reply_bytes": "big"})
    with pytest.raises(ValueError, match="^anthropic/x: options.max_reply_bytes: .* got 5$"):
        create_model(ModelConfig(spec="anthropic/x", options={"max_reply_bytes": 5}))  # before any request
    keys = {cache_key(provider="openai", model_id="m", revision=None, base_url=None, gen_config={}, messages=[],
                      sample=0, template_version="t", model_options=options)
            for options in ({}, {"max_reply_bytes": 2048})}
    assert len(keys) == 1  # how much is read does not change what the model answers


# -- redirects -----------------------------------------------------------------------------------
def test_a_redirect_to_another_origin_is_refused_and_its_reply_never_stored(tmp_path, monkeypatch):
    with RawServer(lambda path: (200, {"Content-Type": "application/json"},
                                 json.dumps(chat_body("Answer: EVIL")).encode())) as other:
        with RawServer(lambda path: (307, {"Location": other.root + path}, b"")) as srv:
            model = model_at(srv.root + "/v1", monkeypatch, max_retries=3)
            store = Store(tmp_path)
            item = Item(id="q0", input="6 x 7?", target=42, answer_type="number")
            planned = [planned_request(model, "ds", item, "original", 0, [{"role": "user", "content": "6 x 7?"}], 1,
                                       "t1", {})]
            [c] = complete_cached(model, planned, store).values()
    assert other.paths == []  # nothing (no key) was sent to the other origin
    assert len(srv.paths) == 1  # not retried
    assert c.pending and "EVIL" not in (c.text or "") and "redirected POST" in c.error, c.error
    assert f"another origin (http://127.0.0.1:{other.httpd.server_address[1]}" in c.error
    assert store.conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0] == 0


def test_a_same_origin_redirect_is_followed(monkeypatch):
    def handler(path):
        if path.startswith("/old"):
            return 307, {"Location": path.replace("/old", "/v1", 1)}, b""
        return 200, {"Content-Type": "application/json"}, json.dumps(chat_body("Answer: 42")).encode()

    with RawServer(handler) as srv:
        [c] = generate(model_at(srv.root + "/old", monkeypatch))
    assert c.error is None and c.text == "Answer: 42"
    assert [p for p, _, _ in srv.paths] == ["/old/chat/completions", "/v1/chat/completions"]


# -- numbers: one rule -----------------------------------------------------------------------------
@pytest.mark.parametrize("usage, field, shown", [
    ({"prompt_tokens": -5, "completion_tokens": 3}, "prompt_tokens", "got -5"),
    ({"prompt_tokens": 5, "completion_tokens": 10**12}, "completion_tokens", "got 1000000000000"),
    ({"prompt_tokens": 5, "completion_tokens": -1}, "completion_tokens", "got -1"),
])
def test_impossible_token_counts_are_a_failed_request_never_scored(usage, field, shown, tmp_path, monkeypatch):
    with FakeOpenAIServer(fault_for=lambda n, b: {"status": 200, "body": chat_body(usage=usage)}) as srv:
        [c] = generate(model_at(srv.base_url, monkeypatch, max_retries=3))
        assert srv.count == 1  # a failed request: not retried
    assert c.failed and not c.pending, c
    assert f"usage {field}" in c.error and "expected a whole number from 0 to 2147483647" in c.error and shown in c.error
    assert "(item q0, original, sample 0)" in c.error


def test_anthropic_counts_pass_the_same_rule(monkeypatch):
    class Negative(FakeAnthropicServer):
        def response(self, n, body, answer, words):
            out = super().response(n, body, answer, words)
            out["usage"]["output_tokens"] = -7
            return out

    with Negative() as srv:
        [c] = generate(model_at(srv.base_url, monkeypatch, spec="anthropic/fake", max_retries=2))
    assert c.failed and "usage completion_tokens" in c.error and "got -7" in c.error, c.error


def test_the_importer_and_the_providers_share_the_rule(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "q", "target": "1", "prediction": "1",
                                "completion_tokens": -4}) + "\n")
    with pytest.raises(DatasetError) as err:
        read_predictions(path)
    with pytest.raises(NumberOutOfRule) as rule:
        whole_number(-4, "completion_tokens")
    assert str(rule.value) in str(err.value) and "p.jsonl:1: field 'completion_tokens'" in str(err.value)


def test_log_probabilities_and_finish_reasons_rules():
    assert logprob(-1.5) == -1.5 and logprob(0) == 0.0 and logprob(1e-7) == 0.0
    for bad in (0.5, float("nan"), float("inf"), float("-inf")):
        with pytest.raises(NumberOutOfRule, match="expected a finite log-probability <= 0"):
            logprob(bad)
    assert finish_reason("Length") == "length" and finish_reason("end_turn") == "end_turn"
    assert finish_reason("model_length") == "length" and finish_reason(None) is None
    assert finish_reason("x" * 500) == "other:" + "x" * 64 and finish_reason("other:abc") == "other:abc"


def test_a_positive_or_nan_log_probability_is_refused(monkeypatch):
    def reply(n, body):
        lp = {"content": [{"token": "7", "logprob": 2.5, "top_logprobs": [{"token": "7", "logprob": 2.5}]}]}
        return {"status": 200, "body": chat_body("7", logprobs=lp)}

    with FakeOpenAIServer(fault_for=reply) as srv:
        model = model_at(srv.base_url, monkeypatch, max_retries=2)
        with pytest.raises(RuntimeError, match="log-probabilities unavailable: failed .*logprob: expected a finite "
                                               "log-probability <= 0, got 2.5"):
            asyncio.run(model.logprobs("6+1=", ["7"]))
        assert srv.count == 1


def test_an_unknown_finish_reason_is_kept_as_text(monkeypatch):
    with FakeOpenAIServer(reply=lambda body: {"content": "Answer: 1", "finish_reason": "Cosmic Ray"}) as srv:
        [c] = generate(model_at(srv.base_url, monkeypatch))
    assert c.error is None and c.finish_reason == "other:Cosmic Ray"


# -- the rate limiter's wait -----------------------------------------------------------------------
def test_a_tpm_wait_past_the_patience_leaves_the_request_pending_at_once(monkeypatch):
    """The first reply reports 2e9 completion tokens (within the count rule); at tpm 600 the next request would
    wait ~2e8 s. It is left pending at once with the reason instead."""
    usage = {"prompt_tokens": 5, "completion_tokens": 2_000_000_000}
    with FakeOpenAIServer(fault_for=lambda n, b: {"status": 200, "body": chat_body(usage=usage)}) as srv:
        model = model_at(srv.base_url, monkeypatch, tpm=600, retry_max_s=30)

        async def two():
            try:
                first = await model.generate([GenerationRequest([{"role": "user", "content": "a"}], 8, 0.0)])
                second = await model.generate([GenerationRequest([{"role": "user", "content": "b"}], 8, 0.0)])
                return first + second
            finally:
                await model.aclose()

        start = time.monotonic()
        first, second = asyncio.run(two())
        took = time.monotonic() - start
    assert first.error is None and first.completion_tokens == 2_000_000_000
    assert second.pending and "the tpm limit (600 tokens per minute) would hold this request" in second.error
    assert re.search(r"and 2,000,000,00\d reported by earlier replies", second.error), second.error
    assert "retry_max_s (30 s)" in second.error
    assert took < 10 and srv.count == 1
