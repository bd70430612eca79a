"""Command-line options that take their default and help from a plan setting, declared once there.

``k: int = setting_option(EvidenceConfig, "k")`` is ``typer.Option(5, min=1, max=1000, help=<the field's
description>)``: the default (or what its factory makes), the description and the bounds (``ge`` / ``le`` of
an int or float field) are read from ``EvidenceConfig.model_fields["k"]``, so the option and the YAML key
cannot drift apart. ``note`` adds what only the command line needs to say (``'' = off``); ``default``
replaces the setting's default where the command means something else on purpose (the test of the command
line lists those). ``tests/test_cli_options.py`` walks every option named like a setting of its command and
checks that default and help are the setting's.
"""

from __future__ import annotations

from typing import Any

import annotated_types
import typer
from pydantic import BaseModel

__all__ = ["setting_default", "setting_help", "setting_option"]

_UNSET: Any = object()


def setting_default(model: type[BaseModel], name: str) -> Any:
    """The default of ``model``'s field ``name`` (its factory called); ``KeyError`` naming the model if none."""
    try:
        field = model.model_fields[name]
    except KeyError:
        raise KeyError(f"{model.__name__} has no setting {name!r}") from None
    return field.get_default(call_default_factory=True)


def setting_help(model: type[BaseModel], name: str, note: str | None = None) -> str:
    """The description of ``model``'s field ``name``, with ``note`` after it; ``ValueError`` if it has none."""
    description = model.model_fields[name].description
    if not description:
        raise ValueError(f"{model.__name__}.{name} has no description for the command line's help")
    return f"{description} {note}" if note else description


def _bounds(model: type[BaseModel], name: str) -> dict[str, Any]:
    field = model.model_fields[name]
    if not any(t in (int, float) for t in (field.annotation, *getattr(field.annotation, "__args__", ()))):
        return {}
    out: dict[str, Any] = {}
    for rule in field.metadata:
        if isinstance(rule, annotated_types.Ge):
            out["min"] = rule.ge
        elif isinstance(rule, annotated_types.Le):
            out["max"] = rule.le
    return out


def setting_option(model: type[BaseModel], name: str, *param_decls: str, note: str | None = None,
                   default: Any = _UNSET, **kwargs: Any) -> Any:
    """A ``typer.Option`` whose default, help and bounds are those of ``model.model_fields[name]``.

    Args:
        model: The settings model the option fills (``AttackConfig``, ``InformationConfig``, ...).
        name: The field's name.
        *param_decls: The option's names when they differ from the parameter's (``"--method"``).
        note: Added after the field's description in the help (what only the command line needs to say).
        default: Replaces the setting's default (a command that means something else by it).
        **kwargs: Further ``typer.Option`` arguments; an explicit ``min`` / ``max`` wins over the field's.
    """
    value = setting_default(model, name) if default is _UNSET else default
    options = _bounds(model, name) | kwargs
    return typer.Option(value, *param_decls, help=setting_help(model, name, note), **options)
