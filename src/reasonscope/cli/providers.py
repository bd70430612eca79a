"""``reasonscope providers``: the model providers and their spec strings."""

from __future__ import annotations

import typer

from .common import out

app = typer.Typer()


@app.command()
def providers() -> None:
    """List the model providers and their spec strings."""
    from ..models.registry import PROVIDERS

    for name, target in PROVIDERS.items():
        out.print(f"{name:18} {target}")
