"""Benchmark: the embedded SmolLM2's generation and label log-probabilities on each runtime (torch, llama.cpp),
through reasonscope's provider and called bare, side by side in one invocation, with the agreement with torch.

* **Generation**: the demo plan's free-text requests (as ``generation_vs_bare.py`` builds them), greedy
  (temperature 0), ``--max-tokens`` new tokens at most. torch provider: ``SmolLM2Model.generate`` with
  ``runtime: torch`` in batches of ``--batch``; torch bare: the same prompts through ``model.generate`` in the
  same batches; llama.cpp provider: ``SmolLM2Model.generate`` with ``runtime: llama-cpp`` on the float32 GGUF
  file (``--parallel`` sequences decoded together, default ``--batch``); llama.cpp bare:
  ``Llama.create_completion`` of each prompt string alone on the same file (temperature 0, top-k 1).
  Figure: new tokens per second.
* **Label log-probabilities**: the LLM-as-NLI judge's prompt (the demo's LS) for ``--nli-pairs`` step pairs,
  the three labels as continuations. Providers: ``logprobs_sync``; torch bare: one padded batch of prompt +
  label rows; llama.cpp bare: ``Llama.eval`` of each prompt + label with ``logits_all`` and the log-softmax of
  the scores. Figure: prompts per second.
* **Agreement with torch** (the reference): same text (n/N), same extracted answer (n/N, reasonscope's answer
  extraction with the item's answer type), same most likely label (n/N) and the largest |log-probability
  difference| in nats.

Each timed piece runs twice (order A B B A over providers and bare); the faster run counts.

    python benchmarks/generation_runtimes.py --requests 32 --batch 16 --max-tokens 160
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generation_vs_bare import bare_generate, bare_logprobs, best_of  # noqa: E402 - the scripts' folder is put on the path first


def demo_planned(max_tokens: int):
    """The demo plan's free-text requests (greedy, ``max_tokens``) and each one's item (for answer extraction)."""
    from reasonscope.data import load_dataset
    from reasonscope.demo import demo_plan
    from reasonscope.models.registry import create_model
    from reasonscope.pipeline.runner import plan_requests
    from reasonscope.plan import Plan

    plan = Plan.model_validate(demo_plan(output_dir="/tmp/unused-demo-benchmark"))
    model = create_model(plan.models[0].model_copy(update={"runtime": "torch"}))
    datasets = {cfg.name: load_dataset(cfg, seed=plan.experiment.seed).items for cfg in plan.datasets}
    planned = [p for p in plan_requests(model, datasets, plan) if p.request.structured is None]
    requests = [dataclasses.replace(p.request, temperature=0.0, top_p=None, max_tokens=max_tokens) for p in planned]
    return plan, requests, [p.item for p in planned]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16, help="torch batch size (the demo uses 42)")
    parser.add_argument("--parallel", type=int, default=None, help="llama.cpp sequences decoded together")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--nli-pairs", type=int, default=24)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import numpy as np
    import torch
    from llama_cpp import Llama

    from reasonscope.models.llama_cpp_runtime import whole_sequence_logprobs
    from reasonscope.models.registry import create_model
    from reasonscope.models.smollm2 import float32_gguf_path
    from reasonscope.scorers.nli import NLI_LABELS, judge_prompt
    from reasonscope.text.answers import extract_answer

    torch.set_num_threads(args.threads)
    plan, requests, items = demo_planned(args.max_tokens)
    requests, items = requests[:args.requests], items[:args.requests]
    base = plan.models[0]
    tm = create_model(base.model_copy(update={"runtime": "torch", "batch_size": args.batch}))
    lm = create_model(base.model_copy(update={"runtime": "llama-cpp", "batch_size": args.batch, "options": {
        "parallel": args.parallel or args.batch}}))
    tm.load()
    rt = lm.llama()
    bare = Llama(str(float32_gguf_path()), n_ctx=2048, n_threads=args.threads, n_threads_batch=args.threads,
                 logits_all=True, verbose=False)
    batches = [requests[i:i + args.batch] for i in range(0, len(requests), args.batch)]

    def provider(model):
        def run():
            t0 = time.perf_counter()
            done = [c for b in batches for c in asyncio.run(model.generate(b))]
            return time.perf_counter() - t0, ([c.text for c in done], sum(c.completion_tokens for c in done))
        return run

    def torch_bare():
        return bare_generate(tm, batches, args.max_tokens)

    prompts_text = [tm.prompt_text(r.messages) for r in requests]

    def llama_bare():
        texts, tokens = [], 0
        t0 = time.perf_counter()
        for p in prompts_text:
            out = bare.create_completion(p, max_tokens=args.max_tokens, temperature=0.0, top_k=1)
            texts.append(out["choices"][0]["text"])
            tokens += out["usage"]["completion_tokens"]
        return time.perf_counter() - t0, (texts, tokens)

    gen = best_of("ABCDDCBA", {"A": provider(tm), "B": torch_bare, "C": provider(lm), "D": llama_bare})

    steps = [(f"Ana has {n} apples and buys {n + 3} more.", f"So Ana has {2 * n + 3} apples now.")
             for n in range(args.nli_pairs)]
    prompts = [tm.prompt_text([{"role": "user", "content": judge_prompt(p, h)}]) for p, h in steps]
    conts = [" " + lab for lab in NLI_LABELS]

    def provider_lp(model):
        def run():
            t0 = time.perf_counter()
            out = [model.logprobs_sync(p, conts) for p in prompts]
            return time.perf_counter() - t0, out
        return run

    def torch_bare_lp():
        return bare_logprobs(tm, prompts, conts)

    def llama_bare_lp():
        out = []
        t0 = time.perf_counter()
        for p in prompts:
            out.append(whole_sequence_logprobs(bare, rt.tokenize(p), [rt.tokenize(c) for c in conts]))
        return time.perf_counter() - t0, out

    lp = best_of("ABCDDCBA", {"A": provider_lp(tm), "B": torch_bare_lp, "C": provider_lp(lm), "D": llama_bare_lp})

    ref_texts = gen["A"][1][0]

    def answers(texts):
        return [extract_answer(t, it.answer_type, choices=it.choices).answer for t, it in zip(texts, items, strict=True)]

    ref_answers = answers(ref_texts)
    ref_lp = lp["A"][1]
    n, m = len(requests), len(prompts)
    print(f"embedded SmolLM2-135M-Instruct, {args.threads} threads; torch float32 in batches of {args.batch}, "
          f"llama.cpp float32 with {rt.parallel} sequences decoded together; best of 2 runs per side (A B C D D C B A)")
    print(f"generation: {n} greedy demo requests, at most {args.max_tokens} new tokens; "
          f"label log-probabilities: {m} NLI-judge prompts x 3 labels")
    print(f"{'side':22} {'new tok/s':>10} {'vs torch':>9} {'vs bare':>8} {'logprob prompts/s':>18} {'vs torch':>9} "
          f"{'vs bare':>8} {'same text':>10} {'same answer':>12} {'same label':>11} {'max |dlp|':>10}")
    rows = [("torch provider", "A", "B"), ("torch bare", "B", "B"), ("llama.cpp provider", "C", "D"),
            ("llama.cpp bare", "D", "D")]
    t_rate = gen["A"][1][1] / gen["A"][0]
    t_lp = m / lp["A"][0]
    for name, key, bare_key in rows:
        secs, (texts, tokens) = gen[key]
        rate = tokens / secs
        bare_rate = gen[bare_key][1][1] / gen[bare_key][0]
        lp_rate = m / lp[key][0]
        same_text = sum(a == b for a, b in zip(texts, ref_texts, strict=True))
        same_answer = sum(a == b for a, b in zip(answers(texts), ref_answers, strict=True))
        same_label = sum(int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(lp[key][1], ref_lp, strict=True))
        diff = max(abs(a - b) for xs, ys in zip(lp[key][1], ref_lp, strict=True) for a, b in zip(xs, ys, strict=True))
        print(f"{name:22} {rate:>10.1f} {rate / t_rate:>9.2f} {rate / bare_rate:>8.2f} {lp_rate:>18.2f} "
              f"{lp_rate / t_lp:>9.2f} {lp_rate / (m / lp[bare_key][0]):>8.2f} {f'{same_text}/{n}':>10} "
              f"{f'{same_answer}/{n}':>12} {f'{same_label}/{m}':>11} {diff:>10.2e}")


if __name__ == "__main__":
    main()
