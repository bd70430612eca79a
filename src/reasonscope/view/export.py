"""``reasonscope view --export FOLDER``: the same pages as a static site, for a lab wiki or a repository's pages.

Layout of ``FOLDER``::

    index.html                 the Runs page (sorting and filtering work: view.js)
    view.js                    the pages' only script
    compare.html               every run side by side (when there are two runs or more)
    runs/<slug>/index.html     a Run page (slug: the run key with '/' written '--')
    runs/<slug>/report.html    its report
    runs/<slug>/items-<n>.html its items, ``per_page`` (model, item) rows a file, in the Items page's order

The pages are rendered by the same templates and data as the live server (:class:`~reasonscope.view.site.Viewer`),
with links between files (:class:`~reasonscope.view.pages.ExportLinks`). A static site cannot filter on
the server, so only unfiltered Items pages are written; the item-level numbers of a Run page link to its
items only where the live server gives them a filter, and are plain numbers in the export. Nothing is
written into the viewed folder; ``FOLDER`` may not lie inside it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ..atomic_files import write_text
from .app import static_file
from .comparison import headline_table
from .items import ItemQuery
from .pages import ExportLinks, render
from .site import Viewer

__all__ = ["export_site", "slugs"]

NO_PAIRED = ("a static site holds no paired comparison: run `reasonscope compare BASE NEW`, or compare two runs "
             "in the live viewer (`reasonscope view`)")


def slugs(keys: list[str]) -> dict[str, str]:
    """A folder name per run key: ``/`` written ``--``, ``.`` (the root itself) written ``root``; unique.

    >>> slugs(["a/b", "a--b", "."])
    {'a/b': 'a--b', 'a--b': 'a--b-2', '.': 'root'}
    """
    out: dict[str, str] = {}
    used: set[str] = set()
    for key in keys:
        base = "root" if key == "." else key.replace("/", "--")
        slug, n = base, 1
        while slug in used:
            n += 1
            slug = f"{base}-{n}"
        used.add(slug)
        out[key] = slug
    return out


def export_site(root: Path, out: Path, *, per_page: int = 50,
                progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Write the static site of the runs under ``root`` into ``out`` (module docstring).

    Returns:
        Counts: ``runs`` exported and ``item_pages`` written.
    """
    root, out = Path(root).resolve(), Path(out).resolve()
    if out == root or root in out.parents:
        raise ValueError(f"--export {out}: inside the viewed folder {root}; the viewer never writes there, "
                         "choose a folder outside it")
    viewer = Viewer(root, cache_dir=out / ".build")
    try:
        rows = viewer.rows()
        keys = [r.key for r in rows]
        names = slugs(keys)
        top = ExportLinks(names, 0)
        out.mkdir(parents=True, exist_ok=True)
        (out / "view.js").write_bytes(static_file("view.js"))
        write_text(out / "index.html", render("runs.html.j2", top, live=False, rows=rows, keys=keys,
                                              root_name=root.name))
        if len(rows) >= 2:
            titles, values = headline_table(rows)
            write_text(out / "compare.html", render("compare.html.j2", top, live=False, rows=rows,
                                                    headline_keys=titles, headlines=values, comparison=None,
                                                    comparison_error=NO_PAIRED))
        pages = 0
        for key in keys:
            links = ExportLinks(names, 2)
            folder = out / "runs" / names[key]
            folder.mkdir(parents=True, exist_ok=True)
            write_text(folder / "index.html", render("run.html.j2", links, live=False, **viewer.run_context(key)))
            if viewer.row(key).error:
                continue
            report, why = viewer.report(key)
            if report is not None:
                shutil.copyfile(report, folder / "report.html")
            else:
                write_text(folder / "report.html", render("error.html.j2", links, status="report not built",
                                                          message=why))
            page, last = 1, 1
            while page <= last:
                p = viewer.items(key, ItemQuery(page=page, per_page=per_page))
                write_text(folder / f"items-{page}.html", render("items.html.j2", links, live=False, p=p,
                                                                 q=p.query))
                last, page, pages = p.pages, page + 1, pages + 1
            if progress:
                progress(f"{key}: {last} item pages")
        return {"runs": len(keys), "item_pages": pages}
    finally:
        shutil.rmtree(out / ".build", ignore_errors=True)
