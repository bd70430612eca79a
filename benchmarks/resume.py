"""Benchmark: a finished run re-run from its store.

Runs a plan (a mock model answering after ``--latency`` seconds, like an API; the synthetic set;
K samples and P paraphrases; no NLI; embedding similarity), then runs the same plan again and
prints the model calls made by each run (the second must make 0) and the second run's wall time as
a fraction of the first.

    python benchmarks/resume.py --size 20 --latency 0.05
"""

from __future__ import annotations

import argparse
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=20, help="synthetic items per kind")
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--p", type=int, default=3)
    args = ap.parse_args()

    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan

    with tempfile.TemporaryDirectory() as out:
        plan = parse_plan({
            "experiment": {"name": "resume", "output_dir": out},
            "models": [{"spec": "mock/reasoner", "concurrency": 8, "options": {"latency_s": args.latency}}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": args.size}],
            "families": {"behavior": {"samples": args.k, "paraphrases": args.p, "nli": {"backend": "none"},
                                      "similarity": {"method": "embedding"}}},
        })
        rows = []
        for label in ("first run", "re-run"):
            t = time.perf_counter()
            s = Runner(plan, show_progress=False).run()
            rows.append((label, s.calls_made, s.cached, time.perf_counter() - t))
    print(f"{'':12}{'model calls':>12}{'from store':>12}{'wall s':>10}")
    for label, calls, cached, wall in rows:
        print(f"{label:12}{calls:>12}{cached:>12}{wall:>10.2f}")
    print(f"re-run wall time / first run: {rows[1][3] / rows[0][3]:.2f}; model calls in the re-run: {rows[1][1]}")


if __name__ == "__main__":
    main()
