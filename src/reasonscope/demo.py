"""The built-in demo plan: the embedded SmolLM2 on the synthetic set, on CPU, in a few minutes.

18 items (6 arithmetic, 6 yes/no logic, 6 multiple choice), K = 2 samples at temperature 0.7,
2 paraphrases each, so 72 generations, sent with the 12 evidence predictions in 2 batches of 42 (on 2 CPU
cores a decoding step costs little more for 42 rows than for 12: ``benchmarks/generation_batching.py``); LS judged by SmolLM2 itself through label log-probabilities
(no NLI model ships offline), SS by BERTScore F1 with the embedded MiniLM.
Evidence (RACE): a TF-IDF logistic regression on 200 built-in topic texts; SmolLM2 labels and
explains 12 test texts (12 more generations), its answer constrained to ``{"label": one of the
classes, "rationale": text}`` (structured outputs, :mod:`reasonscope.models.structured`); the label is
then read as the class of highest log-likelihood where the JSON answer starts (lm-eval's multiple-choice
method, :mod:`reasonscope.evidence.likelihood`), and the written rationales are matched to the
classifier's top-5 features.
Attributes: SmolLM2 judges its own primary answers on the twelve attributes by expected scores (G-Eval:
the probability-weighted score over 0..10 from its log-probabilities, one attribute per prompt, the
rationale's prompt prefix computed once; :mod:`reasonscope.attributes.expected_scores`): its sampled
score is the same for every rationale, its probabilities are not. The ROSCOE-style metrics use the embedded MiniLM (faithfulness, informativeness, repetition)
and SmolLM2 perplexity. Self- and source-consistency need an NLI model: not computed in the demo (the
LLM-as-NLI route over all step pairs costs minutes on CPU), said so in the report. One model, so no ratings.
Attack (MATCHA): SmolLM2 answers the first ``ATTACK_ITEMS`` seeded arithmetic word problems
(:mod:`reasonscope.data.word_problems`, seed 7: the items of ``benchmarks/attack_replication.py``)
answer-first; the ones it gets right are attacked at token level (2 gradient rounds, 8 candidates), at
embedding level (eps = 0.02 x the largest token-embedding L-inf norm instead of the family's 0.005, at
which no embedding attack on these problems changed the answer or stated a false equation) and by
random insertion, with 48-token chains; outcomes by the arithmetic check alone (no judge in the demo,
stated in the report).
Information (REV, LAREV): evaluators warm-started from the embedded MiniLM (encoder-decoder) are trained
on 60 synthetic items with gold rationales (Phi_base and Phi 2 epochs, probe and Phi_LA 1 epoch, lr 1e-4
instead of the document's 3e-5 so that so few epochs learn something; 10 integrated-gradient steps;
lambda_IRM 0.5 instead of 5: the MiniLM decoder's output head starts untrained, and at lambda_IRM >= 1
one short epoch collapses Phi_LA to flat logits, measured and reported as a warning when it happens),
and the Gold / Leaky / Gold-Leaky / Vacuous variants of 30 new items are scored.
"""

from __future__ import annotations

from typing import Any

ATTACK_ITEMS = 3  # word problems attacked by the demo (the first of the replication benchmark's set)


def demo_plan(output_dir: str = "runs", size: int = 6, max_tokens: int = 160) -> dict[str, Any]:
    """The plan of the built-in demo: the embedded SmolLM2 on ``size`` synthetic items, run name ``demo``.

    Args:
        output_dir: Parent directory of the run directory.
        size: Number of synthetic items.
        max_tokens: Generation budget per answer.

    Returns:
        The plan as a dict, ready for :func:`reasonscope.plan.parse_plan`.
    """
    return {
        "experiment": {"name": "demo", "seed": 7, "output_dir": output_dir},
        "models": [{"spec": "smollm2", "name": "smollm2-135m", "temperature": 0.7, "max_tokens": max_tokens,
                    "batch_size": 42}],
        "datasets": [{"name": "synthetic", "format": "synthetic", "size": size}],
        "families": {"behavior": {
            "samples": 2, "paraphrases": 2,
            "nli": {"backend": "llm", "model": "smollm2"},
            "similarity": {"method": "bertscore", "model": "embedded-minilm", "num_layers": 6},
            "strategies": {"my_custom": {"correctness": 0.5, "logical_coherence": 0.3, "robustness": 0.2}},
        },
            "evidence": {
                "train": {"name": "topics-train", "format": "topics", "size": 200, "split": "train"},
                "test": {"name": "topics-test", "format": "topics", "size": 12, "split": "test"},
                "label_reading": "likelihood",
            },
            "attributes": {
                "judges": [{"spec": "smollm2", "name": "smollm2-judge"}],
                "scale": "0-10", "scoring": "expected",
                "automatic": {"embedding": "embedded-minilm", "nli": {"backend": "none"}, "perplexity": "smollm2"},
            },
            "attack": {"answer_types": ["number"], "steps": 2, "candidates": 8, "cot_tokens": 48, "epsilon_p": 0.02,
                       "dataset": {"name": "word-problems", "format": "word_problems", "size": ATTACK_ITEMS,
                                   "seed": 7}},
            "information": {
                "train": {"name": "information-train", "format": "synthetic", "size": 20, "seed": 101},
                "test": {"name": "information-test", "format": "synthetic", "size": 10, "seed": 202},
                "evaluator": "embedded-minilm-ed", "epochs": 2, "probe_epochs": 1, "larev_epochs": 1, "lr": 1e-4,
                "ig_steps": 10, "lambda_irm": 0.5,
            },
        },
        "stats": {"n_resamples": 2000},
    }


