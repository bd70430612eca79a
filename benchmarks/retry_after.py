"""Benchmark: retrying a rate-limited request, reasonscope's retry beside the openai SDK's own retry.

A local OpenAI-compatible server (``reasonscope.testing.FakeOpenAIServer``) answers 429 with
``Retry-After: WAIT`` to any request that arrives less than WAIT seconds after the last 429 it sent
(a server that punishes early retries), and answers normally otherwise. Each trial sends one request;
the script prints, per client, the share of trials answered, the mean attempts (requests on the wire)
and the mean seconds, and reasonscope's seconds as a ratio of the SDK's.

    python benchmarks/retry_after.py --trials 8 --wait 2
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time


class Cooldown:
    def __init__(self, wait_s: float):
        self.wait_s = wait_s
        self.last: float | None = None
        self.lock = threading.Lock()

    def __call__(self, n: int, body: dict):
        with self.lock:
            now = time.monotonic()
            if self.last is None or now - self.last < self.wait_s:
                self.last = now
                return {"status": 429, "headers": {"Retry-After": f"{self.wait_s:g}"}}
            return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--wait", type=float, default=2.0, help="the server's Retry-After, in seconds")
    args = ap.parse_args()

    import openai

    from reasonscope.models.base import GenerationRequest
    from reasonscope.models.registry import create_model
    from reasonscope.plan import ModelConfig
    from reasonscope.testing import FakeOpenAIServer

    messages = [{"role": "user", "content": "What is 6 x 7?"}]
    results: dict[str, list[tuple[bool, int, float]]] = {"reasonscope (defaults)": [], "openai SDK (max_retries=4)": []}
    for _ in range(args.trials):
        for label in results:
            with FakeOpenAIServer(fault_for=Cooldown(args.wait)) as srv:
                t = time.perf_counter()
                if label.startswith("reasonscope"):
                    model = create_model(ModelConfig(spec="openai-compatible/bench", base_url=srv.base_url))

                    async def go(model=model):
                        try:
                            return await model.generate([GenerationRequest(messages=messages, max_tokens=8,
                                                                           temperature=0.0)])
                        finally:
                            await model.aclose()

                    [c] = asyncio.run(go())
                    ok = c.error is None
                else:
                    client = openai.OpenAI(base_url=srv.base_url, api_key="EMPTY", max_retries=4)
                    try:
                        client.chat.completions.create(model="bench", messages=messages, max_tokens=8)
                        ok = True
                    except openai.APIError:
                        ok = False
                results[label].append((ok, srv.count, time.perf_counter() - t))
    means = {}
    print(f"server: 429 with Retry-After: {args.wait:g} to any request within {args.wait:g} s of its last 429; "
          f"{args.trials} trials")
    for label, rows in results.items():
        means[label] = statistics.mean(r[2] for r in rows)
        print(f"{label:28} answered {sum(r[0] for r in rows)}/{len(rows)}  attempts {statistics.mean(r[1] for r in rows):.1f}"
              f"  seconds {means[label]:.2f}")
    a, b = means.values()
    print(f"reasonscope seconds / SDK seconds: {a / b:.2f}")


if __name__ == "__main__":
    main()
