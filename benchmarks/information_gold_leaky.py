"""Benchmark: why is LAREV's Gold - Gold-Leaky negative? Controls on a trained Phi_LA (or Phi).

The LAREV thesis's largest separation on e-SNLI is Gold - Gold-Leaky (+0.96 of SUM +1.43, T5-large);
ours has come out slightly negative: appending "The answer is y." to the Gold rationale makes the
label more likely under our Phi_LA. This script scores, with the trained evaluators of one finished run,
the Gold rationale and controls that each change one thing about the appended sentence:

* ``gold_leaky``: Gold + "The answer is y." (the variant of the family);
* ``gold_wrong``: Gold + "The answer is y'." with y' another label (the next one in sorted order): if
  Phi_LA copies the label word from r, this lowers log p(y) as much as ``gold_leaky`` raises it;
* ``gold_nolabel``: Gold + "The answer is given." (the same sentence frame, no label): the effect of a
  longer r with a second sentence that names no label;
* ``leaky`` and ``leaky_wrong``: "The answer is y." and "The answer is y'." alone.

Printed per variant: mean log p(y | r, b) (sum over y's tokens) under the evaluator, its accuracy, the
mean number of input tokens, and Gold - X with a 95% interval clustered by premise (n = premises);
Gold - Gold-Leaky per gold label, under both reductions (sum and per-token mean: y is the same in both
variants, so the reduction rescales each pair by its label's token count and cannot change a pair's sign),
and the leakage terms the run's training environments hold (the first 200 the summary keeps)::

    python benchmarks/information_gold_leaky.py --summary runs/information-seeds/seed0-irm10-test.json \\
        --test runs/esnli-split/test.csv
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

CONTROLS = ("gold", "gold_leaky", "gold_wrong", "gold_nolabel", "leaky", "leaky_wrong")


def control_texts(gold: str, label: str, labels: list[str]) -> dict[str, str]:
    """The rationale of each control (module docstring) for one pair.

    Examples:
        >>> control_texts("A dog runs.", "neutral", ["contradiction", "entailment", "neutral"])["gold_wrong"]
        'A dog runs. The answer is contradiction.'
    """
    wrong = labels[(labels.index(label) + 1) % len(labels)]
    gold = gold.rstrip()
    return {"gold": gold, "gold_leaky": f"{gold} The answer is {label}.",
            "gold_wrong": f"{gold} The answer is {wrong}.", "gold_nolabel": f"{gold} The answer is given.",
            "leaky": f"The answer is {label}.", "leaky_wrong": f"The answer is {wrong}."}


def measure(evaluator, items: list[dict[str, Any]], labels: list[str], stats, seed: int = 0) -> dict[str, Any]:
    """Scores of every control with ``evaluator``; ``items``: dicts with id, premise, rationale, baseline, label.

    Returns per control: ``log_p`` (mean log p(y | r, b), sum), ``accuracy`` (share whose most likely
    label is y), ``tokens`` (mean input tokens), ``diff`` (Gold - X clustered by premise); ``by_label``:
    Gold - Gold-Leaky per gold label (sum and mean reductions, pairs); ``per_item``: control -> id -> log p.
    """
    from reasonscope.stats.bootstrap import paired_difference

    ids = [it["id"] for it in items]
    premise = [it["premise"] for it in items]
    y = [it["label"] for it in items]
    out: dict[str, Any] = {"controls": {}, "per_item": {}, "by_label": {}}
    n_tokens = {}
    for control in CONTROLS:
        texts = [control_texts(it["rationale"], it["label"], labels)[control] for it in items]
        inputs, _ = evaluator.fit_inputs(texts, [it["baseline"] for it in items])
        cand = evaluator.candidate_log_likelihoods(inputs, labels)
        log_p = [c[labels.index(lab)] for c, lab in zip(cand, y, strict=True)]
        right = [labels[max(range(len(labels)), key=c.__getitem__)] == lab for c, lab in zip(cand, y, strict=True)]
        n_tokens[control] = evaluator.input_lengths(inputs)
        out["per_item"][control] = dict(zip(ids, log_p, strict=True))
        out["controls"][control] = {"log_p": sum(log_p) / len(log_p), "accuracy": sum(right) / len(right),
                                    "tokens": sum(n_tokens[control]) / len(items)}
    gold = [out["per_item"]["gold"][i] for i in ids]
    for control in CONTROLS[1:]:
        other = [out["per_item"][control][i] for i in ids]
        d = paired_difference(gold, other, n_resamples=stats.n_resamples, seed=seed, n_permutations=stats.n_permutations,
                              bounds=None, clusters=premise)
        out["controls"][control]["diff"] = {"value": d.value, "low": d.low, "high": d.high, "n": d.n,
                                            "p_value": d.p_value}
    label_tokens = {lab: len(evaluator.tokenizer(lab, add_special_tokens=False)["input_ids"]) for lab in labels}
    for lab in labels:
        sel = [i for i, it in zip(ids, items, strict=True) if it["label"] == lab]
        diffs = [out["per_item"]["gold"][i] - out["per_item"]["gold_leaky"][i] for i in sel]
        if sel:
            out["by_label"][lab] = {"pairs": len(sel), "label_tokens": label_tokens[lab],
                                    "sum": sum(diffs) / len(sel), "mean": sum(diffs) / len(sel) / label_tokens[lab],
                                    "negative_pairs": sum(d < 0 for d in diffs)}
    return out


def leak_terms(environments: list[dict[str, Any]], verbs: set[str]) -> dict[str, Any]:
    """How often the leakage term is the relation verb, a stop word or another word (training environments)."""
    from reasonscope.information.leakage import stop_words

    words = [e.get("leak") for e in environments if e.get("leak")]
    stops = stop_words()
    kinds = Counter("verb" if w.lower() in verbs else "stop word" if w.lower() in stops else "other" for w in words)
    return {"n": len(words), "kinds": dict(kinds), "top": Counter(words).most_common(8)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summary", type=Path, default=None, help="a finished row of information_seeds.py (or a "
                   "run's summary.json)")
    p.add_argument("--folder", default=None, help="instead of --summary: a trained evaluator's folder "
                   "(RUN_DIR/information/<model>-<hash>/best), one-verb baselines, 256-token inputs")
    p.add_argument("--test", type=Path, required=True, help="the e-SNLI csv whose pairs are scored")
    p.add_argument("--model", default="phi_la", choices=["phi_la", "phi"])
    p.add_argument("--limit", type=int, default=None, help="score the first N pairs only")
    p.add_argument("--out", type=Path, default=None, help="write the measurements as JSON here")
    args = p.parse_args(argv)

    import torch

    from reasonscope.data.loaders import load_dataset
    from reasonscope.information.baseline import NLI_RELATION_VERBS, label_text, rule_baseline_with_rule
    from reasonscope.information.evaluator import load_evaluator
    from reasonscope.shared_settings import DatasetConfig, StatsConfig

    torch.set_num_threads(1)
    if args.summary is None and args.folder is None:
        p.error("give --summary or --folder")
    info = json.loads(args.summary.read_text())["information"] if args.summary else {"settings": {}}
    relation = info["settings"].get("nli_relation", "word")
    evaluator = load_evaluator(args.folder or info["training"][args.model]["folder"])
    evaluator.max_input_tokens = info["settings"].get("max_input_tokens", 256)
    data = load_dataset(DatasetConfig(name="controls", format="esnli", path=str(args.test)))
    items = [{"id": it.id, "premise": it.metadata["premise"], "rationale": it.rationale, "label": label_text(it),
              "baseline": rule_baseline_with_rule(it, relation).text} for it in data.items if it.rationale]
    items = items[: args.limit] if args.limit else items
    labels = sorted({it["label"] for it in items})
    result = measure(evaluator, items, labels, StatsConfig())
    verbs = {v for words in NLI_RELATION_VERBS.values() for v in words}
    result["leak_terms"] = leak_terms(info.get("environments", []), verbs)
    print(f"{args.folder or args.model + ' of ' + args.summary.name}: {len(items)} pairs, {len(set(i['premise'] for i in items))} premises")
    print("| rationale | mean log p(y given r, b), sum | accuracy | mean input tokens | Gold - X [95% CI, clustered] |")
    print("|---|---|---|---|---|")
    for control, c in result["controls"].items():
        d = c.get("diff")
        diff = "" if d is None else f"{d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}], p {d['p_value']:.4f}"
        print(f"| {control} | {c['log_p']:+.3f} | {c['accuracy']:.3f} | {c['tokens']:.1f} | {diff} |")
    print("\nGold - Gold-Leaky per gold label (sum; per-token mean = sum / label tokens):")
    for lab, b in result["by_label"].items():
        print(f"  {lab}: {b['pairs']} pairs, {b['label_tokens']} label tokens, sum {b['sum']:+.4f}, mean "
              f"{b['mean']:+.4f}, negative for {b['negative_pairs']} pairs")
    lt = result["leak_terms"]
    print(f"\nleakage terms of the first {lt['n']} training environments: {lt['kinds']}; most common {lt['top']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
