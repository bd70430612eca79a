"""Benchmark: does the leakage term change with the number of integrated-gradients steps?

LAREV's leakage term is the word of b with the largest |attribution| under Phi_base
(:func:`reasonscope.information.leakage.leakage_term`); its cost is the integrated-gradients pass, linear
in ``ig_steps``. This script attributes the same baselines with a trained Phi_base at ``--steps`` (e.g. 5
and 20) and prints, for each pair of step counts and both leakage-term rules (``any`` word, ``content``
words), how many baselines get the same leakage term, with the CPU seconds of each pass::

    python benchmarks/information_ig_steps.py --phi-base RUN_DIR/information/phi_base-<hash>/best \\
        --train runs/esnli-split-500/train.csv --items 40 --steps 5 20
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path


def agreement(terms_a: list, terms_b: list) -> int:
    """How many positions hold the same leakage word (None counts as a word)."""
    return sum((a.word if a else None) == (b.word if b else None) for a, b in zip(terms_a, terms_b, strict=True))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--phi-base", required=True, help="a trained Phi_base folder (RUN_DIR/information/phi_base-*/best)")
    p.add_argument("--train", type=Path, required=True, help="e-SNLI csv whose rule baselines are attributed")
    p.add_argument("--items", type=int, default=40)
    p.add_argument("--steps", type=int, nargs="+", default=[5, 20])
    p.add_argument("--nli-relation", default="word", choices=["word", "phrase"])
    args = p.parse_args(argv)

    import torch

    from reasonscope.data.loaders import load_dataset
    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.evaluator import load_evaluator
    from reasonscope.information.leakage import leakage_attributions, leakage_term
    from reasonscope.information.variants import baseline_input
    from reasonscope.shared_settings import DatasetConfig

    torch.set_num_threads(1)
    phi_base = load_evaluator(args.phi_base)
    items = [it for it in load_dataset(DatasetConfig(name="ig", format="esnli", path=str(args.train))).items
             if it.rationale][: args.items]
    baselines = [rule_baseline(it, args.nli_relation) for it in items]
    shift = len(baseline_input(""))
    terms: dict[tuple[int, str], list] = {}
    for steps in args.steps:
        start = time.process_time()
        rows = leakage_attributions(phi_base, [baseline_input(b) for b in baselines],
                                    [label_text(it) for it in items], n_steps=steps)
        cpu = time.process_time() - start
        for rule in ("any", "content"):
            terms[steps, rule] = [leakage_term(b, [(max(0, s - shift), max(0, e - shift)) if e > shift else (0, 0)
                                                   for s, e in offsets], attr, exclude_stop_words=rule == "content")
                                  for b, (offsets, attr) in zip(baselines, rows, strict=True)]
        print(f"{steps} steps: {cpu:.1f} CPU s for {len(items)} baselines ({cpu / len(items):.2f} per baseline)")
    for i, a in enumerate(args.steps):
        for b in args.steps[i + 1:]:
            for rule in ("any", "content"):
                same = agreement(terms[a, rule], terms[b, rule])
                print(f"leak_terms {rule}: {a} vs {b} steps: the same leakage term for {same} of {len(items)}")
    last = args.steps[-1]
    print(f"leak_terms any vs content at {last} steps: the same leakage term for "
          f"{agreement(terms[last, 'any'], terms[last, 'content'])} of {len(items)}")
    for rule in ("any", "content"):
        words = Counter(t.word if t else None for t in terms[last, rule])
        print(f"leak_terms {rule} at {last} steps: {words.most_common()}")


if __name__ == "__main__":
    main()
