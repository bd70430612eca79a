"""What a stored metric is (direction, range, label), which metrics ``--metrics`` selects, what differs in a family.

Direction and range come from the metric catalogue (:mod:`reasonscope.metric_specs`). The comparison is a
shared service (the viewer calls it too) and so does not import the family registry; a caller above it may
pass ``catalogue``, a function from a family name to that family's specs (the command line passes the
registry's :attr:`reasonscope.family.Family.metrics`), so that a family from elsewhere is read the same way.
A stored metric key is resolved to its catalogue entry by the first of:

1. the key itself (``CQ``, ``REV``);
2. the part before the first ``:`` (``coverage_support:exact`` -> ``coverage_support``);
3. the part after the last ``.`` (``token.success`` -> ``success``);
4. the family's generic per-item entry ``score`` (``judge.faithfulness``: every attribute is normalised so that
   higher is better).

A metric with no entry has no direction: a significant difference is reported as ``changed`` and never fails
the gate.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel

from ..metric_specs import MetricSpec
from .defaults import with_defaults

Catalogue = Callable[[str], Iterable[MetricSpec]]
"""A family name -> that family's metric specs (raises LookupError for an unknown family)."""


def registered_specs(family: str) -> tuple[MetricSpec, ...]:
    """The registered families' specs of ``family``: the default when no ``catalogue`` is given.

    Read through the deprecated cross-family names of :mod:`reasonscope.metric_specs` (this layer does not
    import the registry); to be replaced by a catalogue every caller passes, when those names go.
    """
    from .. import metric_specs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return tuple(s for s in metric_specs.CATALOGUE if s.family == family)


def family_specs(family: str, catalogue: Catalogue | None = None) -> dict[str, MetricSpec]:
    """The specs of ``family`` by key: from ``catalogue`` when given and it knows the family, else the registered ones."""
    if catalogue is not None:
        try:
            return {s.key: s for s in catalogue(family)}
        except (LookupError, ImportError, AttributeError):
            pass
    return {s.key: s for s in registered_specs(family)}


def resolve_spec(family: str, metric: str, specs: dict[str, MetricSpec] | None = None) -> MetricSpec | None:
    """The catalogue entry of a stored metric key (module docstring), or None."""
    specs = family_specs(family) if specs is None else specs
    for key in (metric, metric.split(":", 1)[0], metric.rsplit(".", 1)[-1], "score"):
        spec = specs.get(key)
        if spec is not None:
            return spec
    return None


def metric_label(spec: MetricSpec | None, metric: str) -> str:
    """The label shown for a stored metric: the catalogue's, with the stored key when it is not the entry's."""
    if spec is None:
        return metric
    return spec.label if spec.key == metric else f"{spec.label} ({metric})"


def selector_matches(selector: str, family: str, metric: str, spec: MetricSpec | None) -> bool:
    """Whether a ``--metrics`` entry selects a stored metric.

    An entry is a family (``behavior``), a stored key (``CQ``, ``coverage_support:exact``), a catalogue key
    (``coverage_support``: every matcher), or either prefixed by its family (``behavior/CQ``).
    """
    fam, _, key = selector.rpartition("/")
    if fam and fam != family:
        return False
    if not fam and key == family:
        return True
    return key == metric or (spec is not None and key == spec.key)


def select(selectors: Iterable[str] | None, rows: Iterable[tuple[str, str, MetricSpec | None]]) -> list[str]:
    """The selectors that match none of ``rows`` (``(family, metric, spec)``): for the error message."""
    rows = list(rows)
    return [s for s in selectors or () if not any(selector_matches(s, f, m, sp) for f, m, sp in rows)]


def _by_name(value: list[Any]) -> dict[str, Any] | None:
    """A list of settings dicts with distinct names (``name``, else ``spec``) as a dict by name, else None."""
    names = [v.get("name") or v.get("spec") if isinstance(v, dict) else None for v in value]
    if not value or not all(isinstance(x, str) for x in names) or len(set(names)) < len(names):
        return None
    return {x: {k: y for k, y in v.items() if k != "name"} for x, v in zip(names, value, strict=True)}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested settings dict as ``{"a.b.c": leaf}``.

    A list of dicts with distinct names (the judges, the transfer models) is read as a dict by name, so that a
    difference names one judge's setting (``judges.judge-a.spec``) and operational ones can be told apart; any
    other list is a leaf.
    """
    if isinstance(value, list) and (named := _by_name(value)) is not None:
        value = named
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def settings_differences(base: dict[str, Any] | None, new: dict[str, Any] | None,
                         model: type[BaseModel] | None = None) -> list[tuple[str, Any, Any]]:
    """``(path, base value, new value)`` of every setting that differs between two families' settings.

    With ``model`` (the family's settings model), a field either side lacks reads as the model's default
    (:func:`reasonscope.compare.defaults.with_defaults`), so a setting added after a run was written is no
    difference unless the other run set another value; without it, a missing field reads as None.
    """
    if model is not None:
        base, new = with_defaults(base or {}, model), with_defaults(new or {}, model)
    a, b = flatten(base or {}), flatten(new or {})
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
