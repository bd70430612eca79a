"""The registry of families: the built-in five, then the families of installed plugins.

Built-in families are named here, ``name -> "reasonscope.<name>.entry:FAMILY"`` (:data:`FAMILIES`), and
imported on first use. A plugin is a distribution that declares an entry point in the group
``reasonscope.families`` (:data:`ENTRY_POINT_GROUP`)::

    [project.entry-points."reasonscope.families"]
    trace_length = "trace_length.entry:FAMILY"

The entry point's name is the family's name (in plans, ``summary.json`` and the report); its object
satisfies :class:`reasonscope.family.Family`. Plugins are loaded once, on the first question to the
registry, and checked like the built-in families: the name is a lower-case identifier
(:data:`NAME_PATTERN`) that no built-in family, no other plugin and no top-level key of ``summary.json``
(:data:`RESERVED_NAMES`) uses; the object has every member of the protocol, its ``name`` is the entry
point's, its ``settings`` (and ``score_settings``) are pydantic models and its ``metrics`` are
:class:`~reasonscope.metric_specs.MetricSpec` of its own. A plugin that fails to import or fails a
check is left out with one message naming its distribution and what went wrong (:func:`plugin_problems`,
printed by the command line, listed by ``reasonscope families``); the other families load. With the
environment variable :data:`DISABLE_ENV` set (``REASONSCOPE_DISABLE_PLUGIN_AUTOLOAD=1``) no plugin is
loaded.

Orders (:func:`family_names`): ``canonical`` (the metric catalogue, the command line's sub-apps, the
plan's ``families`` section), ``scoring`` (attack and information generate or train on their own, so they
score first, then the families that read the run's generations; console output during a run follows it)
and ``summary`` (the report's summary cards and sections, and the terminal's summary, in the same order so
a researcher finds a family at the same place in both). The built-in five come first in each order as
:data:`BUILT_IN_ORDERS` declares; plugins follow by their ``rank`` (default 0), then by name.

This is the assembly layer: the run pipeline and the command line reach the families through it; shared
layers never import it (the callers pass the families to the report).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

from pydantic import BaseModel

from .family import Family
from .metric_specs import MetricSpec

__all__ = ["BUILT_IN_ORDERS", "DEFAULT_FAMILIES", "DISABLE_ENV", "ENTRY_POINT_GROUP", "FAMILIES", "FAMILY_NAMES", "RESERVED_NAMES",
           "SCORING_ORDER", "SUMMARY_ORDER", "FamilySource", "Order", "all_families", "check_family",
           "discover", "enabled_families", "family_names", "family_sources", "get_family", "plugin_problems",
           "reload_plugins"]

Order = Literal["canonical", "scoring", "summary"]

FAMILY_NAMES: tuple[str, ...] = ("behavior", "evidence", "information", "attributes", "attack")
SCORING_ORDER: tuple[str, ...] = ("attack", "information", "behavior", "evidence", "attributes")
SUMMARY_ORDER: tuple[str, ...] = ("behavior", "evidence", "attributes", "information", "attack")
BUILT_IN_ORDERS: dict[str, tuple[str, ...]] = {"canonical": FAMILY_NAMES, "scoring": SCORING_ORDER,
                                               "summary": SUMMARY_ORDER}
"""The built-in five in each order (module docstring); plugins follow them."""

FAMILIES: dict[str, str] = {name: f"reasonscope.{name}.entry:FAMILY" for name in FAMILY_NAMES}
"""The built-in families: name -> ``"module:object"``, imported on first use."""

DEFAULT_FAMILIES: tuple[str, ...] = ("behavior",)
"""The families a plan without a ``families`` section enables, with their default settings."""

ENTRY_POINT_GROUP = "reasonscope.families"
DISABLE_ENV = "REASONSCOPE_DISABLE_PLUGIN_AUTOLOAD"
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
RESERVED_NAMES: frozenset[str] = frozenset({
    # summary.json's own top-level keys (reasonscope.output_files.Summary) and the plan's sections
    "schema_version", "run", "run_id", "config", "notes", "generations", "left_out", "experiment", "models",
    "datasets", "families", "stats", "input", "items", "failed", "failures", "pending", "skipped",
    "skipped_models", "warnings", "seconds", "timing", "outcome", "scores", "samples", "report", "summary",
    "version", "plots", "tables",
})
"""Names a plugin family may not take: top-level keys of ``summary.json`` and of a plan."""

_PROTOCOL_MEMBERS: tuple[str, ...] = tuple(
    sorted(set(getattr(Family, "__protocol_attrs__", ())) or
           {n for n in (*Family.__annotations__, *vars(Family)) if not n.startswith("_")}))
_loaded: dict[str, Family] = {}
_plugins: tuple[dict[str, Family], list[FamilySource]] | None = None


@dataclass(frozen=True)
class FamilySource:
    """Where a family comes from: one row of ``reasonscope families``.

    Attributes:
        name: The family's name (for a plugin, its entry point's name).
        target: ``"module:object"`` the family is loaded from.
        distribution: The distribution that provides it (``reasonscope`` for the built-in five).
        version: That distribution's version.
        source: ``built-in`` or ``plugin``.
        error: Why a plugin was left out (it failed to import or a check); None when it loaded.
    """

    name: str
    target: str
    distribution: str
    version: str
    source: Literal["built-in", "plugin"]
    error: str | None = None

    @property
    def status(self) -> str:
        """``ok``, or ``broken: <why>``."""
        return "ok" if self.error is None else f"broken: {self.error}"

    @property
    def message(self) -> str | None:
        """The one message about a broken plugin (None when it loaded)."""
        if self.error is None:
            return None
        return (f"family plugin {self.name!r} from distribution {self.distribution} {self.version} "
                f"({self.target}) was not loaded: {self.error}; the other families are unaffected")


def _distribution(ep: EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "(unknown distribution)", "?"
    return str(dist.metadata["Name"] or dist.name), str(dist.version)


def check_family(obj: Any, name: str) -> str | None:
    """What is wrong with ``obj`` as the family registered as ``name``; None when nothing is.

    Checked: every member of :class:`reasonscope.family.Family` is present; ``obj.name == name``;
    ``settings`` (and ``score_settings`` when not None) is a pydantic model class; ``metrics`` is a
    non-empty tuple of :class:`MetricSpec` whose ``family`` is ``name``, each key once.
    """
    missing = [m for m in _PROTOCOL_MEMBERS if not hasattr(obj, m)]
    if missing:
        return (f"{type(obj).__name__} does not satisfy reasonscope.family.Family: missing {', '.join(missing)} "
                "(derive it from reasonscope.family.FamilyBase)")
    if obj.name != name:
        return f"its name is {obj.name!r} but its entry point is named {name!r}; they must be the same"
    for attr in ("settings", "score_settings"):
        model = getattr(obj, attr)
        if (model is not None or attr == "settings") and not (isinstance(model, type) and issubclass(model, BaseModel)):
            return f"{attr} must be a pydantic model class, got {model!r}"
    metrics = obj.metrics
    if not isinstance(metrics, tuple) or not metrics or not all(isinstance(m, MetricSpec) for m in metrics):
        return "metrics must be a non-empty tuple of reasonscope.metric_specs.MetricSpec"
    others = sorted({m.family for m in metrics} - {name})
    if others:
        return f"its metrics name the families {others}; each MetricSpec.family must be {name!r}"
    keys = [m.key for m in metrics]
    if len(keys) != len(set(keys)):
        return f"metric keys repeat: {sorted({k for k in keys if keys.count(k) > 1})}"
    return None


def _name_problem(name: str, taken: dict[str, str]) -> str | None:
    if not NAME_PATTERN.fullmatch(name):
        return f"the name {name!r} is not a lower-case identifier (letters, digits, '_', starting with a letter)"
    if name in FAMILIES:
        return f"the name {name!r} is a built-in family's"
    if name in RESERVED_NAMES or name.startswith("model_"):
        return f"the name {name!r} is reserved (a top-level key of summary.json or of a plan)"
    if name in taken:
        return f"the name {name!r} is already registered by distribution {taken[name]}"
    return None


def discover(points: Iterable[EntryPoint]) -> tuple[dict[str, Family], list[FamilySource]]:
    """Load and check the plugin families of ``points`` (entry points of :data:`ENTRY_POINT_GROUP`).

    Returns:
        The families that loaded (name -> family) and a :class:`FamilySource` for every entry point, in
        order of name, with the error of each that did not load. Nothing is raised: a plugin that fails
        to import (any exception) or fails a check (:func:`check_family`, the name rules) is left out.
    """
    loaded: dict[str, Family] = {}
    sources: list[FamilySource] = []
    taken: dict[str, str] = {}
    for ep in sorted(points, key=lambda p: (p.name, p.value)):
        dist, version = _distribution(ep)
        error = _name_problem(ep.name, taken)
        if error is None:
            try:
                obj = ep.load()
            except BaseException as err:  # noqa: BLE001  a plugin's import may raise anything; report it
                if isinstance(err, KeyboardInterrupt):
                    raise
                error = f"import failed: {type(err).__name__}: {err}"
            else:
                error = check_family(obj, ep.name)
        if error is None:
            loaded[ep.name] = obj
            taken[ep.name] = dist
        sources.append(FamilySource(ep.name, ep.value, dist, version, "plugin", error))
    return loaded, sources


def _plugin_state() -> tuple[dict[str, Family], list[FamilySource]]:
    global _plugins
    if _plugins is None:
        if os.environ.get(DISABLE_ENV, "").strip() not in ("", "0"):
            _plugins = ({}, [])
        else:
            _plugins = discover(entry_points(group=ENTRY_POINT_GROUP))
    return _plugins


def reload_plugins(points: Iterable[EntryPoint] | None = None) -> None:
    """Forget the loaded plugins and load ``points`` (default: the installed entry points) on next use.

    The plan's models are assembled once, at import (:mod:`reasonscope.plan`); a family added after that
    reaches the registry, not the plan.
    """
    global _plugins
    _plugins = None if points is None else discover(points)
    for name in [n for n in _loaded if n not in FAMILIES]:
        del _loaded[name]


def _ordered_plugins(plugins: dict[str, Family]) -> list[str]:
    return sorted(plugins, key=lambda n: (getattr(plugins[n], "rank", 0) or 0, n))


def family_names(order: Order = "canonical") -> tuple[str, ...]:
    """Every registered family's name in ``order``: the built-in five, then the plugins that loaded."""
    if order not in BUILT_IN_ORDERS:
        raise ValueError(f"unknown family order {order!r}; expected one of {', '.join(BUILT_IN_ORDERS)}")
    return BUILT_IN_ORDERS[order] + tuple(_ordered_plugins(_plugin_state()[0]))


