"""The wiring of benchmarks/flop_rates.py: FLOPs counted by hand for one Linear layer, the GEMM shapes and
products it times, the padding share, the profile's categories, the LAREV command's counts, one step of
each information phase and of the attack's gradient step on tiny models, printed with the table's columns,
the sub-batch variant (a least-cost partition; the padded batch's loss and gradients), and the side-by-side
checks of torch.compile and of flushing denormals: the differences reported (hand-computed), the subnormal
count, the CPU accounting of other processes, the flush switch, a competing process, and an in-place compiled
model switchable back to eager with the same outputs."""

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


def _printed_row(out: str, phase: str) -> list[str]:
    """The cells of ``phase``'s table row, printed twice: as it is measured, then in the table."""
    rows = [line for line in out.splitlines() if line.startswith(f"| {phase} |")]
    assert len(rows) == 2 and rows[0] == rows[1]
    return [c.strip() for c in rows[0].strip("|").split("|")]


# -- torch.compile, flushing denormals and contention side by side (--compile, --flush-variants, --contention) --

def test_differences_are_the_loss_gap_and_the_gradients_relative_gap(bench):
    import torch

    eager = [torch.tensor(2.0), torch.tensor([1.0, -4.0]), torch.tensor([0.5])]
    compiled = [torch.tensor(2.25), torch.tensor([1.0, -3.0]), torch.tensor([0.0])]
    # the loss: |2.25 - 2| = 0.25; the gradients: largest gap 1.0 over largest |eager| 4.0
    assert bench.differences(eager, compiled) == (0.25, 0.25)
    # one tensor (an output): its own gap, and that gap over its largest |value|
    assert bench.differences([torch.tensor([2.0, -8.0])], [torch.tensor([2.0, -7.0])]) == (1.0, 0.125)
    assert bench.differences([torch.zeros(2)], [torch.zeros(2)]) == (0.0, 0.0)


def test_subnormals_are_counted_below_the_smallest_normal_float(bench):
    import torch

    tiny = torch.finfo(torch.float32).tiny  # 1.18e-38
    x = torch.tensor([0.0, 1e-40, -1e-39, tiny, 1.0])  # two subnormal; 0 and tiny itself are not
    assert bench.subnormals([x, None, torch.tensor([1, 2])]) == (2, 5)
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1e-40, 1.0]]))
    assert bench.subnormal_report(model, None) == ("parameters 1 of 2, gradients 0 of 0, "
                                                   "optimizer state 0 of 0")


def test_cpu_counters_and_the_thread_report(bench):
    import time

    busy0, steal0 = bench.cpu_counters()
    t0 = time.process_time()
    while time.process_time() - t0 < 0.2:  # spin: this process is busy
        pass
    busy1, steal1 = bench.cpu_counters()
    assert busy1 - busy0 >= 0.1 and steal1 >= steal0 >= 0
    assert " OS threads, torch " in bench.thread_report()


def test_flushing_denormals_holds_for_the_call_only(bench):
    import torch

    if not torch.set_flush_denormal(False):
        pytest.skip("no flush-to-zero on this CPU")
    flushed = bench.with_flush_denormal(lambda i: torch.tensor([1e-39]) * (i + 1))(1)
    assert flushed.item() == 0.0  # 1e-39 is subnormal in float32: read as 0
    assert (torch.tensor([1e-39]) * 2).item() == pytest.approx(2e-39)  # off again after the call


def test_flush_variants_print_both_timings_and_no_difference(bench, tiny_seq2seq, capsys):
    bench.main(["--evaluator", str(tiny_seq2seq), "--items", "8", "--steps", "2", "--warmup", "0", "--no-peak",
                "--flush-variants", "--phases", "phi_base"])
    out = capsys.readouterr().out
    assert "| " + " | ".join(bench.FLUSH_COLUMNS) + " |" in out
    cells = _printed_row(out, "phi_base")
    assert float(cells[1]) > 0 and float(cells[2]) > 0
    assert float(cells[4]) < 1e-5 and float(cells[5]) < 1e-4  # the tiny model has no subnormal values to flush


