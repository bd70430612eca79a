"""Every command that writes a run directory stops the same way when another process holds it.

One handler (:func:`reasonscope.cli.common.exit_when_locked`) for the six places that take the lock: ``run``
(and every command that runs a plan), ``score``, ``attributes judge``, ``attributes elo``, ``cache clear`` and
``report``. Each is made to meet a held lock here; each must exit 75 with the lock's message on the last
line, never 74 (a storage failure) although the lock error is raised while handling a timeout, which is an
``OSError``. The real two-process race is in ``test_rundir.py``.
"""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from reasonscope.cli import attributes as cli_attributes
from reasonscope.cli import cache as cli_cache
from reasonscope.cli import report as cli_report
from reasonscope.cli.common import LOCKED_EXIT
from reasonscope.cli.root import app
from reasonscope.storage.rundir import RunDirLocked
from reasonscope.storage.store import Store

MESSAGE = "the run directory runs/x is in use by reasonscope run (pid 4242 on host); try --wait-lock SECONDS"


def _held(*args, **kwargs):
    """Raise the lock error as the lock does: while handling a timeout (an OSError), ``from None``."""
    try:
        raise TimeoutError("lock wait timed out")
    except TimeoutError:
        raise RunDirLocked(MESSAGE) from None


class _HeldLock:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        _held()

    def __exit__(self, *exc):
        return False


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "run"
    Store(folder).close()
    return folder


@pytest.fixture
def predictions(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "input": "1+1?", "target": "2", "prediction": "2"}\n')
    return path


def _last_line(output: str) -> str:
    return " ".join(output.split())


def _check(res, prefix: str = ""):
    assert res.exit_code == LOCKED_EXIT, res.output
    assert _last_line(res.output).endswith(f"error: {prefix}{MESSAGE}")


def test_run(tmp_path, monkeypatch):
    from reasonscope.pipeline import runner

    monkeypatch.setattr(runner.Runner, "run", _held)
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"experiment": {"name": "x", "output_dir": str(tmp_path / "runs")},
                                    "models": [{"spec": "mock/reasoner"}],
                                    "datasets": [{"name": "s", "format": "synthetic", "size": 1}]}))
    _check(CliRunner().invoke(app, ["run", str(plan)]))


def test_score_and_attributes_judge(tmp_path, monkeypatch, predictions):
    from reasonscope.pipeline import score_imported

    monkeypatch.setattr(score_imported, "score_file", _held)
    _check(CliRunner().invoke(app, ["score", "--input", str(predictions), "--output-dir", str(tmp_path)]))
    _check(CliRunner().invoke(app, ["attributes", "judge", "--input", str(predictions), "--judge", "mock/judge",
                                    "--output-dir", str(tmp_path)]))


def test_attributes_judge_on_a_run_and_elo(run_dir, monkeypatch):
    monkeypatch.setattr(cli_attributes, "RunDirLock", _HeldLock)
    _check(CliRunner().invoke(app, ["attributes", "judge", "--run", str(run_dir), "--judge", "mock/judge"]))
    _check(CliRunner().invoke(app, ["attributes", "elo", str(run_dir)]))


def test_cache_clear(run_dir, monkeypatch):
    monkeypatch.setattr(cli_cache, "RunDirLock", _HeldLock)
    _check(CliRunner().invoke(app, ["cache", "clear", str(run_dir), "--yes"]))


def test_report_says_what_it_could_not_do(run_dir, monkeypatch):
    monkeypatch.setattr(cli_report, "RunDirLock", _HeldLock)
    _check(CliRunner().invoke(app, ["report", str(run_dir)]), prefix="cannot rebuild the report now: ")


def test_the_command_keeps_its_name_help_and_options():
    """The handler wraps the command function; typer still reads its signature and its docstring."""
    res = CliRunner().invoke(app, ["cache", "clear", "--help"])
    assert res.exit_code == 0 and "--wait-lock" in res.output and "Delete cached completions" in res.output
    assert cli_cache.cache_clear.__name__ == "cache_clear"
