"""``reasonscope run PLAN`` on an up-to-date finished run, answered before the command line is imported
(:mod:`reasonscope.pipeline.fast_rerun`): every case goes through both the fast check and the full command, and
the fast check never says up to date where the full one does not. Each case is a few runs of a small plan:
all but the first are marked slow."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.pipeline import fast_rerun

runner = CliRunner()
PLAN = "p/plan.yaml"  # as given on the command line, relative to the working directory
PLAN_TEXT = """experiment: {name: u, seed: 2, output_dir: runs}
models: [{spec: mock/reasoner, name: a, max_tokens: 40}]
datasets: [{name: qa, format: jsonl, path: d.jsonl}]
families:
  behavior: {samples: 2, paraphrases: 1, nli: {backend: none}, similarity: {method: embedding}}
stats: {n_resamples: 200}
"""
UP_TO_DATE = "up to date"
ROWS = [{"id": "q1", "question": "What is 2+2?", "answer": 4}, {"id": "q2", "question": "What is 3+3?", "answer": 6}]


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _workdir(tmp_path, monkeypatch):
    """The working directory of :func:`work` (plan and dataset written, a user cache of its own), entered."""
    cwd = tmp_path / "work"
    (cwd / "p").mkdir(parents=True)
    (cwd / PLAN).write_text(PLAN_TEXT)
    (cwd / "p" / "d.jsonl").write_text(jsonl(ROWS))
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    return cwd


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory with the plan in ``p/`` (its dataset path relative to the plan's folder, its output
    folder relative to the working directory), a user cache of its own, and one finished run.

    reasonscope's source digest is fixed: the tree of a checkout may be edited while the tests run
    (:func:`test_the_versions` changes it)."""
    import reasonscope.storage.versions as versions

    monkeypatch.setattr(versions, "source_digest", lambda root=None: "f" * 16)
    monkeypatch.setattr(fast_rerun, "VOLATILE", fast_rerun.VOLATILE | {"PYTEST_CURRENT_TEST"})  # set per phase
    cwd = _workdir(tmp_path, monkeypatch)
    first = full()
    assert first["code"] == 0 and not first["up_to_date"], first["output"]
    return cwd


def full(*options: str) -> dict:
    """The full command in this process (the fast check runs only in ``reasonscope.cli.process.main``)."""
    fast_rerun._startup = None  # the record holds the environment as it is now
    res = runner.invoke(app, ["run", PLAN, *options])
    return {"code": res.exit_code, "output": res.output, "up_to_date": "up to date" in res.output}


def fast() -> str:
    """The fast check's answer: ``up to date`` or why not."""
    fast_rerun._startup = None
    return fast_rerun.check(["run", PLAN])[1]


def both() -> tuple[str, bool]:
    """The fast check's answer, then the full command's; the fast one is never up to date alone."""
    quick = fast()
    answer = full()
    assert answer["code"] == 0, answer["output"]
    assert answer["up_to_date"] or quick != UP_TO_DATE
    return quick, answer["up_to_date"]


def run_dir(cwd: Path) -> Path:
    return cwd / "runs" / "u"


def execute(cwd: Path, sql: str, *args) -> None:
    conn = sqlite3.connect(run_dir(cwd) / "store.sqlite")
    try:
        with conn:
            conn.execute(sql, args)
    finally:
        conn.close()


def test_an_unchanged_finished_run_is_up_to_date_both_ways(work):
    assert both() == (UP_TO_DATE, True)
    assert both() == (UP_TO_DATE, True)  # the full command's answer recorded again: the same record


