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

Order and paging: pairs are ordered by model, then item key (``dataset/item id``; on a store of schema 4 or
5 without a metric or outcome filter, dataset and item id), the order of the indexes they are read from, so
a page is read from an index, sorted by nothing. Every count and page is SQL over an index; no row reaches
Python but the page's own.

Schema 6 (:func:`reasonscope.storage.store._v6_filter_slots`) stores what the filters read where they read
it, compactly, and counted as it is written:

* the count (:func:`count_rows`) is read from ``score_counts`` (a metric: per slot, i.e. run, family, metric
  and model; value class; outcome bits) or ``link_counts`` (no metric: per slot of run and model; outcome;
  whether a link is its model's ``original`` sample 0): a few rows per model, so a first request reads
  no index range to count. Only where a model has several links for an item matching the query (samples,
  paraphrases) are its rows counted by grouping them by item.
* a page (:func:`page_keys`) skips whole models by their counts and is ``LIMIT``/``OFFSET`` inside one
  model's range of one index: ``scores_by_slot`` (slot, item id, value, outcomes) for a metric, whatever its
  value and outcome filters (checked on the index: a metric with ``answered`` walks one index, no merge);
  ``run_generations_by_slot`` (slot, item key, outcome) without one, or the outcome's own range of
  ``run_generations_outcome`` for an outcome that fewer than half of the model's links have. Their entries
  hold an integer slot where the schema-5 indexes repeat the run, family, metric and model as text: about
  28 bytes an entry instead of 80, so a page far into a run reads a third of the pages from disk.

Schemas 5 and 4 (read as they are; the viewer never migrates): the count is ``COUNT(*)`` over the index
range of the run (and of the model and the metric). Without a metric, the same pass checks that every linked
request is a model's ``original`` sample 0 of its item; only where one is not are the requests grouped by
(model, item) to be counted. A value filter reads the score's value from the covering index
``scores_by_value`` (schema 5). An outcome filter reads the outcome schema 5 stores with each linked request
(``run_generations.outcome``) from ``run_generations_outcome`` (run, outcome, model, item key, variant,
sample). A metric with ``answered`` walks ``scores_by_value`` and ``run_generations_outcome`` side by side
(``INTERSECT`` with ``ORDER BY``: a merge of two sorted index walks, about a microsecond a pair); with
``failed`` or ``pending``, the few pairs are listed once from the index and each score looked up in the list.
A store of schema 4 has neither the outcome nor the indexes: its outcome filters look each linked request's
cache key up in the request cache (one index probe a request; with a metric and ``answered``, three a score:
slower, stated in the docs). A page is ``LIMIT per_page OFFSET (page - 1) * per_page`` on the same index
range: SQLite steps over the rows before the page inside the index (about 0.1 microseconds a row; a page in
the second half is read backwards from the end), and memory does not grow with the pages viewed.

The viewer keeps each filter's count per run and change of the run (:class:`RowCount`), so a page of a
filter already counted costs its own rows only. Texts are shown bounded as in the report
(:func:`reasonscope.report.html.clip`).

An item-level score's key is ``dataset/item id``; a dataset name may itself hold ``/``, so a key is
matched to the run's datasets by prefix (the longest dataset name that prefixes it).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ..report.html import clip
from ..storage.run_data import interpret
from ..storage.store import Store
from ..types import Item
from .readonly import read_snapshot

__all__ = ["GenerationView", "ItemPage", "ItemQuery", "ItemRow", "RowCount", "ScoreView", "count_rows", "item_page",
           "metric_index", "page_keys"]

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


_FAILED_KEYS = "(SELECT key FROM generations WHERE error IS NOT NULL AND key IS NOT NULL)"
_OUTCOME_LOOKUP = {  # schema 4: a linked request ``rg`` with this outcome, looked up in the request cache
    "answered": f"EXISTS (SELECT 1 FROM generations g WHERE g.key = rg.key) AND rg.key NOT IN {_FAILED_KEYS}",
    "failed": f"rg.key IN {_FAILED_KEYS}",
    "pending": "NOT EXISTS (SELECT 1 FROM generations g WHERE g.key = rg.key)"}
_OUTCOME_STORED = {"answered": "rg.outcome = 'answered'", "failed": "rg.outcome = 'failed'",  # schema 5
                   "pending": "rg.outcome IS NULL"}
_VALUE_SQL = {"1": "s.value = 1", "0": "s.value = 0", "na": "s.value IS NULL",
              "other": "s.value IS NOT NULL AND s.value NOT IN (0, 1)"}


_VALUE_CLASS = {"1": 1, "0": 0, "na": 2, "other": 3}  # schema 6: score_counts.value_class
_OUTCOME_BIT = {"answered": 1, "failed": 2, "pending": 4}  # schema 6: scores.outcomes


def stores_slots(conn: sqlite3.Connection) -> bool:
    """Whether the store keeps the slots, outcome bits and counts of schema 6 (``scores_by_slot``)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='index' AND name='scores_by_slot'").fetchone() is not None


_Part = tuple[int, str, int, int]  # schema 6: (slot, model, rows the query matches, all the slot's links)


def _parts(conn: sqlite3.Connection, query: ItemQuery, run_id: str) -> tuple[list[_Part], bool]:
    """The query's rows model by model (slot by slot, in model order), and whether each row is one stored row.

    Read from ``score_counts`` (a metric) or ``link_counts``: a few rows per model, whatever the number of
    items. Only where a model has several links for an item matching the query (samples, paraphrases) are its
    rows counted from ``run_generations_by_slot``, grouped by item.
    """
    family, metric = (query.metric or ".").split(".", 1)
    args: list[Any] = []
    if query.metric:
        cond = "".join((" AND c.value_class = ?" if query.value else "",
                        " AND (c.outcomes & ?) != 0" if query.outcome else ""))
        args += [_VALUE_CLASS[query.value]] if query.value else []
        args += [_OUTCOME_BIT[query.outcome]] if query.outcome else []
        sql = (f"SELECT p.slot, p.model, TOTAL(c.n), TOTAL(c.n), TOTAL(c.n) FROM score_slots p LEFT JOIN score_counts c "
               f"ON c.slot = p.slot{cond} WHERE p.run_id = ? AND p.family = ? AND p.metric = ?")
        args += [run_id, family, metric]
    else:
        match = "c.outcome = ?" if query.outcome else "1"
        args += [_OUTCOME_BIT[query.outcome]] * 2 if query.outcome else []
        sql = (f"SELECT p.slot, p.model, TOTAL(CASE WHEN {match} THEN c.n END), TOTAL(c.n), "
               f"TOTAL(CASE WHEN {match} AND c.first THEN c.n END) FROM link_slots p LEFT JOIN link_counts c "
               "ON c.slot = p.slot WHERE p.run_id = ?")
        args.append(run_id)
    if query.model:
        sql += " AND p.model = ?"
        args.append(query.model)
    counted = conn.execute(sql + " GROUP BY p.slot, p.model ORDER BY p.model", args).fetchall()
    one_row_each = all(n == firsts for _, _, n, _, firsts in counted)
    parts = []
    for slot, model, n, links, _ in counted:
        if not one_row_each and n:
            part = (slot, model, int(n), int(links))
            sql, part_args = _part_rows(query, part, run_id, grouped=True)
            n = conn.execute(f"SELECT COUNT(*) FROM ({sql})", part_args).fetchone()[0]
        parts.append((slot, model, int(n), int(links)))
    return parts, one_row_each


def _part_rows(query: ItemQuery, part: _Part, run_id: str, grouped: bool) -> tuple[str, list[Any]]:
    """SQL and arguments of the item keys of ``query`` in one slot, from one index range (schema 6).

    A metric: ``scores_by_slot`` (slot, item id, value, outcomes), its value and outcome conditions checked on
    the index. Links: ``run_generations_by_slot`` (slot, item key, outcome); for an outcome that few of the
    model's links have (less than half), the outcome's own range of ``run_generations_outcome`` instead, so
    that a few failed links among 200,000 are not looked for link by link. ``grouped``: one row per item key.
    """
    slot, model, n, links = part
    if query.metric:
        cond = (" AND " + _VALUE_SQL[query.value]) if query.value else ""
        args: list[Any] = [slot]
        if query.outcome:
            cond += " AND (s.outcomes & ?) != 0"
            args.append(_OUTCOME_BIT[query.outcome])
        return f"SELECT s.item_id AS k FROM scores s INDEXED BY scores_by_slot WHERE s.slot = ? AND s.item_id > ''{cond}", args
    group = " GROUP BY rg.item_key" if grouped else ""
    if query.outcome and 2 * n < links:
        return (f"SELECT rg.item_key AS k FROM run_generations rg INDEXED BY run_generations_outcome WHERE "
                f"rg.run_id = ? AND {_OUTCOME_STORED[query.outcome]} AND rg.model = ?{group}", [run_id, model])
    cond = (" AND " + _OUTCOME_STORED[query.outcome]) if query.outcome else ""
    return (f"SELECT rg.item_key AS k FROM run_generations rg INDEXED BY run_generations_by_slot WHERE rg.slot = ?"
            f"{cond}{group}", [slot])


def _slot_page(conn: sqlite3.Connection, query: ItemQuery, run_id: str, count: RowCount, first: int,
               size: int) -> list[tuple[str, str]]:
    """The (model, item key) pairs ``first`` to ``first + size - 1`` of ``query`` (schema 6).

    The per-model counts skip whole models; inside one, the page is ``LIMIT``/``OFFSET`` over its index
    range (:func:`_part_rows`), read from its nearer end (grouped rows from the start only).
    """
    parts = count.parts if count.parts is not None else _parts(conn, query, run_id)[0]
    out: list[tuple[str, str]] = []
    for part in parts:
        n = part[2]
        if size <= 0:
            break
        if first >= n:
            first -= n
            continue
        take = min(size, n - first)
        from_end = n - first - take
        backwards = from_end < first and count.one_row_each
        sql, args = _part_rows(query, part, run_id, grouped=not count.one_row_each)
        keys = [k for (k,) in conn.execute(f"{sql} ORDER BY k{' DESC' if backwards else ''} LIMIT ? OFFSET ?",
                                           [*args, take, from_end if backwards else first])]
        out += [(part[1], k) for k in (keys[::-1] if backwards else keys)]
        first, size = 0, size - take
    return out


def stores_outcome(conn: sqlite3.Connection) -> bool:
    """Whether the store keeps each linked request's outcome and item key (schema 5's ``run_generations_outcome``)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='index' AND name='run_generations_outcome'"
                        ).fetchone() is not None


