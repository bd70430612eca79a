"""Evaluator inputs: a long r + b input keeps b whole and loses the end of the rationale, counted; the
documents' reduction (sum over y's tokens) is the default; penalty weights follow the dataset format."""

from __future__ import annotations

import pytest

from reasonscope.information.defaults import penalty_weights
from reasonscope.information.evaluator import load_evaluator
from reasonscope.information.variants import rationale_input
from reasonscope.plan import InformationConfig
from reasonscope.types import Item


def test_long_rationales_are_cut_never_the_baseline(tiny_seq2seq):
    ev = load_evaluator(str(tiny_seq2seq))
    ev.max_input_tokens = 32
    baseline = "Ana has 3 apples and gets 5 more so she has 8 apples."
    long_r = " ".join(f"step {i} adds one apple." for i in range(40))
    texts, counts = ev.fit_inputs([long_r, "3 + 5 = 8."], [baseline, baseline])
    assert counts == {"inputs": 2, "rationale_truncated": 1, "baseline_over_limit": 0}
    assert texts[1] == rationale_input("3 + 5 = 8.", baseline)  # short enough: untouched
    assert texts[0].endswith(f" baseline: {baseline}")  # b whole, at the end
    kept = texts[0].removeprefix("rationale: ").removesuffix(f" baseline: {baseline}")
    assert long_r.startswith(kept) and 0 < len(kept) < len(long_r)
    assert ev.input_lengths([texts[0]])[0] <= 32
    # one more rationale token would not fit: the cut is as late as the budget allows
    next_piece = long_r[: len(kept) + 8]
    assert ev.input_lengths([rationale_input(next_piece, baseline)])[0] > 32
    # a batch of the fitted input keeps the baseline's last token (the tokenizer truncates nothing)
    batch = ev.batch([texts[0]], ["8"])
    full = ev.tokenizer([texts[0]])["input_ids"][0]
    assert batch["input_ids"][0].tolist()[: len(full)] == full


def test_a_baseline_over_the_budget_is_counted_apart(tiny_seq2seq):
    ev = load_evaluator(str(tiny_seq2seq))
    ev.max_input_tokens = 16
    texts, counts = ev.fit_inputs(["a short rationale"], [" ".join(["word"] * 40)])
    assert counts == {"inputs": 1, "rationale_truncated": 1, "baseline_over_limit": 1}
    assert texts[0].startswith("rationale:  baseline: word")


def test_default_reduction_is_the_sum_and_mean_stays_an_option(tiny_seq2seq):
    cfg = InformationConfig(train={"name": "t", "format": "synthetic"})
    assert cfg.reduction == "sum"
    ev = load_evaluator(str(tiny_seq2seq))
    total = ev.log_likelihood(["Ana has 3 apples"], ["8 apples"])[0]
    mean = ev.log_likelihood(["Ana has 3 apples"], ["8 apples"], reduction="mean")[0]
    n_target = int((ev.batch(["x"], ["8 apples"])["labels"] != -100).sum())
    assert n_target > 1 and total == pytest.approx(mean * n_target, rel=1e-5)


@pytest.mark.parametrize(("fmt", "plan", "nli", "expected"), [
    ("esnli", {}, True, (25.0, 0.005, "e-SNLI default (format esnli)")),
    ("ecqa", {}, False, (5.0, 5e-4, "ECQA default (format ecqa)")),
    ("jsonl", {}, True, (25.0, 0.005, "e-SNLI default (NLI items)")),
    ("synthetic", {}, False, (5.0, 5e-4, "ECQA default (format synthetic: no dataset-specific values)")),
    ("esnli", {"lambda_irm": 1.0, "lambda_probe": 0.0}, True, (1.0, 0.0, "plan")),
    ("esnli", {"lambda_irm": 2.0}, True, (2.0, 0.005, "plan (lambda_irm), other from the e-SNLI default "
                                                     "(format esnli)")),
    # the offline MiniLM encoder-decoder: lambda_IRM 5 on e-SNLI (25 collapses its Phi_LA to chance)
    ("esnli", {"evaluator": "embedded-minilm-ed"}, True,
     (5.0, 0.005, "e-SNLI default for embedded-minilm-ed (format esnli)")),
    ("jsonl", {"evaluator": "embedded-minilm-ed"}, True,
     (5.0, 0.005, "e-SNLI default for embedded-minilm-ed (NLI items)")),
    ("ecqa", {"evaluator": "embedded-minilm-ed"}, False, (5.0, 5e-4, "ECQA default (format ecqa)")),
    ("esnli", {"evaluator": "embedded-minilm-ed", "lambda_irm": 25.0}, True,
     (25.0, 0.005, "plan (lambda_irm), other from the e-SNLI default for embedded-minilm-ed (format esnli)")),
])
def test_penalty_weights_follow_the_dataset_unless_the_plan_sets_them(fmt, plan, nli, expected):
    train = {"name": "t", "format": fmt, **({} if fmt == "synthetic" else {"path": "x"})}
    cfg = InformationConfig(train=train, **plan)
    meta = {"premise": "p", "hypothesis": "h"} if nli else {}
    items = [Item(id=str(i), input="q", target="entailment", metadata=meta) for i in range(3)]
    w = penalty_weights(cfg, items)
    assert (w.lambda_irm, w.lambda_probe, w.source) == expected


def test_scores_from_the_candidate_pass_equal_the_direct_log_likelihood(tiny_seq2seq):
    from reasonscope.information.scoring import score_variants

    ev = load_evaluator(str(tiny_seq2seq))
    baselines = {"a": "A dog runs, which means that an animal moves.", "b": "Since it rains, it may or may not be "
                 "that he is wet."}
    y = {"a": "entailment", "b": "neutral"}
    texts = {"gold": {"a": "dogs are animals", "b": "rain does not say where he is"}}
    labels = ["contradiction", "entailment", "neutral"]
    fast, acc_fast, _ = score_variants({"rev": ev}, ev, texts, baselines, y, ["a", "b"], candidates=labels)
    direct = {i: ev.log_likelihood([rationale_input(texts["gold"][i], baselines[i])], [y[i]])[0]
              - ev.log_likelihood([f"baseline: {baselines[i]}"], [y[i]])[0] for i in ("a", "b")}
    assert fast["rev"]["gold"] == pytest.approx(direct, rel=1e-5, abs=1e-5)
    preds = ev.predict([rationale_input(texts["gold"][i], baselines[i]) for i in ("a", "b")], labels)
    assert acc_fast["rev"]["gold"] == sum(p == y[i] for p, i in zip(preds, ("a", "b"), strict=True)) / 2


def test_batched_greedy_predictions_equal_one_at_a_time():
    """Greedy decoding of a seq2seq evaluator in padded batches gives each input's own decoding (the embedded
    MiniLM encoder-decoder, untrained decoder: 16 non-empty tokens per input, so padding would show)."""
    ev = load_evaluator("embedded-minilm-ed", seed=0)
    inputs = ["baseline: a dog runs", "rationale: rain does not say where he is baseline: it rains, he may be wet",
              "baseline: x", "rationale: dogs are animals baseline: a dog runs, so an animal moves fast today"]
    batched = ev.predict(inputs, None, batch_size=4)
    alone = [ev.predict([x], None, batch_size=1)[0] for x in inputs]
    assert batched == alone and len(batched) == 4 and all(batched) and len(set(batched)) > 1
