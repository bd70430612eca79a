"""``reasonscope output-schema [FOLDER]``: print or write the JSON Schemas of a run's output files.

(``reasonscope schema`` is the plan's schema: :mod:`.plan`.)
"""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer()


@app.command("output-schema")
def output_schema(
    folder: Path | None = typer.Argument(None, help="Write <name>.schema.json files here (default: print)."),
    name: str | None = typer.Option(None, "--name", help="Only this schema: summary, samples, evidence_instances, "
                                                         "attributes_judgements or attack_items."),
) -> None:
    """Print or write the JSON Schema of summary.json and of a line of each .jsonl output (versioned)."""
    from ..output_files import json_schemas, schema_text, write_schemas
    from ..registry import all_families

    families = all_families()
    schemas = json_schemas(families)
    if name is not None and name not in schemas:
        raise typer.BadParameter(f"unknown schema {name!r}; expected one of {', '.join(schemas)}", param_hint="--name")
    if folder is not None:
        for path in write_schemas(folder, families):
            if name is None or path.name == f"{name}.schema.json":
                typer.echo(str(path))
        return
    chosen = {name: schemas[name]} if name else schemas
    typer.echo(schema_text(chosen if len(chosen) > 1 else next(iter(chosen.values()))), nl=False)
