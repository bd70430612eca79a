"""The SS similarity backends on real text: two human explanations of one e-SNLI pair vs of two pairs.

    python benchmarks/behavior_esnli_similarity.py --data PATH/esnli_dev.csv.gz [--pairs 300]

SS (stability) is the mean pairwise similarity of a model's K reasoning traces for one item. A backend
that measures "the same reasoning" should score two explanations of the same pair, written by different
annotators, above two explanations of different pairs. For each of the first ``--pairs`` e-SNLI
validation pairs with two explanations: *same* = sim(Explanation_1, Explanation_2) of the pair;
*different* = sim(Explanation_1 of the pair, Explanation_2 of another pair, a seeded derangement).
Both backends of the behaviour family run with their defaults on the embedded all-MiniLM-L6-v2:
BERTScore F1 (layer 6, no rescaling; the default) and sentence-embedding cosine. Printed per backend:
the mean of each side with a 95% bootstrap CI, the paired difference with its CI and sign-flip p-value,
and the share of pairs where *same* is higher (ties one half).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import random
import time

from reasonscope.scorers.similarity import BERTScoreF1, EmbeddingCosine
from reasonscope.stats.bootstrap import bootstrap_mean, paired_difference


def read_pairs(path: str, n: int) -> list[tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = list(csv.DictReader(io.StringIO(fh.read())))
    out = [(r["Explanation_1"].strip(), r["Explanation_2"].strip()) for r in rows
           if r.get("Explanation_1", "").strip() and r.get("Explanation_2", "").strip()]
    return out[:n]


def derangement(n: int, seed: int) -> list[int]:
    """A seeded permutation of range(n) with no fixed point (no pair is matched with itself)."""
    order = list(range(n))
    rng = random.Random(seed)
    while True:
        rng.shuffle(order)
        if all(i != j for i, j in enumerate(order)):
            return order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pairs = read_pairs(args.data, args.pairs)
    order = derangement(len(pairs), args.seed)
    first = [a for a, _ in pairs]
    print(f"e-SNLI validation, first {len(pairs)} pairs with two explanations")
    print("| backend | same pair | different pairs | same - different | p | P(same > different) | seconds |")
    print("|---|---|---|---|---|---|---|")
    for name, backend in (("BERTScore F1 (MiniLM layer 6)", BERTScoreF1("embedded-minilm", 6)),
                          ("embedding cosine (MiniLM)", EmbeddingCosine("embedded-minilm"))):
        start = time.perf_counter()
        same = backend.pairwise(first, [b for _, b in pairs])
        different = backend.pairwise(first, [pairs[j][1] for j in order])
        seconds = time.perf_counter() - start
        es, ed = bootstrap_mean(same, seed=args.seed), bootstrap_mean(different, seed=args.seed)
        diff = paired_difference(same, different, seed=args.seed)
        share = sum((x > y) + 0.5 * (x == y) for x, y in zip(same, different, strict=True)) / len(same)
        print(f"| {name} | {es.value:.3f} [{es.low:.3f}, {es.high:.3f}] | {ed.value:.3f} [{ed.low:.3f}, {ed.high:.3f}] "
              f"| {diff.value:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}] | {diff.p_value:.2g} | {share:.3f} | "
              f"{seconds:.1f} |")


if __name__ == "__main__":
    main()
