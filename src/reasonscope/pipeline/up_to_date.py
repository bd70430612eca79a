"""Whether a finished run is already the answer to this plan (``reasonscope run`` on a finished run).

Running a plan again in its run directory normally resumes it: cached completions are read back,
cached scores (:mod:`reasonscope.scorers.cache`) are read back, and the statistics and outputs are
built again. When nothing can have changed, even that work is skipped and the finished run is
reported as it is ("up to date"), like ``make`` with nothing to do. Nothing can have changed when
the latest finished run of the store

* is a ``run`` (not the scoring of imported outputs),
* has exactly this resolved plan (``config``) and the same package versions (``versions``, which hold
  the digest of reasonscope's own files: :func:`reasonscope.storage.versions.source_digest`),
* ended with exit code 0 (no pending request, no failed-generation limit passed, no skipped model),
* was made from the same items in every dataset (gold answers included: they are not in the request
  keys). The store's ``items`` table is the run directory's, and a later run that was interrupted may
  have rewritten it, so the run's notes hold what the items were, in two forms:

  - ``sources`` (:func:`source_digests`): what each dataset's items are made from, taken before they are
    read: a local file's bytes, or ``generated`` for a synthetic set. The same sources give the same
    items (the dataset's settings and the seed are in the plan, the readers' code in the versions), so
    :func:`finished_run_from_sources` answers before any dataset is read or any row is checked, which is
    most of a re-run's work past starting Python (0.05 s of 900 items, 2 s of 20,000 synthetic ones);
  - ``items`` (:func:`items_digest`): a digest of the loaded items, compared by :func:`finished_run_for`
    when the sources cannot tell (a dataset from the Hub, whose rows may change there; a run recorded
    before the sources were),

* is linked to as many requests as this plan makes (recorded as ``requests`` in the run's notes, or
  counted from the loaded items), every one still in the store as it was when the run finished (a
  failed generation sent again later, ``--retry-failed``, replaces its row: the run's notes hold the
  sum of its generations' write times, ``generations_written``),
* and its outputs (``summary.json``, ``report.html``) still exist,

and every family of the plan allows it (:meth:`reasonscope.family.Family.may_reuse_finished_run`: not the
attack and information families, which generate and train in their own passes, nor evidence with
imported predictions).

A request's key is a function of the plan, the item and reasonscope's code (the prompt templates and
the key itself), so the same plan, items and code give the run's keys again: they are not rebuilt
(5,400 keys take 0.09 s). The source digest is what makes this hold in an editable install, whose
version number stays the same while its code changes; it also catches a change to the scoring or
statistics code there, which no request key shows.

``reasonscope run --rescore`` (``Runner(reuse_finished=False)``) scores and writes again anyway;
``reasonscope score`` and ``reasonscope report`` always do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..data.paths import GENERATED, source_digest  # noqa: F401  (GENERATED: imported from here too)
from ..registry import enabled_families
from ..storage.run_links import links_unchanged
from ..storage.store import Store
from ..storage.versions import package_versions
from ..types import Item, canonical_json

OUTPUTS = ("summary.json", "report.html")


def up_to_date_message(run_id: str) -> str:
    """What ``reasonscope run`` says when finished run ``run_id`` is found up to date (rich markup)."""
    return (f"up to date: finished run {run_id} already holds every result of this plan (0 model calls, nothing "
            "scored again; --rescore to score and write the outputs again)")


def items_digest(datasets: dict[str, list[Item]]) -> dict[str, str]:
    """Each dataset's items as a digest.

    The sha256 of the items' JSON (``Item.model_dump_json``) in their order, first 16 hex digits; recorded in
    every run's notes (``items``).
    """
    return {name: hashlib.sha256("\n".join(it.model_dump_json() for it in items).encode()).hexdigest()[:16]
            for name, items in sorted(datasets.items())}


def source_digests(datasets: Iterable[Any], base_dir: Path | None = None) -> dict[str, str] | None:
    """What each dataset's items are made from, without reading a row.

    :func:`reasonscope.data.paths.source_digest` of each: the sha256 of a local file's bytes (first 16 hex
    digits; the path resolved as :func:`reasonscope.data.loaders.load_dataset` resolves it:
    :func:`reasonscope.data.paths.resolve_path`) or :data:`~reasonscope.data.paths.GENERATED`. None when one of
    them is read from the Hub (its rows may change there) or its file is missing (loading it reports that). A
    local file is parsed by reasonscope's own readers (Python's json, csv and gzip), so the same bytes, dataset
    settings, seed and versions give the same items. Regular files only, streamed: a FIFO or ``/dev/zero`` is
    refused by loading, never read here.
    """
    out: dict[str, str] = {}
    for cfg in datasets:
        digest = source_digest(cfg.format, cfg.path, base_dir)
        if digest is None:
            return None
        out[cfg.name] = digest
    return dict(sorted(out.items()))


def _latest_candidate(store: Store, plan: Any) -> dict | None:
    """The latest finished run if it is a ``run`` of exactly this plan and these versions; else None.

    It must also have exit code 0 and its outputs on disk.
    """
    if not all(family.may_reuse_finished_run(settings) for family, settings in enabled_families(plan.families)):
        return None
    finished = [r for r in store.runs() if r["status"] == "finished"]
    if not finished:
        return None
    run = finished[-1]
    if run["kind"] != "run" or run["notes"].get("outcome", {}).get("code") != 0:
        return None
    if canonical_json(run["config"]) != canonical_json(plan.model_dump(mode="json")):
        return None
    if run["versions"] != package_versions():
        return None
    if any(not (Path(plan.run_dir) / name).is_file() for name in OUTPUTS):
        return None
    return run


def _links_unchanged(store: Store, run: dict, requests: int | None) -> bool:
    return links_unchanged(store.run_link_state(run["run_id"]), requests, run["notes"].get("generations_written"))


def finished_run_for(store: Store, plan: Any, datasets: dict[str, list[Item]], requests: int) -> dict | None:
    """The latest finished run that already answers ``plan`` (module docstring), or None.

    ``requests``: how many requests the plan makes, over all its models.
    """
    run = _latest_candidate(store, plan)
    if run is None or run["notes"].get("items") != items_digest(datasets):
        return None
    return run if _links_unchanged(store, run, requests) else None


def finished_run_from_sources(store: Store, plan: Any, sources: dict[str, str]) -> dict | None:
    """:func:`finished_run_for` without loading the items.

    The run's notes must hold the same :func:`source_digests` (``sources``); equal sources give equal items,
    so the run's recorded request count (``requests``) is the plan's.
    """
    run = _latest_candidate(store, plan)
    if run is None or run["notes"].get("sources") != sources:
        return None
    return run if _links_unchanged(store, run, run["notes"].get("requests")) else None
