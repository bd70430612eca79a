"""Two `reasonscope run` processes started on one run directory: how many model calls does each make?

The plan: 108 synthetic items x (3 samples + 2 paraphrases) = 540 requests to a mock model answering
after 50 ms, 8 in flight. The second process starts once the first has made 4 calls. Prints, per
process, its model calls (from the mock's call log) and exit code, and the generations stored.

    python benchmarks/two_writers.py [--wait-lock SECONDS]

Without the run-directory lock both processes ran to the end and the second paid for most requests
again; with it the second stops at once (exit 75) or, with --wait-lock, waits and makes no call.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def write_plan(work: Path, key: str) -> Path:
    plan = {"experiment": {"name": "shared", "seed": 4, "output_dir": str(work / "runs")},
            "models": [{"spec": "mock/reasoner", "name": "slow", "concurrency": 8, "max_tokens": 64,
                        "options": {"latency_s": 0.05, "accuracy": 0.6, "call_log": str(work / f"{key}.log")}}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 36}],
            "families": {"behavior": {"samples": 3, "paraphrases": 2, "nli": {"backend": "none"},
                                      "similarity": {"method": "embedding"}}},
            "stats": {"n_resamples": 200}}
    path = work / f"{key}.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait-lock", default=None, help="passed to the second process")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="two-writers-"))

    def calls(key: str) -> int:
        log = work / f"{key}.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def start(key: str, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "reasonscope.cli", "run", str(write_plan(work, key)), *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    first = start("first")
    while calls("first") < 4 and first.poll() is None:
        time.sleep(0.05)
    second = start("second", *(["--wait-lock", args.wait_lock] if args.wait_lock else []))
    first_out, second_out = first.communicate()[0], second.communicate()[0]
    con = sqlite3.connect(work / "runs" / "shared" / "store.sqlite")
    stored = con.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    con.close()
    print(json.dumps({"first": {"calls": calls("first"), "exit": first.returncode},
                      "second": {"calls": calls("second"), "exit": second.returncode,
                                 "last_line": second_out.strip().splitlines()[-1][:200] if second_out.strip() else ""},
                      "stored_generations": stored, "folder": str(work)}, indent=2))
    if first.returncode:
        print(first_out[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
