"""The Items page: the (model, item) pairs behind a number, a page at a time, read with SQL paging.

A row of the page is one model on one item: the item (prompt, choices, gold answer, gold rationale),
every generation of that model for it (variant and sample, raw output, extracted answer and why, think
block, trace steps, error), and every item-level score the run stored for that model and item, each with
its reason and details (a judge's reply, an NLI label, an attack's outcome: whatever the family
recorded).

Filters (:class:`ItemQuery`):

* ``model``: one model (or a scored variant, as the information family scores rationale variants);
* ``metric``: ``family.metric``: only pairs with an item-level score of that metric; ``value`` then keeps
  those whose value is ``1``, ``0``, ``na`` (stored without a value: not applicable, with its reason) or
  ``other`` (any other number);
* ``outcome``: ``answered`` (the model has a generation without error for the item), ``failed`` (one
  stored with an error) or ``pending`` (a linked request with no stored generation).

Order and paging: pairs are ordered by model, then item (dataset and item id; with a metric, the item
key ``dataset/item id``), the order of the primary keys of ``run_generations`` and ``scores``, so a page
is read from an index, sorted by nothing. The first request of a filter counts its rows in SQL; the first
request of a page past row 1,000 walks the rows once, keeping the sort key of every 50th row
(:class:`PageIndex`; both are the costs that grow with the run, paid once: the viewer keeps them per run,
filters and change of the run). A page then seeks to the key at or before its first row and reads at
most 50 + ``per_page`` index entries (an early page: at most 1,000 + ``per_page``), so the last page of a
run of 200,000 items costs what the first does, and memory does not grow with the pages viewed. Texts
are shown bounded as in the report (:func:`reasonscope.report.html.clip`).

An item-level score's key is ``dataset/item id``; a dataset name may itself hold ``/``, so a key is
matched to the run's datasets by prefix (the longest dataset name that prefixes it).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ..report.html import clip
from ..results import interpret
from ..store import Store
from ..types import Item

__all__ = ["GenerationView", "ItemPage", "ItemQuery", "ItemRow", "PageIndex", "ScoreView", "count_rows", "item_page",
           "metric_index", "page_index"]

MAX_PER_PAGE = 500
DEFAULT_PER_PAGE = 50


class ItemQuery(BaseModel):
    """The filters and page of an Items page (module docstring). Bad values are errors naming the field."""

    model: str | None = None
    metric: str | None = Field(default=None, description="family.metric")
    value: Literal["1", "0", "na", "other"] | None = None
    outcome: Literal["answered", "failed", "pending"] | None = None
    page: int = Field(default=1, ge=1)
    per_page: int = Field(default=DEFAULT_PER_PAGE, ge=1, le=MAX_PER_PAGE)

    @field_validator("model", "metric", "value", "outcome", mode="before")
    @classmethod
    def _blank_is_none(cls, v: Any) -> Any:
        return None if v == "" else v

    @field_validator("metric")
    @classmethod
    def _family_dot_metric(cls, v: str | None) -> str | None:
        if v is not None and "." not in v.strip("."):
            raise ValueError(f"metric {v!r} must be written family.metric, e.g. behavior.CQ")
        return v

    @model_validator(mode="after")
    def _value_needs_metric(self) -> ItemQuery:
        if self.value is not None and self.metric is None:
            raise ValueError("value filter needs a metric (family.metric): it filters that metric's values")
        return self

    def filters(self) -> dict[str, str]:
        """The filters that are set, as URL query parameters (no page)."""
        return {k: v for k, v in (("model", self.model), ("metric", self.metric), ("value", self.value),
                                  ("outcome", self.outcome)) if v is not None}


class ScoreView(BaseModel):
    """One item-level score: ``family.metric``, its value (None: n/a), reason and details as JSON text."""

    metric: str
    value: float | None
    reason: str | None = None
    details: str = ""


class GenerationView(BaseModel):
    """One generation as the page shows it (texts bounded: ``*_left`` counts the characters left out)."""

    variant: str
    sample: int
    done: bool
    raw_text: str = ""
    raw_left: int = 0
    answer: str | None = None
    answer_reason: str | None = None
    think: str | None = None
    steps: list[str] = Field(default_factory=list)
    error: str | None = None
    finish_reason: str | None = None
    truncated: bool = False
    source: str | None = None
    tokens: str = ""


class ItemRow(BaseModel):
    """One model on one item: the item, the model's generations and its item-level scores."""

    key: str = Field(description="dataset/item id")
    model: str
    dataset: str | None = None
    item_id: str | None = None
    input: str | None = None
    input_left: int = 0
    choices: list[str] | None = None
    target: str | None = None
    rationale: str | None = None
    generations: list[GenerationView] = Field(default_factory=list)
    scores: list[ScoreView] = Field(default_factory=list)


