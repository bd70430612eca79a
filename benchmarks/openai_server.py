"""Benchmark: the openai-compatible provider against a real OpenAI-compatible server on this machine.

llama.cpp's server (``python -m llama_cpp.server``, ``pip install 'reasonscope[server]'``) serves the embedded
SmolLM2-135M-Instruct GGUF (Q4_1) on 127.0.0.1 in its own process. At each concurrency level the same N
distinct questions (greedy, seeded, ``max_tokens`` M) are sent two ways, side by side in one run:

* **reasonscope**: a behaviour plan's requests through reasonscope's real path
  (:func:`reasonscope.execution.calls.generate_pending`: the openai SDK client of the ``openai-compatible`` provider,
  the retry wrapper, bounded concurrency and one committed store write per completion, into a fresh store);
* **bare**: the same requests (messages, ``max_tokens``, temperature, seed) through the ``openai`` SDK alone (``AsyncOpenAI``, ``max_retries=0``, an
  ``asyncio.Semaphore`` of the same size), nothing stored.

Each row prints wall time, requests/s, completion tokens/s (from the server's ``usage``), the throughput
ratio to concurrency 1 of the same path, and reasonscope / bare at the same level (1.0 = no cost; < 1:
reasonscope is slower). The order of the two paths alternates between levels so that neither always runs
on a warmer server.

    python benchmarks/openai_server.py --requests 24 --max-tokens 32 --levels 1 2 4 8 16
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measured:
    wall_s: float
    requests: int
    tokens: int

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s

    @property
    def tps(self) -> float:
        return self.tokens / self.wall_s


def questions(n: int) -> list[str]:
    return [f"What is {17 + 3 * i} plus {29 + 7 * i}? Explain briefly." for i in range(n)]


def plan(base_url: str, prompts: list[str], level: int, max_tokens: int):
    """(model, planned requests): the prompts as a behaviour plan's requests (reasonscope's prompt template
    around each question) for the ``openai-compatible`` provider at ``level`` in flight."""
    from reasonscope.llama_server import MODEL_ALIAS
    from reasonscope.models.registry import create_model
    from reasonscope.pipeline.runner import plan_requests
    from reasonscope.plan import ModelConfig, parse_plan
    from reasonscope.types import Item

    items = [Item(id=f"q{i}", input=p, target=0, answer_type="number") for i, p in enumerate(prompts)]
    cfg = ModelConfig(spec=f"openai-compatible/{MODEL_ALIAS}", base_url=base_url, concurrency=level,
                      max_tokens=max_tokens, temperature=0.0, timeout_s=300, max_retries=0)
    parsed = parse_plan({"models": [cfg.model_dump()], "datasets": [{"name": "b", "format": "synthetic"}],
                         "families": {"behavior": {"samples": 1, "paraphrases": 0}}})
    model = create_model(cfg)
    return model, plan_requests(model, {"b": items}, parsed)


def through_reasonscope(base_url: str, prompts: list[str], level: int, max_tokens: int) -> Measured:
    """The planned requests through generate_pending (retry wrapper, store writes) into a fresh store."""
    from reasonscope.execution.calls import generate_pending
    from reasonscope.storage.store import Store

    model, planned = plan(base_url, prompts, level, max_tokens)

    async def go():
        try:
            return await generate_pending(model, planned, store)
        finally:
            await model.aclose()

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp)
        t = time.perf_counter()
        sent = asyncio.run(go())
        wall = time.perf_counter() - t
        tokens = sum(store.get_completion(p.key).completion_tokens or 0 for p in planned)
        store.close()
    assert sent.calls == len(prompts) and sent.failed == 0 and sent.pending == 0, sent
    return Measured(wall, len(prompts), tokens)


def through_bare_sdk(base_url: str, prompts: list[str], level: int, max_tokens: int) -> Measured:
    """The same chat requests (the same messages, max_tokens, temperature and seed) through the openai SDK
    alone, ``level`` in flight, nothing stored."""
    import openai

    from reasonscope.llama_server import MODEL_ALIAS

    _, planned = plan(base_url, prompts, level, max_tokens)
    requests = [p.request for p in planned]

    async def go() -> int:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=300)
        sem = asyncio.Semaphore(level)

        async def one(req) -> int:
            async with sem:
                resp = await client.chat.completions.create(
                    model=MODEL_ALIAS, messages=req.messages, max_tokens=req.max_tokens,
                    temperature=req.temperature, seed=req.seed)
            return resp.usage.completion_tokens

        try:
            return sum(await asyncio.gather(*(one(r) for r in requests)))
        finally:
            await client.close()

    t = time.perf_counter()
    tokens = asyncio.run(go())
    return Measured(time.perf_counter() - t, len(prompts), tokens)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=24, help="requests per level and path (N)")
    ap.add_argument("--max-tokens", type=int, default=32, help="max_tokens of every request (M)")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--n-threads", type=int, default=None, help="the server's CPU threads (default: llama.cpp's)")
    args = ap.parse_args()

    from reasonscope.llama_server import LlamaCppServer, llama_cpp_missing

    missing = llama_cpp_missing()
    if missing:
        raise SystemExit(f"cannot start llama.cpp's server: {missing}")
    prompts = questions(args.requests)
    with tempfile.TemporaryDirectory() as tmp, \
            LlamaCppServer(Path(tmp) / "server.log", n_threads=args.n_threads) as server:
        through_bare_sdk(server.base_url, prompts[:2], 1, args.max_tokens)  # warm-up: first decode, page cache
        print(f"llama.cpp server (llama_cpp.server), SmolLM2-135M-Instruct Q4_1, {args.requests} requests per "
              f"level and path, max_tokens {args.max_tokens}, temperature 0")
        print(f"{'concurrency':>11} | {'reasonscope req/s':>17}{'tok/s':>8}{'x c=1':>7} | "
              f"{'bare req/s':>10}{'tok/s':>8}{'x c=1':>7} | {'rs/bare':>7}")
        first: dict[str, Measured] = {}
        for i, level in enumerate(args.levels):
            paths = [("reasonscope", through_reasonscope), ("bare", through_bare_sdk)]
            got = {name: fn(server.base_url, prompts, level, args.max_tokens)
                   for name, fn in (paths if i % 2 == 0 else paths[::-1])}
            for name in got:
                first.setdefault(name, got[name])
            rs, bare = got["reasonscope"], got["bare"]
            print(f"{level:>11} | {rs.rps:>17.2f}{rs.tps:>8.1f}{rs.rps / first['reasonscope'].rps:>7.2f} | "
                  f"{bare.rps:>10.2f}{bare.tps:>8.1f}{bare.rps / first['bare'].rps:>7.2f} | {rs.rps / bare.rps:>7.2f}")


if __name__ == "__main__":
    main()
