"""Benchmark: the attack's losses with the few-shot prefix read from its cache against the whole sequence,
side by side in one run, on the embedded SmolLM2 (CPU).

Three measurements, each repeated ``--repeats`` times with the two variants taking turns (so that a
changing load falls on both alike), the first round left out as warm-up:

* one forward and backward of L_c - lambda L_a with respect to the question's embeddings (what each
  step of the token and embedding searches does);
* the objective of 8 candidate questions in one batch without gradients (the token search's
  candidate scoring);
* one whole token search (2 rounds, 8 candidates) and one embedding search (5 steps), the meaning
  filter off.

It also prints the largest difference of the losses and of the gradient between the two variants.

    python benchmarks/attack_prefix_cache.py --repeats 4
"""

from __future__ import annotations

import argparse
import statistics
import time

QUESTION = "Tom has 12 apples and buys 7 more. Then he gives 5 to Ann. How many apples does Tom have now?"
ANSWER = "14"
CHAIN = "Tom starts with 12 apples. He buys 7 more, so 12 + 7 = 19. He gives 5 to Ann, so 19 - 5 = 14 apples are left."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()

    import torch

    from reasonscope.attack.attacker import AttackSettings
    from reasonscope.attack.executor import make_attacker
    from reasonscope.attack.layout import attack_losses, batch_losses, make_layout
    from reasonscope.attack.prefix_cache import PrefixCache
    from reasonscope.plan import AttackConfig, ModelConfig

    torch.set_num_threads(2)
    settings = AttackSettings(steps=2, candidates=8, embedding_steps=5, min_similarity=None)
    attacker = make_attacker(ModelConfig(spec="smollm2"), AttackConfig(), settings)
    model, tok = attacker.model, attacker.tokenizer
    lay = make_layout(tok, QUESTION, ANSWER, CHAIN)
    cache = PrefixCache(model, lay.prefix)
    W = model.get_input_embeddings().weight
    print(f"SmolLM2, {torch.get_num_threads()} torch threads: sequence {len(lay.ids)} tokens, prefix "
          f"{len(lay.prefix)} read from the cache")

    def grad_step(prefix_cache):
        q = W[torch.tensor(lay.question)].detach().clone().requires_grad_(True)
        la, lc = attack_losses(model, lay, q, prefix_cache)
        (lc - lay.default_lambda * la).backward()
        return float(la.detach()), float(lc.detach()), q.grad

    (la0, lc0, g0), (la1, lc1, g1) = grad_step(None), grad_step(cache)
    print(f"largest difference: L_a {abs(la1 - la0):.2e}, L_c {abs(lc1 - lc0):.2e}, gradient "
          f"{float((g1 - g0).abs().max()):.2e} (gradient up to {float(g0.abs().max()):.2e})")

    q = lay.question
    candidates = [lay.with_question(q[:k] + q[k + 1:k + 2] + q[k:k + 1] + q[k + 2:]) for k in range(8)]

    def objectives(prefix_cache):
        with torch.no_grad():
            batch_losses(model, candidates, prefix_cache)

    def searches(use_cache):
        attacker._prefix_cache, attacker._cache_supported = None, use_cache
        attacker.token_search(lay, "bench/1", QUESTION)
        attacker.embedding_search(lay, "bench/1")

    cases = [("forward + backward, one sequence", lambda: grad_step(None), lambda: grad_step(cache)),
             ("objectives of 8 candidates, no gradient", lambda: objectives(None), lambda: objectives(cache)),
             ("token search (2 rounds x 8) + embedding search (5 steps)", lambda: searches(False),
              lambda: searches(True))]
    print(f"{'measurement':<58}{'whole s':>10}{'cached s':>10}{'speed-up':>10}")
    for name, whole, cached in cases:
        times: dict[str, list[float]] = {"whole": [], "cached": []}
        for r in range(args.repeats + 1):
            order = [("whole", whole), ("cached", cached)] if r % 2 == 0 else [("cached", cached), ("whole", whole)]
            for label, fn in order:
                start = time.perf_counter()
                fn()
                if r:
                    times[label].append(time.perf_counter() - start)
        w, c = statistics.median(times["whole"]), statistics.median(times["cached"])
        print(f"{name:<58}{w:>10.3f}{c:>10.3f}{w / c:>9.2f}x")


if __name__ == "__main__":
    main()
