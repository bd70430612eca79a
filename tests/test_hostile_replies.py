"""Hostile replies from local fake servers: text no store can hold (NUL, lone surrogates), a body that
trickles, replies of the wrong shape, a server that echoes the API key, and the attempts and seconds a
pending request reports."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
import yaml
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.data.loaders import DatasetError
from reasonscope.data.predictions import read_predictions
from reasonscope.execution.calls import complete_cached, planned_request
from reasonscope.models.registry import create_model
from reasonscope.plan import ModelConfig
from reasonscope.storage.scrub import mask_secrets, register_secret_env, scrub_generation
from reasonscope.storage.store import Store
from reasonscope.testing import FakeAnthropicServer, FakeOpenAIServer
from reasonscope.text.sanitize import replace_lone_surrogates
from reasonscope.types import Completion, Item

KEY = "sk-hostile-0123456789abcdef"
HOSTILE = "a\u0000b \ud800 Answer: 42"  # valid JSON once encoded: "a\\u0000b \\ud800 Answer: 42"


def chat(content, n: int = 0) -> dict:
    return {"id": f"c{n}", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


def openai_model(url: str, monkeypatch, **kw):
    monkeypatch.setenv("FAKE_KEY", KEY)
    options = {"retry_base_s": 0.01, "retry_cap_s": 0.02}
    return create_model(ModelConfig(spec="openai-compatible/fake", base_url=url, api_key_env="FAKE_KEY",
                                    options=options, **kw))


def complete(model, store: Store, n: int = 1) -> dict[str, Completion]:
    items = [Item(id=f"q{i}", input=f"What is {i} x 7?", target=7 * i, answer_type="number") for i in range(n)]
    planned = [planned_request(model, "ds", it, "original", 0, [{"role": "user", "content": it.input}], 1, "t1", {})
               for it in items]
    return complete_cached(model, planned, store)


def stored_rows(store: Store) -> list[tuple[str, str | None, dict]]:
    return [(text, error, json.loads(request)) for text, error, request in
            store.conn.execute("SELECT text, error, request FROM generations ORDER BY key").fetchall()]


# -- text no store can hold ----------------------------------------------------------------------
def test_lone_surrogates_are_replaced_with_their_positions_and_nul_is_kept():
    assert replace_lone_surrogates(HOSTILE) == ("a\u0000b \ufffd Answer: 42", [(4, 0xD800)])
    # a pair given as two code points is the character it encodes; a lone low surrogate is replaced
    assert replace_lone_surrogates("\ud83d\ude00 x \udc00") == ("\U0001F600 x \ufffd", [(4, 0xDC00)])
    assert replace_lone_surrogates("plain") == ("plain", [])


def test_a_reply_with_nul_and_a_lone_surrogate_is_stored_once_and_not_paid_again(tmp_path, monkeypatch):
    with FakeOpenAIServer(fault_for=lambda n, body: {"status": 200, "body": chat(HOSTILE, n)}) as srv:
        store = Store(tmp_path)
        [first] = complete(openai_model(srv.base_url, monkeypatch, max_retries=0), store).values()
        [again] = complete(openai_model(srv.base_url, monkeypatch, max_retries=0), store).values()
        assert srv.count == 1  # the second pass read the store
    assert first.error is None and first.text == again.text == "a\u0000b \ufffd Answer: 42"
    [(text, _, request)] = stored_rows(store)
    assert text == "a\u0000b \ufffd Answer: 42"
    assert request["repairs"] == {"lone_surrogates": {"text": {"count": 1, "at": [[4, "U+D800"]]}}}


def test_score_repairs_a_prediction_and_names_file_line_and_field_elsewhere(tmp_path):
    good = tmp_path / "preds.jsonl"
    good.write_text(json.dumps({"id": "1", "input": "What is 1?", "target": "1", "prediction": HOSTILE}) + "\n")
    res = CliRunner().invoke(app, ["score", "--input", str(good), "--output-dir", str(tmp_path), "--name", "s"])
    assert res.exit_code == 0, res.output
    store = Store.open_existing(tmp_path / "s")
    [(text, _, request)] = stored_rows(store)
    assert text == "a\u0000b \ufffd Answer: 42" and request["repairs"]["lone_surrogates"]["text"]["count"] == 1
    lines = [json.loads(x) for x in (tmp_path / "s" / "samples.jsonl").read_text().splitlines()]
    assert lines[0]["prediction"] == "a\u0000b \ufffd Answer: 42"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "1", "input": "What is 1?", "target": "1", "prediction": "1"}) + "\n"
                   + json.dumps({"id": "2", "input": "What \ud800 is 2?", "target": "2", "prediction": "2"}) + "\n")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:2: field 'input': holds a lone surrogate \(U\+D800 at "
                                           r"character 5\)"):
        read_predictions(bad)


# -- a body that trickles ------------------------------------------------------------------------
class TricklingServer:
    """Answers every request with a 200 whose JSON body arrives one byte every ``every_s`` seconds."""

    def __init__(self, every_s: float):
        self.every_s = every_s
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.count = 0
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by __exit__
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        self.count += 1
        body = json.dumps(chat("Answer: 42")).encode()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            for byte in body:
                if self.stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the client gave up
                    return
                time.sleep(self.every_s)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.sock.close()


def test_timeout_s_bounds_the_whole_request_not_each_read(monkeypatch):
    """A body of ~200 bytes at one byte per 0.1 s would take ~20 s; every read is quick, so only a bound
    on the whole request ends it at timeout_s = 1."""
    with TricklingServer(every_s=0.1) as srv:
        model = openai_model(srv.base_url, monkeypatch, max_retries=0, timeout_s=1.0)
        start = time.monotonic()
        [c] = asyncio.run(_generate(model))
        took = time.monotonic() - start
    assert c.pending and "no complete reply within timeout_s (1 s)" in c.error
    assert took < 3.0 and srv.count == 1


async def _generate(model):
    from reasonscope.models.base import GenerationRequest

    try:
        return await model.generate([GenerationRequest(messages=[{"role": "user", "content": "6 x 7?"}],
                                                        max_tokens=8, temperature=0.0)])
    finally:
        await model.aclose()


# -- replies of the wrong shape ------------------------------------------------------------------
@pytest.mark.parametrize("body, where", [
    ({"choices": "nope"}, "choices: Input should be a valid list"),
    ({"choices": [{"message": 5}]}, "choices.0.message"),
    ({"choices": []}, "choices: List should have at least 1 item"),
    ({"choices": [{"message": {"content": 5}}]}, "choices.0.message.content"),
    ({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "many"}}, "usage.prompt_tokens"),
    ([1, 2], "the reply"),
    ("just a string", "the reply"),
])
def test_a_reply_of_the_wrong_shape_is_malformed_retried_and_left_pending(body, where, tmp_path, monkeypatch):
    with FakeOpenAIServer(fault_for=lambda n, b: {"status": 200, "body": body}) as srv:
        store = Store(tmp_path)
        [c] = complete(openai_model(srv.base_url, monkeypatch, max_retries=1), store).values()
        assert srv.count == 2  # retried, as a reply that is not JSON is
    assert c.pending and not c.failed and "MalformedReply" in c.error and where in c.error, c.error
    assert stored_rows(store) == []  # not stored: the next run asks again
    with FakeOpenAIServer() as good:
        model = openai_model(good.base_url, monkeypatch, max_retries=0)
        model.config.base_url = srv.base_url  # the same cache key as before
        model._urls = [good.base_url]
        [c] = complete(model, store).values()
    assert c.error is None and good.count == 1


@pytest.mark.parametrize("answer", [
    {"content": "nope", "stop_reason": "end_turn"},
    {"content": [{"type": "text"}], "stop_reason": "end_turn"},
    {"content": [5], "stop_reason": "end_turn"},
])
def test_an_anthropic_reply_of_the_wrong_shape_is_malformed(answer, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", KEY)
    with FakeAnthropicServer(reply=lambda body: answer) as srv:
        model = create_model(ModelConfig(spec="anthropic/fake", base_url=srv.base_url, api_key_env="FAKE_KEY",
                                         max_retries=0))
        [c] = asyncio.run(_generate(model))
    assert c.pending and "MalformedReply" in c.error, c.error


# -- a server that echoes the key ----------------------------------------------------------------
def test_a_key_echoed_in_a_reply_is_masked_in_the_store_and_recorded(tmp_path, monkeypatch):
    seen: list = []
    with FakeOpenAIServer(reply=lambda body: f"your key: {seen[0].auth_headers[-1]}") as srv:
        seen.append(srv)
        store = Store(tmp_path)
        [c] = complete(openai_model(srv.base_url, monkeypatch, max_retries=0), store).values()
    assert srv.auth_headers[-1] == f"Bearer {KEY}"  # the server did see the key
    [(text, _, request)] = stored_rows(store)
    assert text == c.text == "your key: Bearer [masked:FAKE_KEY]"
    assert request["repairs"] == {"masked": ["FAKE_KEY"]}
    raw = (tmp_path / "store.sqlite").read_bytes()
    assert KEY.encode() not in raw


def test_a_key_echoed_in_an_error_is_masked_and_stays_pending(tmp_path, monkeypatch):
    fault = {"status": 401, "body": {"error": {"message": f"bad key {KEY}"}}}
    with FakeOpenAIServer(fault_for=lambda n, body: fault) as srv:
        [c] = complete(openai_model(srv.base_url, monkeypatch, max_retries=0), Store(tmp_path)).values()
    assert c.pending and KEY not in c.error and "[masked:FAKE_KEY]" in c.error


def test_an_anthropic_key_echoed_is_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", KEY)
    seen: list = []
    with FakeAnthropicServer(reply=lambda body: f"key={seen[0].auth_headers[-1]}") as srv:
        seen.append(srv)
        model = create_model(ModelConfig(spec="anthropic/fake", base_url=srv.base_url, api_key_env="FAKE_KEY",
                                         max_retries=0))
        [c] = complete(model, Store(tmp_path)).values()
    assert KEY not in c.text and c.text.endswith("[masked:FAKE_KEY]")  # x-api-key, or a bearer token


def test_masking_rules(monkeypatch):
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to mask: it would rewrite ordinary words
    monkeypatch.setenv("LONG_KEY", "abcdefgh-1")
    monkeypatch.setenv("LONGER_KEY", "abcdefgh-1-and-more")
    register_secret_env("SHORT_KEY", "LONG_KEY", "LONGER_KEY")
    text, names = mask_secrets("abc abcdefgh-1-and-more abcdefgh-1")
    assert text == "abc [masked:LONGER_KEY] [masked:LONG_KEY]" and sorted(names) == ["LONGER_KEY", "LONG_KEY"]
    done, request = scrub_generation(Completion(text="x", error="e abcdefgh-1"),
                                     {"messages": [{"role": "user", "content": "abcdefgh-1 \ud800"}]})
    assert done.error == "e [masked:LONG_KEY]" and request["messages"][0]["content"] == "[masked:LONG_KEY] \ufffd"
    assert request["repairs"] == {"masked": ["LONG_KEY"], "lone_surrogates": {
        "request.messages[0].content": {"count": 1, "at": [[18, "U+D800"]]}}}
    clean = Completion(text="nothing to do")
    assert scrub_generation(clean, {"a": 1}) == (clean, {"a": 1})


def test_a_hugging_face_token_is_masked_without_registration(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnop")
    done, request = scrub_generation(Completion(text="token hf_abcdefghijklmnop"), {})
    assert done.text == "token [masked:HF_TOKEN]" and request["repairs"] == {"masked": ["HF_TOKEN"]}


# -- attempts and seconds of a pending request ---------------------------------------------------
def test_a_pending_request_counts_every_attempt_and_the_time_from_the_first(monkeypatch):
    """Every request times out (the server sleeps 1.5 s, timeout_s 0.5): 2 attempts of 0.5 s each, so
    the request took at least 1.0 s; the first attempt's time is counted too."""
    with FakeOpenAIServer(fault_for=lambda n, body: "timeout", timeout_sleep_s=1.5) as srv:
        start = time.monotonic()
        [c] = asyncio.run(_generate(openai_model(srv.base_url, monkeypatch, max_retries=1, timeout_s=0.5)))
        took = time.monotonic() - start
    assert c.pending and c.attempts == 2 == srv.count
    said = float(c.error.split("no answer after 2 attempts in ")[1].split(" s")[0])
    assert 1.0 <= said <= took + 0.05, c.error


