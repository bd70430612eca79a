"""Resume: a run killed with SIGKILL mid-generation, then run again, repeats no completed call and
ends with the same results as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import yaml

PLAN = {
    "experiment": {"name": "resume", "seed": 4},
    "models": [{"spec": "mock/reasoner", "name": "slow", "concurrency": 2, "max_tokens": 64,
                "options": {"latency_s": 0.05, "accuracy": 0.6}}],
    "datasets": [{"name": "syn", "format": "synthetic", "size": 4}],
    "families": {"behavior": {"samples": 3, "paraphrases": 2, "nli": {"backend": "none"},
                              "similarity": {"method": "embedding"}}},
    "stats": {"n_resamples": 200},
}
TOTAL = 12 * 5


def write_plan(folder, log):
    plan = json.loads(json.dumps(PLAN))
    plan["experiment"]["output_dir"] = str(folder / "runs")
    plan["models"][0]["options"]["call_log"] = str(log)
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def run_cli(plan, **kw):
    return subprocess.Popen([sys.executable, "-m", "reasonscope.cli", "run", str(plan)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, **kw)


def completed_requests(db):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT rg.item_id, rg.variant, rg.sample FROM run_generations rg JOIN generations g "
                       "ON g.key = rg.key").fetchall()
    con.close()
    return {(f"syn/{i}", v, s) for i, v, s in rows}


def read_log(log):
    if not log.exists():
        return []
    return [tuple(line.split("\t")[:2]) + (int(line.split("\t")[2]),)
            for line in log.read_text().splitlines() if line.strip()]


def test_kill_and_resume_repeats_no_completed_call(tmp_path):
    ref_dir, crash_dir = tmp_path / "ref", tmp_path / "crash"
    ref_dir.mkdir()
    crash_dir.mkdir()
    ref = run_cli(write_plan(ref_dir, ref_dir / "calls.log"))
    assert ref.wait(timeout=300) == 0, ref.stdout.read().decode()

    log = crash_dir / "calls.log"
    plan = write_plan(crash_dir, log)
    db = crash_dir / "runs" / "resume" / "store.sqlite"
    for kill_after in (10, 25, 40):  # killed three times at different points
        proc = run_cli(plan, start_new_session=True)
        deadline = time.time() + 120
        while len(read_log(log)) < kill_after and time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done_before = completed_requests(db)
    assert 0 < len(done_before) < TOTAL
    calls_before = len(read_log(log))
    final = run_cli(plan)
    out = final.communicate(timeout=300)[0].decode()
    assert final.returncode == 0, out
    second_calls = read_log(log)[calls_before:]
    assert not (set(second_calls) & done_before), "a completed request was sent again"
    assert len(second_calls) == TOTAL - len(done_before)
    assert completed_requests(db) == {(f"syn/{i}", v, s) for i, v, s in
                                      {(c[0].split("/", 1)[1], c[1], c[2]) for c in read_log(ref_dir / "calls.log")}}
    ref_summary = json.loads((ref_dir / "runs" / "resume" / "summary.json").read_text())
    got = json.loads((crash_dir / "runs" / "resume" / "summary.json").read_text())
    assert got["behavior"]["metrics"] == ref_summary["behavior"]["metrics"]
    # and once more: nothing left to do
    again = run_cli(plan)
    assert again.wait(timeout=300) == 0
    assert len(read_log(log)) == calls_before + len(second_calls)
