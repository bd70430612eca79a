"""Rendering the viewer's pages: Jinja2 templates with autoescaping, and the links between pages.

Every value reaches a page through Jinja2's autoescaping and the report's ``finalize``
(:func:`reasonscope.report.html.visible_text`: long texts cut with a note, control characters shown as
symbols), after :func:`reasonscope.storage.scrub.mask_secrets` has masked the value of every configured secret
(the API keys the providers read): a model's output that holds HTML or JavaScript is shown as text, and a
key is never shown, even if one reached the store. The pages' only script is ``view.js`` (sorting and
filtering the Runs table by moving and hiding its rows; it never writes text into the page), served as a
file so that the server's Content-Security-Policy can forbid every inline script.

Links differ between the live server and the exported static site, so templates call a :class:`Links`
object: :class:`LiveLinks` (query strings on the server's routes) or :class:`ExportLinks` (files of the
exported folder, relative to the page).
"""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ..report.html import visible_text
from ..storage.scrub import configured_secrets, mask_secrets
from .items import DEFAULT_PER_PAGE

__all__ = ["ExportLinks", "Links", "LiveLinks", "filter_key", "render"]


class Links:
    """Where each page is; templates call these (None: the page does not exist in this mode)."""

    def home(self) -> str:
        """The Runs page."""
        raise NotImplementedError

    def run(self, key: str) -> str:
        """A run's Run page."""
        raise NotImplementedError

    def report(self, key: str) -> str:
        """The report shown inside a Run page."""
        raise NotImplementedError

    def items(self, key: str, page: int = 1, per_page: int | None = None, **filters: str | None) -> str | None:
        """An Items page of a run with these filters (``per_page``: rows a page, None: the default)."""
        raise NotImplementedError

    def compare(self, keys: list[str]) -> str | None:
        """The Compare page of these runs."""
        raise NotImplementedError

    def static(self, name: str) -> str:
        """A static file (the script)."""
        raise NotImplementedError


class LiveLinks(Links):
    """The live server's routes: ``/``, ``/run``, ``/report``, ``/items``, ``/compare`` with query strings."""

    def home(self) -> str:  # noqa: D102
        return "/"

    def run(self, key: str) -> str:  # noqa: D102
        return "/run?" + urlencode({"run": key})

    def report(self, key: str) -> str:  # noqa: D102
        return "/report?" + urlencode({"run": key})

    def items(self, key: str, page: int = 1, per_page: int | None = None,  # noqa: D102
              **filters: str | None) -> str:
        params = {"run": key, **{k: v for k, v in filters.items() if v}}
        if page != 1:
            params["page"] = str(page)
        if per_page is not None and per_page != DEFAULT_PER_PAGE:
            params["per_page"] = str(per_page)
        return "/items?" + urlencode(params)

    def compare(self, keys: list[str]) -> str:  # noqa: D102
        return "/compare?" + urlencode([("run", k) for k in keys])

    def static(self, name: str) -> str:  # noqa: D102
        return "/static/" + quote(name)


def filter_key(filters: dict[str, str | None]) -> tuple[tuple[str, str], ...]:
    """The filters that are set, as a sorted tuple of (name, value): the key of an exported filter.

    >>> filter_key({"model": "m1", "metric": "behavior.CQ", "value": None})
    (('metric', 'behavior.CQ'), ('model', 'm1'))
    """
    return tuple(sorted((k, v) for k, v in filters.items() if v))


class ExportLinks(Links):
    """Files of an exported site, relative to a page ``depth`` folders below the site's root.

    Runs live in ``runs/<slug>/`` (``index.html``, ``report.html``, ``items-<page>.html``). ``filters``: per
    run key, the exported filters (:func:`filter_key`) and their file stem (``items-<metric>-<model>``);
    a link to a filter not exported is None (the page shows the number without a link). ``pairs``: the
    exported paired comparisons, (base key, new key) -> file name at the site's root. The Compare page
    ``compare.html`` holds every run.
    """

    def __init__(self, slugs: dict[str, str], depth: int = 0,
                 filters: dict[str, dict[tuple[tuple[str, str], ...], str]] | None = None,
                 pairs: dict[tuple[str, str], str] | None = None):
        self.slugs, self.up = slugs, "../" * depth
        self.filters, self.pairs = filters or {}, pairs or {}

    def home(self) -> str:  # noqa: D102
        return self.up + "index.html"

    def run(self, key: str) -> str:  # noqa: D102
        return f"{self.up}runs/{quote(self.slugs[key])}/index.html"

    def report(self, key: str) -> str:  # noqa: D102
        return f"{self.up}runs/{quote(self.slugs[key])}/report.html"

    def items(self, key: str, page: int = 1, per_page: int | None = None,  # noqa: D102
              **filters: str | None) -> str | None:
        wanted = filter_key(filters)  # the export's own page size holds for every page
        stem = self.filters.get(key, {}).get(wanted) if wanted else "items"
        if stem is None:
            return None
        return f"{self.up}runs/{quote(self.slugs[key])}/{quote(stem)}-{page}.html"

    def compare(self, keys: list[str]) -> str | None:  # noqa: D102
        pair = self.pairs.get((keys[0], keys[1])) if len(keys) == 2 else None
        if pair is not None:  # an exported pair (also of a folder of two runs): its paired comparison
            return self.up + quote(pair)
        return self.up + "compare.html" if len(keys) == len(self.slugs) else None

    def static(self, name: str) -> str:  # noqa: D102
        return self.up + quote(name)


def _finalize(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, Markup):
        secrets = configured_secrets()
        if secrets:
            value = mask_secrets(value, secrets)[0]
    return visible_text(value)


@cache
def environment() -> Environment:
    """The templates' environment: autoescaping everywhere, secrets masked, texts bounded (module docstring)."""
    env = Environment(loader=PackageLoader("reasonscope.view", "templates"), autoescape=select_autoescape(
        default=True, default_for_string=True), finalize=_finalize)
    env.filters["num"] = lambda x, digits=3: "n/a" if x is None else f"{x:.{digits}g}"
    return env


def render(template: str, links: Links, **context: Any) -> str:
    """The page ``template`` (a file of ``view/templates``) with ``context`` and the ``links`` of this mode."""
    return environment().get_template(template).render(links=links, **context)
