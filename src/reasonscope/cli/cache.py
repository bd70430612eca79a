"""``reasonscope cache ls|clear RUN_DIR``: inspect or clear the request cache of a run directory."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.table import Table

from ..storage.rundir import RunDirLock
from .common import WAIT_LOCK, console, exit_when_locked, fail, out, run_status, storage_failure

app = typer.Typer(name="cache", no_args_is_help=True, help="Inspect or clear the request cache of a run directory.")


def _open_for_reading(run_dir: Path):
    """The run directory's store, read as it is when this user cannot write the folder.

    A read-only disk or archive is opened with :meth:`reasonscope.storage.store.Store.open_read_only`.
    """
    import os
    import sqlite3

    from ..storage.store import STORE_FILENAME, Store

    try:
        return Store.open_existing(run_dir)
    except sqlite3.OperationalError:
        if (run_dir / STORE_FILENAME).is_file() and (not os.access(run_dir, os.W_OK) or _read_only_fs(run_dir)):
            return Store.open_read_only(run_dir)
        raise


def _read_only_fs(path: Path) -> bool:
    import os

    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):
        return False


@app.command("ls")
def cache_ls(run_dir: Path = typer.Argument(..., help="A run directory.")) -> None:
    """List cached completions per provider and model."""
    try:
        store = _open_for_reading(run_dir)
    except (FileNotFoundError, ValueError) as err:
        fail(str(err))
        return
    except Exception as err:  # a damaged store, a folder it cannot open: one message, no traceback
        storage_failure(err, run_dir)
        raise
    try:
        table = Table(title=f"request cache of {run_dir}")
        for col in ("provider", "model_id", "source", "entries", "failed", "tokens"):
            table.add_column(col)
        for row in store.cache_summary():
            table.add_row(*(str(row[k]) for k in ("provider", "model_id", "source", "entries", "failed", "tokens")))
        from ..scorers.cache import score_cache_table

        scores = score_cache_table(store, title=f"score cache of {run_dir}")
        runs = store.runs()
    except Exception as err:  # a store cut short reads its first pages only
        storage_failure(err, run_dir)
        raise
    finally:
        store.close()
    out.print(table)
    out.print(scores)
    for r in runs:
        out.print(f"run {r['run_id']} {r['kind']} {run_status(r)}")


@app.command("clear")
@exit_when_locked()
def cache_clear(run_dir: Path = typer.Argument(..., help="A run directory."),
                model: str | None = typer.Option(None, help="Only this model id."),
                failed_only: bool = typer.Option(False, help="Only failed completions."),
                kind: str | None = typer.Option(None, help="Clear the score cache of this kind instead (nli, "
                                                "llm-nli, bertscore, cosine, embedding, perplexity, evaluator, "
                                                "judge-score, label-logprobs, attribution, or all)."),
                yes: bool = typer.Option(False, "--yes", help="Do not ask."),
                wait_lock: float = WAIT_LOCK) -> None:
    """Delete cached completions (they will be requested again on the next run), or with --kind cached scores."""
    from ..storage.store import Store

    try:
        store = Store.open_existing(run_dir)
    except (FileNotFoundError, ValueError) as err:
        fail(str(err))
        return
    except Exception as err:
        storage_failure(err, run_dir)
        raise
    if not yes and sys.stdin.isatty():
        typer.confirm("Delete cached completions?", abort=True)
    try:
        with RunDirLock(run_dir, wait=wait_lock):
            if kind is not None:
                from ..scorers.cache import clear_score_cache

                n = clear_score_cache(store, None if kind == "all" else kind)
            else:
                n = store.clear_cache(model_id=model, failed_only=failed_only)
    except ValueError as err:
        fail(str(err))
        return
    except Exception as err:
        storage_failure(err, run_dir)
        raise
    console.print(f"deleted {n} cached {'scores' if kind is not None else 'completions'}")
