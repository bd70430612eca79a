"""The wiring of benchmarks/flop_rates.py: FLOPs counted by hand for one Linear layer, the GEMM shapes and
products it times, the padding share, the profile's categories, the LAREV command's counts, one step of
each information phase and of the attack's gradient step on tiny models, printed with the table's columns,
and the sub-batch variant (a least-cost partition; the padded batch's loss and gradients)."""

from __future__ import annotations

from collections import Counter

import pytest


@pytest.fixture(scope="module")
def bench():
    """benchmarks/flop_rates.py as a module, registered in sys.modules (its dataclasses look their module up)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "flop_rates.py"
    spec = importlib.util.spec_from_file_location("flop_rates", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["flop_rates"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("flop_rates", None)


def test_flops_of_one_linear_layer_equal_the_hand_count(bench):
    import torch

    torch.manual_seed(0)
    layer = torch.nn.Linear(24, 40)
    x = torch.randn(3, 7, 24, requires_grad=True)
    # forward [21, 24] @ [24, 40], input gradient [21, 40] @ [40, 24], weight gradient [24, 21] @ [21, 40]
    hand = 3 * (2 * 21 * 24 * 40)
    assert bench.count_flops(lambda: layer(x).sum().backward()) == hand == 120_960
    with torch.no_grad():
        assert bench.count_flops(lambda: layer(x)) == 2 * 21 * 24 * 40
    assert bench.linear_shapes(lambda: layer(x), layer) == Counter({(21, 24, 40): 1})
    assert bench.gemm_products(Counter({(21, 24, 40): 2}), backward=True) == Counter(
        {(21, 24, 40): 2, (21, 40, 24): 2, (24, 21, 40): 2})
    assert bench.gemm_products(Counter({(21, 24, 40): 2}), backward=False) == Counter({(21, 24, 40): 2})
    assert bench.mm_peak(Counter({(16, 16, 16): 1}), threads=1, repeats=1) > 0


def test_padding_share_categories_and_the_commands_counts(bench):
    import torch

    masks = [torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]), torch.tensor([[1, 1], [1, 0]])]
    assert bench.padding_share(masks) == pytest.approx(2 / 10)  # 2 padded of 12 positions, 10 real tokens
    assert bench.padding_share([]) == 0.0
    assert bench.categorise("aten::addmm") == "matrix products"
    assert bench.categorise("aten::_scaled_dot_product_flash_attention_for_cpu") == "attention"
    assert bench.categorise("aten::native_layer_norm_backward") == "layer norm / softmax / loss"
    assert bench.categorise("aten::embedding_dense_backward") == "embedding gradients"
    assert bench.categorise("aten::_fused_adamw_") == "optimizer"
    assert bench.categorise("aten::gelu") == "other elementwise"
    # 2,000 pairs: 1,800 training, 200 validation; 8 + 8 epochs of ERM, 8 of the probe, 2 of Phi_LA
    assert bench.larev_counts() == {"phi_base": 14_400, "phi": 14_400, "probe": 14_400, "phi_la": 3_600,
                                    "ig": 2_000, "eval": 26 * 200 + 300 * 10}


def test_one_training_step_prints_the_table(bench, tiny_seq2seq, capsys):
    rows = bench.main(["--evaluator", str(tiny_seq2seq), "--items", "8", "--steps", "1", "--warmup", "0",
                       "--repeats", "1", "--no-peak", "--phases", "phi_base", "--project"])
    out = capsys.readouterr().out
    assert "| " + " | ".join(bench.COLUMNS) + " |" in out
    (row,) = rows
    assert row.phase == "phi_base" and row.examples == 8 and len(row.cells()) == len(bench.COLUMNS)
    assert row.gflop > 0 and row.seconds > 0 and row.peak > 0 and 0 < row.matmul_gflop <= row.gflop
    assert row.padding is not None and row.padding >= 0
    assert "| phi_base | 14,400 |" in out and "| total (projection) |" in out


@pytest.mark.slow
def test_one_step_of_each_phase_on_tiny_models(bench, tiny_seq2seq, tiny_causal_lm, capsys):
    rows = bench.main(["--evaluator", str(tiny_seq2seq), "--items", "12", "--steps", "1", "--warmup", "0",
                       "--repeats", "1", "--no-peak", "--profile", "--project", "--attack-model",
                       f"hf/{tiny_causal_lm}", "--attack-items", "1", "--phases", "phi_base", "phi", "probe",
                       "phi_la", "ig", "eval", "attack_token", "attack_embedding"])
    out = capsys.readouterr().out
    assert "| " + " | ".join(bench.COLUMNS) + " |" in out
    assert [r.phase for r in rows] == ["phi_base", "phi", "probe", "phi_la", "ig", "eval", "attack_token",
                                       "attack_embedding"]
    for row in rows:
        assert len(row.cells()) == len(bench.COLUMNS)
        assert row.gflop > 0 and row.seconds > 0 and row.peak > 0
        assert 0 < row.matmul_gflop <= row.gflop
    by = {r.phase: r for r in rows}
    assert by["phi_base"].examples == 8 and by["probe"].examples == 16 and by["ig"].examples == 4
    assert by["attack_token"].padding is None and by["phi"].padding is not None
    assert "| phase | wall s | matrix products | attention |" in out
    assert "| total (projection) |" in out


def _brute_cost(lengths, overhead):
    """The least (rows x longest + overhead per group) over every way to cut the sorted lengths."""
    import itertools

    s = sorted(lengths)
    best = float("inf")
    for cuts in itertools.product([False, True], repeat=len(s) - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [len(s)]
        best = min(best, sum((b - a) * s[b - 1] + overhead for a, b in zip(bounds, bounds[1:], strict=False)))
    return best


def test_length_groups_are_a_least_cost_partition(bench):
    import random

    assert bench.length_groups([10, 50, 12, 48], overhead=20) == [[0, 2], [3, 1]]  # 2*12 + 2*50 + 40 = 164 < 200
    assert bench.length_groups([10, 50, 12, 48], overhead=1000) == [[0, 2, 3, 1]]
    assert bench.length_groups([], overhead=5) == []
    rng = random.Random(0)
    for _ in range(40):
        lengths = [rng.randint(5, 120) for _ in range(rng.randint(1, 8))]
        overhead = rng.choice([0, 16, 64, 256])
        groups = bench.length_groups(lengths, overhead)
        assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
        assert sum(len(g) * max(lengths[i] for i in g) + overhead for g in groups) == _brute_cost(lengths, overhead)


def test_sub_batches_give_the_padded_batchs_loss_and_gradients(bench, tiny_seq2seq):
    """The variant that --variants times computes the same step: loss within 1e-6, gradients within 1e-5 of
    their largest value (dropout off)."""
    import torch

    from reasonscope.information.evaluator import load_evaluator
    from tolerance import assert_close_to_scale

    inputs = ["rationale : yes because so baseline : The answer is yes", "baseline : no",
              "rationale : The answer is not related to 3 4 5 6 7 8 9 10 11 12 baseline : Is it true that 2",
              "baseline : true false"]
    targets = ["yes", "no", "neutral", "true"]
    ev = load_evaluator(str(tiny_seq2seq))
    ev.model.eval()  # no dropout; gradients still flow
    groups = bench.grouped_batch(ev, inputs, targets, overhead=0)
    assert len(groups) > 1 and sum(len(g["input_ids"]) for g in groups) == 4
    assert sum(g["input_ids"].numel() for g in groups) < ev.batch(inputs, targets)["input_ids"].numel()

    def grads(loss):
        ev.model.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in ev.model.parameters() if p.grad is not None], float(loss.detach())

    g_whole, l_whole = grads(ev.loss(ev.batch(inputs, targets)))
    g_split, l_split = grads(bench.grouped_loss(ev, groups))
    assert l_split == pytest.approx(l_whole, rel=1e-6)
    for a, b in zip(g_split, g_whole, strict=True):
        assert_close_to_scale(a, b, rel=1e-5)
    with torch.no_grad():
        one = bench.grouped_batch(ev, inputs, targets, overhead=10**9)
        assert len(one) == 1  # one run, its rows sorted by length: the same loss up to float rounding
        assert float(bench.grouped_loss(ev, one)) == pytest.approx(float(ev.loss(ev.batch(inputs, targets))), rel=1e-6)