def get_family(name: str) -> Family:
    """The family registered as ``name``.

    Raises:
        LookupError: An unknown name (close names suggested), or a plugin that did not load (its message).
    """
    if name not in _loaded:
        target = FAMILIES.get(name)
        if target is not None:
            module, _, attr = target.partition(":")
            _loaded[name] = getattr(import_module(module), attr)
        else:
            plugins, sources = _plugin_state()
            if name in plugins:
                _loaded[name] = plugins[name]
            else:
                broken = [s.message for s in sources if s.name == name and s.error]
                if broken:
                    raise LookupError(broken[0])
                known = family_names()
                close = difflib.get_close_matches(name, known, n=3)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise LookupError(f"unknown family {name!r}{hint} (known: {', '.join(known)})")
    return _loaded[name]


def all_families(order: Order = "canonical") -> tuple[Family, ...]:
    """Every registered family (built-in, then plugins that loaded), in ``order``."""
    return tuple(get_family(name) for name in family_names(order))


def enabled_families(families: Any, *, canonical: bool = False) -> list[tuple[Family, Any]]:
    """``(family, its settings)`` for each family set in a plan's ``families`` section, in scoring order.

    With ``canonical``, in the canonical order. A section without a family's field (``reasonscope score`` has
    no attack) leaves it disabled.
    """
    out = []
    for name in family_names("canonical" if canonical else "scoring"):
        settings = getattr(families, name, None)
        if settings is not None:
            out.append((get_family(name), settings))
    return out


def family_sources() -> list[FamilySource]:
    """Where every family comes from, built-in first, then each plugin entry point (broken ones too)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("reasonscope")
    except PackageNotFoundError:  # pragma: no cover  (a source tree that is not installed)
        own = "0+unknown"
    rows = [FamilySource(name, target, "reasonscope", own, "built-in") for name, target in FAMILIES.items()]
    return rows + list(_plugin_state()[1])


def plugin_problems() -> list[str]:
    """One message per plugin that did not load (:attr:`FamilySource.message`); empty when all loaded."""
    return [s.message for s in _plugin_state()[1] if s.message]
