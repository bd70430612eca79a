"""Benchmark: LAREV's integrated-gradients phase, one text per attribution call (the former path) vs
``--batch`` texts per call (:func:`reasonscope.information.leakage.leakage_attributions`), and a second
pass served from the attribution cache; side by side in one run, same evaluator, same texts, same
number of steps. Also checks that both paths give the same attributions.

Texts: rule baselines of e-SNLI pairs (``--data esnli_dev.csv.gz``) or, without data, of the built-in
synthetic items. The evaluator's weights do not change the cost, so the untrained MiniLM
encoder-decoder is used as Phi_base.

    python benchmarks/information_ig.py --data esnli_dev.csv.gz --items 64 --batch 16
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=None, help="esnli_dev.csv.gz; default: synthetic items")
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--evaluator", default="embedded-minilm-ed")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.evaluator import load_evaluator
    from reasonscope.information.ig_cache import AttributionCache
    from reasonscope.information.leakage import leakage_attributions, token_attributions
    from reasonscope.information.variants import baseline_input

    torch.set_num_threads(args.threads)
    if args.data:
        from reasonscope.config import DatasetConfig
        from reasonscope.data.loaders import load_dataset

        items = load_dataset(DatasetConfig(name="esnli", format="esnli", path=args.data, limit=args.items)).items
        source = Path(args.data).name
    else:
        from reasonscope.data.synthetic import synthetic_items

        items = synthetic_items(max(1, args.items // 3 + 1), seed=5)[: args.items]
        source = "synthetic"
    texts = [baseline_input(rule_baseline(it)) for it in items]
    targets = [label_text(it) for it in items]
    ev = load_evaluator(args.evaluator)

    t0 = time.perf_counter()
    single = [token_attributions(ev, t, y, n_steps=args.steps) for t, y in zip(texts, targets, strict=True)]
    per_item_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        cache = AttributionCache(Path(tmp) / "ig.sqlite")
        t0 = time.perf_counter()
        batched = leakage_attributions(ev, texts, targets, n_steps=args.steps, batch_size=args.batch, cache=cache,
                                       fingerprint="bench")
        batched_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        leakage_attributions(ev, texts, targets, n_steps=args.steps, batch_size=args.batch, cache=cache,
                             fingerprint="bench")
        cached_s = time.perf_counter() - t0
        cache.close()
    diff = max(abs(a - b) for (_, xs), (_, ys) in zip(single, batched, strict=True) for a, b in zip(xs, ys, strict=True))
    n = len(texts)
    mean_tokens = sum(len(o) for o, _ in single) / n
    print(f"{n} {source} baselines (mean {mean_tokens:.0f} tokens), {args.evaluator}, {args.steps} IG steps, "
          f"{args.threads} thread(s)")
    print(f"{'path':28} {'total s':>9} {'s/text':>8} {'speed-up':>9}")
    print(f"{'one text per call':28} {per_item_s:9.1f} {per_item_s / n:8.3f} {1.0:9.1f}x")
    print(f"{f'{args.batch} texts per call':28} {batched_s:9.1f} {batched_s / n:8.3f} {per_item_s / batched_s:9.1f}x")
    print(f"{'cached (second pass)':28} {cached_s:9.3f} {cached_s / n:8.4f} {per_item_s / max(cached_s, 1e-9):9.0f}x")
    print(f"largest |attribution difference| batched vs one by one: {diff:.2e}")
    print(f"projected for 2,000 baselines: one per call {per_item_s / n * 2000 / 60:.1f} min, batched "
          f"{batched_s / n * 2000 / 60:.1f} min")


if __name__ == "__main__":
    main()
