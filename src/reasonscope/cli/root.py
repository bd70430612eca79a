"""The root of the command line: it only assembles. Core commands live one group per module
(:mod:`.run`, :mod:`.demo`, :mod:`.score`, :mod:`.report`, :mod:`.plan`, :mod:`.providers`,
:mod:`.cache`); each family brings its own sub-app from ``<family>/cli.py``.

A sub-app created with a name (``typer.Typer(name="information")``) becomes a command group
(``reasonscope information train``); an unnamed one contributes its commands at the top level
(``reasonscope run``, ``reasonscope attack``).
"""

from __future__ import annotations

from importlib import import_module

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="reasonscope: measure the quality of a language model's reasoning, not only its answers.")

# Top-level commands and groups, in the order `reasonscope --help` lists them.
_CORE_BEFORE = ("run", "demo", "score")
_FAMILIES = ("behavior", "evidence", "information", "attributes", "attack")
_CORE_AFTER = ("report", "plan", "providers")


def mount(root: typer.Typer, sub: typer.Typer | None) -> None:
    """Add ``sub`` to ``root``: as a command group when it has a name, else command by command."""
    if sub is None:
        return
    if sub.info.name:
        root.add_typer(sub)
    else:
        root.registered_commands.extend(sub.registered_commands)


def _family_app(name: str) -> typer.Typer | None:
    try:
        return import_module(f"reasonscope.{name}.cli").app
    except ModuleNotFoundError as err:
        if err.name != f"reasonscope.{name}.cli":
            raise
        return None


mount(app, import_module(".cache", __package__).app)
for _name in _CORE_BEFORE:
    mount(app, import_module(f".{_name}", __package__).app)
for _name in _FAMILIES:
    mount(app, _family_app(_name))
for _name in _CORE_AFTER:
    mount(app, import_module(f".{_name}", __package__).app)


def main() -> None:  # pragma: no cover
    app()
