"""``reasonscope view [DIR]``: every run of a folder in the browser, read-only (:mod:`reasonscope.view`)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..registry import all_families
from .common import console, fail

app = typer.Typer()


@app.command()
def view(
    folder: Path = typer.Argument(Path("runs"), help="The folder of runs (searched recursively for run folders)."),
    host: str = typer.Option("127.0.0.1", help="Address to serve on. Anything but 127.0.0.1 lets others on the "
                                               "network read every run (a warning is printed)."),
    port: int = typer.Option(0, help="Port to serve on (0: a free port)."),
    open_browser: bool = typer.Option(False, "--open", help="Open the viewer in the default browser."),
    export: Path | None = typer.Option(None, "--export", metavar="FOLDER",
                                       help="Write the pages as a static site into FOLDER instead of serving."),
    per_page: int = typer.Option(50, "--per-page", min=1, max=500, help="Items per exported Items page."),
    export_pair: list[str] = typer.Option([], "--export-pair", metavar="BASE..NEW",
                                          help="With --export: also write the paired comparison of run BASE "
                                               "and run NEW (run paths under FOLDER); repeatable."),
) -> None:
    """Show every run under FOLDER in a local web viewer: Runs, Run, Compare and Items pages.

    Serves on 127.0.0.1 and a free port and prints the address; nothing is written into FOLDER, and a run
    being written is read without blocking it. Needs the `view` extra (Starlette and uvicorn).

    Examples: `reasonscope view runs/ --open`; `reasonscope view runs/ --export site/` (a static site, items
    paged into files, with the items behind every number of a Run page; add `--export-pair base..new` for the
    paired comparison of two runs). Exit codes: 0 ok (the server was stopped); 2 no such folder, a bad option, or the
    `view` extra missing.
    """
    if not folder.is_dir():
        fail(f"{folder}: no such folder; give the folder that holds your runs (default runs/)")
        return
    if export is not None:
        from ..view.export import export_site

        try:
            counts = export_site(folder, export, families=all_families("summary"), per_page=per_page,
                                 pairs=export_pair, progress=lambda m: console.print(m))
        except ValueError as err:
            fail(str(err))
            return
        console.print(f"exported {counts['runs']} runs ({counts['item_pages']} item pages, {counts['number_pages']} "
                      f"behind the runs' numbers, {counts['pairs']} paired comparisons) to {export}/index.html")
        return
    if export_pair:
        fail("--export-pair writes a page of the static site: use it with --export FOLDER")
        return
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        fail(f"reasonscope view needs Starlette and uvicorn ({err.name} is missing): "
             'pip install "reasonscope[view]"')
        return
    from ..view.serve import serve

    try:
        serve(folder, families=all_families("summary"), host=host, port=port, open_browser=open_browser,
              announce=lambda m: console.print(m) if m.startswith("warning") else typer.echo(m))
    except OSError as err:
        fail(f"cannot serve on {host}:{port}: {err.strerror or err}")
    except KeyboardInterrupt:
        pass
