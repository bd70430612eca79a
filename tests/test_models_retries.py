"""The retry policy against a local OpenAI-compatible server: the server's Retry-After /
retry-after-ms is honoured (capped), retries stop by time as well as by attempts, refused keys are
not retried, the SDK does not retry underneath, and the rpm / tpm limits space the requests.
Timings are checked only as lower bounds (the waits the server or the limit asked for)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from reasonscope.models.base import GenerationRequest, retry_after_s
from reasonscope.models.registry import create_model
from reasonscope.plan import ModelConfig
from reasonscope.testing import FakeOpenAIServer


def _model(url: str, **kw):
    options = {"retry_base_s": kw.pop("retry_base_s", 0.05), "retry_cap_s": kw.pop("retry_cap_s", 0.2)}
    return create_model(ModelConfig(spec="openai-compatible/fake", base_url=url, options=options, **kw))


def _generate(model, n: int = 1, one_by_one: bool = False):
    # 40 characters: a prompt estimate of 10 tokens, as many as the fake server reports
    requests = [GenerationRequest(messages=[{"role": "user", "content": f"question {i:02d}: what is 6 x 7?".ljust(40)}],
                                  max_tokens=16, temperature=0.0) for i in range(n)]

    async def go():
        try:
            if one_by_one:
                return [c for r in requests for c in await model.generate([r])]
            return await model.generate(requests)
        finally:
            await model.aclose()

    return asyncio.run(go())


class Cooldown:
    """429 with the given headers for any request that comes less than ``wait_s`` after the server's
    last 429 (a server that punishes early retries), else an answer."""

    def __init__(self, wait_s: float, headers: dict[str, str]):
        self.wait_s, self.headers = wait_s, headers
        self.last: float | None = None
        self.lock = threading.Lock()

    def __call__(self, n: int, body: dict):
        with self.lock:
            now = time.monotonic()
            if self.last is None or now - self.last < self.wait_s:
                self.last = now
                return {"status": 429, "headers": self.headers}
            return None


@pytest.mark.parametrize("headers, wait_s", [({"Retry-After": "1"}, 1.0), ({"retry-after-ms": "400"}, 0.4)])
def test_the_servers_retry_after_is_honoured(headers, wait_s):
    with FakeOpenAIServer(fault_for=Cooldown(wait_s, headers)) as srv:
        [c] = _generate(_model(srv.base_url, max_retries=4))
    assert c.error is None and c.attempts == 2 and srv.count == 2  # waited as asked, then answered
    assert srv.arrivals[1] - srv.arrivals[0] >= wait_s


def test_retry_after_as_an_http_date_and_unreadable_values():
    class Err(Exception):
        def __init__(self, headers):
            self.response = type("R", (), {"headers": headers})()

    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= retry_after_s(Err({"retry-after": later})) <= 30
    assert retry_after_s(Err({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after_s(Err({"retry-after": "soon"})) is None
    assert retry_after_s(Err({"retry-after": "nan"})) is None
    assert retry_after_s(Err({})) is None and retry_after_s(ValueError("no response")) is None


def test_a_wait_longer_than_the_cap_ends_the_retries_and_leaves_the_request_pending():
    with FakeOpenAIServer(fault_for=lambda n, body: {"status": 429, "headers": {"Retry-After": "3600"}}) as srv:
        [c] = _generate(_model(srv.base_url, max_retries=5, retry_after_cap_s=5))
    assert c.pending and not c.failed and srv.count == 1
    assert "the server asked to wait 3600 s, more than retry_after_cap_s (5 s)" in c.error


def test_retries_stop_by_total_time_as_well_as_by_attempts():
    with FakeOpenAIServer(fault_for=lambda n, body: {"status": 503}) as srv:
        [c] = _generate(_model(srv.base_url, max_retries=100, retry_max_s=1.0, retry_base_s=0.2, retry_cap_s=0.4))
    assert c.pending and "retry_max_s" in c.error and "503" in c.error
    assert 2 <= srv.count < 101 and c.attempts == srv.count


def test_a_refused_key_is_not_retried_and_stays_pending():
    with FakeOpenAIServer(fault_for=lambda n, body: {"status": 401, "body": {"error": {"message": "bad key"}}}) as srv:
        [c] = _generate(_model(srv.base_url, max_retries=5))
    assert c.pending and srv.count == 1 and "401" in c.error and "check the key" in c.error


def test_a_rejected_request_is_a_failed_generation_at_once():
    with FakeOpenAIServer(fault_for=lambda n, body: {"status": 400}) as srv:
        [c] = _generate(_model(srv.base_url, max_retries=5))
    assert c.failed and not c.pending and srv.count == 1 and "400" in c.error


def test_only_reasonscope_retries_so_attempts_do_not_multiply():
    """max_retries 2 = 3 requests on the wire: the SDK client under it does not retry as well."""
    with FakeOpenAIServer(fault_for=lambda n, body: {"status": 429, "headers": {"Retry-After": "0"}}) as srv:
        [c] = _generate(_model(srv.base_url, max_retries=2))
    assert c.pending and c.attempts == 3 and srv.count == 3


def test_rpm_spaces_the_requests():
    with FakeOpenAIServer() as srv:
        completions = _generate(_model(srv.base_url, rpm=600), n=8)  # all at once, but one request per 0.1 s
    assert all(c.error is None for c in completions)
    arrivals = sorted(srv.arrivals)[1:]  # from the second: the first one also pays for opening the connection
    assert arrivals[-1] - arrivals[0] >= 6 * 0.1 * 0.8


def test_tpm_charges_the_reported_completion_tokens():
    """tpm 120 = 2 tokens/s, a bucket of 120. The first request charges its 10-token prompt; its reply
    reports 104 completion tokens, owed by the next request, which so needs 114 tokens of room: it waits
    until the bucket is down to 6, (10 - 6) / 2 = 2 s."""
    with FakeOpenAIServer(reply=lambda body: " ".join(["word"] * 104)) as srv:
        completions = _generate(_model(srv.base_url, tpm=120), n=2, one_by_one=True)
    assert [c.completion_tokens for c in completions] == [104, 104]
    assert srv.arrivals[1] - srv.arrivals[0] >= 1.5  # 2 s, less the time the first reply took
