"""Benchmark: the embedded SmolLM2's token log-probabilities (the attributes family's perplexities) on each runtime.

    python benchmarks/perplexity_runtimes.py --store /tmp/demo-runtimes/01-torch/demo/store.sqlite

The texts are the ones the attributes family scores for perplexity (``perplexity_chain``, ``perplexity_step``,
``perplexity_step_max``): for each stored completion of a demo run (``--store``; every completion, not only the
primary answers the family scores, for more texts), its steps (``split_steps`` of its text) and the steps
joined by spaces, deduplicated. Side A: ``SmolLM2Model.token_logprobs_many`` with ``runtime: torch`` (one
forward pass per text, as the family ran before); side B: the same with ``runtime: llama-cpp`` (the texts
decoded together on the float32 GGUF file). Both in one process, in the order A B B A, in chunks of 32 texts as
the score cache sends them; each side's faster run counts. Figures: texts/s and tokens/s per side, the
ratio, how many texts get the same token ids on both runtimes, and the largest |difference| of a per-token
log-probability and of a text's inverse perplexity (exp of the mean log-probability, the value the metrics
average) and the largest relative difference of a perplexity.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generation_vs_bare import best_of  # noqa: E402 - the scripts' folder is put on the path first

CHUNK = 32
"""Texts per call, as the attributes family's perplexity scorer sends them (its ``chunk``)."""


def demo_texts(store: Path) -> list[str]:
    """The perplexity inputs of every completion in a demo store: each one's steps and the steps joined."""
    from reasonscope.text.steps import split_steps

    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT request, text FROM generations").fetchall()
    finally:
        conn.close()
    texts: dict[str, None] = {}
    for req, text in rows:
        if "messages" not in json.loads(req) or not text:
            continue
        steps = split_steps(text)
        for t in (" ".join(steps), *steps):
            if t:
                texts.setdefault(t)
    return sorted(texts, key=len)  # the score cache sends its missing inputs shortest first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="store.sqlite of a finished demo run")
    parser.add_argument("--texts", type=int, default=None, help="at most this many texts (default: all)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import numpy as np
    import torch

    from reasonscope.models.registry import create_model
    from reasonscope.shared_settings import ModelConfig

    torch.set_num_threads(args.threads)
    texts = demo_texts(args.store)[:args.texts]
    tm = create_model(ModelConfig(spec="smollm2", runtime="torch"))
    lm = create_model(ModelConfig(spec="smollm2", runtime="llama-cpp"))
    tm.load()
    rt = lm.llama()

    def side(model):
        def run():
            t0 = time.perf_counter()
            out = [lp for i in range(0, len(texts), CHUNK) for lp in model.token_logprobs_many(texts[i:i + CHUNK])]
            return time.perf_counter() - t0, out
        return run

    got = best_of("ABBA", {"A": side(tm), "B": side(lm)})
    (ta, by_torch), (tb, by_llama) = got["A"], got["B"]
    same = [i for i, t in enumerate(texts) if tm.tokenizer(t, add_special_tokens=False)["input_ids"] == rt.tokenize(t)]
    tokens = sum(len(lp) for lp in by_torch)
    pairs = [(by_torch[i], by_llama[i]) for i in same]  # differences where both score the same token ids
    d_token = max(abs(x - y) for a, b in pairs for x, y in zip(a, b, strict=True))
    inv = [(math.exp(np.mean(a)), math.exp(np.mean(b))) for a, b in pairs if a]
    d_inv = max(abs(x - y) for x, y in inv)
    d_rel = max(abs(y / x - 1) for x, y in inv)  # perplexity = 1 / inverse perplexity
    lengths = [len(lp) for lp in by_torch]
    print(f"embedded SmolLM2-135M-Instruct, {args.threads} threads; {len(texts)} texts of a demo run "
          f"({tokens} scored tokens, {min(lengths)}-{max(lengths)} per text), chunks of {CHUNK}; "
          f"best of 2 runs per side (A B B A)")
    print(f"{'side':34} {'seconds':>8} {'texts/s':>8} {'tokens/s':>9} {'vs torch':>9}")
    for name, secs in (("A torch (one forward per text)", ta), ("B llama.cpp (texts decoded together)", tb)):
        print(f"{name:34} {secs:>8.2f} {len(texts) / secs:>8.1f} {tokens / secs:>9.0f} {ta / secs:>9.2f}")
    print(f"same token ids: {len(same)}/{len(texts)}")
    print(f"max |difference| llama.cpp vs torch over those: per-token log-probability {d_token:.2e} nats, "
          f"inverse perplexity {d_inv:.2e}, perplexity {100 * d_rel:.3f}% (relative)")


if __name__ == "__main__":
    main()
