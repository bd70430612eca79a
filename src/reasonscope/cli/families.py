"""``reasonscope families``: the method families, built-in and from installed plugins, and where each comes from."""

from __future__ import annotations

import json

import typer

from .common import out

app = typer.Typer()


@app.command()
def families(as_json: bool = typer.Option(False, "--json", help="Print the rows as a JSON list.")) -> None:
    """List the method families: name, distribution, version, source (built-in or plugin) and status.

    A plugin is an installed distribution with an entry point in the group reasonscope.families (see the
    documentation page "Write a family"). One that could not be loaded is listed as broken, with the reason;
    the other families work as usual. REASONSCOPE_DISABLE_PLUGIN_AUTOLOAD=1 loads no plugin.
    """
    from ..registry import family_sources

    rows = [{"name": s.name, "target": s.target, "distribution": s.distribution, "version": s.version,
             "source": s.source, "status": s.status} for s in family_sources()]
    if as_json:
        out.print_json(json.dumps(rows))
        return
    columns = ("name", "distribution", "version", "source")
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    out.print("  ".join(c.ljust(widths[c]) for c in columns) + "  status", highlight=False)
    for r in rows:
        out.print("  ".join(r[c].ljust(widths[c]) for c in columns) + "  " + r["status"], highlight=False,
                  soft_wrap=True, markup=False)