def test_the_record_counts_the_summarys_requests_and_a_failed_one_is_logged(work, monkeypatch, caplog):
    """The request count of the done line comes from the run's summary (the store is not opened again for it);
    a record that cannot be written leaves the run's exit code 0 and a debug line with the error."""
    import logging

    from reasonscope.cli.run import record_rerun
    from reasonscope.plan import load_plan

    conn = sqlite3.connect(run_dir(work) / "store.sqlite")
    try:
        run_id, notes = conn.execute("SELECT run_id, notes FROM runs").fetchone()
    finally:
        conn.close()
    requests = json.loads(notes)["requests"]  # 2 rows, 2 samples each
    where = fast_rerun.record_path(str(work), PLAN)

    def done_line(tenths: int) -> str:
        return " ".join("".join(text for _, text in json.loads(where.read_text())["done"][tenths]).split())

    assert requests == 4 and f"0 model calls, {requests} from the store, 0 failed, 0 pending, 0.3s" in done_line(3)
    record_rerun(PLAN, fast_rerun.file_sha256(work / PLAN), load_plan(work / PLAN), work / "p", run_id, requests=5)
    assert "0 model calls, 5 from the store, 0 failed, 0 pending, 0.3s" in done_line(3)  # the number given

    def fails(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(fast_rerun, "write_record", fails)
    with caplog.at_level(logging.DEBUG, logger="reasonscope.cli.run"):
        assert full()["code"] == 0
    [line] = [r for r in caplog.records if r.name == "reasonscope.cli.run"]
    assert line.levelno == logging.DEBUG and line.getMessage() == (
        f"re-run record of {PLAN} not written (the next run of it takes the full path)")
    assert line.exc_info[1].args == ("no space left on device",)


@pytest.mark.slow
def test_a_command_with_options_or_without_a_record_is_left_to_the_full_command(work, tmp_path, monkeypatch):
    assert fast() == UP_TO_DATE
    for argv in (["run", PLAN, "--rescore"], ["run", "--rescore", PLAN], ["run"], ["score", PLAN], []):
        assert fast_rerun.up_to_date(argv) is None
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path / "another-cache"))  # no record there
    assert both() == ("no record", True)


@pytest.mark.slow
def test_the_plan_file(work):
    (work / PLAN).write_text(PLAN_TEXT + "# a comment\n")  # other bytes, the same plan: the fast check cannot tell
    assert both() == ("plan bytes", True)
    assert both() == (UP_TO_DATE, True)  # recorded for these bytes
    (work / PLAN).write_text(PLAN_TEXT.replace("n_resamples: 200", "n_resamples: 300"))
    assert both() == ("plan bytes", False)


@pytest.mark.slow
def test_a_dataset_file(work):
    (work / "p" / "d.jsonl").write_text(jsonl([ROWS[0], {**ROWS[1], "answer": 7}]))  # another gold answer
    assert both() == ("dataset sources", False)


@pytest.mark.slow
def test_a_dataset_file_shadowed_from_the_working_directory(work):
    # the plan's relative path is read from the working directory first, then from the plan's folder
    (work / "d.jsonl").write_text(jsonl(ROWS[:1]))
    assert both() == ("dataset sources", False)


@pytest.mark.slow
def test_another_working_directory(work, tmp_path, monkeypatch):
    other = tmp_path / "other"
    shutil.copytree(work / "p", other / "p")  # the same plan bytes: its output folder is relative to here
    monkeypatch.chdir(other)
    assert both() == ("no record", False)


@pytest.mark.slow
def test_the_versions(work, monkeypatch):
    import reasonscope.storage.versions as versions

    monkeypatch.setattr(versions, "source_digest", lambda root=None: "0" * 16)  # reasonscope's files changed
    assert both() == ("versions", False)


@pytest.mark.slow
def test_the_environment(work, monkeypatch):
    monkeypatch.setenv("REASONSCOPE_TEST_VARIABLE", "1")
    assert both() == ("startup env", True)
    assert both() == (UP_TO_DATE, True)


@pytest.mark.slow
def test_the_installed_packages(work, monkeypatch):
    monkeypatch.setattr(fast_rerun, "_entry_state", lambda entry: [entry, 0, 0, 0])  # a folder of sys.path changed
    assert both() == ("startup path", True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["report.html", "summary.json"])
def test_a_deleted_output(work, name):
    (run_dir(work) / name).unlink()
    assert both() == ("outputs", False)


@pytest.mark.slow
def test_an_edited_summary(work):
    # the full command prints the tables of summary.json as it is now; the record's are the run's
    summary = run_dir(work) / "summary.json"
    summary.write_text(summary.read_text() + "\n")
    assert both() == ("outputs", True)


