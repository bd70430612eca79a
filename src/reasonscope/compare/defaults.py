"""A family's stored settings with the defaults of its settings model filled in, at every depth.

A run stores its plan as written then (``model_dump``); a setting added by a later release is absent from a run
written before it, and that run ran with what is now the setting's default. So before two runs' settings are
compared, every field that the settings model (the family's pydantic class, e.g. ``BehaviorConfig``) declares
with a default and that the stored dict lacks is filled with that default, in the stored form (JSON values),
and the same is done inside every nested settings model the stored dict holds: a nested model
(``nli: NLIConfig``), an optional one (``automatic: AutomaticAttributesConfig | None``), a list or a dict of
them (``judges: list[ModelConfig]``). A field without a default (``spec``) is never filled; a stored value is
never changed; a key the model does not declare (a setting since removed) is kept as stored; a union of two or
more settings models is left as stored (which one applies is not known without validating).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Union

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

SettingsModels = Callable[[str], "type[BaseModel] | None"]
"""A family name -> its settings model (None, or LookupError, where it is not known)."""

_UNIONS = (Union, types.UnionType)


def with_defaults(stored: Any, model: type[BaseModel]) -> Any:
    """``stored`` (one settings model's stored dict) with the model's defaults for the fields it lacks.

    Args:
        stored: The settings as a run stored them; anything but a dict is returned as it is.
        model: The pydantic model the settings were an instance of.

    Returns:
        A new dict (``stored`` is not modified): the stored keys with their values (nested settings models
        filled the same way), then each missing field that has a default, as JSON values.
    """
    if not isinstance(stored, dict):
        return stored
    out = dict(stored)
    for name, field in model.model_fields.items():
        key = field.alias if field.alias and field.alias in out and name not in out else name
        if key in out:
            out[key] = _fill(out[key], field.annotation)
        elif not field.is_required():
            out[name] = to_jsonable_python(field.get_default(call_default_factory=True))
    return out


def _fill(value: Any, annotation: Any) -> Any:
    """``value`` with the defaults of the settings models that ``annotation`` declares for it (module docstring)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _fill(value, args[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return with_defaults(value, annotation)
    if origin in _UNIONS:
        models = [a for a in args if _holds_model(a)]
        return _fill(value, models[0]) if len(models) == 1 else value
    if origin in (list, tuple, set, frozenset) and isinstance(value, list) and args:
        return [_fill(v, args[0]) for v in value]
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return {k: _fill(v, args[1]) for k, v in value.items()}
    return value


def _holds_model(annotation: Any) -> bool:
    """Whether a settings model is in ``annotation`` (itself, or inside a list, dict or Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_model(a) for a in typing.get_args(annotation))


def settings_model(models: SettingsModels | None, family: str) -> type[BaseModel] | None:
    """``models(family)``, or None where no function is given or it does not know the family."""
    if models is None:
        return None
    try:
        return models(family)
    except (LookupError, ImportError, AttributeError):
        return None
