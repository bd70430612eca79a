"""The Run page's report: the run's own ``report.html``, built by the report, never by a second renderer.

:func:`build_report` calls :func:`reasonscope.report.build.write_report` on the read-only store with an
output folder of the viewer's own (a cache folder, or the export folder), never the run folder. The page
is the report's: the same summary cards, per-family tables, notes and plots, from the same code.

Two choices keep it quick on a large run:

* the run is handed to the report as an empty :class:`reasonscope.storage.run_data.RunData`, so the report's
  per-item drill-down is left out (the Items page pages the items instead) and no item is read;
* the store the report reads lists no item-level score rows (:class:`_NoItemSheet`), so the item sheet
  of ``results.xlsx`` (a row per model and item, unused here) is not built.

The summary cards, tables and plots read the families' stored results (artefacts) and the run's counts,
which are the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..storage.run_data import RunData
from ..storage.store import Store

__all__ = ["build_report"]


class _NoItemSheet(Store):
    """A store whose item-level score rows read as none (the item sheet is not built; module docstring)."""

    def item_score_rows(self, run_id: str) -> Iterator[tuple[str, str, str, str, float | None]]:
        """No rows."""
        return iter(())


def build_report(store: Store, run: dict[str, Any], out_dir: Path, families: Iterable[Any]) -> Path:
    """Write the report of ``run`` from ``store`` into ``out_dir``; return the path of its ``report.html``.

    ``families``: the families reported, in the report's order (:func:`reasonscope.report.build.write_report`).
    """
    from ..report.build import write_report

    view = _NoItemSheet.__new__(_NoItemSheet)
    view.__dict__.update(store.__dict__)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = write_report(view, run["run_id"], out_dir, RunData(run=run, items={}, generations=[]), families=families,
                         run=run)
    return paths["html"]