@pytest.mark.slow
def test_the_plan_a_later_interrupted_run_left(work):
    config = run_dir(work) / "config.yaml"
    execute(work, "INSERT INTO runs(run_id, kind, created, status, config, versions, seed, notes) "
                  "VALUES ('later', 'run', 9e9, 'interrupted', '{}', '{}', 2, '{}')")
    written = config.read_text()
    config.write_text(written.replace("n_resamples: 200", "n_resamples: 999"))
    assert both() == ("config.yaml", True)
    assert config.read_text() == written  # written back by the full command
    assert both() == (UP_TO_DATE, True)


@pytest.mark.slow
def test_a_run_still_running(work):
    execute(work, "INSERT INTO runs(run_id, kind, created, status, config, versions, seed, notes, pid, host, "
                  "process_started) VALUES ('now', 'run', 9e9, 'running', '{}', '{}', 2, '{}', ?, ?, NULL)",
            os.getpid(), os.uname().nodename)
    assert fast() == "a run is running"


@pytest.mark.slow
def test_the_run_directory_lock_file(work):
    (run_dir(work) / ".reasonscope.lock").write_text("")  # a writer holds it, or one was killed
    assert both() == ("lock file", True)


@pytest.mark.slow
def test_a_run_directory_that_cannot_be_written(work, monkeypatch):
    # a read-only file system: the full command cannot take the run directory's lock there
    real = os.access
    with monkeypatch.context() as m:
        m.setattr(fast_rerun.os, "access", lambda path, mode, **kw: (
            mode != os.W_OK or Path(path).resolve() != run_dir(work)) and real(path, mode, **kw))
        assert fast() == "run directory not writable"
    assert fast() == UP_TO_DATE


@pytest.mark.slow
def test_a_non_zero_exit_code(work):
    execute(work, "UPDATE runs SET notes=json_set(notes, '$.outcome.code', 1)")
    assert both() == ("exit code or bad rows", False)


@pytest.mark.slow
def test_a_generation_written_again(work):
    execute(work, "UPDATE generations SET created=created - 1 WHERE key=(SELECT MIN(key) FROM generations)")
    assert both() == ("linked requests", False)


@pytest.mark.slow
def test_a_generation_gone(work):
    execute(work, "DELETE FROM generations WHERE key=(SELECT MIN(key) FROM generations)")
    assert both() == ("linked requests", False)


@pytest.mark.slow
def test_a_later_finished_run(work):
    assert full("--rescore")["code"] == 0  # a new finished run of the same plan: the record names it
    assert both() == (UP_TO_DATE, True)


@pytest.mark.slow
def test_no_record_when_a_family_does_not_allow_reuse(tmp_path, monkeypatch):
    # the attack and information families (and evidence with imported predictions) generate in passes of
    # their own: a finished run is never reported as it is
    from reasonscope.registry import get_family

    monkeypatch.setattr(type(get_family("behavior")), "may_reuse_finished_run", lambda self, settings: False)
    cwd = _workdir(tmp_path, monkeypatch)
    assert full()["code"] == 0
    assert not fast_rerun.record_path(str(cwd), PLAN).exists()
    assert both() == ("no record", False)


@pytest.mark.slow
def test_no_record_for_skipped_bad_rows_or_a_replayed_model(work):
    (work / "p" / "d.jsonl").write_text(jsonl(ROWS) + "not json\n")
    (work / PLAN).write_text(PLAN_TEXT.replace("path: d.jsonl}", "path: d.jsonl, skip_bad_rows: true}"))
    assert both() == ("plan bytes", False)
    assert not fast_rerun.record_path(str(work), PLAN).exists()  # the full command says which rows it skipped
    assert both() == ("no record", True)
    replay = work / "p" / "replay.jsonl"
    replay.write_text("")
    (work / PLAN).write_text(PLAN_TEXT.replace("spec: mock/reasoner", f"spec: mock/replay, options: {{path: {replay}}}"))
    full()
    assert not fast_rerun.record_path(str(work), PLAN).exists()  # its file may go: the model is then skipped


