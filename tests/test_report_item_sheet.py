"""The items table of results.xlsx and tables/items.csv, kept as columns (reasonscope.report.item_sheet)."""

from __future__ import annotations

import random

from reasonscope.report.item_sheet import ItemScoreSheet
from reasonscope.report.spreadsheets import _columns


def as_dicts(scores):
    """What the table was before: a dict per (model, item), keys in the order they came."""
    out: dict[tuple[str, str], dict] = {}
    for family, metric, model, item, value in scores:
        out.setdefault((model, item), {})[f"{family}.{metric}"] = value
    return [{"model": m, "item": i, **values} for (m, i), values in out.items()]


def test_rows_are_the_dicts_they_replace():
    scores = [("behavior", "CQ", "a", "i1", 1.0), ("behavior", "CS", "a", "i1", None),
              ("behavior", "CQ", "a", "i2", 0.0), ("attributes", "clarity", "a", "i2", 4.0),
              ("attributes", "clarity", "a", "i1", 3.0), ("behavior", "CQ", "b", "i1", 0.5)]
    sheet = ItemScoreSheet(scores)
    rows = list(sheet)
    assert len(sheet) == 3 and rows == as_dicts(scores) == list(sheet)  # iterable again
    assert rows[0] == {"model": "a", "item": "i1", "behavior.CQ": 1.0, "behavior.CS": None, "attributes.clarity": 3.0}
    assert "behavior.CS" not in rows[1] and _columns(sheet) == _columns(rows)


def test_rows_keep_each_rows_own_key_order_and_replaced_values():
    random.seed(4)
    names = [("behavior", m) for m in ("CQ", "CS", "RS")] + [("attributes", m) for m in ("clarity", "depth")]
    for _ in range(200):
        scores = [(*random.choice(names), random.choice("ab"), f"i{random.randrange(6)}",
                   random.choice([None, 0.0, 0.5, 1.0, 2.25])) for _ in range(random.randrange(1, 40))]
        sheet = ItemScoreSheet(scores)
        expected = as_dicts(scores)
        got = list(sheet)
        assert got == expected and [list(r) for r in got] == [list(r) for r in expected]
        assert _columns(sheet) == _columns(expected)
