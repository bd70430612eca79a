r"""The self-contained HTML report: summary cards, one section per family, per-item drill-down.

Layout, top to bottom: run line and warnings; one summary card per family present
(:mod:`reasonscope.report.cards`); per family its "how computed" paragraph, its tables
(:func:`reasonscope.report.html_tables.table_view`: human labels, ``value [low, high]`` rounded to what
the CI supports, a note under each table), its plots inlined as base64 PNG and, where a plot had
nothing to draw, a sentence saying why instead; then the per-item drill-down (``<details>``).

Every text reaches the page through Jinja2 autoescaping; the only script is the expand/collapse
button handler, which never inserts text.

Bounded texts
-------------
The page embeds a bounded part of every text; ``samples.jsonl`` keeps every text whole. In the item
drill-down a question and a generation's raw text show their first :data:`HTML_TEXT_CHARS` characters,
followed by a note saying how many more characters ``samples.jsonl`` holds. A generation's steps (its
trace cut into sentences: the same text again) are listed by their first :data:`STEP_PREVIEW_CHARS`
characters each, next to their contradiction probability, and the list stops once
:data:`STEPS_SHOWN_CHARS` characters of steps are shown (a note counts the steps left out). Any other text
longer than :data:`HTML_TEXT_CHARS` (a table cell, an error message) is cut the same way by
:func:`visible_text`. Six replies of 1 MB make a page of 0.25 MB.

Control characters
------------------
No C0 control character but tab and newline, no DEL and no C1 control is written into the page: each
is shown as its visible Unicode "control picture" (NUL as ␀, ESC as ␛, a lone carriage return as ␍,
DEL as ␡) and a C1 control or a lone surrogate as U+FFFD (�). A ``\r\n`` line end is read as ``\n``.
This applies to every value the template writes (:func:`visible_text` is the environment's
``finalize``).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from typing import IO, TYPE_CHECKING, Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, PrefixLoader, select_autoescape
from markupsafe import Markup

from ..storage.run_data import RunData
from ..types import is_question_variant
from .cards import family_cards
from .html_tables import TableView, table_view

if TYPE_CHECKING:
    from .view import FamilyReport

HTML_TEXT_CHARS = 20_000
"""Most characters of one text (a question, a generation's raw text, any other value) the page embeds."""
STEP_PREVIEW_CHARS = 200
"""Most characters shown of one step of a generation (the steps repeat the text)."""
STEPS_SHOWN_CHARS = 4_000
"""Most characters of steps listed per generation; the remaining steps are counted, not shown."""
_VISIBLE = {**{c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}, 0x7F: 0x2421,
            **{c: 0xFFFD for c in range(0x80, 0xA0)}, **{c: 0xFFFD for c in range(0xD800, 0xE000)}}


def visible(text: str) -> str:
    r"""``text`` with every control character but tab and newline shown as a visible symbol.

    See the module docstring; ``\r\n`` becomes ``\n``.
    """
    return text.replace("\r\n", "\n").translate(_VISIBLE)


def clip(text: str, limit: int = HTML_TEXT_CHARS) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` and how many were left out."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def visible_text(value: Any) -> Any:
    """The template's ``finalize``.

    A string is cut to :data:`HTML_TEXT_CHARS` characters (with a note) and its control characters made
    visible; markup the template made itself (a macro's output, the base64 of a plot) is written as it is.
    """
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    shown, more = clip(value)
    return visible(shown) + (f" … [{more:,} more characters in samples.jsonl]" if more else "")


def step_views(steps: list[str], probs: list[float] | None, primary: bool) -> tuple[list[tuple[str, float | None]], int]:
    """The steps shown for one generation, and how many steps are left out.

    Each shown step is (its first :data:`STEP_PREVIEW_CHARS` characters, contradiction probability with the
    next step or None); steps are shown until :data:`STEPS_SHOWN_CHARS` characters are.
    """
    shown: list[tuple[str, float | None]] = []
    used = 0
    for i, step in enumerate(steps):
        if used >= STEPS_SHOWN_CHARS:
            return shown, len(steps) - i
        text, more = clip(step, STEP_PREVIEW_CHARS)
        used += len(text)
        shown.append((text + (" …" if more else ""), probs[i] if (primary and probs and i < len(probs)) else None))
    return shown, 0


def family_tables(sheets: dict[str, list[dict[str, Any]]], reports: Iterable[FamilyReport]) -> dict[str, list[TableView]]:
    """The table views of each family, family by family in the order of ``reports``, each in its tables' order.

    A sheet named in a family's :attr:`~reasonscope.report.view.FamilyReport.tables` becomes a table, followed
    by its split views; empty sheets are left out.
    """
    out: dict[str, list[TableView]] = {}
    for report in reports:
        for key, table in report.tables.items():
            view = table_view(key, sheets.get(key) or [], report, table.title, table.note, table.hidden)
            if view is not None:
                out.setdefault(report.name, []).append(view)
            for split in report.split_views:
                if split.sheet != key:
                    continue
                once = split.once_per_page
                rows = [{k: v for k, v in r.items()
                         if (k.split("_low")[0].split("_high")[0] in split.columns or k in split.columns)
                         and not (once and r.get(once) and k.startswith(r[once]))}  # shown above: once per page
                        for r in sheets.get(key) or []]
                split_view = table_view(split.key, rows, report, split.title, split.note)
                if split_view is not None:
                    out.setdefault(report.name, []).append(split_view)
    return out


def status_warnings(run: dict[str, Any]) -> list[str]:
    """A banner for a run that did not finish (see reasonscope.storage.store, "Run status")."""
    if run.get("status") == "interrupted":
        return ["this run was interrupted before it finished: the numbers cover only the generations and scores it "
                "stored; run the same command again to complete it (stored generations are not requested again)"]
    if run.get("status") == "running":
        where = f" (pid {run['pid']} on {run.get('host')})" if run.get("pid") else ""
        return [f"this run is still running{where}: this report shows what it has stored so far"]
    return []


def item_views(data: RunData, scores_by_item: dict[tuple[str, str], dict[str, Any]], verdict: str | None = None,
               step_scores: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    """Per item: question, gold, every question-variant generation, and the per-model verdict.

    ``verdict``: the item-level score (``family.metric``) whose value 1.0 marks a model's answer right;
    ``step_scores``: ``(family.metric, details key)`` of the score listing one number per reasoning step
    (shown next to each step); both from the families (:func:`item_marks`), None: not shown.
    """
    items = []
    by_item: dict[str, list] = {}
    for g in data.generations:
        by_item.setdefault(g.item_id, []).append(g)
    for key, gens in by_item.items():
        item = data.items[key]
        gens = [g for g in gens if is_question_variant(g.variant)]
        if not gens:
            continue
        gens = sorted(gens, key=lambda g: (g.model, g.variant != "original", g.variant, g.sample))
        verdicts = {}
        rendered = []
        for g in gens:
            sc = scores_by_item.get((g.model, key), {})
            primary = g.variant == "original" and g.sample == 0
            probs = ((sc.get(step_scores[0], {}).get("details") or {}).get(step_scores[1]) or []) if step_scores else []
            mark = sc.get(verdict) if verdict else None
            if primary and mark and mark["value"] is not None:
                verdicts[g.model] = mark["value"] == 1.0
            steps_scored, steps_left = step_views(g.steps, probs, primary)
            raw_text, raw_left = clip(g.raw_text)
            rendered.append({"model": g.model, "variant": g.variant, "sample": g.sample, "answer": g.answer,
                             "answer_reason": g.answer_reason, "error": g.error, "truncated": g.truncated,
                             "raw_text": raw_text, "raw_left": raw_left, "steps_scored": steps_scored,
                             "steps_left": steps_left})  # what the page shows (module docstring: bounded texts)
        question, question_left = clip(item.input)
        items.append({"key": key, "type": item.metadata.get("type") or item.answer_type, "input": question,
                      "input_left": question_left, "choices": item.choices, "target": item.target,
                      "generations": rendered, "verdicts": verdicts})
    return items


def item_marks(reports: Iterable[FamilyReport]) -> tuple[str | None, tuple[str, str] | None]:
    """``(verdict, step_scores)`` of :func:`item_views`: the first family's that declares each."""
    verdict = steps = None
    for r in reports:
        if verdict is None and r.item_verdict:
            verdict = f"{r.name}.{r.item_verdict}"
        if steps is None and r.step_scores:
            steps = (f"{r.name}.{r.step_scores[0]}", r.step_scores[1])
    return verdict, steps


def run_warnings(run: dict[str, Any], notes: dict[str, Any], tables: dict[str, Any]) -> list[str]:
    """The page's banners: run-level warnings only (status, exit code, skipped models).

    A family's warnings are listed in full on its card (:mod:`reasonscope.report.cards`), so each is written
    once.
    """
    warnings = status_warnings(run)
    for model, why in (notes.get("skipped_models") or {}).items():
        warnings.append(f"skipped model {model}: {why}")
    outcome = notes.get("outcome") or {}
    if outcome.get("code"):
        warnings.insert(0, f"exit code {outcome['code']}: {outcome['message']}")
    return warnings


def template_environment(reports: Iterable[FamilyReport]) -> Environment:
    """The page's Jinja2 environment: the report's templates, and each family's partial as ``<name>/<template>``.

    Autoescaping on for every template; :func:`visible_text` finalizes every value written.
    """
    partials = {r.name: PackageLoader(r.package, "templates") for r in reports if r.template}
    return Environment(loader=ChoiceLoader([PackageLoader("reasonscope.report", "templates"), PrefixLoader(partials)]),
                       autoescape=select_autoescape(["html", "j2"]), finalize=visible_text)


def stream_html(out: IO[str], run: dict[str, Any], tables: dict[str, Any], items: Iterable[dict[str, Any]],
                sheets: dict[str, list[dict[str, Any]]], images: dict[str, str],
                gaps: dict[str, list[str]] | None = None, *, reports: Iterable[FamilyReport] = (),
                header: dict[str, Any] | None = None, about: list[str] | None = None) -> None:
    """Write the report page to ``out`` as it renders, reading ``items`` once: never held in memory whole.

    ``items``: the item views (:func:`item_views`, e.g. chunk by chunk). ``tables``: family name -> its stored
    result (None or absent: not run); ``reports``: the families' report parts, in the page's order (cards and
    sections); ``images``: plot name -> base64 PNG (a name starts with its family); ``gaps``: per family, why a
    plot was not drawn; ``header``: the models, datasets and date the first line names; ``about``: lines on
    what the numbers show and do not (the demo's caveats).

    Each family present gets a section: its partial template (:attr:`~reasonscope.report.view.FamilyReport.template`)
    with ``t`` (its result) and ``section`` (:meth:`~reasonscope.report.view.FamilyReport.section`), or the
    generic one (heading, tables, plots).
    """
    reports = list(reports)
    env = template_environment(reports)
    images = {name: Markup(data) for name, data in images.items()}  # base64: written whole, nothing to escape
    notes = run.get("notes") or {}
    sections = [{"name": r.name, "title": r.title, "t": tables[r.name],
                 "template": f"{r.name}/{r.template}" if r.template else None,
                 "section": r.section(tables[r.name], sheets)} for r in reports if tables.get(r.name)]
    views = iter(items)
    first = next(views, None)  # whether the page has an Items section, without reading further
    env.get_template("report.html.j2").stream(
        run=run, cards=family_cards(tables, reports), warnings=run_warnings(run, notes, tables),
        views=family_tables(sheets, reports), images=images, gaps=gaps or {}, sections=sections,
        items=chain([first], views) if first is not None else iter(()), has_items=first is not None,
        bad_rows=notes.get("bad_rows") or {}, text_chars=HTML_TEXT_CHARS, header=header,
        about=about or []).dump(out)
