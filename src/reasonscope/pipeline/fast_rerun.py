"""``reasonscope run PLAN`` on a finished run, answered before the command line is imported.

The up-to-date check (:mod:`.up_to_date`) needs the resolved plan, so a re-run used to spend most of its time
importing what resolves it (pydantic and the plan's settings models, the family registry) and the command line
(typer, rich). This module answers the same question from a *record* and the store, with the standard library
only (``json``, ``hashlib``, ``sqlite3``) and reasonscope's modules that import nothing more:
:mod:`reasonscope.storage.versions`, :mod:`reasonscope.storage.run_links`, :mod:`reasonscope.storage.run_files`
(the run folder's file names), :mod:`reasonscope.storage.digests` (a file's sha256) and
:mod:`reasonscope.data.paths` (a dataset file's path and source digest, as loading takes them).

The record
----------
Every ``reasonscope run PLAN`` (without ``--skip-bad-rows``, which changes the plan) that ends with exit code 0
writes one: ``<user cache>/reruns/<key>.json``, ``key`` naming the working directory and ``PLAN`` as given
(relative paths in a plan are read from both). It binds what the resolved plan is a function of to what that
plan resolved to:

* the plan file's bytes (their sha256, read before and after the plan was loaded, recorded only when the two
  agree), the working directory and ``PLAN`` as given;
* the environment (a digest of every variable but ``_`` and ``OLDPWD``, which a shell changes between two
  commands; taken when the process starts, before anything sets one), the interpreter (``sys.version``,
  ``sys.executable``, ``sys.flags``, the ``-W`` and ``-X`` options but ``-X importtime``) and ``sys.path``
  with each entry's modification time, inode and device: installing, upgrading or removing a distribution
  (a plugin family, a provider's SDK, a library whose version a run records) adds or removes an entry in
  one of those folders, which changes its modification time;
* what it resolved to: the run directory, the digest of the resolved plan as the store holds it (``config``),
  the installed versions, each dataset's source (a file's path and the plan's folder, or ``generated``), and
  the text the up-to-date answer prints (below).

A record is written only when the answer could be given from it: every family allows an up-to-date run
(:meth:`reasonscope.family.Family.may_reuse_finished_run`), every model's requirements depend on nothing but
the environment and the installed packages (``openai``, ``openai-compatible``, ``anthropic``, ``hf`` and
``mock`` models other than ``mock/replay``, whose file may go), every dataset has a source digest
(:func:`.up_to_date.source_digests`: no Hub dataset), no bad row was skipped, and the finished run has exactly the
plan and versions of the process.

The check (:func:`answer`)
--------------------------
The command line is exactly ``run PLAN`` and a record exists with the same plan bytes, environment, interpreter,
``sys.path`` state and terminal (below). Then, as :func:`.up_to_date.finished_run_from_sources` would find:
the run directory has no lock file (a writer holds it, or one was killed: the full command decides) before and
after the check, may be written (the full command creates its lock there) and its store is at the recorded schema; in one read transaction, no run is ``running`` (the
full command would wait for it or mark it interrupted), the latest finished run is the recorded one, a ``run``,
with the recorded plan digest, exit code 0, no bad row, the versions of now (the recorded installed versions,
Python, and the source digest :func:`reasonscope.storage.versions.source_digest` computed now), the same source
digest of every dataset (each file read now, resolved as :func:`reasonscope.data.paths.resolve_path` resolves
it) and its recorded request count linked, stored and unchanged; ``summary.json`` (the same bytes as
recorded) and ``report.html`` exist, and ``config.yaml`` holds the run's plan (the bytes recorded, those the
full command writes back when the file holds another plan). Anything else, or any error, falls through to the full command, which has paid a
few file reads.

What it prints
--------------
The same text as the full command, rendered by rich when the record was written: for the terminal of that
process (whether each standard stream is a terminal, their sizes and encodings: rich's width and colours come
from them and the environment); a record made for another terminal falls through. The wall time in the
``done`` line is rendered for each of 0.0 to 0.9 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..data.paths import GENERATED, GENERATED_FORMATS, file_source
from ..storage.digests import sha256_file
from ..storage.run_files import LOCK_FILENAME, STORE_FILENAME

FORMAT = 1
"""The record's format; a record of another format is not read."""
VOLATILE = frozenset({"_", "OLDPWD"})
"""Environment variables left out of the digest: a shell sets them anew for every command."""
SAFE_PROVIDERS = frozenset({"openai", "openai-compatible", "anthropic", "hf", "mock"})
"""Providers whose requirements (:meth:`reasonscope.models.base.LanguageModel.missing_requirements`) are a
function of the environment and the installed packages only."""

