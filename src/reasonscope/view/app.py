"""The live viewer: a Starlette application over a :class:`~reasonscope.view.site.Viewer`, served by uvicorn.

Routes (GET only: the viewer changes nothing):

====================  =======================================================================
``/``                 Runs page: every run under the root, sortable and filterable
``/run?run=KEY``      Run page: the run's outcome, its item-level numbers (each a link to its
                      items), the report (in a sandboxed frame) and the plan
``/report?run=KEY``   the run's report page, built by the report (:mod:`.report_page`)
``/items?run=KEY&..``  Items page: ``model``, ``metric``, ``value``, ``outcome``, ``page``, ``per_page``
``/compare?run=A&run=B[&run=..]``  Compare page
``/api/runs``         the Runs rows as JSON (:class:`~reasonscope.view.runs.RunRow`); optional
                      ``model``, ``dataset``, ``family``, ``since``, ``until`` (``YYYY-MM-DD``) filters
``/api/items?..``     an Items page as JSON (:class:`~reasonscope.view.items.ItemPage`)
``/api/index?run=KEY``  the run's item-level numbers as JSON
====================  =======================================================================

A run key that names no run, or tries to leave the root, is a 404 with the reason; a bad filter a 400
naming the field. Every HTML answer carries a Content-Security-Policy that allows only the viewer's own
script file (no inline script can run even if one reached a page; the report page, which has an
inline expand button, is shown in a frame sandboxed without same-origin rights), ``nosniff`` and no
referrer. When bound to the loopback address, only ``Host`` headers naming it are answered (a web page
elsewhere cannot reach the viewer through DNS rebinding).
"""

from __future__ import annotations

import json
import sqlite3
from importlib.resources import files
from typing import Any

from pydantic import ValidationError

from ..storage.scrub import configured_secrets, mask_secrets
from .comparison import ComparisonUnavailable, headline_table, paired_comparison
from .items import ItemQuery
from .pages import LiveLinks, render
from .paths import RunNotFound
from .readonly import StoreUnreadable
from .runs import RunRow
from .site import Viewer

__all__ = ["PAGE_CSP", "REPORT_CSP", "filter_rows", "make_app"]

PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; "
            "frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
REPORT_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
              "base-uri 'none'; form-action 'none'; frame-ancestors 'self'")
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def filter_rows(rows: list[RunRow], *, model: str | None = None, dataset: str | None = None,
                family: str | None = None, since: str | None = None, until: str | None = None) -> list[RunRow]:
    """The rows matching every filter given.

    A model, dataset or family name containing the text (any case); a start date (``YYYY-MM-DD``, UTC)
    from ``since`` to ``until`` inclusive. The Runs page's script applies the same rules in the browser.
    """

    def has(values: list[str] | dict, text: str | None) -> bool:
        return not text or any(text.lower() in v.lower() for v in values)

    return [r for r in rows if has(r.models, model) and has(list(r.datasets), dataset) and has(r.families, family)
            and (not since or (r.date or "")[:10] >= since) and (not until or ("" < (r.date or "")[:10] <= until))]


