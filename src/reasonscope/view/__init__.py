"""``reasonscope view``: a local, read-only web viewer of a folder of runs.

Every run under a folder (each a folder holding ``store.sqlite``) on one page, side by side, down to the
items behind each number: Runs, Run, Compare and Items pages, served on 127.0.0.1 by Starlette and uvicorn
(:mod:`.app`, :mod:`.serve`), or written as a static site (:mod:`.export`). It reads the stores
read-only (:mod:`.readonly`), shows each run's report as the report builds it (:mod:`.report_page`), and
pages items with SQL (:mod:`.items`). Starlette and uvicorn (the ``view`` extra) are imported only when
the server starts.
"""

from __future__ import annotations

from .items import ItemPage, ItemQuery
from .paths import RunNotFound, discover_runs
from .readonly import StoreUnreadable, open_read_only
from .runs import RunRow
from .site import Viewer

__all__ = ["ItemPage", "ItemQuery", "RunNotFound", "RunRow", "StoreUnreadable", "Viewer", "discover_runs",
           "open_read_only"]