def test_the_dataset_source_is_the_full_checks(tmp_path, monkeypatch):
    from reasonscope.pipeline.up_to_date import GENERATED, source_digests
    from reasonscope.shared_settings import DatasetConfig

    monkeypatch.chdir(tmp_path)
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.jsonl").write_text('{"question": "q", "answer": 1}\n')
    (tmp_path / "base" / "folder").mkdir()
    digest = hashlib.sha256(b'{"question": "q", "answer": 1}\n').hexdigest()[:16]
    cases = {"d.jsonl": digest, str(tmp_path / "base" / "d.jsonl"): digest, "missing.jsonl": None, "folder": None,
             "base/d.jsonl": digest}  # relative: from the working directory first, then from the plan's folder
    for path, known in cases.items():
        expected = source_digests([DatasetConfig(name="a", format="jsonl", path=path)], base_dir=tmp_path / "base")
        assert fast_rerun.dataset_source(path, str(tmp_path / "base")) == (expected or {}).get("a") == known
    (tmp_path / "d.jsonl").write_text("{}\n")  # the working directory's file shadows the plan folder's
    assert fast_rerun.dataset_source("d.jsonl", str(tmp_path / "base")) == hashlib.sha256(b"{}\n").hexdigest()[:16]
    assert fast_rerun.GENERATED == GENERATED == "generated"
    assert fast_rerun.GENERATED_FORMATS == ("synthetic", "topics", "word_problems")
    assert source_digests([DatasetConfig(name=f, format=f, size=2) for f in fast_rerun.GENERATED_FORMATS]) == \
        {f: GENERATED for f in fast_rerun.GENERATED_FORMATS}


def test_the_names_of_the_run_directorys_files(tmp_path):
    from reasonscope.storage.rundir import RunDirLock
    from reasonscope.storage.store import STORE_FILENAME, Store

    assert (fast_rerun.LOCK_FILENAME, fast_rerun.STORE_FILENAME) == (".reasonscope.lock", "store.sqlite")
    assert STORE_FILENAME is fast_rerun.STORE_FILENAME  # one constant, in storage.run_files
    with RunDirLock(tmp_path / "run"):
        Store(tmp_path / "run").close()
        assert {".reasonscope.lock", "store.sqlite"} <= {p.name for p in (tmp_path / "run").iterdir()}


def test_the_source_digest_is_the_whole_packages(tmp_path):
    import reasonscope
    import reasonscope.storage.versions as versions

    package = Path(reasonscope.__file__).parent
    assert versions.source_digest() == versions.source_digest(package)
    assert versions.source_digest() != versions.source_digest(package / "storage")  # not the module's folder only


@pytest.mark.slow
def test_the_command_prints_the_full_answer_without_importing_the_command_line(work):
    """Through ``python -m reasonscope.cli``: the same bytes as the full command's up-to-date answer (but the
    wall time), exit code 0, and neither typer, rich, pydantic nor numpy imported."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def cli(*args: str, x: tuple = ()) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *x, "-m", "reasonscope.cli", "run", PLAN, *args], cwd=work, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)

    recorded = cli("--wait-lock", "0")  # the full command (an option the fast check leaves to it), recording
    full_answer = cli("--wait-lock", "0")
    quick = cli()
    imported = cli(x=("-X", "importtime"))
    assert recorded.returncode == full_answer.returncode == quick.returncode == imported.returncode == 0
    assert "up to date" in full_answer.stderr and quick.stdout == full_answer.stdout

    def no_wall(text: str) -> str:  # the wall time of the done line, each answer's own
        return re.sub(r"pending, \d+\.\ds", "pending, _s", text)

    assert no_wall(quick.stderr) == no_wall(full_answer.stderr)
    modules = {line.split("|")[-1].strip() for line in imported.stderr.splitlines() if line.startswith("import time:")}
    assert "reasonscope.pipeline.fast_rerun" in modules
    assert not modules & {"typer", "rich", "pydantic", "numpy", "reasonscope.registry", "reasonscope.plan"}


def test_only_the_latest_records_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_rerun, "MAX_RECORDS", 2)
    for i in range(4):
        (tmp_path / f"{i}.json").write_text("{}")
        os.utime(tmp_path / f"{i}.json", ns=(i * 10**9, i * 10**9))
    fast_rerun._prune(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2.json", "3.json"]
