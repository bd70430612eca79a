"""Benchmark: does bfloat16 training (``mixed_precision: bf16``) keep the trained evaluators' numbers?

REV and LAREV on e-SNLI pairs through the family's own pipeline
(:func:`reasonscope.information.scoring.run_information`), the same data, seeds and settings, once with
``mixed_precision: "no"`` (float32) and once with ``"bf16"`` (Accelerate's ``torch.autocast`` in bfloat16 for the
training steps of Phi_base, Phi and the probe; Phi_LA, scoring and integrated gradients stay float32). One run per
precision and seed:

    python benchmarks/information_precision.py run --data esnli_dev.csv.gz --precision no --seed 0
    python benchmarks/information_precision.py run --data esnli_dev.csv.gz --precision bf16 --seed 0
    python benchmarks/information_precision.py compare --seeds 0 1

``compare`` prints, for every method and variant, the mean score and its interval under each precision, the
difference bf16 - float32 (same seed) against the seed-to-seed spread of float32 itself (the largest
difference of a mean between two float32 seeds), the per-item correlation of the scores (bf16 against float32
on one seed; float32 seed against float32 seed for reference), the separations, the accuracies, the trained
models' best validation losses (the probe's included) and how many items got the same leakage term (the word
integrated gradients on Phi_base picks) under both precisions.

The first ``--train`` pairs train the evaluators (10% of them the validation split), the ``--test`` pairs that
follow, from the first premise not used in training, are scored. Each run's folder (``--out``/<precision>-s<seed>)
keeps its models and ``information.json``; a repeated run reuses them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

PRECISIONS = ("no", "bf16")


def run(args: argparse.Namespace) -> None:
    """One run of the information family under ``args.precision`` and ``args.seed``."""
    import torch
    from rich.console import Console

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from information_esnli import heldout_split

    from reasonscope.data.loaders import load_dataset
    from reasonscope.information.scoring import run_information
    from reasonscope.plan import DatasetConfig, InformationConfig, StatsConfig
    from reasonscope.storage.store import Store

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    dataset = DatasetConfig(name="esnli-dev", format="esnli", path=args.data)
    items = [it for it in load_dataset(dataset).items if it.rationale]
    train, test = heldout_split(items, args.train, args.test)
    cfg = InformationConfig(train=dataset, test=dataset.model_copy(update={"name": "esnli-heldout"}),
                            methods=["rev", "larev"], evaluator=args.evaluator, epochs=args.epochs,
                            probe_epochs=args.epochs, larev_epochs=args.larev_epochs, ig_steps=args.ig_steps,
                            mixed_precision=args.precision)
    out = Path(args.out) / f"{args.precision}-s{args.seed}"
    store = Store(out)
    run_id = store.start_run(kind="benchmark", config={"information": cfg.model_dump(mode="json"),
                                                       "argv": vars(args)}, seed=args.seed)
    t = run_information(store, run_id, cfg, StatsConfig(), train, test, out, seed=args.seed,
                        console=Console(stderr=True))
    store.finish_run(run_id)
    t["wall_s"] = time.perf_counter() - t0
    (out / "information.json").write_text(json.dumps(t, indent=1, default=str))
    print(f"{args.precision} seed {args.seed}: {t['n_train']} / {t['n_val']} / {t['n_test']} pairs, "
          f"{t['wall_s'] / 60:.1f} min")


def pearson(x: list[float], y: list[float]) -> float:
    """Pearson's r of two equal-length lists (nan when either is constant).

    >>> round(pearson([1, 2, 3], [2, 4, 7]), 4)
    0.9934
    """
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else float("nan")


def _ci(e: dict) -> str:
    return "n/a" if e.get("value") is None else f"{e['value']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def compare(args: argparse.Namespace) -> None:
    """The agreement tables of the finished runs in ``args.out`` (see the module docstring)."""
    runs = {(p, s): json.loads((Path(args.out) / f"{p}-s{s}" / "information.json").read_text())
            for p in PRECISIONS for s in args.seeds
            if (Path(args.out) / f"{p}-s{s}" / "information.json").is_file()}
    seeds = [s for s in args.seeds if all((p, s) in runs for p in PRECISIONS)]
    if not seeds:
        raise SystemExit(f"no seed has both runs in {args.out}")
    any_run = runs[("no", seeds[0])]
    print(f"e-SNLI: {any_run['n_train']} train / {any_run['n_val']} validation / {any_run['n_test']} test pairs; "
          f"seeds {seeds}; wall minutes " + ", ".join(f"{p} s{s} {runs[(p, s)].get('wall_s', 0) / 60:.1f}"
                                                     for p in PRECISIONS for s in seeds))
    f32_seeds = [s for s in args.seeds if ("no", s) in runs]

    def spread(get) -> float:  # the largest difference between two float32 seeds
        vals = [get(runs[("no", s)]) for s in f32_seeds]
        vals = [v for v in vals if v is not None]
        return max(vals) - min(vals) if len(vals) > 1 else float("nan")

    rows = []
    for m in any_run["methods"]:
        for kind in ("absolute", "separation"):
            for v in any_run[kind][m]:
                def get(t, m=m, kind=kind, v=v):
                    return t[kind][m][v].get("value")
                cells = [m, v]
                diffs = []
                for s in seeds:
                    a, b = runs[("no", s)][kind][m][v], runs[("bf16", s)][kind][m][v]
                    cells += [_ci(a), _ci(b)]
                    if a.get("value") is not None and b.get("value") is not None:
                        diffs.append(b["value"] - a["value"])
                sp = spread(get)
                worst = max(diffs, key=abs) if diffs else float("nan")
                cells += [f"{worst:+.3f}", f"{sp:.3f}", "yes" if abs(worst) < sp / 2 else "no"]
                rows.append(cells)
    header = ["method", "variant / separation"]
    for s in seeds:
        header += [f"float32 s{s}", f"bf16 s{s}"]
    header += ["largest bf16 - float32", "float32 seed spread", "within half the spread"]
    print("\nMeans and 95% intervals (pairs clustered by premise):")
    print(_table(header, rows))

    rows = []
    for m in any_run["methods"]:
        for v in any_run["per_item"][m]:
            cells = [m, v]
            for s in seeds:
                a, b = runs[("no", s)]["per_item"][m][v], runs[("bf16", s)]["per_item"][m][v]
                ids = sorted(set(a) & set(b))
                cells.append(f"{pearson([a[i] for i in ids], [b[i] for i in ids]):.3f}")
            if len(f32_seeds) > 1:
                a, b = runs[("no", f32_seeds[0])]["per_item"][m][v], runs[("no", f32_seeds[1])]["per_item"][m][v]
                ids = sorted(set(a) & set(b))
                cells.append(f"{pearson([a[i] for i in ids], [b[i] for i in ids]):.3f}")
            rows.append(cells)
    header = ["method", "variant"] + [f"r, bf16 vs float32, s{s}" for s in seeds]
    if len(f32_seeds) > 1:
        header.append(f"r, float32 s{f32_seeds[0]} vs s{f32_seeds[1]}")
    print("\nPer-item correlation of the scores:")
    print(_table(header, rows))

    rows = []
    for m in any_run["methods"]:
        for v in any_run["accuracy"][m]:
            rows.append([m, v] + [f"{runs[(p, s)]['accuracy'][m][v]:.3f}" for s in seeds for p in PRECISIONS])
    rows.append(["Phi_base", "b alone"] + [f"{runs[(p, s)]['baseline_only']['accuracy']:.3f}"
                                            for s in seeds for p in PRECISIONS])
    for name in ("phi_base", "phi", "probe", "phi_la"):
        rows.append([name, "best validation loss"]
                    + [f"{runs[(p, s)]['training'][name]['best_val_loss']:.4f}" for s in seeds for p in PRECISIONS])
    print("\nAccuracies (label read by log-likelihood) and the models' best validation losses:")
    print(_table(["model", "what"] + [f"{'float32' if p == 'no' else p} s{s}" for s in seeds for p in PRECISIONS],
                 rows))

    print("\nLeakage terms (integrated gradients on Phi_base; the environments of the first 200 training pairs):")
    for s in seeds:
        a = {e["item"]: e.get("env_mask") for e in runs[("no", s)]["environments"]}
        b = {e["item"]: e.get("env_mask") for e in runs[("bf16", s)]["environments"]}
        same = sum(a[i] == b.get(i) for i in a)
        print(f"  seed {s}: the same masked baseline under both precisions for {same} of {len(a)} pairs")
    if len(f32_seeds) > 1:
        a = {e["item"]: e.get("env_mask") for e in runs[("no", f32_seeds[0])]["environments"]}
        b = {e["item"]: e.get("env_mask") for e in runs[("no", f32_seeds[1])]["environments"]}
        print(f"  float32 seed {f32_seeds[0]} vs seed {f32_seeds[1]}: the same for "
              f"{sum(a[i] == b.get(i) for i in a)} of {len(a)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="one run under one precision and seed")
    one.add_argument("--data", required=True, help="esnli_dev.csv.gz (or .csv)")
    one.add_argument("--precision", choices=PRECISIONS, required=True)
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--train", type=int, default=300)
    one.add_argument("--test", type=int, default=150)
    one.add_argument("--epochs", type=int, default=2, help="epochs of Phi_base, Phi and the probe")
    one.add_argument("--larev-epochs", type=int, default=1)
    one.add_argument("--ig-steps", type=int, default=20)
    one.add_argument("--evaluator", default="embedded-minilm-ed")
    one.add_argument("--threads", type=int, default=2)
    one.add_argument("--out", default="runs/information-precision")
    cmp = sub.add_parser("compare", help="the agreement tables of the finished runs")
    cmp.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    cmp.add_argument("--out", default="runs/information-precision")
    args = parser.parse_args(argv)
    (run if args.command == "run" else compare)(args)


if __name__ == "__main__":
    main()