@dataclass(frozen=True)
class _Rows:
    """The stored rows a query matches, as SQL: ``select`` yields (model, item key) in page order.

    ``order``: the expressions of the page order (``select``'s ORDER BY, each followed by the direction);
    ``compound``: ``select`` is a compound (``INTERSECT``) whose ORDER BY names result columns.
    ``table``/``where``: the single table form (no compound), for counting.
    """

    select: str
    args: list[Any]
    order: tuple[str, ...]
    table: str = ""
    where: str = ""
    compound: bool = False


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


def _rows(conn: sqlite3.Connection, query: ItemQuery, run_id: str, datasets: list[str]) -> _Rows:
    """The stored rows ``query`` matches (:class:`_Rows`), read in page order from an index.

    With a metric: the metric's item-level scores ``s`` (one per model and item), in ``scores_by_value``
    order (model, item key). Else the run's linked requests ``rg`` (one per model, item, variant and
    sample): unfiltered or by model in primary-key order (model, dataset, item id); by outcome, where the
    store keeps it (schema 5), from ``run_generations_outcome`` in (model, item key) order.
    """
    stored = stores_outcome(conn)
    if query.metric:
        family, metric = query.metric.split(".", 1)
        where, args = ["s.run_id=?", "s.family=?", "s.metric=?", "s.item_id != ''"], [run_id, family, metric]
        if query.model:
            where.append("s.model=?")
            args.append(query.model)
        if query.value:
            where.append(_VALUE_SQL[query.value])
        if stored and query.outcome == "answered":  # most pairs: both indexes walked side by side (a merge)
            rg = ["rg.run_id=?", _OUTCOME_STORED["answered"]] + (["rg.model=?"] if query.model else [])
            select = (f"SELECT s.model, s.item_id FROM scores s WHERE {' AND '.join(where)} INTERSECT "
                      f"SELECT rg.model, rg.item_key FROM run_generations rg INDEXED BY run_generations_outcome "
                      f"WHERE {' AND '.join(rg)}")
            return _Rows(select, [*args, run_id, *([query.model] if query.model else [])], ("1", "2"),
                         compound=True)
        if stored and query.outcome:  # few pairs, as a rule: listed once from the index, then looked up
            where.append("(s.model, s.item_id) IN (SELECT rg.model, rg.item_key FROM run_generations rg INDEXED BY "
                         f"run_generations_outcome WHERE rg.run_id = ? AND {_OUTCOME_STORED[query.outcome]})")
            args.append(run_id)
        elif query.outcome in ("failed", "pending"):  # schema 4: the same, through the request cache
            where.append("(s.model, s.item_id) IN (SELECT rg.model, rg.dataset || '/' || rg.item_id FROM "
                         f"run_generations rg WHERE rg.run_id = ? AND {_OUTCOME_LOOKUP[query.outcome]})")
            args.append(run_id)
        elif query.outcome:  # schema 4, answered: indexed lookups per score and dataset the key may belong to
            parts = []
            for d in datasets:
                parts.append("(substr(s.item_id, 1, ?) = ? AND EXISTS (SELECT 1 FROM run_generations rg "
                             "WHERE rg.run_id = s.run_id AND rg.dataset = ? AND rg.item_id = substr(s.item_id, ?) "
                             f"AND rg.model = s.model AND {_OUTCOME_LOOKUP[query.outcome]}))")
                args += [len(d) + 1, d + "/", d, len(d) + 2]
            where.append("(" + (" OR ".join(parts) or "0") + ")")
        cond = " AND ".join(where)
        return _Rows(f"SELECT s.model, s.item_id FROM scores s WHERE {cond}", args, ("s.model", "s.item_id"),
                     "scores s", cond)
    where, args = ["rg.run_id=?"], [run_id]
    if query.outcome and stored:
        where.append(_OUTCOME_STORED[query.outcome])
        table, key, order = ("run_generations rg INDEXED BY run_generations_outcome", "rg.item_key",
                             ("rg.model", "rg.item_key"))
    else:
        if query.outcome:
            where.append(_OUTCOME_LOOKUP[query.outcome])
        table, key, order = ("run_generations rg INDEXED BY sqlite_autoindex_run_generations_1",
                             "rg.dataset || '/' || rg.item_id", ("rg.model", "rg.dataset", "rg.item_id"))
    if query.model:
        where.append("rg.model=?")
        args.append(query.model)
    cond = " AND ".join(where)
    return _Rows(f"SELECT rg.model, {key} FROM {table} WHERE {cond}", args, order, table, cond)