class ItemPage(BaseModel):
    """A page of the Items page: the query, the total number of rows it matches, and this page's rows."""

    run_key: str
    run_id: str
    query: ItemQuery
    total: int
    pages: int
    rows: list[ItemRow]
    models: list[str] = Field(description="models (and scored variants) of the run, for the filter")
    metrics: list[str] = Field(description="family.metric of the run's item-level scores, for the filter")


_OUTCOME_SQL = {"answered": "g.key IS NOT NULL AND g.error IS NULL", "failed": "g.error IS NOT NULL",
                "pending": "g.key IS NULL"}
_VALUE_SQL = {"1": "s.value = 1", "0": "s.value = 0", "na": "s.value IS NULL",
              "other": "s.value IS NOT NULL AND s.value NOT IN (0, 1)"}


def distinct(conn: sqlite3.Connection, table: str, columns: tuple[str, ...], run_id: str,
             fixed: tuple = ()) -> list[tuple]:
    """The distinct values of ``columns`` among ``table``'s rows of the run, in index order.

    ``columns`` must be the columns that follow ``run_id`` in one of the table's indexes. The values of
    each column are found one by one, with the columns before it fixed, by an indexed
    ``column > previous ORDER BY column LIMIT 1`` lookup (a skip scan), so the cost grows with the number of
    distinct values, not of rows. ``fixed``: the values of the leading columns (the recursion's). ``table``
    and ``columns`` are this module's constants, never user input.
    """
    col, before = columns[len(fixed)], columns[:len(fixed)]
    cond = "run_id=?" + "".join(f" AND {c}=?" for c in before)
    out: list[tuple] = []
    row = conn.execute(f"SELECT {col} FROM {table} WHERE {cond} ORDER BY {col} LIMIT 1", (run_id, *fixed)).fetchone()
    while row is not None:
        value = (*fixed, row[0])
        out += distinct(conn, table, columns, run_id, value) if len(value) < len(columns) else [value]
        row = conn.execute(f"SELECT {col} FROM {table} WHERE {cond} AND {col} > ? ORDER BY {col} LIMIT 1",
                           (run_id, *fixed, row[0])).fetchone()
    return out


def _datasets(conn: sqlite3.Connection, run_id: str) -> list[str]:
    """The run's datasets, longest name first (for prefix matching of score keys)."""
    names = [d for (d,) in distinct(conn, "run_generations INDEXED BY run_generations_by_item", ("dataset",), run_id)]
    return sorted(names, key=len, reverse=True)


def split_key(key: str, datasets: list[str]) -> tuple[str | None, str]:
    """``dataset/item id`` -> (dataset, item id), the dataset being the longest run dataset prefixing it.

    A key no run dataset prefixes gives (None, key).

    >>> split_key("a/b/c", ["a/b", "a"])
    ('a/b', 'c')
    >>> split_key("x", ["a"])
    (None, 'x')
    """
    for d in datasets:
        if key.startswith(d + "/"):
            return d, key[len(d) + 1:]
    return None, key


def _select(query: ItemQuery, run_id: str, datasets: list[str],
            start: tuple | None = None) -> tuple[str, list[Any]]:
    """SQL selecting the ordered rows of ``query`` as their sort keys, and its parameters.

    A row is ``(model, item key)`` with a metric, else ``(model, dataset, item id)``; ``start``: only rows
    from this sort key on (an anchor of :class:`PageIndex`).
    """
    if query.metric:
        family, metric = query.metric.split(".", 1)
        where, args = ["s.run_id=?", "s.family=?", "s.metric=?", "s.item_id != ''"], [run_id, family, metric]
        if query.model:  # `+`: as below, the seek and the order follow the primary key
            where.append("+s.model=?")
            args.append(query.model)
            start = start or (query.model, "")
        if query.value:
            where.append(_VALUE_SQL[query.value])
        if query.outcome:  # one indexed lookup per dataset the key may belong to
            parts = []
            for d in datasets:
                parts.append("(substr(s.item_id, 1, ?) = ? AND EXISTS (SELECT 1 FROM run_generations rg "
                             "LEFT JOIN generations g ON g.key = rg.key WHERE rg.run_id = s.run_id AND rg.dataset = ? "
                             f"AND rg.item_id = substr(s.item_id, ?) AND rg.model = s.model AND "
                             f"{_OUTCOME_SQL[query.outcome]}))")
                args += [len(d) + 1, d + "/", d, len(d) + 2]
            where.append("(" + (" OR ".join(parts) or "0") + ")")
        if start is not None:
            where.append("(s.model, s.item_id) >= (?, ?)")
            args += list(start)
        return (f"SELECT s.model, s.item_id FROM scores s WHERE {' AND '.join(where)} ORDER BY s.model, s.item_id",
                args)
    where, args = ["rg.run_id=?"], [run_id]
    if query.model:  # `+`: no index equality on the model, so that the seek and the GROUP BY follow the key
        where.append("+rg.model=?")
        args.append(query.model)
        start = start or (query.model, "", "")
    if start is not None:
        where.append("(rg.model, rg.dataset, rg.item_id) >= (?, ?, ?)")
        args += list(start)
    join, having = "", ""
    if query.outcome:
        join = " LEFT JOIN generations g ON g.key = rg.key"
        having = f" HAVING SUM({_OUTCOME_SQL[query.outcome]}) > 0"
    # the primary key's index gives the (model, dataset, item) order itself: no sort of the run's rows
    return (f"SELECT rg.model, rg.dataset, rg.item_id FROM run_generations rg "
            f"INDEXED BY sqlite_autoindex_run_generations_1{join} "
            f"WHERE {' AND '.join(where)} GROUP BY rg.model, rg.dataset, rg.item_id{having} "
            "ORDER BY rg.model, rg.dataset, rg.item_id", args)


