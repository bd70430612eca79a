"""Batch size of local generation on the demo's own requests (embedded SmolLM2, CPU), side by side.

The demo plan's 84 requests (72 behavior generations of 18 synthetic items, 12 constrained evidence
predictions), generated through the provider exactly as a run sends them, once per batch size in
one process. A batch decodes until its longest row stops, so larger batches waste some steps on
finished rows but share every decoding step's fixed cost (weights read once per step, Python
overhead) among more rows; on 2 CPU cores that sharing wins. Prints wall seconds, new tokens,
rows cut at ``max_tokens`` and the ratio to the first batch size. Nothing is stored.

Run: ``nice -n 10 python benchmarks/generation_batching.py [--sizes 12 42 84]``.
"""

from __future__ import annotations

import argparse
import asyncio
import time


def demo_requests():
    from reasonscope.data import load_dataset
    from reasonscope.demo import demo_plan
    from reasonscope.models.registry import create_model
    from reasonscope.pipeline.runner import Runner, plan_requests
    from reasonscope.plan import Plan

    plan = Plan.model_validate(demo_plan(output_dir="/tmp/unused-demo-benchmark"))
    model = create_model(plan.models[0])
    runner = Runner(plan, show_progress=False)
    datasets = {cfg.name: load_dataset(cfg, seed=plan.experiment.seed).items for cfg in plan.datasets}
    planned = plan_requests(model, datasets, plan)
    for inputs in runner.prepare_families(datasets):  # the evidence family's own requests
        planned += inputs.requests(model, plan.experiment.seed)
    return model, [p.request for p in planned]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 42, 84])
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    model, requests = demo_requests()
    model.load()
    asyncio.run(model.generate(requests[:2]))  # warm-up
    print(f"{len(requests)} requests of the demo plan, SmolLM2-135M, max_tokens {requests[0].max_tokens}")
    print(f"{'batch size':>10} {'wall s':>8} {'new tokens':>11} {'cut at max':>11} {'ratio':>6}")
    base = None
    for size in args.sizes:
        start = time.perf_counter()
        outs = []
        for i in range(0, len(requests), size):
            outs += asyncio.run(model.generate(requests[i:i + size]))
        wall = time.perf_counter() - start
        base = base or wall
        tokens = sum(o.completion_tokens or 0 for o in outs)
        cut = sum(o.finish_reason == "length" for o in outs)
        print(f"{size:10d} {wall:8.1f} {tokens:11d} {cut:11d} {base / wall:5.2f}x")


if __name__ == "__main__":
    main()