MAX_RECORDS = 256
"""Records kept; the oldest beyond them are removed when one is written (about 10 kB each)."""

_startup: dict[str, Any] | None = None


def startup_state() -> dict[str, Any]:
    """The environment, interpreter (with its ``-W`` and ``-X`` options) and ``sys.path`` of this process.

    Taken once, when first asked: :func:`reasonscope.cli.process.main` asks before anything is imported or any
    variable set.
    """
    global _startup
    if _startup is None:
        env = sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE)
        options = {k: v for k, v in sys._xoptions.items() if k != "importtime"}  # -X importtime changes no answer
        _startup = {"env": hashlib.sha256(json.dumps(env).encode()).hexdigest(), "python": sys.version,
                    "executable": sys.executable, "path": [_entry_state(p) for p in sys.path],
                    "flags": [list(sys.flags), sys.warnoptions, options]}
    return _startup


def _entry_state(entry: str) -> list:
    try:
        st = os.stat(entry or ".")
    except OSError:
        return [entry, None]
    return [entry, st.st_mtime_ns, st.st_ino, st.st_dev]


def terminal_state() -> list:
    """What rich reads of the standard streams: whether each is a terminal, its size, and their encodings."""
    out: list = []
    for fd in (0, 1, 2):
        try:
            tty = os.isatty(fd)
        except OSError:
            tty = None
        try:
            size = list(os.get_terminal_size(fd))
        except (OSError, ValueError):
            size = None
        out.append([tty, size])
    return out + [getattr(sys.stdout, "encoding", None), getattr(sys.stderr, "encoding", None)]


def record_path(cwd: str, plan_arg: str) -> Path | None:
    """Where the record of ``reasonscope run PLAN_ARG`` in ``cwd`` lives; None when no cache folder is known.

    In the user cache (:func:`reasonscope.storage.user_cache.cache_root`), under ``reruns/``.
    """
    from ..storage.user_cache import cache_root

    try:
        root = cache_root()
    except ImportError:  # no platformdirs and no REASONSCOPE_CACHE_DIR
        return None
    key = hashlib.sha256(json.dumps([cwd, plan_arg]).encode()).hexdigest()[:32]
    return root / "reruns" / f"{key}.json"


def dataset_source(path: str, base_dir: str | None) -> str | None:
    """The source digest of a dataset file, as :func:`reasonscope.pipeline.up_to_date.source_digests` takes it.

    :func:`reasonscope.data.paths.file_source`: the path resolved as loading resolves it, the first 16 hex digits
    of its bytes' sha256; None when it cannot be read as a regular file.
    """
    return file_source(path, base_dir)


def file_sha256(path: Path) -> str | None:
    """sha256 (hex) of a file's bytes (:func:`reasonscope.storage.digests.sha256_file`); None when it cannot be read."""
    try:
        return sha256_file(path)
    except OSError:
        return None


# ----------------------------------------------------------------------------------------- the check


def answer(argv: list[str]) -> bool:
    """Answer ``reasonscope run PLAN`` from its record when the finished run is up to date (module docstring).

    Prints what the full command prints and returns True (exit code 0); returns False, having printed nothing,
    when it cannot tell, so that the full command runs.
    """
    start = time.perf_counter()
    try:
        rec = up_to_date(argv)
        if rec is None or rec["terminal"] != terminal_state():
            return False
    except Exception:  # noqa: BLE001 - any doubt: the full command decides
        return False
    wall = f"{time.perf_counter() - start:.1f}"
    if not wall.startswith("0."):
        return False
    streams = {"stdout": sys.stdout, "stderr": sys.stderr}
    for name, text in rec["head"] + rec["done"][int(wall[2])] + rec["tail"]:
        streams[name].write(text)
        streams[name].flush()
    return True


