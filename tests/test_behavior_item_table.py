"""The per-model columns behaviour scoring keeps for the corpus estimates (reasonscope.behavior.item_table)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from reasonscope.behavior import scoring
from reasonscope.behavior.item_table import ItemTable
from reasonscope.plan import BehaviorConfig, StatsConfig


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
    assert columns / 10_000 < 7 * 8 + 7 * 4 + 2 * 4 + 8  # 8-byte values, 4-byte counts and codes (+ growth)


def golden_rows():
    """Two models on partly shared items (a: i0..i13, b: i4..i17), two datasets, two types, missing values
    and failed generations: the input of tests/golden/behavior_aggregate.json."""
    out = {}
    for model, offset, n in (("a", 0, 14), ("b", 4, 14)):
        for k in range(offset, offset + n):
            vals = {"CQ": float((k * 7 + len(model)) % 3 > 0), "CS": None if k % 5 == 0 else ((k * 3) % 4) / 3,
                    "RS": None if k % 2 else 1.0 - (k % 3) / 4, "LS": 0.4 + ((k * 5) % 7) / 10,
                    "ES_item": ((k * 11) % 9) / 9, "conciseness": None if k % 6 == 1 else ((k * 13) % 10) / 10,
                    "SS": 0.5 + ((k + len(model)) % 4) / 8}
            failed = {"CQ": int(k % 6 == 1), "LS": int(k % 6 == 1), "ES_item": int(k % 6 == 1),
                      "conciseness": int(k % 6 == 1), "CS": k % 3, "SS": k % 3, "RS": k % 2}
            out.setdefault(model, []).append((f"i{k}", vals, failed, "gsm" if k % 3 else "mmlu",
                                               "number" if k < 9 else "choice"))
    return out


def test_the_estimates_are_the_numbers_of_the_dicts_the_columns_replaced():
    # tests/golden/behavior_aggregate.json: what the previous version (a dict of values and a dict of failed
    # counts per item, a dict of groups) computed from the same items, written with json (floats exact)
    tables = {}
    for model, rows in golden_rows().items():
        tables[model] = ItemTable(scoring.ITEM_METRICS)
        for item_id, vals, failed, dataset, item_type in rows:
            tables[model].add(item_id, vals, failed, dataset, item_type)
    got = scoring._aggregate(tables, BehaviorConfig(), StatsConfig(n_resamples=300, n_permutations=500), 7)
    golden = json.loads((Path(__file__).parent / "golden" / "behavior_aggregate.json").read_text())
    assert json.loads(json.dumps({k: got[k] for k in golden}, sort_keys=True)) == golden
    assert golden["paired"][0]["n"] == 10 and golden["per_type"]["b"].keys() == {"choice", "number"}


def test_a_nan_value_is_a_missing_value():
    # the estimates always left NaN out; a paired comparison kept a NaN pair (n counted it, the test saw NaN)
    t = ItemTable(("CQ",))
    t.add("a", {"CQ": math.nan}, {}, "d", "t")
    t.add("b", {"CQ": 0.5}, {}, "d", "t")
    assert t.values("CQ") == [None, 0.5]