@dataclass(frozen=True)
class RowCount:
    """The (model, item) rows a query matches: ``total``, and whether each is one stored row.

    ``one_row_each``: every matched row is a model's ``original`` sample 0 of its item, so no two stored rows
    are the same (model, item) and pages are read without grouping (true of a run with one generation per
    item; a run with samples or paraphrases groups them).
    """

    total: int
    one_row_each: bool = True
    parts: tuple[tuple[int, str, int, int], ...] | None = field(default=None, compare=False)


def count_rows(store: Store, run_id: str, query: ItemQuery, datasets: list[str] | None = None) -> RowCount:
    """The rows ``query`` matches in the run, counted in SQL over an index (module docstring).

    ``datasets``: the run's datasets as :func:`_datasets` lists them, when the caller has read them already.
    """
    conn = store.conn
    if stores_slots(conn):
        parts, one_row_each = _parts(conn, query, run_id)
        return RowCount(sum(p[2] for p in parts), one_row_each, tuple(parts))
    rows = _rows(conn, query, run_id, _datasets(conn, run_id) if datasets is None else datasets)
    if rows.compound:  # ordered, so that SQLite merges the two index walks
        return RowCount(conn.execute(f"SELECT COUNT(*) FROM ({rows.select} ORDER BY 1, 2)", rows.args).fetchone()[0])
    if query.metric:  # a score per model and item: the stored rows are the page rows
        return RowCount(conn.execute(f"SELECT COUNT(*) FROM {rows.table} WHERE {rows.where}", rows.args).fetchone()[0])
    n, firsts = conn.execute(f"SELECT COUNT(*), TOTAL(rg.variant = 'original' AND rg.sample = 0) FROM {rows.table} "
                             f"WHERE {rows.where}", rows.args).fetchone()
    if n == int(firsts):
        return RowCount(n)
    grouped = f"SELECT 1 FROM {rows.table} WHERE {rows.where} GROUP BY {', '.join(rows.order)}"
    return RowCount(conn.execute(f"SELECT COUNT(*) FROM ({grouped})", rows.args).fetchone()[0], one_row_each=False)