def up_to_date(argv: list[str]) -> dict | None:
    """The record of ``reasonscope run PLAN`` (``argv``: ``["run", PLAN]``) when its finished run is up to date.

    None when the command is another, there is no record for it, or anything may have changed (module
    docstring; :func:`check` says which). The terminal is not compared here (:func:`answer` does).
    """
    return check(argv)[0]


def check(argv: list[str]) -> tuple[dict | None, str]:
    """:func:`up_to_date` with the reason: ``(record, "up to date")`` or ``(None, why not)``."""
    if len(argv) != 2 or argv[0] != "run" or argv[1].startswith("-"):
        return None, "not `run PLAN`"
    plan_arg, cwd = argv[1], os.getcwd()
    where = record_path(cwd, plan_arg)
    if where is None or not where.is_file():
        return None, "no record"
    rec = json.loads(where.read_text(encoding="utf-8"))
    if rec.get("format") != FORMAT or rec.get("cwd") != cwd or rec.get("plan") != plan_arg:
        return None, "another record"
    startup = startup_state()
    for key in ("env", "python", "executable", "path", "flags"):
        if rec["startup"].get(key) != startup[key]:
            return None, f"startup {key}"
    if file_sha256(Path(plan_arg)) != rec["plan_sha256"]:
        return None, "plan bytes"
    run_dir = Path(rec["run_dir"])
    lock = run_dir / LOCK_FILENAME
    store_path = run_dir / STORE_FILENAME
    if lock.exists():
        return None, "lock file"
    if not os.access(run_dir, os.W_OK):  # the full command takes the lock there: a read-only folder fails it
        return None, "run directory not writable"
    if not store_path.is_file():
        return None, "no store"
    why = _store_answers(store_path, rec)
    if why:
        return None, why
    if not (run_dir / "report.html").is_file() or file_sha256(run_dir / "summary.json") != rec["summary_sha256"]:
        return None, "outputs"
    if file_sha256(run_dir / "config.yaml") != rec["config_yaml_sha256"]:
        return None, "config.yaml"
    if lock.exists():
        return None, "lock file"
    return rec, "up to date"


def _store_answers(store_path: Path, rec: dict) -> str:
    """Why the store's latest finished run does not answer the plan as recorded; empty when it does."""
    import sqlite3

    conn = sqlite3.connect(store_path.resolve().as_uri() + "?mode=rw", uri=True, isolation_level=None)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != rec["schema"]:
            return "store schema"
        conn.execute("BEGIN")  # one read transaction: the runs and the links as of one moment
        try:
            return _latest_run_answers(conn, rec)
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()


def _latest_run_answers(conn: Any, rec: dict) -> str:
    from ..storage.run_links import RUNS_SQL, link_state, links_unchanged
    from ..storage.versions import source_digest

    cur = conn.execute(RUNS_SQL)
    cols = [c[0] for c in cur.description]
    runs = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    if any(r["status"] == "running" for r in runs):  # the full command waits for it or marks it interrupted
        return "a run is running"
    finished = [r for r in runs if r["status"] == "finished"]
    if not finished or finished[-1]["run_id"] != rec["run_id"]:
        return "latest finished run"
    run = finished[-1]
    if run["kind"] != "run" or hashlib.sha256((run["config"] or "").encode()).hexdigest() != rec["config_sha256"]:
        return "run kind or plan"
    notes = json.loads(run["notes"] or "{}")
    if notes.get("outcome", {}).get("code") != 0 or notes.get("bad_rows"):
        return "exit code or bad rows"
    versions = {**rec["installed"], "python": rec["python_version"], "reasonscope-source": source_digest()}
    if json.loads(run["versions"] or "{}") != versions:
        return "versions"
    sources = {name: GENERATED if path is None else dataset_source(path, base_dir)
               for name, path, base_dir in rec["datasets"]}
    if notes.get("sources") != dict(sorted(sources.items())):
        return "dataset sources"
    if not links_unchanged(link_state(conn, run["run_id"]), notes.get("requests"), notes.get("generations_written")):
        return "linked requests"
    return ""