# -- end to end: run twice through the command line ----------------------------------------------
def test_a_run_stores_hostile_text_masks_the_key_everywhere_and_pays_nothing_twice(tmp_path):
    seen: list = []

    def echo(n, body):
        return {"status": 200, "body": chat(f"{seen[0].auth_headers[-1]} {HOSTILE}", n)}

    with FakeOpenAIServer(fault_for=echo) as srv:
        seen.append(srv)
        plan = {"experiment": {"name": "hostile", "output_dir": str(tmp_path / "runs")},
                "models": [{"spec": "openai-compatible/fake", "base_url": srv.base_url, "api_key_env": "HOSTILE_KEY",
                            "max_retries": 0}],
                "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
                "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                          "similarity": {"method": "embedding"}}}}
        path = tmp_path / "plan.yaml"
        path.write_text(yaml.safe_dump(plan))
        env = {**__import__("os").environ, "HOSTILE_KEY": KEY}
        cmd = [sys.executable, "-m", "reasonscope.cli", "run", str(path)]
        first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        calls = srv.count
        second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert second.returncode == 0 and srv.count == calls > 0, second.stderr[-2000:]  # nothing paid twice
    run_dir = tmp_path / "runs" / "hostile"
    for name in ("store.sqlite", "samples.jsonl", "report.html", "summary.json"):
        data = (run_dir / name).read_bytes()
        assert KEY.encode() not in data, name
    for name in ("samples.jsonl", "report.html"):
        assert b"[masked:HOSTILE_KEY]" in (run_dir / name).read_bytes(), name
    con = sqlite3.connect(run_dir / "store.sqlite")
    repairs = [json.loads(r) for (r,) in con.execute("SELECT json_extract(request, '$.repairs') FROM generations")]
    con.close()
    assert repairs == [{"masked": ["HOSTILE_KEY"],
                        "lone_surrogates": {"text": {"count": 1, "at": [[len("Bearer [masked:HOSTILE_KEY] a") + 3,
                                                                         "U+D800"]]}}}] * calls
