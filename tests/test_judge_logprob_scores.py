"""Probability-weighted scores against hand computations, and on a tiny local model."""

from __future__ import annotations

import asyncio
import math

import pytest

from reasonscope.judge.logprob_scores import (
    expected_score,
    label_by_likelihood,
    most_likely_label,
    scale_values,
    score_by_expectation,
)


def test_expected_score_by_hand():
    # p(7) = 0.5, p(8) = 0.3, p(9) = 0.1 (mass 0.9); renormalised 5/9, 3/9, 1/9 -> (35 + 24 + 9) / 9 = 68/9
    lp = {"7": math.log(0.5), "8": math.log(0.3), "9": math.log(0.1), "cat": math.log(0.1)}
    w = expected_score(lp, scale_values(0, 10))
    assert w.value == pytest.approx(68 / 9)
    assert w.valid_mass == pytest.approx(0.9)
    assert w.probabilities["7"] == pytest.approx(5 / 9)
    assert "cat" not in w.probabilities


def test_expected_score_degenerate():
    w = expected_score({"1": -math.inf}, scale_values(0, 1))
    assert w.value is None and "no finite" in w.reason
    assert expected_score({}, scale_values()).value is None


def test_most_likely_label_by_hand_and_ties():
    w = most_likely_label({"sports": -1.2, "world": -0.4, "business": -3.0}, ["sports", "world", "business"])
    assert w.value == "world"
    total = math.exp(-1.2) + math.exp(-0.4) + math.exp(-3.0)
    assert w.probabilities["world"] == pytest.approx(math.exp(-0.4) / total)
    assert most_likely_label({"a": -1.0, "b": -1.0}, ["b", "a"]).value == "b"


def test_on_a_tiny_local_model_matches_its_own_logprobs(tiny_causal_lm):
    from reasonscope.models.registry import create_model
    from reasonscope.plan import ModelConfig

    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}"))
    prompt = "Score from 0 to 2 :"
    values = scale_values(0, 2)
    lps = model.logprobs_sync(prompt, list(values))
    p = [math.exp(x) for x in lps]
    by_hand = sum(pi * v for pi, v in zip(p, values.values(), strict=True)) / sum(p)
    assert asyncio.run(score_by_expectation(model, prompt, values)).value == pytest.approx(by_hand)
    labels = ["yes", "no"]
    lab = asyncio.run(label_by_likelihood(model, prompt, labels))
    lls = model.logprobs_sync(prompt, labels)
    assert lab.value == labels[0 if lls[0] >= lls[1] else 1]