def page_keys(store: Store, run_id: str, query: ItemQuery, count: RowCount,
              datasets: list[str]) -> list[tuple[str, str]]:
    """The (model, item key) pairs of ``query``'s page, read by ``LIMIT``/``OFFSET`` over the index order.

    The rows before the page are stepped over inside SQLite on the index (no row handed to Python, nothing
    kept); a page in the second half of the rows is read from the end (the index walked backwards, its
    rows reversed), so at most half the rows are stepped over and a page costs at most half of what
    counting its filter does. A page past the end is empty. Grouped requests (:class:`RowCount`) are read
    from the start only (SQLite would sort the groups to reverse them).
    """
    first = (query.page - 1) * query.per_page
    if first >= count.total:
        return []
    size = min(query.per_page, count.total - first)
    if stores_slots(store.conn):
        return _slot_page(store.conn, query, run_id, count, first, size)
    from_end = count.total - first - size
    backwards = from_end < first and (query.metric is not None or count.one_row_each)
    rows = _rows(store.conn, query, run_id, datasets)
    order = ", ".join(o + (" DESC" if backwards else "") for o in rows.order)
    group = "" if query.metric or count.one_row_each else f" GROUP BY {', '.join(rows.order)}"
    sql = f"{rows.select}{group} ORDER BY {order} LIMIT ? OFFSET ?"
    keys = [(m, k) for m, k in store.conn.execute(sql, [*rows.args, size, from_end if backwards else first])]
    return keys[::-1] if backwards else keys


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
    Run page links to their items. Counted in SQL, from the covering index ``scores_by_slot`` on a store of
    schema 6 (``scores_by_value`` on 5).
    """
    sql = ("SELECT family, metric, model, COUNT(*), COUNT(value), AVG(value) FROM scores WHERE run_id=? AND "
           "item_id != '' GROUP BY family, metric, model ORDER BY family, metric, model")
    if stores_slots(store.conn):
        sql = ("SELECT p.family, p.metric, p.model, COUNT(*), COUNT(s.value), AVG(s.value) FROM score_slots p "
               "JOIN scores s INDEXED BY scores_by_slot ON s.slot = p.slot AND s.item_id > '' WHERE p.run_id = ? "
               "GROUP BY p.family, p.metric, p.model ORDER BY p.family, p.metric, p.model")
    return [{"metric": f"{f}.{m}", "model": mo, "n": n, "valued": k, "mean": mean}
            for f, m, mo, n, k, mean in store.conn.execute(sql, (run_id,))]


def _choices(conn: sqlite3.Connection, run_id: str) -> tuple[list[str], list[str]]:
    models = {m for (m,) in distinct(conn, "run_generations", ("model",), run_id)}
    metrics = []
    for f, m, mo in distinct(conn, "scores", ("family", "metric", "model"), run_id):
        metrics.append(f"{f}.{m}")
        models.add(mo)
    return sorted(models), sorted(set(metrics))


def item_page(store: Store, run_key: str, query: ItemQuery, run_id: str | None = None,
              count: RowCount | None = None) -> ItemPage:
    """One page of the Items page of the run (its latest finished run unless ``run_id``).

    ``count``: the query's :class:`RowCount` when known (counted otherwise; the viewer keeps it per run,
    filters and change of the run, and passes it only when it counts the state that the caller's read
    transaction sees). Everything is read in one read transaction (:func:`reasonscope.view.readonly.read_snapshot`,
    joined where the caller has begun one), so a run committing meanwhile cannot make the rows disagree with
    the count.
    """
    with read_snapshot(store.conn):
        run_id = run_id or store.run()["run_id"]
        datasets = _datasets(store.conn, run_id)
        count = count or count_rows(store, run_id, query, datasets)
        pairs = page_keys(store, run_id, query, count, datasets)
        models, metrics = _choices(store.conn, run_id)
        rows = item_rows(store, run_id, pairs, datasets)
    return ItemPage(run_key=run_key, run_id=run_id, query=query, total=count.total,
                    pages=max(1, -(-count.total // query.per_page)), rows=rows, models=models, metrics=metrics)
