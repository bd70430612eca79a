"""Is a finished run already the answer to this plan? (``reasonscope run`` on a finished run.)

Running a plan again in its run directory normally resumes it: cached completions are read back,
cached scores (:mod:`reasonscope.scorers.cache`) are read back, and the statistics and outputs are
built again. When nothing can have changed, even that work is skipped and the finished run is
reported as it is ("up to date"), like ``make`` with nothing to do. Nothing can have changed when
the latest finished run of the store

* is a ``run`` (not the scoring of imported outputs),
* has exactly this resolved plan (``config``) and the same package versions (``versions``, which hold
  the digest of reasonscope's own files: :func:`reasonscope.versions.source_digest`),
* ended with exit code 0 (no pending request, no failed-generation limit passed, no skipped model),
* was made from the same items in every dataset (gold answers included: they are not in the request
  keys), as the digest of each dataset's items recorded in the run's notes (:func:`items_digest`) shows;
  the store's ``items`` table is the run directory's, and a later run that was interrupted may have
  rewritten it,
* is linked to as many requests as this plan makes, every one still in the store as it was when the
  run finished (a failed generation sent again later, ``--retry-failed``, replaces its row: the run's
  notes hold the sum of its generations' write times, ``generations_written``),
* and its outputs (``summary.json``, ``report.html``) still exist,

and the plan has no ``attack`` or ``information`` family (they generate and train in their own
passes).

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
from pathlib import Path
from typing import Any

from .store import Store
from .types import Item, canonical_json
from .versions import package_versions

OUTPUTS = ("summary.json", "report.html")


def items_digest(datasets: dict[str, list[Item]]) -> dict[str, str]:
    """Each dataset's items as a digest: sha256 of the items' JSON (``Item.model_dump_json``) in their
    order, first 16 hex digits; recorded in every run's notes (``items``)."""
    return {name: hashlib.sha256("\n".join(it.model_dump_json() for it in items).encode()).hexdigest()[:16]
            for name, items in sorted(datasets.items())}


def finished_run_for(store: Store, plan: Any, datasets: dict[str, list[Item]], requests: int) -> dict | None:
    """The latest finished run that already answers ``plan`` (module docstring), or None. ``requests``: how
    many requests the plan makes, over all its models."""
    if plan.families.attack is not None or plan.families.information is not None:
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
    if run["notes"].get("items") != items_digest(datasets):
        return None
    linked, stored, written = store.run_link_state(run["run_id"])
    if linked != requests or stored != linked or written != run["notes"].get("generations_written"):
        return None
    return run
