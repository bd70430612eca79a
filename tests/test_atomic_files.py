"""Outputs survive a crash: a process killed while writing the report leaves the previous files whole,
and its run is never recorded as finished."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan
from reasonscope.storage.atomic_files import atomic_open, atomic_path, remove_stale_temporaries

runner = CliRunner()


def plan_dict(out):
    return {"experiment": {"name": "crash", "seed": 1, "output_dir": str(out)},
            "models": [{"spec": "mock/reasoner", "name": "m", "options": {"accuracy": 0.7}}],
            "families": {"behavior": None, "evidence": {
                "train": {"name": "tr", "format": "topics", "size": 20, "split": "train"},
                "test": {"name": "te", "format": "topics", "size": 20, "split": "test"},
                "matchers": ["exact"], "n_permutations": 100, "sweep_k": [5], "sweep_delta": [0.2]}}}


# Runs the same plan again in a child process and kills itself (SIGKILL) after writing three rows of
# samples.jsonl: a crash in the middle of the report.
CRASH = textwrap.dedent("""
    import json, os, signal, sys
    import reasonscope.report.build as build
    from reasonscope.plan import parse_plan
    from reasonscope.pipeline.runner import Runner

    rows = build.sample_rows
    def dying(*args, **kwargs):
        for i, row in enumerate(rows(*args, **kwargs)):
            if i == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            yield row
    build.sample_rows = dying
    Runner(parse_plan(json.loads(sys.argv[1])), show_progress=False, reuse_finished=False).run()
""")


def test_kill_while_writing_the_report_keeps_the_previous_outputs(tmp_path):
    plan = plan_dict(tmp_path)
    Runner(parse_plan(plan), show_progress=False).run()
    run_dir = tmp_path / "crash"
    before = {name: (run_dir / name).read_bytes() for name in ("samples.jsonl", "summary.json", "report.html")}
    assert len(before["samples.jsonl"].split(b"\n")) > 4
    child = subprocess.run([sys.executable, "-c", CRASH, json.dumps(plan)], capture_output=True, timeout=300)
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    assert {name: (run_dir / name).read_bytes() for name in before} == before  # not truncated, not mixed
    leftovers = [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]
    # written, never renamed; a run held in memory writes samples.jsonl before the page, so no page was begun
    assert {"samples", "summary"} <= {name.split(".")[1] for name in leftovers}
    assert "report" not in {name.split(".")[1] for name in leftovers}
    con = sqlite3.connect(run_dir / "store.sqlite")
    statuses = [r[0] for r in con.execute("SELECT status FROM runs ORDER BY created")]
    con.close()
    assert statuses == ["finished", "running"]  # the killed run never claimed to be finished
    res = runner.invoke(app, ["cache", "ls", str(run_dir)])
    assert res.output.count(" interrupted") == 1, res.output  # ... and reads as interrupted once its process is gone
    res = runner.invoke(app, ["report", str(run_dir)])  # the latest finished run, rebuilt
    assert res.exit_code == 0, res.output
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".tmp")]  # the dead writer's file is cleaned up
    assert json.loads((run_dir / "summary.json").read_text())["run"]["status"] == "finished"


def test_atomic_writes_leave_the_old_file_on_error(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write("half")
        raise RuntimeError("crash")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
    with atomic_path(tmp_path / "plot.png") as tmp:
        tmp.write_bytes(b"png")
    assert (tmp_path / "plot.png").read_bytes() == b"png"
    with pytest.raises(FileNotFoundError, match="created no file"), atomic_path(tmp_path / "none.txt"):
        pass
    live = tmp_path / f".x.txt.{__import__('os').getpid()}-0123abcd.tmp"
    live.write_text("")
    assert remove_stale_temporaries(tmp_path) == [] and live.exists()  # a live writer's file is kept
