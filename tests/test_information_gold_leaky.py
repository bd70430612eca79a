"""benchmarks/information_gold_leaky.py: the control rationales, their scores on a tiny evaluator against the
evaluator's own numbers, the per-premise clustering of Gold - X, and the leakage-term census."""

from __future__ import annotations

import pytest

from reasonscope.shared_settings import StatsConfig

LABELS = ["contradiction", "entailment", "neutral"]


def test_control_texts(load_benchmark):
    bench = load_benchmark("information_gold_leaky")
    texts = bench.control_texts("A dog runs. ", "neutral", LABELS)
    assert texts == {"gold": "A dog runs.", "gold_leaky": "A dog runs. The answer is neutral.",
                     "gold_wrong": "A dog runs. The answer is contradiction.",
                     "gold_nolabel": "A dog runs. The answer is given.", "leaky": "The answer is neutral.",
                     "leaky_wrong": "The answer is contradiction."}
    assert bench.control_texts("r", "entailment", LABELS)["leaky_wrong"] == "The answer is neutral."


def test_measure_on_a_tiny_evaluator(load_benchmark, tiny_seq2seq):
    from reasonscope.information.evaluator import load_evaluator

    bench = load_benchmark("information_gold_leaky")
    ev = load_evaluator(str(tiny_seq2seq))
    items = [{"id": "a", "premise": "P", "rationale": "it is true", "baseline": "so it is", "label": "entailment"},
             {"id": "b", "premise": "P", "rationale": "not true", "baseline": "it is not", "label": "contradiction"},
             {"id": "c", "premise": "Q", "rationale": "related", "baseline": "it is", "label": "neutral"}]
    out = bench.measure(ev, items, LABELS, StatsConfig(n_resamples=200, n_permutations=99))
    inputs, _ = ev.fit_inputs(["it is true The answer is entailment."], ["so it is"])
    expected = ev.candidate_log_likelihoods(inputs, LABELS)[0][1]
    assert out["per_item"]["gold_leaky"]["a"] == pytest.approx(expected, abs=1e-5)
    # the word-level tokenizer: "The answer is <label> ." adds 5 tokens to every input
    assert out["controls"]["gold_leaky"]["tokens"] - out["controls"]["gold"]["tokens"] == pytest.approx(5.0)
    d = {i: out["per_item"]["gold"][i] - out["per_item"]["gold_leaky"][i] for i in "abc"}
    clustered = ((d["a"] + d["b"]) / 2 + d["c"]) / 2  # premise P holds a and b
    assert out["controls"]["gold_leaky"]["diff"]["value"] == pytest.approx(clustered, abs=1e-6)
    assert out["controls"]["gold_leaky"]["diff"]["n"] == 2
    assert out["by_label"]["neutral"]["sum"] == pytest.approx(d["c"], abs=1e-6)
    assert out["by_label"]["neutral"]["mean"] == pytest.approx(d["c"] / out["by_label"]["neutral"]["label_tokens"])


def test_leak_term_census(load_benchmark):
    bench = load_benchmark("information_gold_leaky")
    envs = [{"leak": "implies"}, {"leak": "that"}, {"leak": "dog"}, {"leak": "implies"}, {"antonym": "none"}]
    census = bench.leak_terms(envs, {"implies", "denies"})
    assert census["n"] == 4 and census["kinds"] == {"verb": 2, "stop word": 1, "other": 1}
    assert census["top"][0] == ("implies", 2)


def test_ig_steps_agreement_counts_equal_leakage_words(load_benchmark):
    from reasonscope.information.leakage import LeakageTerm

    agreement = load_benchmark("information_ig_steps").agreement
    a = [LeakageTerm("implies", 0, 7, 1.0), None, LeakageTerm("dog", 3, 6, 0.5)]
    b = [LeakageTerm("implies", 4, 11, 2.0), None, LeakageTerm("that", 8, 12, 0.7)]
    assert agreement(a, b) == 2  # the same word (wherever it is), and both without a term
