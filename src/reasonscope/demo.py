"""The built-in demo plan: the embedded SmolLM2 on the synthetic set, on CPU, in a few minutes.

12 items (4 arithmetic, 4 yes/no logic, 4 multiple choice), K = 3 samples at temperature 0.7,
3 paraphrases each, so 72 generations; LS judged by SmolLM2 itself through label log-probabilities
(no NLI model ships offline), SS by BERTScore F1 with the embedded MiniLM.
Evidence (RACE): a TF-IDF logistic regression on 200 built-in topic texts; SmolLM2 labels and
explains 12 test texts (12 more generations), and the rationales are matched to the classifier's
top-5 features.
Attributes: SmolLM2 judges its own 12 primary answers on the twelve attributes (0-10 scale, 256 new
tokens, temperature 0; a weak judge, so many scores are unscored and counted as such), and the
ROSCOE-style metrics use the embedded MiniLM (faithfulness, informativeness, repetition), SmolLM2
as NLI judge (self- and source-consistency) and SmolLM2 perplexity. One model, so no ratings.
Attack (MATCHA): SmolLM2 answers the first 3 arithmetic items answer-first; the ones it gets right are
attacked at token level (3 gradient rounds, 8 candidates), at embedding level and by random insertion,
with 48-token chains; outcomes by the arithmetic check alone (no judge in the demo, stated in the report).
Information (REV, LAREV): evaluators warm-started from the embedded MiniLM (encoder-decoder) are trained
on 150 synthetic items with gold rationales (Phi_base and Phi 2 epochs, probe and Phi_LA 1 epoch, lr 1e-4
instead of the document's 3e-5 so that so few epochs learn something; 10 integrated-gradient steps;
lambda_IRM 0.5 instead of 5: the MiniLM decoder's output head starts untrained, and at lambda_IRM >= 1
one short epoch collapses Phi_LA to flat logits, measured and reported as a warning when it happens),
and the Gold / Leaky / Gold-Leaky / Vacuous variants of 30 new items are scored.
"""

from __future__ import annotations

from typing import Any


def demo_plan(output_dir: str = "runs", size: int = 4, max_tokens: int = 160) -> dict[str, Any]:
    return {
        "experiment": {"name": "demo", "seed": 7, "output_dir": output_dir},
        "models": [{"spec": "smollm2", "name": "smollm2-135m", "temperature": 0.7, "max_tokens": max_tokens,
                    "batch_size": 12}],
        "datasets": [{"name": "synthetic", "format": "synthetic", "size": size}],
        "families": {"behavior": {
            "samples": 3, "paraphrases": 3,
            "nli": {"backend": "llm", "model": "smollm2"},
            "similarity": {"method": "bertscore", "model": "embedded-minilm", "num_layers": 6},
            "strategies": {"my_custom": {"correctness": 0.5, "logical_coherence": 0.3, "robustness": 0.2}},
        },
            "evidence": {
                "train": {"name": "topics-train", "format": "topics", "size": 200, "split": "train"},
                "test": {"name": "topics-test", "format": "topics", "size": size * 3, "split": "test"},
            },
            "attributes": {
                "judges": [{"spec": "smollm2", "name": "smollm2-judge", "max_tokens": 256, "batch_size": 12}],
                "scale": "0-10",
                "automatic": {"embedding": "embedded-minilm", "nli": {"backend": "llm", "model": "smollm2"},
                              "perplexity": "smollm2"},
            },
            "attack": {"answer_types": ["number"], "limit": 3, "steps": 3, "candidates": 8, "cot_tokens": 48},
            "information": {
                "train": {"name": "information-train", "format": "synthetic", "size": 50, "seed": 101},
                "test": {"name": "information-test", "format": "synthetic", "size": 10, "seed": 202},
                "evaluator": "embedded-minilm-ed", "epochs": 2, "probe_epochs": 1, "larev_epochs": 1, "lr": 1e-4,
                "ig_steps": 10, "lambda_irm": 0.5,
            },
        },
        "stats": {"n_resamples": 2000},
    }
