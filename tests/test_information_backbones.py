"""The wiring of benchmarks/information_backbones.py: the environment inputs it builds, the start loss against
hand values, and one run over two tiny backbones (an encoder-decoder and a causal LM)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from reasonscope.information.variants import rationale_input

CSV = ("pairID,gold_label,Sentence1,Sentence2,Explanation_1,Explanation_2,Explanation_3\n"
       "d0,entailment,A man plays a guitar .,A man plays music .,a guitar makes music .,,\n"
       "d1,contradiction,Two dogs run on grass .,Two cats sleep indoors .,dogs are not cats .,,\n"
       "d2,neutral,A woman reads a book .,A woman reads a novel .,not every book is a novel .,,\n"
       "d3,entailment,Kids swim in a lake .,Kids are in water .,a lake is water .,,\n")


@pytest.fixture
def esnli_csv(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text(CSV)
    return path


def test_environments_change_one_word_of_the_one_verb_baseline(esnli_csv, load_benchmark):
    from reasonscope.data.loaders import load_dataset
    from reasonscope.information.baseline import rule_baseline
    from reasonscope.shared_settings import DatasetConfig

    bench = load_benchmark("information_backbones")
    data = bench.examples(esnli_csv, 3)
    assert [y for _, y in data] == ["entailment", "contradiction", "neutral"]
    item = load_dataset(DatasetConfig(name="t", format="esnli", path=str(esnli_csv))).items[0]
    b = rule_baseline(item, "word")
    term = max(b.split(), key=len)
    envs = data[0][0]
    assert envs[0] == rationale_input("a guitar makes music .", b)
    assert envs[1] == rationale_input("a guitar makes music .", b.replace(term, "[MASK]", 1))
    assert envs[2] == rationale_input("a guitar makes music .", b.replace(term, "something", 1))


class _Fixed:
    """An evaluator stand-in: vocabulary of 4, id 0 special, logits [0, 0, 0, ln 3] at every position."""

    def __init__(self):
        self.model = SimpleNamespace(eval=lambda: None)
        self.tokenizer = SimpleNamespace(all_special_ids=[0])

    def batch(self, inputs, targets):
        rows = [[0, 2, 3, 0] if y == "two-piece" else [0, 3, 0] for y in targets]
        width = max(map(len, rows))
        labels = torch.tensor([r + [-100] * (width - len(r)) for r in rows])
        return {"input_ids": torch.zeros(len(rows), 2, dtype=torch.long), "labels": labels}

    def logits(self, batch):
        labels = batch["labels"]
        z = torch.zeros(*labels.shape, 4)
        z[..., 3] = math.log(3.0)
        return z, labels

    def loss(self, batch):
        z, labels = self.logits(batch)
        return torch.nn.functional.cross_entropy(z.reshape(-1, 4), labels.reshape(-1), ignore_index=-100)


def test_start_loss_and_its_continuation_pieces_against_hand_values(load_benchmark):
    bench = load_benchmark("information_backbones")
    # softmax of [0, 0, 0, ln 3] = [1/6, 1/6, 1/6, 1/2]: CE ln 6 for ids 0-2, ln 2 for id 3
    every, continuation = bench.start_loss(_Fixed(), [(["x"], "two-piece")])
    assert every == pytest.approx((3 * math.log(6) + math.log(2)) / 4)
    assert continuation == pytest.approx(math.log(2))  # pieces 2, 3 (special 0 left out): the second, id 3
    every, continuation = bench.start_loss(_Fixed(), [(["x"], "one-piece")])
    assert every == pytest.approx((2 * math.log(6) + math.log(2)) / 3) and continuation is None


def test_the_start_penalty_is_zero_for_constant_logits_and_positive_otherwise(tiny_seq2seq, esnli_csv,
                                                                             load_benchmark):
    """Constant logits (output head zeroed) are IRMv1's trivial minimum: d L_e / d w_e = E_p[z] - z_y = 0 for
    every environment, so the penalty and its gradient are exactly 0; a random head's are not."""
    from reasonscope.information.evaluator import load_evaluator

    bench = load_benchmark("information_backbones")
    data = bench.examples(esnli_csv, 2)
    ev = load_evaluator(str(tiny_seq2seq))
    penalty, ratio = bench.start_penalty(ev, data, 5.0)
    assert penalty > 0 and ratio > 0
    with torch.no_grad():
        ev.model.get_output_embeddings().weight.zero_()
    penalty, ratio = bench.start_penalty(ev, data, 5.0)
    assert (penalty, ratio) == (0.0, 0.0)


def test_one_run_over_an_encoder_decoder_and_a_causal_lm(esnli_csv, tiny_seq2seq, tiny_causal_lm, capsys,
                                                         load_benchmark):
    bench = load_benchmark("information_backbones")
    bench.main(["--train", str(esnli_csv), "--items", "4", "--threads", "1",
                "--backbones", str(tiny_seq2seq), str(tiny_causal_lm)])
    out = capsys.readouterr().out
    assert "4 e-SNLI pairs" in out and "| grad ratio lambda_IRM 5 x IRM / ERM |" in out
    assert f"| {tiny_seq2seq} | seq2seq |" in out and f"| {tiny_causal_lm} | causal |" in out
    assert "median s (n=2)" in out  # 4 steps each, the first 2 left out
    assert f"| {tiny_seq2seq} |" in out.split("ERM + IRM step")[1] and "| 1.00 |" in out
    bench.main(["--train", str(esnli_csv), "--items", "3", "--no-timing", "--backbones", str(tiny_seq2seq)])
    out = capsys.readouterr().out
    assert f"| {tiny_seq2seq} | seq2seq |" in out and "ERM + IRM step" not in out
