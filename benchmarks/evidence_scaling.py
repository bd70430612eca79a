"""Benchmark: RACE cost per instance, k=5, all three matchers, from 1,000 to 10,000 instances.

Texts come from the built-in topic generator; each rationale is synthetic: a sentence that reuses
some words of its text, with inflections and typos, plus filler, so that every matcher has work to
do. Timed: the per-instance evaluation (top-k features + three matchers) and the aggregation
(bootstrap CIs and the permutation test), not the classifier fit (printed separately). Linear growth
means a constant cost per instance across sizes.

    python benchmarks/evidence_scaling.py --sizes 1000 2000 5000 10000
"""

from __future__ import annotations

import argparse
import random
import time


def rationale_for(text: str, rng: random.Random) -> str:
    words = [w.strip(".,").lower() for w in text.split() if len(w) > 3]
    picked = rng.sample(words, min(4, len(words)))
    out = []
    for w in picked:
        r = rng.random()
        if r < 0.3:
            out.append(w + "s")                          # inflection
        elif r < 0.5 and len(w) > 4:
            i = rng.randrange(1, len(w) - 1)
            out.append(w[:i] + w[i + 1:])                # typo: one deletion
        else:
            out.append(w)
    return f"The text talks about {', '.join(out)} and similar matters, which decide the label."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    ap.add_argument("--train", type=int, default=4000)
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()

    from reasonscope.data.synthetic_topics import topic_items
    from reasonscope.evidence.classifier import EvidenceClassifier
    from reasonscope.evidence.matchers import MATCHERS
    from reasonscope.evidence.scoring import Prediction, aggregate, evaluate_instance, gold_labels

    train = topic_items(args.train, seed=1, prefix="train")
    t = time.perf_counter()
    clf = EvidenceClassifier().fit([i.input for i in train], [str(i.target) for i in train])
    print(f"classifier fit on {len(train)} texts: {time.perf_counter() - t:.2f}s, "
          f"{len(clf.feature_names)} features")
    rng = random.Random(0)
    test = topic_items(max(args.sizes), seed=2, prefix="test")
    preds = {it.id: Prediction(rng.choice(clf.classes) if rng.random() < 0.2 else str(it.target),
                               rationale_for(it.input, rng)) for it in test}
    X = clf.transform([i.input for i in test])
    print(f"{'instances':>10}{'evaluate s':>12}{'aggregate s':>13}{'total s':>10}{'us/instance':>13}")
    per = []
    for n in args.sizes:
        t0 = time.perf_counter()
        results = [evaluate_instance(clf, X[j], test[j], preds[test[j].id], k=args.k, target="predicted",
                                     matchers=MATCHERS, delta=0.2) for j in range(n)]
        t1 = time.perf_counter()
        aggregate(results, MATCHERS, n_resamples=2000, n_permutations=2000)
        t2 = time.perf_counter()
        per.append((t2 - t0) / n * 1e6)
        print(f"{n:>10}{t1 - t0:>12.2f}{t2 - t1:>13.2f}{t2 - t0:>10.2f}{per[-1]:>13.0f}")
        assert all(gold_labels(test[j]) for j in range(n))
    print(f"cost per instance at {args.sizes[-1]} / at {args.sizes[0]}: {per[-1] / per[0]:.2f} (1.0 = linear)")


if __name__ == "__main__":
    main()
