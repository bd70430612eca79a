"""The family's own command group, mounted by reasonscope's command line: ``reasonscope trace-length ...``.

A family never imports reasonscope's command line; it hands over a ``typer.Typer`` (``Family.commands``).
A named Typer becomes a command group; its name must not be a reasonscope command already.
"""

from __future__ import annotations

import typer

from reasonscope.text import extract_answer, split_steps

app = typer.Typer(name="trace-length", no_args_is_help=True,
                  help="Trace length (a plugin family): how reasoning is split into steps and counted.")


@app.command()
def steps(text: str = typer.Argument(..., help="A model's answer: its reasoning, then 'Answer: ...'."),
          min_steps: int = typer.Option(2, min=1, help="Fewer steps than this: unexplained.")) -> None:
    """Show the steps the family counts in TEXT, and whether the answer counts as unexplained."""
    trace = extract_answer(text, "text").trace
    found = split_steps(trace)
    for i, step in enumerate(found, 1):
        typer.echo(f"{i}. {step}")
    verdict = "unexplained" if len(found) < min_steps else "explained"
    typer.echo(f"{len(found)} steps: {verdict} (min_steps {min_steps})")
