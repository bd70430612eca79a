"""Benchmark: LAREV's integrated-gradients phase, one text per attribution call (the former path) vs
``--batch`` texts per call (:func:`reasonscope.information.leakage.leakage_attributions`), and a second
pass served from the attribution cache; side by side in one run, same evaluator, same texts, same
number of steps. Also checks that both paths give the same attributions. Costs are reported as CPU
seconds of this process (``time.process_time``, what the work costs whatever else runs on the machine)
and as wall seconds.

Texts: rule baselines of e-SNLI pairs (``--data esnli_dev.csv.gz``) or, without data, of the built-in
synthetic items. The evaluator's weights do not change the cost, so the untrained MiniLM
encoder-decoder is used as Phi_base.

    python benchmarks/information_ig.py --data esnli_dev.csv.gz --items 16 --batch 4 --threads 2 --profile
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
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--evaluator", default="embedded-minilm-ed")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="also profile one attribution call (torch.profiler): "
                        "where its time goes, by operator and by part of the model")
    args = parser.parse_args()

    import torch

    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.evaluator import load_evaluator
    from reasonscope.information.ig_cache import AttributionCache
    from reasonscope.information.leakage import leakage_attributions, token_attributions
    from reasonscope.information.variants import baseline_input
    from reasonscope.storage.store import Store

    torch.set_num_threads(args.threads)
    if args.data:
        from reasonscope.data.loaders import load_dataset
        from reasonscope.plan import DatasetConfig

        items = load_dataset(DatasetConfig(name="esnli", format="esnli", path=args.data, limit=args.items)).items
        source = Path(args.data).name
    else:
        from reasonscope.data.synthetic import synthetic_items

        items = synthetic_items(max(1, args.items // 3 + 1), seed=5)[: args.items]
        source = "synthetic"
    texts = [baseline_input(rule_baseline(it)) for it in items]
    targets = [label_text(it) for it in items]
    ev = load_evaluator(args.evaluator)

    def timed(fn):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        return out, time.process_time() - c0, time.perf_counter() - t0

    single, single_cpu, single_wall = timed(lambda: [token_attributions(ev, t, y, n_steps=args.steps)
                                                     for t, y in zip(texts, targets, strict=True)])
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        cache = AttributionCache(store, args.evaluator, args.steps)
        run = lambda: leakage_attributions(ev, texts, targets, n_steps=args.steps,  # noqa: E731
                                           batch_size=args.batch, cache=cache)
        batched, batched_cpu, batched_wall = timed(run)
        _, cached_cpu, cached_wall = timed(run)
        store.close()
    diff = max(abs(a - b) for (_, xs), (_, ys) in zip(single, batched, strict=True) for a, b in zip(xs, ys, strict=True))
    n = len(texts)
    mean_tokens = sum(len(o) for o, _ in single) / n
    print(f"{n} {source} baselines (mean {mean_tokens:.0f} tokens), {args.evaluator}, {args.steps} IG steps, "
          f"{args.threads} thread(s)")
    print(f"{'path':24} {'CPU s':>8} {'CPU s/text':>11} {'speed-up':>9} {'wall s':>8}")
    for name, cpu, wall in (("one text per call", single_cpu, single_wall),
                            (f"{args.batch} texts per call", batched_cpu, batched_wall),
                            ("cached (second pass)", cached_cpu, cached_wall)):
        print(f"{name:24} {cpu:8.2f} {cpu / n:11.4f} {single_cpu / max(cpu, 1e-9):8.1f}x {wall:8.1f}")
    print(f"largest |attribution difference| batched vs one by one: {diff:.2e}")
    print(f"projected CPU for 2,000 baselines: one per call {single_cpu / n * 2000 / 60:.1f} min, batched "
          f"{batched_cpu / n * 2000 / 60:.1f} min")
    if args.profile:
        profile_call(ev, texts[: args.batch], targets[: args.batch], args.steps)


def profile_call(ev, texts, targets, steps) -> None:
    """Profile one attribution call: the share of its CPU time in the encoder, the decoder (with the output
    projection) and captum's own work, forward and backward, and the top operators."""
    from torch.profiler import ProfilerActivity, profile

    from reasonscope.information.leakage import batch_token_attributions

    model = ev.model
    parts = {"encoder": model.get_encoder(), "decoder": model.get_decoder()}
    spans: dict[str, float] = {name: 0.0 for name in parts}

    def timer(name):
        start = {}

        def pre(module, args):
            start["t"] = time.perf_counter()

        def post(module, args, out):
            spans[name] += time.perf_counter() - start["t"]
        return pre, post

    hooks = []
    for name, module in parts.items():
        pre, post = timer(name)
        hooks += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        batch_token_attributions(ev, texts, targets, n_steps=steps)
    total = time.perf_counter() - t0
    for h in hooks:
        h.remove()
    forward = sum(spans.values())
    print(f"\none call, {len(texts)} baselines x {steps} steps ({len(texts) * steps} rows), wall {total:.2f} s "
          f"(profiled): forward of the encoder {spans['encoder'] / total:.0%}, of the decoder and output "
          f"projection {spans['decoder'] / total:.0%}; backward and captum's own work {1 - forward / total:.0%}")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
