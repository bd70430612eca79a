"""What every reported number is: its key, a human label, unit, range and direction, declared once.

A :class:`MetricSpec` is read by the console printers, the HTML report (column labels, "how computed"
notes, summary cards), ``reasonscope compare``, the contract tests and the docs, so a number is named the
same way wherever it is shown. Each family declares its own, in its folder (``<family>/catalogue.py``,
with :func:`declare`), and brings them as ``Family.metrics``; a :class:`Catalogue` gathers the specs of the
families it is given (the registry's: ``Catalogue.of(registry.all_families())``) for a reader that looks a
number up across families. This module is a shared layer: it imports no family and names none.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ._lazy import moved_name

__all__ = ["COUNT", "UNBOUNDED", "Catalogue", "MetricSpec", "declare"]


@dataclass(frozen=True)
class MetricSpec:
    """One reported number.

    Attributes:
        key: The name in tables and ``summary.json`` (``"CQ"``, ``"coverage_support"``, ``"success_rate"``).
        label: The human label shown in reports and printers (``"Correctness (CQ)"``).
        family: The family that computes it.
        range: ``(low, high)`` of the possible values; ``None`` when unbounded (REV in nats, ratings in Elo).
        higher_is_better: Direction: ``True``, ``False`` (e.g. attack success: more fragile reasoning),
            ``None`` (neither).
        unit: ``""`` (a share or score in [0, 1]), ``"nats"``, ``"Elo"``, ``"s"``...
        aggregation: How per-item values become the number (``"mean over items"``).
        description: One line on how it is computed, shown as the report's "how computed" note.
    """

    key: str
    label: str
    family: str
    range: tuple[float, float] | None = (0.0, 1.0)
    higher_is_better: bool | None = True
    unit: str = ""
    aggregation: str = "mean over items"
    description: str = ""


UNBOUNDED: dict[str, Any] = {"range": None}
"""Overrides of a number without fixed limits (REV in nats, ratings in Elo)."""
COUNT: dict[str, Any] = {"range": None, "higher_is_better": None, "aggregation": "count"}
"""Overrides of a count (no range, no direction)."""


def declare(family: str, *rows: tuple) -> tuple[MetricSpec, ...]:
    """A family's specs from ``(key, label, description[, overrides])`` rows.

    ``overrides``: a dict of the other fields of :class:`MetricSpec` (``range``, ``higher_is_better``, ``unit``,
    ``aggregation``); the defaults are a share or score in [0, 1], higher is better, a mean over items.
    """
    out = []
    for key, label, description, *extra in rows:
        out.append(MetricSpec(key=key, label=label, family=family, description=description, **(extra[0] if extra else {})))
    return tuple(out)


class Catalogue:
    """The specs of several families, looked up by ``(family, key)``.

    Built from the families it is given (:meth:`of`), in their order; iterating yields every spec.
    """

    def __init__(self, specs: Iterable[MetricSpec]) -> None:
        """A catalogue of ``specs`` (in the order given)."""
        self.specs: tuple[MetricSpec, ...] = tuple(specs)
        self._by_key = {(s.family, s.key): s for s in self.specs}

    @classmethod
    def of(cls, families: Iterable[Any]) -> Catalogue:
        """The catalogue of ``families`` (anything with ``metrics``: the registry's families)."""
        return cls(s for f in families for s in f.metrics)

    def __iter__(self) -> Iterator[MetricSpec]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    @property
    def families(self) -> tuple[str, ...]:
        """The families with at least one spec, in the catalogue's order."""
        return tuple(dict.fromkeys(s.family for s in self.specs))

    def of_family(self, family: str) -> tuple[MetricSpec, ...]:
        """The specs of ``family`` (empty when it declares none)."""
        return tuple(s for s in self.specs if s.family == family)

    def find(self, family: str, key: str) -> MetricSpec | None:
        """The spec of ``key`` in ``family``, or None."""
        return self._by_key.get((family, key))

    def spec(self, family: str, key: str) -> MetricSpec:
        """The spec of ``key`` in ``family``; a KeyError names the known keys."""
        try:
            return self._by_key[(family, key)]
        except KeyError:
            known = ", ".join(k for f, k in self._by_key if f == family)
            raise KeyError(f"no metric {key!r} in family {family!r} (known: {known})") from None


# --- names that moved into the families (one release) ----------------------------------------------------

_MOVED = {"BEHAVIOR": "behavior", "BEHAVIOR_METRICS": "behavior", "EVIDENCE": "evidence",
          "INFORMATION": "information", "ATTRIBUTES": "attributes", "ATTRIBUTE_LABELS": "attributes",
          "attribute_label": "attributes", "ATTACK": "attack"}
_ACROSS = ("CATALOGUE", "FAMILIES", "find_spec", "metric_spec")


def _registered() -> Catalogue:
    """The catalogue of the registry's families (for the deprecated module-level names only)."""
    registry = importlib.import_module("reasonscope.registry")  # by name: this layer does not import it
    return Catalogue.of(registry.all_families())


def __getattr__(name: str) -> Any:
    """The names that moved: each family's specs (``<family>/catalogue.py``) and the cross-family lookups.

    Deprecated: they work until the next release, with a :class:`DeprecationWarning` naming the new home.
    """
    if name in _MOVED:
        return moved_name(__name__, name, f"reasonscope.{_MOVED[name]}.catalogue")
    if name in _ACROSS:
        warnings.warn(f"reasonscope.metric_specs.{name} is deprecated: use Catalogue.of(families) (each family's "
                      "specs are Family.metrics); the old name works until the next release", DeprecationWarning,
                      stacklevel=2)
        catalogue = _registered()
        return {"CATALOGUE": catalogue.specs, "FAMILIES": catalogue.families, "find_spec": catalogue.find,
                "metric_spec": catalogue.spec}[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
