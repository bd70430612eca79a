"""The run directory: safe run names, an output folder that is a file, one writer at a time (two
processes, --wait-lock, a killed holder), and the status of a run whose process is gone."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
import yaml
from typer.testing import CliRunner

from reasonscope.cli import LOCKED_EXIT, app
from reasonscope.plan import PlanError, load_plan

runner = CliRunner()

# ---------------------------------------------------------------------------------------------- names

BAD_NAMES = ["..", ".", "a/b", "../escape", "/abs", "a\\b", "x" * 200, ""]


@pytest.fixture()
def predictions(tmp_path):
    path = tmp_path / "in" / "preds.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"id": f"q{i}", "input": f"{i}+1?", "target": i + 1, "model": "m",
                                        "prediction": f"Answer: {i + 1}"}) + "\n" for i in range(2)))
    return path


def written_outside(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name in ("store.sqlite", "report.html", "results.xlsx",
                                                                   "summary.json", "tables", "config.yaml"))


@pytest.mark.parametrize("name", BAD_NAMES)
def test_score_refuses_a_run_name_that_is_not_one_folder(tmp_path, predictions, name):
    out = tmp_path / "out"
    out.mkdir()
    res = runner.invoke(app, ["score", "--input", str(predictions), "--output-dir", str(out), "--name", name])
    assert res.exit_code == 2, res.output
    assert "experiment.name" in res.output and "run name" in res.output
    assert written_outside(tmp_path) == [] and written_outside(out) == []


@pytest.mark.parametrize("command", [
    ["attributes", "judge", "--judge", "mock/judge", "--input", "PRED"],
    ["evidence", "--train", "topics", "--test", "topics", "--predictions", "PRED"],
    ["attack", "--model", "mock/reasoner"],
    ["information", "train", "--train", "synthetic"],
    ["attributes", "explain", "--preferences", "PRED", "--judge", "mock/judge"],
])
def test_every_command_with_a_name_uses_the_same_check(tmp_path, predictions, command):
    out = tmp_path / "out"
    out.mkdir()
    args = [str(predictions) if a == "PRED" else a for a in command]
    res = runner.invoke(app, [*args, "--output-dir", str(out), "--name", ".."])
    assert res.exit_code == 2, res.output
    assert "run name '..' would name the output folder itself or its parent" in res.output
    assert written_outside(tmp_path) == []


def test_plan_name_dot_dot_names_file_and_line(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"experiment:\n  seed: 1\n  name: '..'\n  output_dir: {tmp_path / 'out'}\n"
                    "models: [{spec: mock/reasoner}]\ndatasets: [{name: s, format: synthetic}]\n")
    for command in ("validate", "run"):
        res = runner.invoke(app, [command, str(plan)])
        assert res.exit_code == 2 and f"{plan}:3: experiment.name: run name '..'" in res.output, res.output
    assert written_outside(tmp_path) == []


def test_output_dir_that_is_a_file_is_a_plan_error_in_validate_and_run(tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"experiment:\n  name: e\n  output_dir: {blocker}\n"
                    "models: [{spec: mock/reasoner}]\ndatasets: [{name: s, format: synthetic}]\n")
    expected = f"{plan}:3: experiment.output_dir: output_dir exists and is not a directory: {blocker}"
    for command in ("validate", "run"):
        res = runner.invoke(app, [command, str(plan)])
        assert res.exit_code == 2 and expected in res.output, res.output
        assert "Traceback" not in res.output
    # a parent that is a file, and a run directory that is a file
    plan.write_text(plan.read_text().replace(str(blocker), str(blocker / "deeper")))
    with pytest.raises(PlanError, match=r"plan.yaml:3: experiment.output_dir: output_dir's parent .*results"):
        load_plan(plan)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "e").write_text("")
    plan.write_text(plan.read_text().replace(str(blocker / "deeper"), str(tmp_path / "out")))
    with pytest.raises(PlanError, match=r"plan.yaml:1: experiment: the run directory exists and is not a directory"):
        load_plan(plan)


# ---------------------------------------------------------------------------------------------- the lock

REQUESTS = 40  # one label-and-rationale request per test item (the evidence family: no torch to import)


def write_plan(folder, out, log, latency=0.3):
    plan = {"experiment": {"name": "shared", "seed": 4, "output_dir": str(out)},
            "models": [{"spec": "mock/reasoner", "name": "slow", "concurrency": 2,
                        "options": {"latency_s": latency, "accuracy": 0.6, "call_log": str(log)}}],
            "families": {"behavior": None, "evidence": {
                "train": {"name": "tr", "format": "topics", "size": 40, "split": "train"},
                "test": {"name": "te", "format": "topics", "size": 40, "split": "test"},
                "matchers": ["exact"], "n_permutations": 100, "sweep_k": [5], "sweep_delta": [0.2]}}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def start(plan, *extra, **kw):
    return subprocess.Popen([sys.executable, "-m", "reasonscope.cli", "run", str(plan), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def calls(log) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def wait_for_calls(log, n, proc, limit=120):
    deadline = time.time() + limit
    while calls(log) < n and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert calls(log) >= n, "the first process made no calls"


def test_second_process_stops_or_waits_and_no_call_is_paid_twice(tmp_path):
    out = tmp_path / "runs"
    logs = {k: tmp_path / k / "calls.log" for k in "abc"}
    plans = {k: write_plan(tmp_path / k, out, logs[k]) for k in "abc"}
    first = start(plans["a"])
    wait_for_calls(logs["a"], 4, first)
    second = start(plans["b"])  # same plan, same run directory
    second_out = second.communicate(timeout=120)[0].decode()
    waiter = start(plans["c"], "--wait-lock", "300")  # waits for the first to finish, then finds all cached
    first_out = first.communicate(timeout=300)[0].decode()
    waiter_out = waiter.communicate(timeout=300)[0].decode()
    assert first.returncode == 0, first_out
    assert second.returncode == LOCKED_EXIT, second_out
    assert f"pid {first.pid} on" in second_out and "--wait-lock" in second_out
    assert waiter.returncode == 0, waiter_out
    assert (calls(logs["a"]), calls(logs["b"]), calls(logs["c"])) == (REQUESTS, 0, 0)
    con = sqlite3.connect(out / "shared" / "store.sqlite")
    assert con.execute("SELECT COUNT(*) FROM generations").fetchone()[0] == REQUESTS
    assert [r[0] for r in con.execute("SELECT status FROM runs ORDER BY created")] == ["finished", "finished"]
    con.close()
    assert not (out / "shared" / ".reasonscope.lock.json").exists()  # the holder record goes with the lock
    assert not (out / "shared" / ".reasonscope.lock").exists()  # and so does the (empty) lock file


def test_a_killed_holder_blocks_nothing_and_its_run_reads_interrupted(tmp_path):
    out = tmp_path / "runs"
    log = tmp_path / "calls.log"
    plan = write_plan(tmp_path, out, log, latency=0.2)
    killed = start(plan, start_new_session=True)
    wait_for_calls(log, 6, killed)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    run_dir = out / "shared"
    assert json.loads((run_dir / ".reasonscope.lock.json").read_text())["pid"] == killed.pid  # left behind
    before = calls(log)
    con = sqlite3.connect(run_dir / "store.sqlite")
    completed = con.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    con.close()
    again = start(plan)  # no --wait-lock: the lock died with its holder
    text = again.communicate(timeout=300)[0].decode()
    assert again.returncode == 0, text
    con = sqlite3.connect(run_dir / "store.sqlite")
    rows = con.execute("SELECT run_id, status, pid FROM runs ORDER BY created").fetchall()
    done = con.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    con.close()
    assert [(s, p) for _, s, p in rows] == [("interrupted", killed.pid), ("finished", again.pid)]
    assert done == REQUESTS and calls(log) - before == REQUESTS - completed  # resumed, nothing paid twice
    killed_id = rows[0][0]
    ls = runner.invoke(app, ["cache", "ls", str(run_dir)])
    assert f"run {killed_id} run interrupted" in ls.output, ls.output
    rep = runner.invoke(app, ["report", str(run_dir), "--run-id", killed_id])
    assert rep.exit_code == 0 and "(interrupted)" in rep.output, rep.output
    assert "this run was interrupted" in (run_dir / "report.html").read_text()
    assert json.loads((run_dir / "summary.json").read_text())["run"]["status"] == "interrupted"


def _hold_run_dir(run_dir, started, hold_s, log):
    import time

    from reasonscope.storage.rundir import RunDirLock

    with RunDirLock(run_dir, wait=float("inf")):
        started.set()
        log.put(("in", time.monotonic()))
        time.sleep(hold_s)
        log.put(("out", time.monotonic()))


def test_the_lock_file_is_removed_on_release_and_writers_still_take_turns(tmp_path):
    # Each writer unlinks the lock file while it still holds it; writers waiting on the unlinked file must
    # not then hold it at the same time as one that created a new file.
    import multiprocessing as mp

    from reasonscope.storage.rundir import RunDirLock

    run_dir = tmp_path / "r"
    with RunDirLock(run_dir):
        assert (run_dir / ".reasonscope.lock").exists()
    assert not (run_dir / ".reasonscope.lock").exists() and not (run_dir / ".reasonscope.lock.json").exists()

    ctx = mp.get_context("spawn")
    log, started = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_hold_run_dir, args=(run_dir, started, 0.6, log)) for _ in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    stamps = sorted((log.get(timeout=5) for _ in range(6)), key=lambda event: event[1])
    # Sorted by time the events alternate in, out, in, out: no two holders overlap.
    assert [kind for kind, _ in stamps] == ["in", "out"] * 3
    assert not (run_dir / ".reasonscope.lock").exists()
