"""Benchmark: does REV (and LAREV) separate Gold e-SNLI explanations from Leaky, Gold-Leaky and Vacuous
ones on held-out pairs? The embedded MiniLM encoder-decoder on CPU, the family's own pipeline
(:func:`reasonscope.information.scoring.run_information`): rule baselines, the documents' sequence
log-likelihood (``--reduction sum``), 95% bootstrap CIs over test pairs.

Data: the e-SNLI validation split as distributed by its authors (``esnli_dev.csv.gz``, read by the
``esnli`` loader). The first ``--train`` pairs train the evaluators (10% of them are the validation
split for model selection); the ``--test`` pairs that follow, starting at the first premise not used in
training, are the held-out test items.

    python benchmarks/information_esnli.py --data esnli_dev.csv.gz --train 2000 --test 300 --epochs 2
    python benchmarks/information_esnli.py --data esnli_dev.csv.gz --method rev --method larev ...

The run folder (``--out``) keeps the trained models: a killed run resumes, a repeated one reuses them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def heldout_split(items: list, n_train: int, n_test: int) -> tuple[list, list]:
    """(training items, test items): the first ``n_train`` items, then the first ``n_test`` later items whose
    premise (``metadata["premise"]``) no training item has."""
    train = items[:n_train]
    seen = {it.metadata["premise"] for it in train}
    return train, [it for it in items[n_train:] if it.metadata["premise"] not in seen][:n_test]


def _ci(e: dict) -> str:
    return "n/a" if e["value"] is None else f"{e['value']:+.4f} [{e['low']:+.4f}, {e['high']:+.4f}]"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="esnli_dev.csv.gz (or .csv)")
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--epochs", type=int, default=2, help="epochs of Phi_base, Phi and the probe")
    parser.add_argument("--larev-epochs", type=int, default=2)
    parser.add_argument("--method", action="append", choices=["rev", "larev"], help="default: rev")
    parser.add_argument("--evaluator", default="embedded-minilm-ed")
    parser.add_argument("--reduction", default="sum", choices=["sum", "mean"])
    parser.add_argument("--lambda-irm", type=float, default=None, help="IRM weight (default: the family's)")
    parser.add_argument("--nli-relation", default="word", choices=["word", "phrase"],
                        help="how the rule baseline names the label: one verb (word) or a phrase")
    parser.add_argument("--leak-terms", default="any", choices=["any", "content"],
                        help="words that may be the leakage term: any (the thesis's rule) or content (no stop words)")
    parser.add_argument("--larev-init", default="phi", choices=["phi", "backbone"], help="what Phi_LA starts from")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a shared machine)")
    parser.add_argument("--out", default="runs/esnli-benchmark")
    args = parser.parse_args()

    import torch
    from rich.console import Console

    from reasonscope.data.loaders import load_dataset
    from reasonscope.information.scoring import run_information
    from reasonscope.plan import DatasetConfig, InformationConfig, StatsConfig
    from reasonscope.storage.store import Store

    torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    dataset = DatasetConfig(name="esnli-dev", format="esnli", path=args.data)
    items = [it for it in load_dataset(dataset).items if it.rationale]
    train, test = heldout_split(items, args.train, args.test)
    methods = args.method or ["rev"]
    cfg = InformationConfig(train=dataset, test=dataset.model_copy(update={"name": "esnli-heldout"}), methods=methods,
                            evaluator=args.evaluator, reduction=args.reduction, epochs=args.epochs,
                            probe_epochs=args.epochs, larev_epochs=args.larev_epochs, lr=args.lr,
                            nli_relation=args.nli_relation, lambda_irm=args.lambda_irm,
                            leak_terms=args.leak_terms, larev_init=args.larev_init)
    out = Path(args.out)
    store = Store(out)
    run_id = store.start_run(kind="benchmark", config={"information": cfg.model_dump(mode="json"),
                                                       "argv": vars(args)}, seed=0)
    console = Console(stderr=True)
    t = run_information(store, run_id, cfg, StatsConfig(), train, test, out, seed=0, console=console)
    store.finish_run(run_id)
    wall = time.perf_counter() - t_start
    (out / "information.json").write_text(json.dumps(t, indent=1, default=str))

    print(f"e-SNLI: {t['n_train']} train / {t['n_val']} validation / {t['n_test']} held-out test pairs; evaluator "
          f"{t['evaluator']}; {args.epochs} epochs; baseline {t['baseline']}; score = log p(y | r, b) - log p(y | b), "
          f"{t['reduction']} over y's tokens; 95% bootstrap CIs")
    b = t["baseline_only"]
    print(f"baseline-only (Phi_base on b alone, held-out {b['split']}): accuracy {b['accuracy']:.3f}, "
          f"mean p(y | b) {b['mean_p_label']:.4f}, n={b['n']}")
    for m in t["methods"]:
        print(f"\n{m.upper()} absolute score per variant ({t['reduction']}):")
        for v, e in t["absolute"][m].items():
            print(f"  {v:12} {_ci(e)}   (accuracy {t['accuracy'][m][v]:.3f})")
        print(f"{m.upper()} separations (paired):")
        for pair, e in t["separation"][m].items():
            p = "" if e.get("p_value") is None else f"   p={e['p_value']:.3g}"
            print(f"  {pair:18} {_ci(e)}{p}")
    if t.get("penalties"):
        print(f"\npenalties: {t['penalties']}")
    print(f"truncated inputs: {t['truncation']['rationale_truncated']} of {t['truncation']['inputs']}")
    print("\ntraining:")
    for name, info in t["training"].items():
        if isinstance(info, dict) and "best_val_loss" in info:
            eps = info.get("examples_per_s")
            print(f"  {name:9} best epoch {info.get('best_epoch')}, val loss {info['best_val_loss']:.4f}, "
                  f"{eps:.2f} examples/s" if eps else f"  {name:9} best val loss {info['best_val_loss']:.4f}")
    if t["warnings"]:
        print("\nwarnings:")
        for w in t["warnings"]:
            print("  - " + w)
    print(f"\nwall time {wall / 60:.1f} min ({args.threads} threads)")


if __name__ == "__main__":
    main()
