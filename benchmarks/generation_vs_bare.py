"""Benchmark: local generation and label log-probabilities on the embedded SmolLM2, the provider against bare
transformers, side by side in one process on the same model object.

* **Generation**: the demo plan's free-text requests (behaviour prompts of the synthetic items), greedy
  (temperature 0, so both sides must give the same text: checked), ``--max-tokens`` new tokens at most,
  in batches of ``--batch`` prompts. reasonscope: ``HFModel.generate`` (what a run calls: the chat
  template, grouping, seeding, stop detection, decoding and the completion records). Bare: the same prompt
  strings, the same tokenizer, ``model.generate(**enc, max_new_tokens=..., do_sample=False)`` and the
  tokens up to the end-of-sequence token. Figure: new tokens per second.
* **Label log-probabilities**: the LLM-as-NLI judge's prompt for ``--nli-pairs`` step pairs with the three
  labels as continuations. reasonscope: ``HFModel.logprobs_sync`` (the prompt run once, its key/value cache
  shared by the continuations). Bare: one forward pass of the padded batch of prompt + label rows and the
  gathered log-probabilities. Figure: prompts per second.

Each side runs twice in the order A B B A; the faster run counts. Ratio = reasonscope / bare (generation
target: at least 0.9).

    python benchmarks/generation_vs_bare.py --requests 32 --batch 8 --max-tokens 96
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def best_of(order: str, runs: dict) -> dict:
    """``runs[name]()`` in ``order`` (e.g. "ABBA"); per name the result with the smallest seconds."""
    out: dict = {}
    for name in order:
        seconds, result = runs[name]()
        if name not in out or seconds < out[name][0]:
            out[name] = (seconds, result)
    return out


def bare_generate(model, batches: list, max_tokens: int) -> tuple[float, tuple[list[str], int]]:
    """Greedy generation through bare transformers on a loaded ``HFModel``'s tokenizer and weights.

    Per batch of requests: the chat-templated prompt strings (``model.prompt_text``) padded together,
    ``model.generate(..., max_new_tokens=max_tokens, do_sample=False)``, and per row the tokens up to the first
    end-of-sequence or padding token. Returns (seconds, (texts, new tokens)); a stopped row counts its stop token,
    as the provider's ``completion_tokens`` does.
    """
    import torch

    tok, hf = model.tokenizer, model.model
    texts, tokens = [], 0
    t0 = time.perf_counter()
    for b in batches:
        enc = tok([model.prompt_text(r.messages) for r in b], return_tensors="pt", padding=True,
                  add_special_tokens=False)
        with torch.no_grad():
            seqs = hf.generate(**enc, max_new_tokens=max_tokens, do_sample=False, pad_token_id=tok.pad_token_id)
        for row in seqs[:, enc["input_ids"].shape[1]:].tolist():
            stop = next((k for k, t in enumerate(row) if t in (tok.eos_token_id, tok.pad_token_id)), None)
            kept = row if stop is None else row[:stop]
            tokens += len(kept) + (0 if stop is None else 1)
            texts.append(tok.decode(kept, skip_special_tokens=True))
    return time.perf_counter() - t0, (texts, tokens)


def bare_logprobs(model, prompts: list[str], conts: list[str]) -> tuple[float, list[list[float]]]:
    """Summed log-probabilities of each continuation after each prompt, by bare transformers on an ``HFModel``.

    Per prompt: one forward pass of the right-padded batch of prompt + continuation rows, the log-softmax of
    the logits, and per row the sum over the continuation's tokens. Returns (seconds, one list per prompt).
    """
    import torch

    tok, hf = model.tokenizer, model.model
    out = []
    t0 = time.perf_counter()
    for p in prompts:
        p_ids = tok(p, add_special_tokens=False)["input_ids"]
        seqs = [p_ids + tok(c, add_special_tokens=False)["input_ids"] for c in conts]
        width = max(len(s) for s in seqs)
        ids = torch.tensor([s + [tok.pad_token_id] * (width - len(s)) for s in seqs])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        with torch.no_grad():
            logits = hf(input_ids=ids, attention_mask=mask).logits.float()
        logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
        out.append([float(logp[r, len(p_ids) - 1:len(s) - 1].sum()) for r, s in enumerate(seqs)])
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--nli-pairs", type=int, default=24)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from generation_batching import demo_requests

    from reasonscope.scorers.nli import NLI_LABELS, judge_prompt

    torch.set_num_threads(args.threads)
    model, requests = demo_requests()
    model.config = model.config.model_copy(update={"batch_size": args.batch})
    free = [dataclasses.replace(r, temperature=0.0, top_p=None, max_tokens=args.max_tokens)
            for r in requests if r.structured is None][: args.requests]
    model.load()
    batches = [free[i:i + args.batch] for i in range(0, len(free), args.batch)]

    def ours_generate():
        t0 = time.perf_counter()
        done = [c for b in batches for c in asyncio.run(model.generate(b))]
        return time.perf_counter() - t0, ([c.text for c in done], sum(c.completion_tokens for c in done))

    gen = best_of("ABBA", {"A": ours_generate, "B": lambda: bare_generate(model, batches, args.max_tokens)})
    (ours_s, (ours_texts, ours_tokens)), (bare_s, (bare_texts, bare_tokens)) = gen["A"], gen["B"]
    same = sum(a == b for a, b in zip(ours_texts, bare_texts, strict=True))

    steps = [(f"Ana has {n} apples and buys {n + 3} more.", f"So Ana has {2 * n + 3} apples now.")
             for n in range(args.nli_pairs)]
    prompts = [model.prompt_text([{"role": "user", "content": judge_prompt(p, h)}]) for p, h in steps]
    conts = [" " + lab for lab in NLI_LABELS]

    def ours_logprobs():
        t0 = time.perf_counter()
        out = [model.logprobs_sync(p, conts) for p in prompts]
        return time.perf_counter() - t0, out

    lp = best_of("ABBA", {"A": ours_logprobs, "B": lambda: bare_logprobs(model, prompts, conts)})
    diff = max(abs(a - b) for xs, ys in zip(lp["A"][1], lp["B"][1], strict=True) for a, b in zip(xs, ys, strict=True))

    print(f"embedded SmolLM2-135M-Instruct (float32, CPU), {args.threads} threads; best of 2 runs per side "
          "(order A B B A)")
    print(f"generation: {len(free)} greedy requests in batches of {args.batch}, at most {args.max_tokens} new "
          f"tokens; same text on both sides for {same}/{len(free)}; new tokens {ours_tokens} vs {bare_tokens}")
    print(f"{'work':28} {'reasonscope':>12} {'bare':>10} {'ratio':>7}")
    print(f"{'generation, tokens/s':28} {ours_tokens / ours_s:>12.1f} {bare_tokens / bare_s:>10.1f} "
          f"{(ours_tokens / ours_s) / (bare_tokens / bare_s):>7.2f}")
    print(f"{'label logprobs, prompts/s':28} {len(prompts) / lp['A'][0]:>12.2f} {len(prompts) / lp['B'][0]:>10.2f} "
          f"{lp['B'][0] / lp['A'][0]:>7.2f}")
    print(f"label log-probabilities: largest |difference| between the sides {diff:.1e} nats")


if __name__ == "__main__":
    main()
