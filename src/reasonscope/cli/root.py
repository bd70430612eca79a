"""The root of the command line: it only assembles. Core commands live one group per module
(:mod:`.run`, :mod:`.demo`, :mod:`.score`, :mod:`.report`, :mod:`.plan`, :mod:`.providers`,
:mod:`.cache`); each registered family (:mod:`reasonscope.families`) brings its own sub-app
(``<family>/cli.py``, through :meth:`reasonscope.family.Family.cli`).

A sub-app created with a name (``typer.Typer(name="information")``) becomes a command group
(``reasonscope information train``); an unnamed one contributes its commands at the top level
(``reasonscope run``, ``reasonscope attack``).
"""

from __future__ import annotations

from importlib import import_module

import typer

from ..families import all_families

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="reasonscope: measure the quality of a language model's reasoning, not only its answers.")

# Top-level commands and groups, in the order `reasonscope --help` lists them.
_CORE_BEFORE = ("run", "demo", "score")
_CORE_AFTER = ("report", "plan", "providers")


def mount(root: typer.Typer, sub: typer.Typer | None) -> None:
    """Add ``sub`` to ``root``: as a command group when it has a name, else command by command."""
    if sub is None:
        return
    if sub.info.name:
        root.add_typer(sub)
    else:
        root.registered_commands.extend(sub.registered_commands)


mount(app, import_module(".cache", __package__).app)
for _name in _CORE_BEFORE:
    mount(app, import_module(f".{_name}", __package__).app)
for _family in all_families():  # registry order
    mount(app, _family.cli())
for _name in _CORE_AFTER:
    mount(app, import_module(f".{_name}", __package__).app)
