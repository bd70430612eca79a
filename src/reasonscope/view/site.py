"""What every page of the viewer shows, computed once per change of a run: the pages' data layer.

:class:`Viewer` holds the viewed root and answers the pages' questions (the Runs rows, a run's item-level
number index, its report, an Items page, a comparison) from the run folders, read-only. It keeps what it
read of a run until the run's store or ``summary.json`` changes (:func:`reasonscope.view.readonly.store_fingerprint`),
so a Runs page shown again reads nothing but file times, and a run being written shows its new state on
the next request. The live server (:mod:`reasonscope.view.app`) and the static export
(:mod:`reasonscope.view.export`) both render from it.

Plans are shown with every value whose key names a secret (``key``, ``token``, ``secret``, ``password``,
``authorization``, but not ``api_key_env``, which names a variable) replaced by ``***``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .items import ItemPage, ItemQuery, RowCount, count_rows, item_page, metric_index
from .paths import discover_runs, resolve_run
from .readonly import open_read_only, read_snapshot, store_fingerprint
from .runs import RunRow, read_run_row

__all__ = ["Viewer", "redact"]

_SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|authorization|bearer)(?!_env)", re.IGNORECASE)


def redact(value: Any) -> Any:
    """``value`` (JSON-like) with the value of every key that names a secret replaced by ``***``.

    >>> redact({"api_key": "sk-1", "api_key_env": "OPENAI_API_KEY", "n": [{"token": 3}]})
    {'api_key': '***', 'api_key_env': 'OPENAI_API_KEY', 'n': [{'token': '***'}]}
    """
    if isinstance(value, dict):
        return {k: ("***" if isinstance(k, str) and _SECRET_KEY.search(k) and v not in (None, "") else redact(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


class Viewer:
    """The viewed folder and what has been read of its runs (module docstring).

    ``cache_dir``: where the runs' reports are built (default: a temporary folder removed by :meth:`close`);
    ``families``: the families whose cards and report sections are shown, in the report's order (the
    command line passes the registry's: ``registry.all_families("summary")``).
    """

    def __init__(self, root: str | Path, cache_dir: Path | None = None, *, families: Iterable[Any]):
        self.families = tuple(families)
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"{root}: no such folder to view")
        self._own_cache = cache_dir is None
        self.cache_dir = Path(tempfile.mkdtemp(prefix="reasonscope-view-")) if cache_dir is None else Path(cache_dir)
        self.runs: dict[str, Path] = {}
        self._rows: dict[str, tuple[tuple, RunRow]] = {}
        self._index: dict[str, tuple[tuple, list[dict[str, Any]]]] = {}
        self._reports: dict[str, tuple[tuple, Path | None, str | None]] = {}
        self._counts: dict[tuple, RowCount] = {}
        self._report_lock = threading.Lock()
        self.rescan()

    def close(self) -> None:
        """Remove the report cache when it is the viewer's own temporary folder."""
        if self._own_cache:
            shutil.rmtree(self.cache_dir, ignore_errors=True)

    def rescan(self) -> dict[str, Path]:
        """Walk the root again for runs (:func:`reasonscope.view.paths.discover_runs`)."""
        self.runs = discover_runs(self.root)
        return self.runs

    def folder(self, key: str) -> Path:
        """The run folder of ``key`` (:class:`~reasonscope.view.paths.RunNotFound` when it names none)."""
        if key not in self.runs:
            self.rescan()
        return resolve_run(self.root, self.runs, key)

    def row(self, key: str) -> RunRow:
        """The Runs page's row of run ``key``, read again only when the run changed."""
        folder = self.folder(key)
        fp = store_fingerprint(folder)
        hit = self._rows.get(key)
        if hit is None or hit[0] != fp:
            hit = (fp, read_run_row(key, folder, self.families))
            self._rows[key] = hit
        return hit[1]

    def rows(self) -> list[RunRow]:
        """Every run's row, the newest run first (a run whose store cannot be read last)."""
        self.rescan()
        rows = [self.row(k) for k in self.runs]
        return sorted(rows, key=lambda r: (r.error is not None, -(r.created or 0), r.key))

    def metric_index(self, key: str) -> list[dict[str, Any]]:
        """The run's item-level numbers (:func:`reasonscope.view.items.metric_index`), cached per change."""
        folder = self.folder(key)
        fp = store_fingerprint(folder)
        hit = self._index.get(key)
        if hit is None or hit[0] != fp:
            row = self.row(key)
            with open_read_only(folder) as store:
                hit = (fp, metric_index(store, row.run_id) if row.run_id else [])
            self._index[key] = hit
        return hit[1]

    def report(self, key: str) -> tuple[Path | None, str | None]:
        """The run's report page (:mod:`reasonscope.view.report_page`), built once per change; or the error."""
        folder = self.folder(key)
        with self._report_lock:  # one build at a time (plots are drawn with matplotlib)
            fp = store_fingerprint(folder)
            hit = self._reports.get(key)
            if hit is None or hit[0] != fp:
                from .report_page import build_report

                out = self.cache_dir / "reports" / hashlib.sha256(f"{key}\0{fp}".encode()).hexdigest()[:16]
                try:
                    with open_read_only(folder) as store:
                        hit = (fp, build_report(store, store.run(), out, self.families), None)
                except Exception as err:  # noqa: BLE001 (a report that fails is an error on the page, not a crash)
                    hit = (fp, None, f"{type(err).__name__}: {err}")
                self._reports[key] = hit
            return hit[1], hit[2]

    def items(self, key: str, query: ItemQuery) -> ItemPage:
        """One Items page of run ``key`` (:func:`reasonscope.view.items.item_page`).

        The filters' :class:`~reasonscope.view.items.RowCount` is kept per run, filters and change of the run
        (at most 1,000 of them: two numbers each), so paging a filter counts it once. The count and the page
        are read in one read transaction; a kept count is used, and a new one kept, only when the store's
        fingerprint is the same before and after that transaction began (a run that wrote in between is
        counted afresh inside it), so a page always agrees with its count.
        """
        folder = self.folder(key)
        run_id = self.row(key).run_id
        fp = store_fingerprint(folder)
        counted = (key, fp, tuple(sorted(query.filters().items())))
        with open_read_only(folder) as store, read_snapshot(store.conn):
            # the snapshot is the state ``fp`` names only if nothing was written since ``fp`` was read
            same = store_fingerprint(folder) == fp
            run_id = run_id or store.run()["run_id"]
            count = self._counts.get(counted) if same else None
            if count is None:
                count = count_rows(store, run_id, query)
                if same:
                    if len(self._counts) >= 1000:
                        self._counts.clear()
                    self._counts[counted] = count
            return item_page(store, key, query, run_id=run_id, count=count)

    def config_text(self, key: str) -> str:
        """The run's stored plan as indented JSON, secrets redacted (module docstring)."""
        folder = self.folder(key)
        with open_read_only(folder) as store:
            config = store.run().get("config") or {}
        return json.dumps(redact(config), indent=2, ensure_ascii=False, default=str)

    def run_context(self, key: str) -> dict[str, Any]:
        """What the Run page shows: the row, the item-level number index (a table per model), the plan."""
        row = self.row(key)
        ctx: dict[str, Any] = {"row": row, "index": [], "index_models": [], "index_rows": [], "config_text": "",
                               "report_error": None}
        if row.error:
            return ctx
        index = self.metric_index(key)
        models = sorted({r["model"] for r in index}, key=lambda m: (m not in row.models, m))
        table: dict[str, dict[str, Any]] = {}
        for r in index:
            table.setdefault(r["metric"], {})[r["model"]] = r
        ctx.update(index=index, index_models=models, index_rows=list(table.items()), config_text=self.config_text(key))
        return ctx
