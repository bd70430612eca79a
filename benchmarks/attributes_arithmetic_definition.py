"""Benchmark: what "0 when no calculation is performed" did to the arithmetic-accuracy scores.

*Rethinking Human Preference Evaluation of LLM Rationales* defines arithmetic accuracy by the question
whether the calculations are correct, and says nothing of rationales without calculations.
Template v2 of our judge prompts added "(0 if it performs no calculation: the attribute is absent)"; v3
removed it. This script scores the same rationales under both definitions with a judge's probability-
weighted (G-Eval) score (:mod:`reasonscope.attributes.expected_scores`, the family's
``scoring: expected`` prompt with only the definition changed), on three groups:

* ``no arithmetic``: e-SNLI human explanations (the first ``--pairs`` validation pairs with one; question
  = premise and hypothesis), which compute nothing;
* ``correct arithmetic``: the gold rationales of the seeded word problems (``--problems``, seed 7);
* ``one wrong result``: the same rationales with one stated result changed by a whole number in [-5, 5]
  (:func:`reasonscope.attack.checker_validation.corrupt_result`, seed 0).

Per group and definition: the mean score in [0, 1] (higher = the judge finds the calculations more
accurate) with its 95% interval (bounded mean), and the paired difference v3 - v2 with Newcombe's /
the bounded bootstrap interval and the sign-flip test (:func:`reasonscope.stats.paired_difference`).

    python benchmarks/attributes_arithmetic_definition.py --esnli PATH/esnli_dev.csv.gz --pairs 60 --problems 60

The judge defaults to the embedded SmolLM2-135M-Instruct (``--judge``, any local ``hf/...`` or ``smollm2``).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import random
import time
from typing import Any

from reasonscope.attack.checker_validation import corrupt_result
from reasonscope.attributes.expected_scores import expected_messages, prompt_for
from reasonscope.data.word_problems import word_problem_items
from reasonscope.judge.logprob_scores import expected_score, logprobs_many, scale_values
from reasonscope.models.registry import create_model
from reasonscope.shared_settings import ModelConfig
from reasonscope.stats import bootstrap_mean, paired_difference

ATTRIBUTE = "arithmetic_accuracy"
DEFINITIONS = {
    "v2 (0 without a calculation)": "Every calculation in the reasoning is carried out correctly (0 if it performs "
                                    "no calculation: the attribute is absent).",
    "v3 (the publication's question)": "The calculations in the reasoning are carried out correctly.",
}


def esnli_rationales(path: str, n: int) -> list[tuple[str, str]]:
    """(question, explanation) of the first ``n`` pairs with a first explanation."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = csv.DictReader(io.StringIO(fh.read()))
        out = []
        for row in rows:
            expl = row.get("Explanation_1", "").strip()
            if expl:
                out.append((f"Premise: {row['Sentence1'].strip()}\nHypothesis: {row['Sentence2'].strip()}", expl))
            if len(out) == n:
                break
    return out


def word_problem_rationales(n: int, seed: int = 7) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(question, gold rationale) of ``n`` seeded word problems, and the same with one planted wrong result."""
    items = word_problem_items(n, seed=seed)
    rng = random.Random(0)
    good = [(it.input, it.rationale) for it in items]
    bad = [(q, corrupt_result(r, rng) or r) for q, r in good]
    return good, bad


def scores(judge: Any, pairs: list[tuple[str, str]]) -> dict[str, list[float | None]]:
    """Definition -> the judge's expected arithmetic-accuracy score in [0, 1] of each (question, rationale).

    The prompts of one rationale differ only in the definition, so a local judge runs their shared prefix once
    (``logprobs_shared``).
    """
    values = scale_values(0, 10)
    conts = list(values)
    out: dict[str, list[float | None]] = {name: [] for name in DEFINITIONS}
    for q, r in pairs:
        prompts = [prompt_for(judge, expected_messages(q, r, ATTRIBUTE, definition=d)) for d in DEFINITIONS.values()]
        shared = getattr(judge, "logprobs_shared", None)
        lps = shared(prompts, conts) if shared is not None else logprobs_many(judge, prompts, conts)
        for name, lp in zip(DEFINITIONS, lps, strict=True):
            w = expected_score(dict(zip(conts, lp, strict=True)), values)
            out[name].append(None if w.value is None else float(w.value) / 10)
    return out


def compare(judge: Any, groups: dict[str, list[tuple[str, str]]]) -> dict[str, dict[str, Any]]:
    """Per group: each definition's mean score with its interval, and the paired difference v3 - v2."""
    old, new = DEFINITIONS
    out = {}
    for name, pairs in groups.items():
        s = scores(judge, pairs)
        out[name] = {"n": len(pairs), old: bootstrap_mean(s[old], bounds=(0.0, 1.0)),
                     new: bootstrap_mean(s[new], bounds=(0.0, 1.0)), "difference": paired_difference(s[new], s[old]),
                     "scores": s}
    return out


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--esnli", required=True, help="Path of esnli_dev.csv.gz (the e-SNLI validation file).")
    p.add_argument("--pairs", type=int, default=60, help="e-SNLI explanations (no arithmetic).")
    p.add_argument("--problems", type=int, default=60, help="Seeded word problems (correct / one wrong result).")
    p.add_argument("--judge", default="smollm2", help="A local judge (smollm2 or hf/...).")
    a = p.parse_args(argv)
    good, bad = word_problem_rationales(a.problems)
    groups = {"no arithmetic (e-SNLI explanations)": esnli_rationales(a.esnli, a.pairs),
              "correct arithmetic (word problems)": good, "one wrong result (word problems)": bad}
    judge = create_model(ModelConfig(spec=a.judge))
    start = time.perf_counter()
    result = compare(judge, groups)
    (old, _), (new, _) = DEFINITIONS.items()
    print(f"arithmetic_accuracy, expected (G-Eval) scores of {a.judge}, 0-1, higher = more accurate; "
          f"{time.perf_counter() - start:.0f} s")
    print(f"| rationales | n | {old} | {new} | v3 - v2 [95% CI] | p |")
    print("|---|---|---|---|---|---|")
    for name, r in result.items():
        d = r["difference"]
        print(f"| {name} | {r['n']} | {r[old].value:.3f} [{r[old].low:.3f}, {r[old].high:.3f}] | "
              f"{r[new].value:.3f} [{r[new].low:.3f}, {r[new].high:.3f}] | {d.value:+.3f} [{d.low:+.3f}, "
              f"{d.high:+.3f}] | {d.p_value:.2g} |")
    return result


if __name__ == "__main__":
    main()