@pytest.mark.slow
def test_a_switchable_model_runs_compiled_and_eager_with_the_same_outputs(bench):
    import torch

    class Tiny(torch.nn.Module):  # not a torch.nn built-in, whose top-level call dynamo would leave eager
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(6, 5), torch.nn.Linear(5, 3)

        def forward(self, x):
            return self.b(torch.nn.functional.gelu(self.a(x)))

    torch.manual_seed(0)
    model = Tiny()
    x = torch.randn(4, 6)
    expected = model(x).detach()
    switch = bench.Switchable(model, backend="inductor", dynamic=True)
    graphs0, _ = bench.dynamo_counts()
    eager = switch.step(lambda i: model(x), False)(0)
    assert bench.dynamo_counts()[0] == graphs0  # eager: nothing compiled
    compiled = switch.step(lambda i: model(x[: i + 1]), True)(3)
    assert bench.dynamo_counts()[0] == graphs0 + 1
    assert model._compiled_call_impl is None  # eager again after the step
    assert torch.equal(eager, expected)
    assert torch.allclose(compiled, expected, atol=1e-6)


@pytest.mark.slow
def test_compile_mode_on_a_tiny_evaluator(bench, tiny_seq2seq, capsys):
    bench.main(["--evaluator", str(tiny_seq2seq), "--items", "8", "--steps", "1", "--warmup", "1", "--repeats",
                "1", "--no-peak", "--compile", "--check-training", "--phases", "phi"])
    out = capsys.readouterr().out
    assert "| " + " | ".join(bench.COMPILE_COLUMNS) + " |" in out
    cells = _printed_row(out, "phi")
    assert float(cells[2]) > 0 and float(cells[3]) > 0 and float(cells[8]) > 0  # eager, compiled, compile s
    assert float(cells[10]) < 1e-4 and float(cells[11]) < 1e-3  # loss and gradients as eager's (float32)


def test_a_competitor_runs_beside_the_step_and_is_gone_after(bench):
    import subprocess

    seen = []

    def step(i):
        out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        seen.append(any(line.endswith("-c while True: pass") for line in out.splitlines()))
        return 2 * i

    assert bench.with_competitor(step)(3) == 6
    assert seen == [True]
    after = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not any(line.endswith("-c while True: pass") for line in after.splitlines())


def test_bf16_mode_times_both_precisions_and_projects_bf16_training_only(bench, tiny_seq2seq, capsys):
    import torch

    layer = torch.nn.Linear(4, 3)
    assert bench.with_autocast_bf16(lambda i: layer(torch.ones(2, 4)))(0).dtype == torch.bfloat16
    assert layer(torch.ones(2, 4)).dtype == torch.float32  # the autocast holds for the call only
    bench.main(["--evaluator", str(tiny_seq2seq), "--items", "16", "--steps", "2", "--warmup", "0", "--repeats", "1",
                "--no-peak", "--dtype", "bf16", "--phases", "phi_base", "eval", "--project"])
    out = capsys.readouterr().out
    assert "float32 and bfloat16 autocast" in out and "| " + " | ".join(bench.DTYPE_COLUMNS) + " |" in out
    rows = {}
    for line in out.splitlines():  # each phase's row, printed as measured and again in the table
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("phi_base", "eval") and len(cells) == len(bench.DTYPE_COLUMNS):
            assert rows.setdefault(cells[0], cells) == cells
    assert set(rows) == {"phi_base", "eval"}
    for cells in rows.values():
        f32, b16, ratio, gflop = float(cells[2]), float(cells[3]), float(cells[4]), float(cells[1])
        # each figure is of the unrounded seconds, which are printed to 3 decimals (+-5e-4): within what that allows
        assert (f32 - 5e-4) / (b16 + 5e-4) - 5e-3 <= ratio <= (f32 + 5e-4) / (b16 - 5e-4) + 5e-3
        for rate, secs in ((float(cells[5]), f32), (float(cells[8]), b16)):  # GFLOP/s = GFLOP / s
            assert gflop / (secs + 5e-4) * 0.998 <= rate <= gflop / max(secs - 5e-4, 1e-9) * 1.002
        assert 0 < float(cells[11]) < 0.5  # bfloat16 rounding moves the loss / output, a little
    # the projection: phi_base (training) at its bf16 seconds, eval (scoring stays float32) at its float32 ones
    proj = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith(("| phi_base | 14,400", "| eval | 8,200"))}
    # per example = the step's bf16 seconds / 8: the step printed to 3 decimals (+-5e-4, so +-6.25e-5 once divided),
    # the projection to 4 (+-5e-5)
    assert float(proj["phi_base"][2]) == pytest.approx(float(rows["phi_base"][3]) / 8, abs=5e-4 / 8 + 5e-5 + 1e-9)
    assert proj["eval"][1] == proj["eval"][2]
    assert set(bench.cpu_flags(("avx512f", "no_such_flag"))) <= {"avx512f"}
