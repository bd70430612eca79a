"""The ``items`` table of ``results.xlsx`` and ``tables/items.csv``.

A row per (model, item) with every item-level score of the run, one column per ``family.metric``.

The table has a row per item and model, so it is built from columns: a float per cell (NaN where the
row has no value) and a byte telling whether the row has the score at all, instead of a dict per row,
which at 20,000 items held 26 MB (1.3 KB per item) while the outputs were written, the largest part of
a run's memory that grew with its items. Rows come out as dicts, built one at a time, equal to the
dicts the table was made of: keys in the order they were added, a score stored without a value as
None.

Some families score something other than a model's generation under the ``model`` key: the
information family scores each rationale *variant* (``gold``, ``leaky``, ...) with its evaluator. Given
the run's ``models``, a row whose key is not one of them has ``model`` None and the key in its own
``variant`` column, so the ``model`` column holds models only.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Collection, Iterable, Iterator
from typing import Any


class ItemScoreSheet:
    """Rows ``{"model", "item", "<family>.<metric>": value, ...}`` in the order their first score came.

    Built from ``scores`` = ``(family, metric, model, item, value)`` tuples (a later value for the same cell
    replaces the earlier one). Iterable any number of times; ``len`` is the number of rows. With ``models``
    (the run's model names) each row also has ``variant`` (module docstring).
    """

    def __init__(self, scores: Iterable[tuple[str, str, str, str, float | None]],
                 models: Collection[str] | None = None):
        self.models = None if models is None else set(models)
        self.keys: list[tuple[str, str]] = []
        place: dict[tuple[str, str], int] = {}
        self._names: list[str] = []  # the columns, in the order they first came
        index: dict[str, int] = {}
        self._values: list[array] = []
        self._present: list[bytearray] = []
        last = array("h")  # each row's highest column so far
        self._order: dict[int, list[int]] = {}  # a row whose columns came out of the table's order: its order
        for family, metric, model, item, value in scores:
            at = place.get((model, item))
            if at is None:
                at = place[(model, item)] = len(self.keys)
                self.keys.append((model, item))
                last.append(-1)
            name = f"{family}.{metric}"
            column = index.get(name)
            if column is None:
                column = index[name] = len(self._names)
                self._names.append(name)
                self._values.append(array("d"))
                self._present.append(bytearray())
            values, present = self._values[column], self._present[column]
            if len(values) <= at:
                values.extend([math.nan] * (at + 1 - len(values)))
                present.extend(bytes(at + 1 - len(present)))
            if not present[at]:
                if column < last[at] or at in self._order:  # rare: two families scoring items in other orders
                    self._order.setdefault(at, [c for c in range(len(self._names)) if self._has(c, at)])
                    self._order[at].append(column)
                last[at] = max(last[at], column)
            values[at] = math.nan if value is None else float(value)
            present[at] = 1

    def _has(self, column: int, at: int) -> bool:
        present = self._present[column]
        return at < len(present) and bool(present[at])

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        columns = range(len(self._names))
        for at, (model, item) in enumerate(self.keys):
            if self.models is None:
                row: dict[str, Any] = {"model": model, "item": item}
            elif model in self.models:
                row = {"model": model, "variant": None, "item": item}
            else:  # a rationale variant scored by an evaluator, not a model's generation (module docstring)
                row = {"model": None, "variant": model, "item": item}
            for column in self._order.get(at, columns):
                if self._has(column, at):
                    v = self._values[column][at]
                    row[self._names[column]] = None if math.isnan(v) else v
            yield row
