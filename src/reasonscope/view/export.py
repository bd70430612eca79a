"""``reasonscope view --export FOLDER``: the same pages as a static site, for a lab wiki or a repository's pages.

Layout of ``FOLDER``::

    index.html                           the Runs page (sorting and filtering work: view.js)
    view.js                              the pages' only script
    compare.html                         every run side by side (when there are two runs or more)
    compare-<base>-vs-<new>.html         the paired comparison of each pair asked for (``pairs``)
    runs/<slug>/index.html               a Run page (slug: the run key with '/' written '--')
    runs/<slug>/report.html              its report
    runs/<slug>/items-<n>.html           its items, ``per_page`` (model, item) rows a file, in the Items page's order
    runs/<slug>/items-<metric>-<model>-<n>.html   the items behind each number of the Run page

The pages are rendered by the same templates and data as the live server (:class:`~reasonscope.view.site.Viewer`),
with links between files (:class:`~reasonscope.view.pages.ExportLinks`). A static site cannot filter on a
server, so the export writes, besides a run's unfiltered Items pages, the filtered Items pages that its Run
page links to: one set per item-level number (a metric of one model), so that every number of a Run page
is a link, as on the live server; other filters (value, outcome) are left to the live viewer. The paired
comparison of ``reasonscope compare`` is written for each pair of runs asked for (``--export-pair
BASE..NEW``), and linked from the Runs and Compare pages. Nothing is written into the viewed folder;
``FOLDER`` may not lie inside it.

Files written: per run, about ``(1 + metrics) x pages`` Items files, ``pages`` being the run's (model, item)
rows over ``per_page`` and ``metrics`` its item-level metrics (the numbers of one metric, one per model,
share out that metric's scored items; a number's last page may be part full).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..storage.atomic_files import write_text
from .app import static_file
from .comparison import ComparisonUnavailable, headline_table, paired_comparison
from .items import ItemQuery
from .pages import ExportLinks, filter_key, render
from .site import Viewer

__all__ = ["export_site", "parse_pair", "slugs"]

NO_PAIRED = ("this page holds every run side by side; the paired comparison of two runs is exported for the pairs "
             "named with `--export-pair BASE..NEW` (and `reasonscope compare BASE NEW` prints it)")


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


def _unique(name: str, used: set[str]) -> str:
    base, n = re.sub(r"[^A-Za-z0-9._-]+", "_", name), 1
    out = base
    while out.lower() in used:  # case-insensitive file systems: a and A are one file
        n += 1
        out = f"{base}-{n}"
    used.add(out.lower())
    return out


def filter_stems(numbers: list[dict]) -> dict[tuple[tuple[str, str], ...], str]:
    """A file stem per number of a Run page (``{"metric", "model"}``): ``items-<metric>-<model>``, unique.

    Characters other than letters, digits, ``.``, ``_`` and ``-`` are written ``_``.

    >>> filter_stems([{"metric": "behavior.CQ", "model": "org/m 1"}, {"metric": "behavior.CQ", "model": "org_m_1"}])
    {(('metric', 'behavior.CQ'), ('model', 'org/m 1')): 'items-behavior.CQ-org_m_1', \
(('metric', 'behavior.CQ'), ('model', 'org_m_1')): 'items-behavior.CQ-org_m_1-2'}
    """
    used: set[str] = set()
    return {filter_key({"metric": n["metric"], "model": n["model"]}): _unique(f"items-{n['metric']}-{n['model']}", used)
            for n in numbers}


def parse_pair(text: str, keys: list[str]) -> tuple[str, str]:
    """``BASE..NEW`` -> (BASE, NEW), both run keys (a key may itself hold ``..``: every split is tried).

    Raises:
        ValueError: No split names two different runs (the message lists the runs).

    >>> parse_pair("v1..v2", ["v1", "v2"])
    ('v1', 'v2')
    """
    splits = [(text[:i], text[i + 2:]) for i in range(len(text)) if text.startswith("..", i)]
    found = [(b, n) for b, n in splits if b in keys and n in keys and b != n]
    if len(found) != 1:
        raise ValueError(f"--export-pair {text!r}: expected BASE..NEW, two different runs of the folder "
                         f"({', '.join(keys) or 'none found'})")
    return found[0]



def _write_items(viewer: Viewer, key: str, folder: Path, links: ExportLinks, stem: str, per_page: int,
                 filters: dict[str, str]) -> int:
    """Write the Items pages of run ``key`` with ``filters`` as ``<stem>-1.html``, ...; return how many."""
    page, last = 1, 1
    while page <= last:
        p = viewer.items(key, ItemQuery(page=page, per_page=per_page, **filters))
        write_text(folder / f"{stem}-{page}.html", render("items.html.j2", links, live=False, p=p, q=p.query))
        last, page = p.pages, page + 1
    return last


def export_site(root: Path, out: Path, *, families: Iterable[Any], per_page: int = 50,
                pairs: Sequence[str | tuple[str, str]] = (),
                progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Write the static site of the runs under ``root`` into ``out`` (module docstring).

    ``pairs``: the paired comparisons to write, each ``(BASE, NEW)`` run keys or the text ``BASE..NEW``
    (:func:`parse_pair`).

    Returns:
        Counts: ``runs`` exported, ``item_pages`` (unfiltered Items files), ``number_pages`` (the Items files
        behind the Run pages' numbers) and ``pairs`` (paired comparison pages).

    Raises:
        ValueError: ``out`` lies inside ``root``, or a pair does not name two different runs.
    """
    root, out = Path(root).resolve(), Path(out).resolve()
    if out == root or root in out.parents:
        raise ValueError(f"--export {out}: inside the viewed folder {root}; the viewer never writes there, "
                         "choose a folder outside it")
    viewer = Viewer(root, cache_dir=out / ".build", families=families)
    try:
        rows = viewer.rows()
        keys = [r.key for r in rows]
        names = slugs(keys)
        asked = [parse_pair(p, keys) if isinstance(p, str) else tuple(p) for p in pairs]
        for base, new in asked:
            if base not in names or new not in names or base == new:
                raise ValueError(f"--export-pair {base}..{new}: not two different runs of the folder "
                                 f"({', '.join(keys) or 'none found'})")
        used: set[str] = set()
        pair_files = {pair: _unique(f"compare-{names[pair[0]]}-vs-{names[pair[1]]}", used) + ".html"
                      for pair in dict.fromkeys(asked)}
        numbers = {key: viewer.metric_index(key) for key in keys if not viewer.row(key).error}
        stems = {key: filter_stems(n) for key, n in numbers.items()}
        top = ExportLinks(names, 0, stems, pair_files)
        out.mkdir(parents=True, exist_ok=True)
        (out / "view.js").write_bytes(static_file("view.js"))
        write_text(out / "index.html", render("runs.html.j2", top, live=False, rows=rows, keys=keys,
                                              root_name=root.name, pairs=list(pair_files)))
        if len(rows) >= 2:
            titles, values = headline_table(rows)
            write_text(out / "compare.html", render("compare.html.j2", top, live=False, rows=rows,
                                                    headline_keys=titles, headlines=values, comparison=None,
                                                    comparison_error=NO_PAIRED, pairs=list(pair_files)))
        for (base, new), name in pair_files.items():
            pair_rows = [viewer.row(base), viewer.row(new)]
            titles, values = headline_table(pair_rows)
            comparison, why = None, None
            try:
                comparison = paired_comparison(viewer.folder(base), viewer.folder(new), viewer.families)
            except ComparisonUnavailable as err:
                why = str(err)
            write_text(out / name, render("compare.html.j2", top, live=False, rows=pair_rows, headline_keys=titles,
                                          headlines=values, comparison=comparison, comparison_error=why))
        pages = number_pages = 0
        for key in keys:
            links = ExportLinks(names, 2, stems, pair_files)
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
            last = _write_items(viewer, key, folder, links, "items", per_page, {})
            pages += last
            behind = sum(_write_items(viewer, key, folder, links, stem, per_page, dict(wanted))
                         for wanted, stem in stems[key].items())
            number_pages += behind
            if progress:
                progress(f"{key}: {last} item pages, and {behind} behind its {len(stems[key])} numbers")
        return {"runs": len(keys), "item_pages": pages, "number_pages": number_pages, "pairs": len(pair_files)}
    finally:
        shutil.rmtree(out / ".build", ignore_errors=True)
