"""Benchmark: training throughput (examples/s) of Phi (ERM on r + b) and Phi_LA (ERM over three
environments + IRMv1 + the frozen probe's loss) with the MiniLM encoder-decoder on CPU, and the
overhead factor of LAREV over REV training per example.

Synthetic items with gold rationales; environments are built with fixed leakage terms (the answer
word masked / replaced) so that only training is timed; the probe is a copy of Phi with a frozen
encoder. One epoch each, batch 8 for Phi (the document's setting) and one example's three
environments per step for Phi_LA.

    python benchmarks/information_training.py --items 120
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=120)
    parser.add_argument("--evaluator", default="embedded-minilm-ed")
    args = parser.parse_args()

    import torch

    from reasonscope.data.synthetic import synthetic_items
    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.evaluator import load_evaluator
    from reasonscope.information.training import (
        LarevExample,
        TrainSettings,
        train_erm,
        train_larev,
        train_probe,
    )
    from reasonscope.information.variants import baseline_input, rationale_input

    torch.set_num_threads(2)
    items = synthetic_items(max(1, args.items // 3), seed=5)[: args.items]
    ys = [label_text(it) for it in items]
    bs = [rule_baseline(it) for it in items]
    inputs = [rationale_input(it.rationale, b) for it, b in zip(items, bs, strict=True)]
    masked = [b.replace(y, "[MASK]") for b, y in zip(bs, ys, strict=True)]
    flipped = [b.replace(y, "something") for b, y in zip(bs, ys, strict=True)]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        phi = load_evaluator(args.evaluator)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = train_erm(phi, inputs, ys, inputs[:8], ys[:8], TrainSettings(epochs=1), Path(tmp) / "phi", label="phi")
        phi_s = time.perf_counter() - t0
        psi = train_probe(phi, [baseline_input(m) for m in masked], ys, [baseline_input(m) for m in masked[:8]], ys[:8],
                          TrainSettings(epochs=1, batch_size=16), Path(tmp) / "probe")
        examples = [LarevExample([rationale_input(it.rationale, e) for e in (b, m, f)], baseline_input(m), y)
                    for it, b, m, f, y in zip(items, bs, masked, flipped, ys, strict=True)]
        t0 = time.perf_counter()
        _, la = train_larev(args.evaluator, examples, psi, inputs[:8], ys[:8], TrainSettings(epochs=1, batch_size=1),
                            Path(tmp) / "phi_la")
        la_s = time.perf_counter() - t0
    print(f"evaluator {args.evaluator}: load {load_s:.1f} s, {len(items)} training examples, 1 epoch each")
    print(f"{'model':8} {'examples/s (loop)':>18} {'s/example (wall)':>17}")
    print(f"{'Phi':8} {res.examples_per_s:>18.2f} {phi_s / len(items):>17.3f}")
    print(f"{'Phi_LA':8} {la.examples_per_s:>18.2f} {la_s / len(items):>17.3f}")
    print(f"LAREV / REV training cost per example: {res.examples_per_s / la.examples_per_s:.1f}x "
          f"(wall, incl. validation and saving: {(la_s / len(items)) / (phi_s / len(items)):.1f}x)")


if __name__ == "__main__":
    main()