# ---------------------------------------------------------------------------------------- the record


def write_record(plan_arg: str, plan_sha256: str, plan: Any, base_dir: Path | None, run_id: str,
                 texts: dict[str, Any]) -> Path | None:
    """Record how ``reasonscope run PLAN_ARG`` in this directory answers when ``run_id`` is up to date.

    ``plan``: the resolved plan, whose file's bytes have the digest ``plan_sha256``; ``texts``: what the up-to-date
    answer prints, as ``[stream, text]`` writes in order (``head``; ``done``: the writes of the done line for each
    tenth of a second from 0.0 to 0.9; ``tail``). Written only when the record can answer (module docstring); otherwise any record of this
    command is removed. Returns the record's path, or None when none was written.
    """
    where = record_path(os.getcwd(), plan_arg)
    if where is None:
        return None
    rec = _record(plan_arg, plan_sha256, plan, base_dir, run_id)
    try:
        if rec is None:
            where.unlink(missing_ok=True)
            return None
        from ..storage.atomic_files import write_text

        where.parent.mkdir(parents=True, exist_ok=True)
        write_text(where, json.dumps({**rec, **texts, "terminal": terminal_state()}))
        _prune(where.parent)
    except OSError:  # a cache folder that cannot be written: re-runs take the full path
        return None
    return where


def _prune(folder: Path) -> None:
    """Keep the :data:`MAX_RECORDS` records written last (a test suite writes one per temporary folder)."""
    records = list(folder.glob("*.json"))
    if len(records) <= MAX_RECORDS:
        return
    by_age = sorted(records, key=lambda r: r.stat().st_mtime_ns)
    for old in by_age[: len(records) - MAX_RECORDS]:
        old.unlink(missing_ok=True)


def _record(plan_arg: str, plan_sha256: str, plan: Any, base_dir: Path | None, run_id: str) -> dict | None:
    from ..registry import enabled_families
    from ..storage.store import Store
    from ..storage.versions import RECORDED, package_versions
    from ..types import canonical_json

    if not all(family.may_reuse_finished_run(settings) for family, settings in enabled_families(plan.families)):
        return None
    for m in plan.models:
        provider = m.spec.partition("/")[0]
        if provider not in SAFE_PROVIDERS or m.spec == "mock/replay":
            return None
    datasets = []
    for _, cfg in plan.dataset_places():
        if cfg.format in GENERATED_FORMATS:
            datasets.append([cfg.name, None, None])
        elif cfg.path:
            datasets.append([cfg.name, str(cfg.path), None if base_dir is None else str(base_dir)])
        else:
            return None
    run_dir = Path(plan.run_dir)
    store = Store(run_dir)
    try:
        run = store.run(run_id)
        schema = store.schema_version
    finally:
        store.close()
    config = canonical_json(plan.model_dump(mode="json"))
    versions = package_versions()
    if run["status"] != "finished" or canonical_json(run["config"]) != config or run["versions"] != versions or \
            run["notes"].get("bad_rows") or not run["notes"].get("sources"):
        return None
    summary = file_sha256(run_dir / "summary.json")
    from ..storage.yaml_io import dump_yaml

    config_yaml = file_sha256(run_dir / "config.yaml")
    if summary is None or config_yaml != hashlib.sha256(dump_yaml(run["config"]).encode()).hexdigest():
        return None
    return {"format": FORMAT, "cwd": os.getcwd(), "plan": plan_arg, "plan_sha256": plan_sha256,
            "startup": startup_state(), "run_dir": str(run_dir), "run_id": run_id,
            "config_sha256": hashlib.sha256(config.encode()).hexdigest(), "schema": schema,
            "installed": {name: versions[name] for name in RECORDED}, "python_version": versions["python"],
            "datasets": datasets, "summary_sha256": summary, "config_yaml_sha256": config_yaml}
