"""The root of the command line: it only assembles.

Core commands live one group per module (:mod:`.run`, :mod:`.demo`, :mod:`.score`, :mod:`.report`, :mod:`.compare`,
:mod:`.plan`, :mod:`.providers`, :mod:`.cache`); each family with commands of its own has its sub-app here
too, ``cli/<family>.py`` (:mod:`.evidence`, :mod:`.information`, :mod:`.attributes`, :mod:`.attack`), mounted
in the families' canonical order (:data:`reasonscope.family_order.FAMILY_NAMES`). The families sit below the
command line and never import it.

A sub-app created with a name (``typer.Typer(name="information")``) becomes a command group
(``reasonscope information train``); an unnamed one contributes its commands at the top level
(``reasonscope run``, ``reasonscope attack``).
"""

from __future__ import annotations

import inspect
from importlib import import_module
from importlib.util import find_spec

import typer
import typer.core

from ..family_order import FAMILY_NAMES
from .common import quiet_third_party_progress

quiet_third_party_progress()  # every command: only reasonscope's own progress bars reach the terminal

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="reasonscope: measure the quality of a language model's reasoning, not only its answers.")

# Top-level commands and groups, in the order `reasonscope --help` lists them.
_CORE_BEFORE = ("run", "demo", "score")
_CORE_AFTER = ("report", "compare", "view", "plan", "providers", "outputs")


def unwrap_help(text: str | None) -> str | None:
    r"""A command's help with each paragraph on one line.

    Typer keeps the single line breaks of every paragraph after the first, which breaks sentences mid-line at
    any terminal width. Paragraphs stay apart (blank line); a paragraph starting with ``\b`` (click's "keep as
    is") or made of list items (lines starting with ``-`` or ``*``) is kept as written.
    """
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    out = []
    for para in paragraphs:
        lines = para.splitlines()
        keep = para.startswith("\b") or all(line.lstrip().startswith(("-", "*")) for line in lines)
        out.append(para if keep else " ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def _unwrap_commands(sub: typer.Typer) -> None:
    for cmd in sub.registered_commands:
        cmd.help = unwrap_help(cmd.help or (inspect.getdoc(cmd.callback) if cmd.callback else None))
    for group in sub.registered_groups:
        if group.typer_instance is not None:
            _unwrap_commands(group.typer_instance)


def _flag_type(self, ctx):
    """No type column for an on/off flag (typer would show ``<bool>``); other options as typer shows them."""
    return None if getattr(self, "is_flag", False) and self.metavar is None else _TYPE_SHOWN(self, ctx)


_TYPE_SHOWN = typer.core.TyperOption.display_type_rich
typer.core.TyperOption.display_type_rich = _flag_type


def mount(root: typer.Typer, sub: typer.Typer | None) -> None:
    """Add ``sub`` to ``root``: as a command group when it has a name, else command by command.

    Each command's help is unwrapped (:func:`unwrap_help`).
    """
    if sub is None:
        return
    _unwrap_commands(sub)
    if sub.info.name:
        root.add_typer(sub)
    else:
        root.registered_commands.extend(sub.registered_commands)


mount(app, import_module(".cache", __package__).app)
for _name in _CORE_BEFORE:
    mount(app, import_module(f".{_name}", __package__).app)
for _family in FAMILY_NAMES:  # canonical order; a family without commands has no module here
    if find_spec(f"{__package__}.{_family}") is not None:
        mount(app, import_module(f".{_family}", __package__).app)
for _name in _CORE_AFTER:
    mount(app, import_module(f".{_name}", __package__).app)
