"""The registry of families: name -> ``"reasonscope.<name>.entry:FAMILY"``, imported on first use.

``get_family(name)`` returns the registered :class:`reasonscope.family.Family` (an unknown name is a
``LookupError`` that suggests close names); ``all_families()`` returns all five in their canonical
order; ``enabled_families(families_config)`` the ones a plan enables, in scoring order (or in the
canonical order, ``canonical=True``). The names and orders are declared in :mod:`reasonscope.family_order`.

This is the assembly layer: the run pipeline and the command line reach the families through it; shared
layers never import it (the report renders what families return).
"""

from __future__ import annotations

import difflib
from importlib import import_module
from typing import Any

from .family import Family
from .family_order import FAMILY_NAMES, SCORING_ORDER

__all__ = ["FAMILIES", "SCORING_ORDER", "all_families", "enabled_families", "get_family"]

FAMILIES: dict[str, str] = {name: f"reasonscope.{name}.entry:FAMILY" for name in FAMILY_NAMES}
_loaded: dict[str, Family] = {}


def get_family(name: str) -> Family:
    """The family registered as ``name``."""
    if name not in _loaded:
        target = FAMILIES.get(name)
        if target is None:
            close = difflib.get_close_matches(name, FAMILIES, n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise LookupError(f"unknown family {name!r}{hint} (known: {', '.join(FAMILIES)})")
        module, _, attr = target.partition(":")
        _loaded[name] = getattr(import_module(module), attr)
    return _loaded[name]


def all_families() -> tuple[Family, ...]:
    """Every registered family, in canonical order."""
    return tuple(get_family(name) for name in FAMILIES)


def enabled_families(families: Any, *, canonical: bool = False) -> list[tuple[Family, Any]]:
    """``(family, its settings)`` for each family set in a plan's ``families`` section, in scoring order.

    With ``canonical``, in the canonical order. A section without a family's field (``reasonscope score`` has
    no attack) leaves it disabled.
    """
    out = []
    for name in FAMILY_NAMES if canonical else SCORING_ORDER:
        settings = getattr(families, name, None)
        if settings is not None:
            out.append((get_family(name), settings))
    return out
