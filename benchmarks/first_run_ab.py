"""Benchmark: the same first run on two copies of reasonscope's source, side by side (a change's own figure).

Each run is ``reasonscope run PLAN`` in a fresh output folder (a first run: every model call made, every score
computed, every output written), in a subprocess whose ``PYTHONPATH`` puts one copy of the package first
(``--before`` and ``--after``: folders holding a ``reasonscope`` package, e.g. a copy of ``src/`` made before a
change and ``src/`` itself). Pairs alternate which goes first (before after, after before, ...), so that a
drift of the machine's speed weighs on both alike. Per run: wall seconds, CPU seconds of the process, and the
phases the run records in its notes (generation, each family's scoring); per pair the ratio before / after of
the wall time; then the medians and the ratios' median and range. Both copies are byte-compiled first.

    python benchmarks/first_run_ab.py --plan plan.yaml --before /tmp/src-before --after src --pairs 5

Set the environment the plan needs (``REASONSCOPE_CACHE_DIR`` for converted scoring models, ``HF_HUB_OFFLINE``)
before; a warm-up run of each side (not counted) converts and loads what the first measured runs would.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def first_run(plan: dict, source: Path, folder: Path) -> dict:
    """One fresh first run of ``plan`` with the package in ``source``: wall and CPU seconds, recorded phases."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    plan = {**plan, "experiment": {**plan["experiment"], "output_dir": str(folder / "out")}}
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    env = {**os.environ, "PYTHONPATH": str(source.resolve())}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    rc = subprocess.call([sys.executable, "-m", "reasonscope.cli", "run", str(path)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stores = list((folder / "out").glob("*/store.sqlite"))
    phases = {}
    if stores:
        con = sqlite3.connect(stores[0])
        phases = json.loads(con.execute("SELECT notes FROM runs ORDER BY created DESC").fetchone()[0])["phase_seconds"]
        con.close()
    return {"rc": rc, "wall_s": wall, "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
            "phases": phases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", type=Path, required=True)
    ap.add_argument("--before", type=Path, required=True, help="folder holding the reasonscope package before")
    ap.add_argument("--after", type=Path, required=True, help="folder holding the reasonscope package after")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    for side in (args.before, args.after):
        if not (side / "reasonscope" / "__init__.py").is_file():
            ap.error(f"{side}: no reasonscope package here")
        subprocess.check_call([sys.executable, "-m", "compileall", "-q", str(side / "reasonscope")])
    plan = yaml.safe_load(args.plan.read_text())
    root = args.workdir or Path(tempfile.mkdtemp(prefix="rs-first-run-"))
    sides = {"before": args.before, "after": args.after}
    for name, source in sides.items():  # warm-ups, not counted
        first_run(plan, source, root / f"warm-up-{name}")
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for i in range(args.pairs):
        for name in (("before", "after") if i % 2 == 0 else ("after", "before")):
            got = first_run(plan, sides[name], root / f"{name}-{i}")
            runs[name].append(got)
            phases = " ".join(f"{k} {v:.1f}s" for k, v in got["phases"].items())
            print(f"pair {i + 1} {name:6} rc {got['rc']} wall {got['wall_s']:.2f}s CPU {got['cpu_s']:.2f}s  {phases}",
                  flush=True)
    for name, got in runs.items():
        phase_names = sorted({k for g in got for k in g["phases"]})
        medians = " ".join(f"{k} {statistics.median(g['phases'].get(k, 0) for g in got):.2f}s" for k in phase_names)
        print(f"{name:6} median wall {statistics.median(g['wall_s'] for g in got):.2f}s, CPU "
              f"{statistics.median(g['cpu_s'] for g in got):.2f}s; {medians}")
    ratios = [b["wall_s"] / a["wall_s"] for b, a in zip(runs["before"], runs["after"], strict=True)]
    print(f"before / after wall, per pair: {', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f})")
    if any(g["rc"] for got in runs.values() for g in got):
        print(f"WARNING: a run exited non-zero; folders in {root}")


if __name__ == "__main__":
    main()