ANCHOR_EVERY = 50
"""Rows between two anchors of a :class:`PageIndex`."""
OFFSET_ROWS = 1000
"""A page starting before this row is read with a plain ``OFFSET`` from the first row (cheap); a later one
from the nearest anchor."""


@dataclass
class PageIndex:
    """The rows a query matches, and where its pages start.

    ``total``: the rows matched; ``anchors``: once a deep page is asked for, the sort key of every
    :data:`ANCHOR_EVERY`-th row. ``total`` is counted in SQL (:func:`count_rows`). The anchors are found in one pass over the rows
    (:func:`page_index`) the first time a page starting at or after :data:`OFFSET_ROWS` is read; such a page
    then starts from the anchor at or before its first row (a keyset seek on the index) and skips fewer
    than :data:`ANCHOR_EVERY` rows, so the last page of a run costs what the first does.
    """

    total: int
    anchors: list[tuple] | None = None


def count_rows(store: Store, run_id: str, query: ItemQuery) -> PageIndex:
    """The rows ``query`` matches in the run, counted in SQL (no anchors yet)."""
    sql, args = _select(query, run_id, _datasets(store.conn, run_id))
    return PageIndex(store.conn.execute(f"SELECT COUNT(*) FROM ({sql})", args).fetchone()[0])


def page_index(store: Store, run_id: str, query: ItemQuery) -> PageIndex:
    """The :class:`PageIndex` of ``query``'s rows with its anchors: one pass over them, a key every 50th row."""
    sql, args = _select(query, run_id, _datasets(store.conn, run_id))
    total, anchors = 0, []
    for row in store.conn.execute(sql, args):
        if total % ANCHOR_EVERY == 0:
            anchors.append(tuple(row))
        total += 1
    return PageIndex(total, anchors)


def _item(conn: sqlite3.Connection, dataset: str | None, item_id: str) -> Item | None:
    if dataset is None:
        return None
    row = conn.execute("SELECT data FROM items WHERE dataset=? AND item_id=?", (dataset, item_id)).fetchone()
    try:
        return Item.model_validate_json(row[0]) if row else None
    except ValueError:
        return None


_GEN_COLS = ["model", "variant", "sample", "key", "max_tokens", "text", "finish_reason", "prompt_tokens",
             "completion_tokens", "latency_s", "cost_usd", "error", "source", "done"]


def _generations(conn: sqlite3.Connection, run_id: str, model: str, dataset: str | None, item_id: str,
                 item: Item | None) -> list[GenerationView]:
    if dataset is None:
        return []
    out = []
    for values in conn.execute(
            "SELECT rg.model, rg.variant, rg.sample, rg.key, rg.max_tokens, g.text, g.finish_reason, "
            "g.prompt_tokens, g.completion_tokens, g.latency_s, g.cost_usd, g.error, g.source, g.key IS NOT NULL "
            "FROM run_generations rg LEFT JOIN generations g ON g.key = rg.key WHERE rg.run_id=? AND rg.dataset=? "
            "AND rg.item_id=? AND rg.model=? ORDER BY rg.variant != 'original', rg.variant, rg.sample",
            (run_id, dataset, item_id, model)):
        row = dict(zip(_GEN_COLS, values, strict=True))
        view = GenerationView(variant=row["variant"] or "original", sample=int(row["sample"] or 0),
                              done=bool(row["done"]), error=row["error"], finish_reason=row["finish_reason"],
                              source=row["source"])
        if row["done"]:
            raw, left = clip(row["text"] or "")
            view.raw_text, view.raw_left = raw, left
            view.tokens = f"{row['prompt_tokens'] or '?'} in, {row['completion_tokens'] or '?'} out"
            if item is not None:
                g = interpret(row, item)
                view.answer = None if g.answer is None else str(g.answer)
                view.answer_reason, view.think, view.truncated = g.answer_reason, g.think, g.truncated
                view.steps = [clip(s, 2000)[0] for s in g.steps[:50]]
        out.append(view)
    return out


