"""What behaviour scoring keeps of each item for the corpus estimates.

One table per model, a column per metric.

Scoring goes chunk by chunk and writes each item's scores as it goes; only the few numbers the corpus
estimates need are kept until the end: each item-level value (``CQ_i``, ``CS_i``, ..., None when the
item has none), the failed generations each metric read on the item, and the item's dataset and type
(the per-dataset and per-type tables). They are kept as columns (8-byte floats with NaN for None,
4-byte counts, 4-byte dataset and type codes): about 0.1 KB per item and model plus the item id and its
place, against about 0.75 KB for a dict of values and a dict of counts per item (measured).

A value that is NaN (a scorer that returned NaN) is a missing value, as None is:
:meth:`ItemTable.values` reads both as None, so the estimates and the paired comparisons leave them out.

Items keep the order in which they were added (a value added again for an item replaces the one at
its place, as a dict's would), so every estimate resamples the values in item order and, with the same
seed, gives the same numbers.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

GROUP_PARTS = ("dataset", "type")


class ItemTable:
    """The item-level values of one model (``metrics``: the columns), in the order items were added."""

    def __init__(self, metrics: tuple[str, ...]):
        self.metrics = metrics
        self.ids: list[str] = []
        self.place: dict[str, int] = {}
        self._values = {m: array("d") for m in metrics}
        self._failed = {m: array("i") for m in metrics}
        self._codes = {part: array("I") for part in GROUP_PARTS}
        self._names: dict[str, list[str]] = {part: [] for part in GROUP_PARTS}
        self._code_of: dict[str, dict[str, int]] = {part: {} for part in GROUP_PARTS}

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, item_id: str, values: dict[str, float | None], failed: dict[str, int], dataset: str,
            item_type: str) -> None:
        """Keep one item's values (a missing metric: None) and failed-generation counts (missing: 0)."""
        codes = {"dataset": self._code("dataset", dataset), "type": self._code("type", item_type)}
        at = self.place.get(item_id)
        if at is None:
            self.place[item_id] = len(self.ids)
            self.ids.append(item_id)
            for m in self.metrics:
                v = values.get(m)
                self._values[m].append(math.nan if v is None else float(v))
                self._failed[m].append(int(failed.get(m, 0)))
            for part in GROUP_PARTS:
                self._codes[part].append(codes[part])
            return
        for m in self.metrics:
            v = values.get(m)
            self._values[m][at] = math.nan if v is None else float(v)
            self._failed[m][at] = int(failed.get(m, 0))
        for part in GROUP_PARTS:
            self._codes[part][at] = codes[part]

    def _code(self, part: str, name: str) -> int:
        code = self._code_of[part].get(name)
        if code is None:
            code = self._code_of[part][name] = len(self._names[part])
            self._names[part].append(name)
        return code

    def column(self, metric: str, rows: np.ndarray | None = None) -> np.ndarray:
        """The metric's values as floats (NaN: the item has none), of every item or of ``rows`` (places)."""
        values = np.array(self._values[metric], dtype=float)
        return values if rows is None else values[rows]

    def values(self, metric: str, rows: np.ndarray | None = None) -> list[float | None]:
        """:meth:`column` as a list with None for a missing value."""
        return [None if math.isnan(v) else v for v in self.column(metric, rows).tolist()]

    def failed(self, metric: str, rows: np.ndarray | None = None) -> int:
        """The failed generations ``metric`` read, summed over every item or over ``rows``."""
        counts = np.array(self._failed[metric], dtype=np.int64)
        return int(counts.sum() if rows is None else counts[rows].sum())

    def groups(self, part: str) -> dict[str, np.ndarray]:
        """The places of the items of each dataset or item type, by name, each in item order.

        ``part="dataset"`` groups by dataset, ``part="type"`` by item type.
        """
        codes = np.array(self._codes[part], dtype=np.int64)
        places = {name: np.flatnonzero(codes == code) for code, name in enumerate(self._names[part])}
        return {name: rows for name, rows in places.items() if rows.size}

    def places(self, item_ids: list[str]) -> np.ndarray:
        """The places of ``item_ids``, in their order."""
        return np.array([self.place[i] for i in item_ids], dtype=np.int64)
