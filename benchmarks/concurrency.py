"""Benchmark: generation throughput against a local OpenAI-compatible server.

A fake server on 127.0.0.1 (``reasonscope.testing.FakeOpenAIServer``, in its own process) answers every request after a
fixed latency (default 100 ms, plus an optional token rate). A plan of N requests (default 2,000:
distinct questions, one sample each) goes through reasonscope's real path: the official openai SDK,
the retry wrapper, bounded concurrency and one committed store write per completion. For each
concurrency level the script prints wall time, throughput, the ideal time
(requests x latency / concurrency), the ratio to it, and reasonscope's own overhead per request
((wall - ideal) / requests). Target: within 1.2x of ideal at concurrency 64.

    python benchmarks/concurrency.py --requests 2000 --latency 0.1 --levels 1 8 64 256
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--tokens-per-s", type=float, default=None, help="server token rate (default: instant)")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 8, 64, 256])
    ap.add_argument("--max-requests-at-1", type=int, default=200,
                    help="requests used at concurrency 1 (the full plan would take requests x latency)")
    args = ap.parse_args()

    from reasonscope.types import Item

    items = [Item(id=f"q{i}", input=f"What is {i} plus 1?", target=i + 1, answer_type="number")
             for i in range(args.requests)]
    print(f"fake server latency {args.latency * 1000:.0f} ms, {args.requests} requests "
          f"(concurrency 1 uses {min(args.requests, args.max_requests_at_1)})")
    print(f"{'concurrency':>12}{'requests':>10}{'wall s':>10}{'req/s':>10}{'ideal s':>10}{'ratio':>8}"
          f"{'overhead ms/req':>17}")
    with tempfile.TemporaryDirectory() as tmpdir:
        port_file = Path(tmpdir) / "url"
        cmd = [sys.executable, "-m", "reasonscope.testing", "--latency", str(args.latency), "--port-file",
               str(port_file)] + (["--tokens-per-s", str(args.tokens_per_s)] if args.tokens_per_s else [])
        server = subprocess.Popen(cmd)  # its own process: the server's threads do not share our GIL
        try:
            for _ in range(300):
                if port_file.exists() and port_file.read_text():
                    break
                time.sleep(0.05)
            run_levels(args, items, port_file.read_text())
        finally:
            server.terminate()
            server.wait()


def measure(args, items, level: int, model_config: dict) -> None:
    """Send the plan's requests at one concurrency level through reasonscope's generation path and
    print one row."""
    from reasonscope.execution.calls import generate_pending
    from reasonscope.models.registry import create_model
    from reasonscope.pipeline.runner import plan_requests
    from reasonscope.plan import ModelConfig, parse_plan
    from reasonscope.storage.store import Store

    n = min(args.requests, args.max_requests_at_1) if level == 1 else args.requests
    cfg = ModelConfig(concurrency=level, max_tokens=16, **model_config)
    plan = parse_plan({"models": [cfg.model_dump()], "datasets": [{"name": "b", "format": "synthetic"}],
                       "families": {"behavior": {"samples": 1, "paraphrases": 0}}})
    model = create_model(cfg)
    planned = plan_requests(model, {"b": items[:n]}, plan)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp)
        t = time.perf_counter()
        calls, failed = asyncio.run(generate_pending(model, planned, store))
        wall = time.perf_counter() - t
        store.close()
    assert calls == n and failed == 0, (calls, failed)
    ideal = n * args.latency / level
    print(f"{level:>12}{n:>10}{wall:>10.2f}{n / wall:>10.1f}{ideal:>10.2f}{wall / ideal:>8.2f}"
          f"{(wall - ideal) / n * 1000:>17.2f}")


def run_levels(args, items, base_url: str) -> None:
    for level in args.levels:
        measure(args, items, level, {"spec": "openai-compatible/fake", "base_url": base_url, "timeout_s": 30})
    # the same plans through a mock model with the same latency: no HTTP, no SDK; what remains is
    # reasonscope's own cost (planning, retry wrapper, asyncio, one committed store write per request)
    print("same plan, mock/reasoner with the same latency (no HTTP, no openai SDK):")
    for level in args.levels:
        measure(args, items, level, {"spec": "mock/reasoner", "options": {"latency_s": args.latency}})


if __name__ == "__main__":
    main()
