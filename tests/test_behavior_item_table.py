"""The per-model columns behaviour scoring keeps for the corpus estimates (reasonscope.behavior.item_table)."""

from __future__ import annotations

import math
import sys

import numpy as np

from reasonscope.behavior.item_table import ItemTable


def table() -> ItemTable:
    t = ItemTable(("CQ", "CS"))
    t.add("a", {"CQ": 1.0, "CS": None}, {"CQ": 0, "CS": 2}, "gsm", "number")
    t.add("b", {"CQ": 0.0, "CS": 0.5}, {"CQ": 1}, "mmlu", "choice")
    t.add("c", {"CQ": 1, "CS": 1.0}, {}, "gsm", "choice")
    return t


def test_values_keep_item_order_and_none():
    t = table()
    assert t.ids == ["a", "b", "c"] and len(t) == 3
    assert t.values("CQ") == [1.0, 0.0, 1.0] and t.values("CS") == [None, 0.5, 1.0]
    assert math.isnan(t.column("CS")[0]) and t.column("CQ", np.array([2, 0])).tolist() == [1.0, 1.0]
    assert t.failed("CS") == 2 and t.failed("CQ") == 1 and t.failed("CQ", np.array([0, 2])) == 0


def test_groups_are_places_in_item_order_by_name():
    t = table()
    by_dataset = {name: rows.tolist() for name, rows in t.groups("dataset").items()}
    by_type = {name: rows.tolist() for name, rows in t.groups("type").items()}
    assert by_dataset == {"gsm": [0, 2], "mmlu": [1]} and by_type == {"number": [0], "choice": [1, 2]}
    assert t.places(["c", "a"]).tolist() == [2, 0]


def test_an_item_added_again_replaces_its_values_in_place():
    t = table()
    t.add("a", {"CQ": 0.0, "CS": 0.25}, {"CQ": 1}, "mmlu", "choice")  # as a dict keeps a key's place
    assert t.ids == ["a", "b", "c"] and t.values("CQ") == [0.0, 0.0, 1.0] and t.values("CS") == [0.25, 0.5, 1.0]
    assert t.failed("CS") == 0 and t.failed("CQ") == 2
    assert {name: rows.tolist() for name, rows in t.groups("dataset").items()} == {"gsm": [2], "mmlu": [0, 1]}


def test_columns_hold_a_few_bytes_per_item():
    t = ItemTable(("CQ", "CS", "RS", "LS", "ES_item", "conciseness", "SS"))
    for i in range(10_000):
        t.add(f"syn:{i}", dict.fromkeys(t.metrics, 0.5), dict.fromkeys(t.metrics, 0), "syn", "number")
    columns = sum(sys.getsizeof(c) for c in (*t._values.values(), *t._failed.values(), *t._codes.values()))
    assert columns / 10_000 < 7 * 8 + 7 * 4 + 2 * 2 + 8  # 8-byte values, 4-byte counts, 2-byte codes (+ growth)
