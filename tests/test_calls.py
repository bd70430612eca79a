"""generate_pending: completions committed as they arrive, one transaction per event-loop turn."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import contextmanager

import pytest

from reasonscope.execution.calls import generate_pending, planned_request
from reasonscope.models.base import LanguageModel
from reasonscope.models.registry import create_model
from reasonscope.plan import ModelConfig
from reasonscope.storage.store import Store
from reasonscope.types import Completion, Item


def planned(model, n, prefix="q"):
    items = [Item(id=f"{prefix}{i}", input=f"What is {i} + 1?", target=i + 1, answer_type="number") for i in range(n)]
    return [planned_request(model, "ds", it, "original", 0, [{"role": "user", "content": it.input}], 1, "t1", {})
            for it in items]


class CountingStore(Store):
    """A store that counts its transactions."""

    transactions = 0

    @contextmanager
    def transaction(self):
        self.transactions += 1
        with super().transaction() as conn:
            yield conn


def test_completions_of_one_turn_share_a_transaction_and_all_are_stored(tmp_path):
    model = create_model(ModelConfig(spec="mock/reasoner", concurrency=8))
    store = CountingStore(tmp_path)
    pending = planned(model, 40)
    sent = asyncio.run(generate_pending(model, pending, store))
    assert sent.calls == 40 and store.cached_keys([p.key for p in pending]) == {p.key for p in pending}
    # 8 requests in flight finish together: far fewer commits than completions, at least one per wave
    assert 40 / 8 <= store.transactions < 40
    again = create_model(ModelConfig(spec="mock/reasoner", concurrency=8))
    assert store.get_completion(pending[3].key).text == asyncio.run(again.generate([pending[3].request]))[0].text


class FailingOn(LanguageModel):
    """Answers at once, except the request of item ``bad``, which fails the batch after a moment."""

    provider = "mock"

    def __init__(self, bad: str):
        super().__init__("fake", ModelConfig(spec="mock/reasoner", concurrency=4))
        self.bad = bad

    async def generate(self, requests, on_done=None):
        if any(r.item_id.endswith("/" + self.bad) for r in requests):
            await asyncio.sleep(0.05)
            raise RuntimeError("provider crashed")
        return [Completion(text=f"Answer: {r.item_id}") for r in requests]


def test_completions_that_arrived_before_a_crash_are_stored(tmp_path):
    model = FailingOn("q5")
    store = Store(tmp_path)
    pending = planned(model, 10)
    with pytest.raises(RuntimeError, match="provider crashed"):
        asyncio.run(generate_pending(model, pending, store))
    held = store.cached_keys([p.key for p in pending])
    assert held == {p.key for p in pending} - {pending[5].key}
    assert store.get_completion(pending[0].key).text == "Answer: ds/q0"


class BrokenStore(Store):
    def put_completion(self, key, **fields):
        raise sqlite3.OperationalError("disk I/O error")


def test_a_failed_write_stops_the_pass_with_its_error(tmp_path):
    model = create_model(ModelConfig(spec="mock/reasoner", concurrency=2))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        asyncio.run(generate_pending(model, planned(model, 6), BrokenStore(tmp_path)))
