"""Benchmark: is ``reasonscope compare``'s gate calibrated? False alarms on seed-only pairs, power on planted drops.

Runs are real reasonscope runs of a mock reasoner (``mock/reasoner``: each answer is correct with probability
``accuracy``, drawn from a hash of the seed, item, variant and sample) on the synthetic set (``--items``
items: a third arithmetic, a third logic, a third multiple choice; dataset seed fixed at 0 so every run
holds the same items), scored by the behaviour family with one sample and no paraphrase (item-level CQ,
ES_item and the length score; LS, CS, RS, SS are n/a in this setting). The runs' HTML/xlsx reports are not
written (the comparison reads only the store), which keeps a run near a second.

* **Seed-only pairs** (``--pairs``, default 200): BASE and NEW differ only in the experiment seed
  (accuracy 0.7 both). The gate (every metric, Holm) must fail in at most 5% of them; the CQ-only gate
  (``--metrics CQ``) is shown too.
* **Planted drops** (``--planted``, default 100 per level): NEW's accuracy is 0.7 - delta for delta in 0.05,
  0.1, 0.2, with its own seed, against the BASE runs of the seed-only pairs. The CQ-only gate's detection
  rate is compared with the power the paired test predicts: the exact McNemar (sign) test at alpha 0.05
  two-sided, NEW worse, with per-item correctness independent Bernoulli(0.7) and Bernoulli(0.7 - delta):
  discordant pairs D ~ Binomial(n, q10 + q01) with q10 = 0.7 (0.3 + delta), q01 = 0.3 (0.7 - delta), and
  given D, the NEW-better count ~ Binomial(D, q01 / (q10 + q01)); the power is summed exactly over both.

Each rate comes with its 95% Clopper-Pearson interval. Resumable: runs are kept in ``--out`` and finished
comparisons in ``--out/results.jsonl``; run the same command again to continue.

    nice -n 5 python benchmarks/compare_calibration.py [--pairs 200] [--planted 100] [--items 300] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ACCURACY = 0.7
DROPS = (0.05, 0.1, 0.2)
ALPHA = 0.05


def make_run(out: Path, name: str, seed: int, accuracy: float, items: int) -> Path:
    """A finished mock run in ``out/name`` (reused when it is already there)."""
    from rich.console import Console

    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan

    run_dir = out / name
    if (run_dir / "store.sqlite").exists():
        return run_dir
    plan = parse_plan({
        "experiment": {"name": name, "seed": seed, "output_dir": str(out)},
        "models": [{"spec": "mock/reasoner", "name": "mock", "options": {"accuracy": accuracy}}],
        "datasets": [{"name": "synthetic", "format": "synthetic", "size": items // 3, "seed": 0}],
        "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}}})
    Runner(plan, console=Console(quiet=True)).run()
    return run_dir


def predicted_power(n: int, p_base: float, p_new: float, alpha: float = ALPHA) -> float:
    """Exact power of the two-sided exact McNemar test to find NEW worse (module docstring)."""
    from scipy.stats import binom

    q10, q01 = p_base * (1 - p_new), (1 - p_base) * p_new
    share = q01 / (q10 + q01)
    power = 0.0
    for d in range(1, n + 1):
        pd = binom.pmf(d, n, q10 + q01)
        if pd < 1e-15:
            continue
        k = list(range(d + 1))  # NEW-better count
        p_less, p_greater = binom.cdf(k, d, 0.5), binom.sf([x - 1 for x in k], d, 0.5)
        for x in k:
            p = min(1.0, 2 * min(p_less[x], p_greater[x]))
            if p <= alpha and x < d - x:
                power += pd * binom.pmf(x, d, share)
    return float(power)


def clopper(k: int, n: int) -> str:
    """``[low, high]`` 95% Clopper-Pearson interval of k in n."""
    from reasonscope.stats.intervals import clopper_pearson

    low, high = clopper_pearson(k, n)
    return f"[{low:.3f}, {high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--planted", type=int, default=100)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("compare-calibration"))
    args = parser.parse_args()

    import reasonscope.report.build as report_build
    from reasonscope.compare import compare_runs

    report_build.write_report = lambda *a, **k: {}  # only the store is read: skip the HTML / xlsx outputs
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.jsonl"
    done = {}
    if results_path.exists():
        for line in results_path.read_text().splitlines():
            rec = json.loads(line)
            done[rec["key"]] = rec
    runs = args.out / "runs"
    jobs = [("null", i, 0.0) for i in range(args.pairs)]
    jobs += [("drop", j, d) for d in DROPS for j in range(args.planted)]
    start = time.time()
    with results_path.open("a") as log:
        for kind, i, delta in jobs:
            key = f"{kind}-{delta:g}-{i}"
            if key in done:
                continue
            base = make_run(runs, f"base-{i}", 1000 + 2 * i, ACCURACY, args.items)
            if kind == "null":
                new = make_run(runs, f"null-{i}", 1001 + 2 * i, ACCURACY, args.items)
            else:
                new = make_run(runs, f"drop{delta:g}-{i}", 50_000 + 1000 * int(delta * 100) + i, ACCURACY - delta,
                               args.items)
            every = compare_runs(base, new)
            cq = compare_runs(base, new, metrics=["CQ"])
            row = next(r for r in cq.metrics if r.metric == "CQ")
            rec = {"key": key, "kind": kind, "delta": delta, "i": i, "gate_all": every.exit_code,
                   "gate_cq": cq.exit_code, "cq_difference": row.difference, "cq_p": row.p_value,
                   "n": row.n_shared}
            done[key] = rec
            log.write(json.dumps(rec) + "\n")
            log.flush()
            if len(done) % 20 == 0:
                print(f"{len(done)} / {len(jobs)} comparisons, {time.time() - start:.0f} s", flush=True)
    report(done, args)


def report(done: dict, args) -> None:
    """Print the calibration table (Markdown)."""
    null = [r for r in done.values() if r["kind"] == "null"]
    print(f"\nSeed-only pairs (accuracy {ACCURACY} on both sides, {args.items} items, mock reasoner): gate "
          f"failures, alpha {ALPHA}\n")
    print("| Gate | Pairs | Failed (exit 1) | Rate | 95% CI |")
    print("|---|--:|--:|--:|---|")
    for name, field in (("every metric (CQ, ES_item, length score), Holm", "gate_all"), ("--metrics CQ", "gate_cq")):
        k = sum(r[field] == 1 for r in null)
        print(f"| {name} | {len(null)} | {k} | {k / max(1, len(null)):.3f} | {clopper(k, len(null))} |")
    other = sum(r["gate_all"] == 2 or r["gate_cq"] == 2 for r in null)
    if other:
        print(f"\n{other} seed-only pairs could not be compared (exit 2)")
    print(f"\nPlanted accuracy drops ({ACCURACY} -> {ACCURACY} - delta, {args.items} items): detection by the gate\n")
    print("| delta | Pairs | CQ gate fails | Rate | 95% CI | Predicted power (exact McNemar) | Every-metric gate |")
    print("|--:|--:|--:|--:|---|--:|--:|")
    for delta in DROPS:
        rows = [r for r in done.values() if r["kind"] == "drop" and r["delta"] == delta]
        if not rows:
            continue
        k = sum(r["gate_cq"] == 1 for r in rows)
        k_all = sum(r["gate_all"] == 1 for r in rows)
        power = predicted_power(args.items, ACCURACY, ACCURACY - delta)
        print(f"| {delta:g} | {len(rows)} | {k} | {k / len(rows):.3f} | {clopper(k, len(rows))} | {power:.3f} | "
              f"{k_all / len(rows):.3f} |")
    mean_n = sum(r["n"] for r in done.values()) / max(1, len(done))
    print(f"\nitems per pair: {mean_n:.0f}; {len(done)} comparisons")


if __name__ == "__main__":
    main()