def print_notes(console: Any, run_dir: Any) -> None:
    """Print :func:`family_notes` of the run in ``run_dir`` (nothing when it has no summary)."""
    import json
    from pathlib import Path

    path = Path(run_dir) / "summary.json"
    if path.is_file():
        console.print("[bold]What the demo shows, family by family")
        for line in family_notes(json.loads(path.read_text())):
            console.print("  " + line, markup=False, highlight=False)


def _find(tree: Any, key: str) -> list[Any]:
    """Every value stored under ``key`` anywhere in a JSON tree (summaries nest per model and dataset)."""
    if isinstance(tree, dict):
        return ([tree[key]] if key in tree else []) + [x for v in tree.values() for x in _find(v, key)]
    if isinstance(tree, list):
        return [x for v in tree for x in _find(v, key)]
    return []


def family_notes(summary: dict[str, Any]) -> list[str]:
    """One line per family: what the demo's numbers show, and what they do not."""
    out = []
    if summary.get("behavior"):
        out.append("behavior: CQ, CS, RS, LS, ES, SS of SmolLM2 with bootstrap CIs on 18 synthetic items. Shows the "
                   "metrics end to end; not a measurement of SmolLM2 (few items, wide intervals), and LS rests on "
                   "SmolLM2 as its own NLI judge.")
    ev = summary.get("evidence") or {}
    llm = next(iter(_find(ev, "llm")), None)
    if isinstance(llm, dict) and llm.get("n"):
        parsed = llm["n"] - llm.get("unparseable", 0)
        how = " (labels by log-likelihood)" if llm.get("label_reading") == "likelihood" else ""
        out.append(f"evidence: {parsed}/{llm['n']} constrained predictions give a label and a rationale{how}; coverage of "
                   "the classifier's top features by those rationales. Does not show that SmolLM2's rationales are "
                   "faithful: 12 texts, a weak model.")
    at = summary.get("attributes") or {}
    if at.get("unscored") is not None and at.get("n_targets"):
        total = at["n_targets"] * len(at.get("attributes", []))
        for judge, counts in at["unscored"].items():
            missing = sum(counts.values())
            how = ("expected scores from its log-probabilities (G-Eval)" if at.get("scoring") == "expected"
                   else "constrained to the judge's JSON schema")
            out.append(f"attributes: {total - missing}/{total} judge scores read from {judge} ({how}) plus the "
                       "ROSCOE-style embedding metrics. A 135M judge scores its own "
                       "answers: the numbers show the pipeline, not rationale quality; self/source consistency "
                       "need an NLI model and are not computed.")
    ak = summary.get("attack") or {}
    for name, t in (ak.get("models") or {}).items():
        rates = t.get("rates") or {}
        attacked = {m: r.get("attacked", 0) for m, r in rates.items()}
        decided = {m: r.get("n", 0) for m, r in rates.items()}
        clean_wrong = max((r.get("counts", {}).get("clean_wrong", 0) for r in rates.values()), default=0)
        out.append(f"attack: {t.get('answered_correctly', 0)}/{t.get('items', 0)} items answered correctly by {name}; "
                   f"attacked per method {attacked}, decided {decided}"
                   + (f"; {clean_wrong} with clean reasoning already wrong (a false equation before any "
                      "perturbation: outside the rates, as MATCHA's success means reasoning that became wrong)"
                      if clean_wrong else "")
                   + ". Outcomes by the arithmetic check only (no judge): a success rate on so few items is an "
                   "illustration, not an estimate.")
    if summary.get("information"):
        out.append("information: REV and LAREV on a MiniLM encoder-decoder trained for a few epochs on 60 synthetic "
                   "items: a smoke test that the training and the variant tables run, not a valid REV estimate.")
    return out