def make_app(viewer: Viewer, *, allowed_hosts: list[str] | None = None) -> Any:
    """The Starlette application serving ``viewer`` (module docstring).

    ``allowed_hosts``: the ``Host`` headers answered (default: the loopback names; ``["*"]`` for any).
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    links = LiveLinks()
    headers = {"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff",
               "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

    def page(template: str, code: int = 200, **ctx: Any) -> HTMLResponse:
        return HTMLResponse(render(template, links, live=True, **ctx), status_code=code, headers=headers)

    def api(data: Any, status: int = 200) -> Response:
        """JSON with every configured secret's value masked, as the pages mask it."""
        text = json.dumps(data, ensure_ascii=False, default=str)
        secrets = configured_secrets()
        return Response(mask_secrets(text, secrets)[0] if secrets else text, status_code=status,
                        media_type="application/json", headers=headers)

    def error(request: Request, status: int, message: str) -> Response:
        if request.url.path.startswith("/api/"):
            return api({"error": message}, status)
        return page("error.html.j2", status, status=status, message=message)

    def guarded(handler):
        def endpoint(request: Request) -> Response:
            try:
                return handler(request)
            except RunNotFound as err:
                return error(request, 404, str(err))
            except ValidationError as err:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'query'}: {e['msg']}" for e in err.errors())
                return error(request, 400, f"bad query: {problems}")
            except (StoreUnreadable, sqlite3.DatabaseError) as err:
                return error(request, 500, f"cannot read this run: {err}")
        endpoint.__name__ = handler.__name__
        return endpoint

    def run_key(request: Request) -> str:
        key = request.query_params.get("run")
        if key is None:
            raise RunNotFound("no run named: add ?run=KEY (a run folder's path under the viewed folder)")
        return key

    def item_query(request: Request) -> ItemQuery:
        q = request.query_params
        return ItemQuery.model_validate({k: q[k] for k in ("model", "metric", "value", "outcome", "page", "per_page")
                                         if k in q})

    @guarded
    def runs_page(request: Request) -> Response:
        rows = viewer.rows()
        return page("runs.html.j2", rows=rows, keys=[r.key for r in rows], root_name=viewer.root.name)

    @guarded
    def run_page(request: Request) -> Response:
        return page("run.html.j2", **viewer.run_context(run_key(request)))

    @guarded
    def report_page(request: Request) -> Response:
        path, why = viewer.report(run_key(request))
        if path is None:
            return error(request, 500, f"the report could not be built: {why}")
        return Response(path.read_bytes(), media_type="text/html; charset=utf-8",
                        headers={**headers, "Content-Security-Policy": REPORT_CSP})

    @guarded
    def items_page(request: Request) -> Response:
        query = item_query(request)
        return page("items.html.j2", p=viewer.items(run_key(request), query), q=query)

    @guarded
    def compare_page(request: Request) -> Response:
        keys = list(dict.fromkeys(request.query_params.getlist("run")))
        if len(keys) < 2:
            return error(request, 400, "compare needs two or more runs: tick them on the Runs page "
                                       "(or ?run=A&run=B)")
        rows = sorted((viewer.row(k) for k in keys), key=lambda r: r.created or 0)  # oldest first: BASE
        keys = [r.key for r in rows]
        titles, values = headline_table(rows)
        ctx: dict[str, Any] = {"rows": rows, "headline_keys": titles, "headlines": values, "comparison": None,
                               "comparison_error": None}
        if len(keys) == 2:
            try:
                ctx["comparison"] = paired_comparison(viewer.folder(keys[0]), viewer.folder(keys[1]), viewer.families)
            except ComparisonUnavailable as err:
                ctx["comparison_error"] = str(err)
        return page("compare.html.j2", **ctx)

    @guarded
    def api_runs(request: Request) -> Response:
        q = request.query_params
        rows = filter_rows(viewer.rows(), model=q.get("model"), dataset=q.get("dataset"), family=q.get("family"),
                           since=q.get("since"), until=q.get("until"))
        return api([r.model_dump() for r in rows])

    @guarded
    def api_items(request: Request) -> Response:
        return api(viewer.items(run_key(request), item_query(request)).model_dump())

    @guarded
    def api_index(request: Request) -> Response:
        return api(viewer.metric_index(run_key(request)))

    script = files("reasonscope.view").joinpath("static", "view.js").read_bytes()

    def static_script(request: Request) -> Response:
        return Response(script, media_type="text/javascript; charset=utf-8", headers=headers)

    routes = [Route("/", runs_page), Route("/run", run_page), Route("/report", report_page),
              Route("/items", items_page), Route("/compare", compare_page), Route("/api/runs", api_runs),
              Route("/api/items", api_items), Route("/api/index", api_index),
              Route("/static/view.js", static_script)]
    hosts = allowed_hosts or [h.strip("[]") for h in LOOPBACK]
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)])


def static_file(name: str) -> bytes:
    """A file of the viewer's ``static`` folder (the export copies it)."""
    return files("reasonscope.view").joinpath("static", name).read_bytes()

