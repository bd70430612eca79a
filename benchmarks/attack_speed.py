"""Benchmark: seconds per attacked item for each MATCHA method on the embedded SmolLM2 (CPU), and how
the cost grows with the question's length.

For each question length (a word problem padded with neutral context sentences), the clean
answer-first chain is generated once, then each method attacks it with the default settings
(ratio 0.2, 5 rounds, top-k 8, 16 candidates, eps p = 0.005, 96-token chains), regeneration
included. The meaning filter (embedded MiniLM) is on, as in a real run. Printed per method and
length: total seconds, seconds of the attack alone (total minus regenerating the chain, whose length
varies with what the model writes), the regenerated chain's tokens, and the growth of the attack
alone against the shortest question.

    python benchmarks/attack_speed.py --pads 0 2 6
"""

from __future__ import annotations

import argparse
import time

BASE = "Lena has 12 apples and gets 7 more. How many apples does Lena have now?"
PAD = "The weather was mild that day and the market square was busy with people. "


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pads", type=int, nargs="+", default=[0, 2, 6], help="context sentences added")
    parser.add_argument("--methods", nargs="+", default=["random", "embedding", "token"])
    args = parser.parse_args()

    import torch

    from reasonscope.attack.attacker import AttackSettings
    from reasonscope.attack.executor import make_attacker
    from reasonscope.plan import AttackConfig, ModelConfig

    torch.set_num_threads(2)
    settings = AttackSettings()
    start = time.perf_counter()
    attacker = make_attacker(ModelConfig(spec="smollm2"), AttackConfig(), settings)
    attacker.word_vocabulary()
    print(f"load model + meaning filter + word vocabulary: {time.perf_counter() - start:.1f} s "
          f"({len(attacker.word_vocabulary())} word tokens)")
    rows = []
    for pad in args.pads:
        question = PAD * pad + BASE
        clean = attacker.answer_first(attacker.layout_for(question))
        layout = attacker.layout_for(question, clean)
        times = {}
        for method in args.methods:
            t0 = time.perf_counter()
            if method == "token":
                res = attacker.token_attack(layout, f"bench-{pad}", question)
            elif method == "embedding":
                res = attacker.embedding_attack(layout, f"bench-{pad}")
            else:
                res = attacker.random_attack(layout, f"bench-{pad}", question)
            total = time.perf_counter() - t0
            regen = res.details["regeneration_s"]
            times[method] = (total, total - regen, len(attacker.tokenizer(res.chain.reasoning)["input_ids"]),
                             res.steps_done)
        rows.append((len(layout.question), len(layout.cot), times))
    first = rows[0][2]
    print("seconds per attacked item: total, the attack alone (total minus regenerating the chain, whose length "
          "varies with what the model writes), the regenerated chain's tokens, the rounds run (token level stops "
          "early when no candidate improves), and the attack alone per round against the shortest question")
    print(f"{'q tokens':>8} {'cot':>4} " + " ".join(f"{m:>30} {'growth':>6}" for m in args.methods))
    for q, c, times in rows:
        cells = []
        for m in args.methods:
            total, alone, toks, rounds = times[m]
            per = alone / max(1, rounds)
            per0 = first[m][1] / max(1, first[m][3])
            cells.append(f"{total:>7.1f}s ({alone:>5.1f}s) {toks:>3}t {rounds:>2}r {per / per0:>6.2f}")
        print(f"{q:>8} {c:>4} " + " ".join(cells))


if __name__ == "__main__":
    main()
