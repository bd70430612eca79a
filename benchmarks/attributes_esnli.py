"""ROSCOE-style automatic attribute metrics on real human explanations (e-SNLI): matched vs mismatched.

    python benchmarks/attributes_esnli.py --data PATH/esnli_dev.csv.gz [--pairs 500]

A check that the embedding-based metrics of the attributes family measure what they claim on real text.
For each of the first ``--pairs`` e-SNLI validation pairs, its first human explanation is scored against
its own premise and hypothesis (*matched*), and the first explanation of another pair, a seeded
derangement, against the same source (*mismatched*). Faithfulness (each step aligned to the source),
faithfulness_ww (steps and tokens aligned), informativeness (both directions) and informativeness_chain
(the whole explanation against the whole pair) should be higher when the explanation belongs to the pair;
repetition does not depend on the source and must be identical in both (a control). With ``--perplexity
smollm2`` the three perplexity metrics are added, another control: an explanation's perplexity does not
depend on the pair it is scored against. Printed per metric: the mean of
each side with a 95% bootstrap CI, the paired difference with its CI and sign-flip p-value, and the share
of pairs where the matched explanation scores higher (ties count one half). Embeddings: the embedded
all-MiniLM-L6-v2, as in the family's default.
"""

from __future__ import annotations

import argparse
import csv
import functools
import gzip
import io
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from reasonscope.attributes.automatic import AutomaticBackends, TokenVectors, automatic_metrics
from reasonscope.models.registry import create_model
from reasonscope.scorers.similarity import EmbeddingCosine
from reasonscope.stats.bootstrap import bootstrap_mean, paired_difference
from reasonscope.text.steps import split_steps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behavior_esnli_similarity import derangement  # noqa: E402

METRICS = ("faithfulness", "faithfulness_ww", "informativeness", "informativeness_chain", "repetition_step",
           "repetition_word")
PERPLEXITY = ("perplexity_chain", "perplexity_step", "perplexity_step_max")


def read_pairs(path: str, n: int) -> list[tuple[list[str], str]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = list(csv.DictReader(io.StringIO(fh.read())))
    out = []
    for row in rows:
        if row.get("Explanation_1", "").strip():
            out.append(([row["Sentence1"].strip(), row["Sentence2"].strip()], row["Explanation_1"].strip()))
        if len(out) == n:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--perplexity", default=None, help="A causal LM for the perplexity metrics (e.g. smollm2).")
    args = parser.parse_args()
    pairs = read_pairs(args.data, args.pairs)
    order = derangement(len(pairs), args.seed)  # no pair keeps its own explanation
    sim = EmbeddingCosine("embedded-minilm")  # the family's default embedding, loaded as the family loads it
    steps = [split_steps(expl) for _, expl in pairs]
    start = time.perf_counter()
    # Every distinct sentence is embedded once, in batches; the metrics then look the vectors up.
    texts = sorted({t for source, _ in pairs for t in source} | {t for chain in steps for t in chain}
                   | {" ".join(source) for source, _ in pairs} | {" ".join(chain) for chain in steps})
    vectors = {}
    for at in range(0, len(texts), 256):
        batch = texts[at:at + 256]
        vectors.update(zip(batch, sim.embed(batch).numpy(), strict=True))
    tokens = TokenVectors("embedded-minilm")
    tokens.run(sorted({t for source, _ in pairs for t in source} | {t for chain in steps for t in chain}))
    ppl = None
    if args.perplexity:
        lm = create_model(args.perplexity)
        ppl = SimpleNamespace(token_logprobs=functools.cache(lm.token_logprobs))
    backends = AutomaticBackends(embed=SimpleNamespace(embed=lambda xs: np.stack([vectors[x] for x in xs])),
                                 tokens=tokens, ppl=ppl, descriptions={"embedding": sim.description})
    matched = [automatic_metrics(steps[i], pairs[i][0], backends) for i in range(len(pairs))]
    mismatched = [automatic_metrics(steps[j], pairs[i][0], backends) for i, j in enumerate(order)]
    seconds = time.perf_counter() - start
    print(f"e-SNLI validation, first {len(pairs)} pairs with an explanation; embeddings {sim.description}; "
          f"{2 * len(pairs)} rationales scored in {seconds:.1f} s")
    print("| metric | matched | mismatched | matched - mismatched | p | P(matched > mismatched) |")
    print("|---|---|---|---|---|---|")
    for metric in METRICS + (PERPLEXITY if ppl is not None else ()):
        a = [m.get(metric) for m in matched]
        b = [m.get(metric) for m in mismatched]
        ea, eb = bootstrap_mean(a, seed=args.seed), bootstrap_mean(b, seed=args.seed)
        diff = paired_difference(a, b, seed=args.seed)
        wins = sum((x > y) + 0.5 * (x == y) for x, y in zip(a, b, strict=True) if x is not None and y is not None)
        share = wins / sum(1 for x, y in zip(a, b, strict=True) if x is not None and y is not None)
        print(f"| {metric} | {ea.value:.3f} [{ea.low:.3f}, {ea.high:.3f}] | {eb.value:.3f} [{eb.low:.3f}, "
              f"{eb.high:.3f}] | {diff.value:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}] | {diff.p_value:.2g} | "
              f"{share:.3f} |")


if __name__ == "__main__":
    main()
