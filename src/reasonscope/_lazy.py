"""Lazy re-exports for package ``__init__`` modules, and names that moved to another module.

``from reasonscope.stats import bootstrap_mean`` imports :mod:`reasonscope.stats.bootstrap` on first use only,
so importing a package stays cheap and a family's settings can be read without loading its scoring stack (or
creating an import cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(package: str, names: dict[str, str]) -> tuple[list[str], Callable[[str], Any], Callable[[], list]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for a package exporting ``name -> submodule``."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(names) | set(vars(import_module(package))))

    return sorted(names), __getattr__, __dir__


def moved_name(module: str, name: str, home: str, *, old: str = "name") -> Any:
    """``name`` of module ``home``, where it moved from ``module``, after a :class:`DeprecationWarning`.

    For a module's ``__getattr__`` that keeps a moved name working for one release; the warning names the
    new home and says the old ``old`` ("name" or "path") works until the next release.
    """
    import warnings

    warnings.warn(f"{module}.{name} moved to {home}.{name}; the old {old} works until the next release",
                  DeprecationWarning, stacklevel=3)
    return getattr(import_module(home), name)