def _scores(conn: sqlite3.Connection, run_id: str, model: str, key: str) -> list[ScoreView]:
    return [ScoreView(metric=f"{f}.{m}", value=v, reason=r,
                      details=clip(json.dumps(json.loads(d), ensure_ascii=False, indent=1))[0] if d and d != "{}" else "")
            for f, m, v, r, d in conn.execute(
                "SELECT family, metric, value, reason, details FROM scores INDEXED BY scores_by_item "
                "WHERE run_id=? AND item_id=? AND model=? ORDER BY family, metric", (run_id, key, model))]


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def item_rows(store: Store, run_id: str, pairs: list[tuple[str, str]], datasets: list[str]) -> list[ItemRow]:
    """The page's rows for these (model, item key) pairs, each read with indexed lookups."""
    conn = store.conn
    rows = []
    for model, key in pairs:
        dataset, item_id = split_key(key, datasets)
        item = _item(conn, dataset, item_id)
        row = ItemRow(key=key, model=model, dataset=dataset, item_id=item_id,
                      generations=_generations(conn, run_id, model, dataset, item_id, item),
                      scores=_scores(conn, run_id, model, key))
        if item is not None:
            row.input, row.input_left = clip(item.input)
            row.choices, row.target, row.rationale = item.choices, _text(item.target), item.rationale
        rows.append(row)
    return rows


def metric_index(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Per ``family.metric`` and model: item-level scores stored, how many have a value, and their mean.

    Rows ``{"metric", "model", "n", "valued", "mean"}`` ordered by family, metric, model: the numbers the
    Run page links to their items. Counted in SQL.
    """
    return [{"metric": f"{f}.{m}", "model": mo, "n": n, "valued": k, "mean": mean}
            for f, m, mo, n, k, mean in store.conn.execute(
                "SELECT family, metric, model, COUNT(*), COUNT(value), AVG(value) FROM scores WHERE run_id=? AND "
                "item_id != '' GROUP BY family, metric, model ORDER BY family, metric, model", (run_id,))]


def _choices(conn: sqlite3.Connection, run_id: str) -> tuple[list[str], list[str]]:
    models = {m for (m,) in distinct(conn, "run_generations", ("model",), run_id)}
    metrics = []
    for f, m, mo in distinct(conn, "scores", ("family", "metric", "model"), run_id):
        metrics.append(f"{f}.{m}")
        models.add(mo)
    return sorted(models), sorted(set(metrics))


def item_page(store: Store, run_key: str, query: ItemQuery, run_id: str | None = None,
              index: PageIndex | None = None) -> ItemPage:
    """One page of the Items page of the run (its latest finished run unless ``run_id``).

    ``index``: the query's :class:`PageIndex` when known (counted otherwise: with its anchors, the one part
    of a page whose cost grows with the run; the viewer keeps it per run, filters and change of the run).
    Its anchors are added to it when this page needs them.
    """
    run_id = run_id or store.run()["run_id"]
    datasets = _datasets(store.conn, run_id)
    index = index or count_rows(store, run_id, query)
    first = (query.page - 1) * query.per_page
    rows: list[tuple] = []
    if first < index.total:
        start, skip = None, first
        if first >= OFFSET_ROWS:
            if index.anchors is None:
                built = page_index(store, run_id, query)
                index.total, index.anchors = built.total, built.anchors
            start, skip = index.anchors[first // ANCHOR_EVERY], first % ANCHOR_EVERY
        sql, args = _select(query, run_id, datasets, start=start)
        rows = store.conn.execute(f"{sql} LIMIT ? OFFSET ?", [*args, query.per_page, skip]).fetchall()
    pairs = [(r[0], r[1]) if len(r) == 2 else (r[0], f"{r[1]}/{r[2]}") for r in rows]
    models, metrics = _choices(store.conn, run_id)
    return ItemPage(run_key=run_key, run_id=run_id, query=query, total=index.total,
                    pages=max(1, -(-index.total // query.per_page)), rows=item_rows(store, run_id, pairs, datasets),
                    models=models, metrics=metrics)
