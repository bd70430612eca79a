"""The root of the command line: it only assembles.

Core commands live one group per module (:mod:`.run`, :mod:`.demo`, :mod:`.score`, :mod:`.report`, :mod:`.compare`,
:mod:`.plan`, :mod:`.providers`, :mod:`.families`, :mod:`.cache`). The families' commands are mounted from the
registry in its canonical order (:func:`reasonscope.registry.family_names`): a built-in family with commands
of its own has its sub-app here, ``cli/<family>.py``; a plugin family brings its own
(:attr:`reasonscope.family.Family.commands`). The families sit below the command line and never import it.
A plugin that did not load, or whose command name is taken, is named in one warning line on stderr at every
command (:func:`reasonscope.registry.plugin_problems`); the other commands work as usual.

A sub-app created with a name (``typer.Typer(name="cache")``) becomes a command group
(``reasonscope cache ls``); an unnamed one contributes its commands at the top level (``reasonscope run``).
"""

from __future__ import annotations

import inspect
from importlib import import_module
from importlib.util import find_spec

import typer
import typer.core
from rich.text import Text

from ..registry import FAMILIES, family_names, get_family, plugin_problems
from .common import console, quiet_third_party_progress

quiet_third_party_progress()  # every command: only reasonscope's own progress bars reach the terminal

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="reasonscope: measure the quality of a language model's reasoning, not only its answers.")

# Top-level commands and groups, in the order `reasonscope --help` lists them.
_CORE_BEFORE = ("run", "demo", "score")
_CORE_AFTER = ("report", "compare", "view", "plan", "providers", "families", "outputs")


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


def command_names(sub: typer.Typer) -> set[str]:
    """The top-level names ``sub`` adds when mounted: its group name, or its commands' and groups' names."""
    if sub.info.name:
        return {sub.info.name}
    names = {c.name or (c.callback.__name__.replace("_", "-") if c.callback else "") for c in sub.registered_commands}
    return names | {g.name or (g.typer_instance.info.name if g.typer_instance else "") or ""
                    for g in sub.registered_groups}


def mount_families(root: typer.Typer, taken: set[str]) -> list[str]:
    """Mount every family's commands in the registry's canonical order; return why any was left out.

    A built-in family's sub-app is ``cli/<name>.py`` (no module: no commands of its own); a plugin's is its
    ``commands``. A plugin's command whose name is in ``taken`` (the core's) or already mounted is not
    mounted (the message says so).
    """
    problems = []
    taken = set(taken) | command_names(root)
    for name in family_names():
        if name in FAMILIES:
            if find_spec(f"{__package__}.{name}") is not None:
                mount(root, import_module(f".{name}", __package__).app)
            continue
        sub = getattr(get_family(name), "commands", None)
        if sub is None:
            continue
        if not isinstance(sub, typer.Typer):
            problems.append(f"family plugin {name!r}: its commands must be a typer.Typer, got {type(sub).__name__}; "
                            "not mounted")
            continue
        clash = sorted(command_names(sub) & taken)
        if clash:
            problems.append(f"family plugin {name!r}: the command name {', '.join(clash)} is already a reasonscope "
                            "command; its commands were not mounted")
            continue
        mount(root, sub)
        taken |= command_names(sub)
    return problems


@app.callback()
def _warn_about_plugins() -> None:
    """Name each family plugin that did not load or mount, one warning line each, before any command runs."""
    for message in plugin_problems() + _MOUNT_PROBLEMS:
        console.print(Text("warning: ", style="yellow") + Text(message), soft_wrap=True)


mount(app, import_module(".cache", __package__).app)
for _name in _CORE_BEFORE:
    mount(app, import_module(f".{_name}", __package__).app)
_after = [import_module(f".{_name}", __package__).app for _name in _CORE_AFTER]
_MOUNT_PROBLEMS: list[str] = mount_families(app, set().union(*(command_names(sub) for sub in _after)))
for _sub in _after:
    mount(app, _sub)
