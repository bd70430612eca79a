"""Benchmark: training and gradients against the machine's measured dense-matmul peak (float32 and bf16, CPU).

1. **The peak.** torch float32 ``mm`` at each phase's own GEMM shapes (every ``nn.Linear`` call of one
   real step, recorded by forward hooks, as its three products: the forward ``[M, K] @ [K, N]``, the
   input gradient ``[M, N] @ [N, K]`` and the weight gradient ``[K, M] @ [M, N]``, the last two only
   where the phase runs a backward pass), weighted by how often each shape occurs; and one large square
   GEMM (2048^3). Best of ``--repeats`` timings, with ``--threads`` torch threads and with 1.
   GFLOP/s = 2 M K N / seconds.
2. **The phases**, each through the family's own functions on real data (e-SNLI pairs from ``--data``,
   else the built-in synthetic items; the attack on the seeded word problems, seed 7, and the embedded
   SmolLM2):

   * ``phi_base`` / ``phi``: :meth:`Evaluator.loss` on a batch of 8 (b, or r + b fitted by
     :meth:`Evaluator.fit_inputs`), ``zero_grad``, ``backward``, the fused AdamW of
     :func:`reasonscope.information.training.adamw` (what :func:`train_loop` runs per batch);
   * ``probe``: the same on psi (:func:`freeze_encoder`), batch 16 of masked baselines b~;
   * ``phi_la``: :func:`larev_loss` on one example (three environments + b~), backward, AdamW;
   * ``ig``: :func:`batch_token_attributions`, 4 baselines x 20 steps per call (sorted by length, as
     :func:`leakage_attributions` batches them);
   * ``eval``: :meth:`Evaluator.log_likelihood` of 16 r + b inputs (forward only: validation, scoring);
   * ``attack_token`` / ``attack_embedding``: one gradient step of the token search
     (:meth:`Attacker.token_gradients`) and of the embedding search (the objective's backward to the
     question's embeddings), the few-shot prefix read from its cache; ``attack_candidates``: the token
     search's batched forward of 8 candidates (:meth:`Attacker._objectives`).

   FLOPs of every timed step are counted by ``torch.utils.flop_counter.FlopCounterMode`` (forward and
   backward: matrix products, attention; elementwise work is not counted) in a pass over the same
   batches, then the steps are timed (after ``--warmup`` untimed steps). Printed: GFLOP per step,
   seconds per step, achieved GFLOP/s and its share of the peak at the phase's shapes. With
   ``--profile`` (or for every phase under 50% with ``--profile-below 0.5``) one ``torch.profiler``
   pass splits a step's wall time into matrix products, attention, layer norm / softmax / loss,
   other elementwise, embedding gradients, the optimizer, copies, and what no operator accounts for
   (Python and framework overhead), with the padding share (padded tokens / real tokens) of the
   phase's batches.
3. ``--variants`` times Phi_base, Phi and the probe side by side, taking turns step by step: one padded
   batch per step (the family's way) against the same examples as sub-batches of similar length
   (:func:`grouped_batch`, three per-pass overheads) and against 1 thread. The peak table includes a bf16
   product.
4. ``--compile`` times each phase of ``--phases`` (default Phi, the probe, integrated gradients, the attack's
   token-gradient step and its forward of 8 candidates) eager against ``torch.compile`` of its model
   (inductor, dynamic shapes unless ``--static``, ``--compile-mode``), side by side on the same batches: the
   model is compiled in place and switched between its eager and compiled call (:class:`Switchable`), so
   the family's own step code runs both ways. Printed: seconds per step both ways, the share of the peak at
   the phase's shapes, the compile time (the compiled warm-up steps less as many eager ones), graphs and
   graph breaks, and the largest difference from eager of the loss and of the gradients relative to their
   largest value (training phases, with ``--check-training``: one step without dropout or optimizer, a
   second graph to compile) or of the step's output (float32).
5. ``--flush-variants``: each phase against the same with ``torch.set_flush_denormal(True)``, side by side,
   with the same differences. ``--contention``: each phase (and a 2048^3 ``mm``) alone against the same with
   one busy process beside it. ``--per-step`` prints every step's seconds, the CPU seconds other processes
   and the hypervisor (steal) took during each, and the thread counts; ``--denormals`` counts the subnormal
   floats in each phase's parameters, gradients and optimizer state.
6. ``--dtype bf16`` times each phase of ``--phases`` in float32 against the same under
   ``torch.autocast("cpu", dtype=torch.bfloat16)`` (what ``mixed_precision: bf16`` does to a training step through
   Accelerate; for integrated gradients, the forward passes and the attack what a bf16 option would do: the
   family computes those in float32), side by side on the same batches (turns alternating, A B B A), with the
   float32 and the bfloat16 ``mm`` at the phase's own shapes: both rates, both shares, the wall-time ratio
   float32 / bf16 and the largest difference of the loss / gradients (``check``) or output. With ``--project``
   the LAREV command both ways. The peak table has the bfloat16 2048^3 product beside the float32 one.
7. ``--project`` multiplies the measured seconds per example by the counts of the LAREV e-SNLI command
   (2,000 training / 300 test pairs, the family's defaults): a projection, not a measurement.

    python benchmarks/flop_rates.py --data esnli_dev.csv.gz --steps 8 --profile-below 0.5 --project
    python benchmarks/flop_rates.py --data esnli_dev.csv.gz --dtype bf16 --steps 4 --warmup 1 --items 32 --project
"""

from __future__ import annotations

import argparse
import copy
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

TOP_OPS = 6
INFO_PHASES = {"phi_base", "phi", "probe", "phi_la", "ig", "eval"}
ATTACK_PHASES = {"attack_token", "attack_embedding", "attack_candidates"}
ALL_PHASES = ("phi_base", "phi", "probe", "phi_la", "ig", "eval", "attack_token", "attack_embedding",
              "attack_candidates")
COMPILE_PHASES = ("phi", "probe", "ig", "attack_token", "attack_candidates")
COLUMNS = ("phase", "rows x width", "GFLOP/step", "s/step", "GFLOP/s", "peak GFLOP/s", "share", "padding")

# torch.profiler operator name -> the part of a step it belongs to (first match wins; the rest "elementwise")
CATEGORIES = (
    ("matrix products", ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_mkl", "mkldnn")),
    ("attention", ("scaled_dot_product", "_flash_attention", "_efficient_attention")),
    ("layer norm / softmax / loss", ("layer_norm", "softmax", "nll_loss", "cross_entropy")),
    ("embedding gradients", ("embedding",)),
    ("optimizer", ("adam", "Optimizer")),
    ("copies / padding / cat", ("copy_", "aten::cat", "constant_pad", "aten::clone", "contiguous", "aten::to",
                                "index_select", "aten::gather", "aten::scatter")),
)


@dataclass
class Phase:
    """One heavy phase: a step callable per batch index, the examples a step covers, its batches' masks."""

    name: str
    step: Callable[[int], object]
    n_batches: int
    examples: int  # examples per step (training examples, baselines, items)
    backward: bool = True
    masks: list = field(default_factory=list)  # attention masks of the batches (padding share)
    unit: str = "examples"
    # batch index -> the tensors to compare eager with compiled (loss and gradients, no optimizer step and no
    # dropout; or the step's outputs); None: not compared
    check: Callable[[int], list] | None = None
    optimizer: object = None  # a training phase's optimizer (its state is searched by --denormals)


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of ``fn()`` as ``torch.utils.flop_counter.FlopCounterMode`` counts them (forward + backward).

    A product of [M, K] by [K, N] counts 2 M K N; an ``nn.Linear`` of a batch with a gradient counts
    its forward, input-gradient and weight-gradient products: 6 M K N. Elementwise operations count 0.
    """
    return int(sum(flop_counts(fn).values()))


class _GlobalOnly:
    """Stands in for FlopCounterMode's module tracker: every count goes to "Global" and no module hook is set.

    The tracker's backward hooks break ``torch.autograd.grad`` calls that captum makes inside integrated
    gradients ("A leaf node was passed to _will_engine_execute_node"); the totals are the same.
    """

    parents = ("Global",)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def flop_counts(fn: Callable[[], object]) -> dict:
    """Operator -> FLOPs of ``fn()`` (``torch.utils.flop_counter.FlopCounterMode``, module tracking off)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    counter.mod_tracker = _GlobalOnly()
    with counter:
        fn()
    return counter.get_flop_counts().get("Global", {})


def linear_shapes(fn: Callable[[], object], model) -> Counter:
    """(M, K, N) -> calls, for every ``nn.Linear`` of ``model`` that ``fn()`` runs (M = rows, K in, N out)."""
    import torch

    shapes: Counter = Counter()

    def hook(module, args, _out):
        x = args[0]
        shapes[(int(x.numel() // x.shape[-1]), module.in_features, module.out_features)] += 1

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    try:
        fn()
    finally:
        for h in handles:
            h.remove()
    return shapes


def _best_time(fn: Callable[[], object], repeats: int, min_s: float = 0.02) -> float:
    fn()
    n, t = 1, 0.0
    while True:  # enough calls per timing to last min_s
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= min_s or n >= 1024:
            break
        n *= 2
    best = t / n
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def gemm_products(shapes: Counter, backward: bool) -> Counter:
    """The matrix products of ``shapes`` ((M, K, N) -> calls) as (m, k, n) -> count.

    The forward [M, K] @ [K, N]; with ``backward`` also [M, N] @ [N, K] (input gradient) and
    [K, M] @ [M, N] (weight gradient).
    """
    out: Counter = Counter()
    for (m, k, n), c in shapes.items():
        out[(m, k, n)] += c
        if backward:
            out[(m, n, k)] += c
            out[(k, m, n)] += c
    return out


def mm_peak(products: Counter, threads: int, repeats: int, dtype: str = "float32") -> float:
    """GFLOP/s of torch ``mm`` over ``products`` ((m, k, n) -> count): sum 2 m k n / sum seconds, each shape's
    best of ``repeats`` timings, with ``threads`` torch threads."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        flops = seconds = 0.0
        for (m, k, n), count in products.items():
            a = torch.randn(m, k, dtype=getattr(torch, dtype))
            b = torch.randn(k, n, dtype=getattr(torch, dtype))
            seconds += count * _best_time(lambda a=a, b=b: torch.mm(a, b), repeats)
            flops += count * 2.0 * m * k * n
        return flops / seconds / 1e9
    finally:
        torch.set_num_threads(previous)


def padding_share(masks: list) -> float:
    """Padded tokens / real tokens over attention masks (1 = real token, 0 = padding)."""
    flat = [m for g in masks for m in (g if isinstance(g, list) else [g])]  # a step's sub-batches: a list
    real = sum(int(m.sum()) for m in flat)
    total = sum(int(m.numel()) for m in flat)
    return (total - real) / real if real else 0.0


def categorise(name: str) -> str:
    """The part of a step (:data:`CATEGORIES`) that a ``torch.profiler`` operator name belongs to."""
    for label, keys in CATEGORIES:
        if any(k in name for k in keys):
            return label
    return "other elementwise"


def profile_step(fn: Callable[[], object]) -> tuple[float, dict[str, float]]:
    """(wall seconds, part -> seconds) of one ``fn()`` under ``torch.profiler`` (operators' self CPU time).

    ``Python / framework`` is the wall time that no operator accounts for; ``top`` lists the
    :data:`TOP_OPS` operators with the most self time as (name, seconds).
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
    parts: dict[str, float] = {}
    ops: dict[str, float] = {}
    for ev in prof.key_averages():
        if ev.key.startswith(("ProfilerStep", "## ")) or ev.self_cpu_time_total <= 0:
            continue
        label = "optimizer" if ev.key.startswith("Optimizer.") else categorise(ev.key)
        parts[label] = parts.get(label, 0.0) + ev.self_cpu_time_total / 1e6
        ops[ev.key] = ops.get(ev.key, 0.0) + ev.self_cpu_time_total / 1e6
    parts["Python / framework"] = max(0.0, wall - sum(parts.values()))
    parts["top"] = sorted(ops.items(), key=lambda kv: -kv[1])[:TOP_OPS]  # type: ignore[assignment]
    return wall, parts


@dataclass
class Row:
    """One phase's measurement."""

    phase: str
    width: str
    gflop: float
    seconds: float
    peak: float
    padding: float | None
    examples: int
    unit: str
    matmul_gflop: float = 0.0
    step_seconds: list = field(default_factory=list)
    warmup_seconds: list = field(default_factory=list)
    others_cpu: list = field(default_factory=list)  # CPU seconds other processes used during each timed step
    steal: list = field(default_factory=list)  # CPU seconds the hypervisor took from this machine during each

    @property
    def rate(self) -> float:
        """Achieved GFLOP/s (counted FLOPs of a step / its seconds)."""
        return self.gflop / self.seconds

    @property
    def share(self) -> float:
        """Achieved / the mm peak at the phase's shapes."""
        return self.rate / self.peak if self.peak else 0.0

    def cells(self) -> list[str]:
        """The table's cells in :data:`COLUMNS` order."""
        pad = "" if self.padding is None else f"{100 * self.padding:.0f}%"
        return [self.phase, self.width, f"{self.gflop:.2f}", f"{self.seconds:.3f}", f"{self.rate:.1f}",
                f"{self.peak:.1f}", f"{100 * self.share:.0f}%", pad]


def table(header: tuple[str, ...] | list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def measure_phase(phase: Phase, model, steps: int, warmup: int, repeats: int, threads: int) -> Row:
    """Count, time and compare one phase with the mm peak at its own shapes (see the module docstring)."""
    import torch

    torch.set_num_threads(threads)
    idx = [i % phase.n_batches for i in range(warmup + steps)]
    warm = []
    for i in idx[:warmup]:
        t0 = time.perf_counter()
        phase.step(i)
        warm.append(time.perf_counter() - t0)
    timed = idx[warmup:]
    counts = [flop_counts(lambda i=i: phase.step(i)) for i in timed]
    flops = [sum(c.values()) for c in counts]
    matmul = sum(v for c in counts for k, v in c.items() if "mm" in str(k))  # mm, addmm, bmm, baddbmm
    seconds, others, steal = [], [], []
    for i in timed:
        (busy0, steal0), own0 = cpu_counters(), time.process_time()
        t0 = time.perf_counter()
        phase.step(i)
        seconds.append(time.perf_counter() - t0)
        busy1, steal1 = cpu_counters()
        others.append(busy1 - busy0 - (time.process_time() - own0))
        steal.append(steal1 - steal0)
    shapes = Counter()
    for i in timed[:3]:
        shapes.update(linear_shapes(lambda i=i: phase.step(i), model))
    peak = mm_peak(gemm_products(shapes, phase.backward), threads, repeats)
    rows = [m for (m, _k, _n) in shapes]
    width = f"{min(rows)}-{max(rows)}" if rows else ""
    pad = padding_share([phase.masks[i] for i in timed]) if phase.masks else None
    return Row(phase.name, width, sum(flops) / len(flops) / 1e9, sum(seconds) / len(seconds), peak, pad,
               phase.examples, phase.unit, matmul / len(counts) / 1e9, seconds, warm, others, steal)


def cpu_counters() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the machine since boot from ``/proc/stat`` (Linux; NaN elsewhere).

    busy = user + nice + system + irq + softirq of every process: less this process's
    ``time.process_time()`` over a step, the CPU time other processes took while it ran. steal: the time
    the hypervisor ran something else while this virtual machine's CPUs wanted to run (invisible to the
    load average).
    """
    import os

    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except OSError:
        return float("nan"), float("nan")
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def cpu_flags(wanted: tuple[str, ...]) -> list[str]:
    """Those of ``wanted`` that ``/proc/cpuinfo`` lists among the CPU's flags (Linux; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as fh:
            flags = next((line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), [])
    except OSError:
        flags = []
    return [f for f in wanted if f in flags]


def thread_report() -> str:
    """The process's OS threads and torch's intra- and inter-op thread counts."""
    import torch

    try:
        with open("/proc/self/status") as fh:  # Linux
            os_threads = next((line.split()[1] for line in fh if line.startswith("Threads:")), "?")
    except OSError:
        os_threads = "?"
    return f"{os_threads} OS threads, torch {torch.get_num_threads()} intra-op / {torch.get_num_interop_threads()} inter-op"


def subnormals(tensors) -> tuple[int, int]:
    """(subnormal floats, all floats) in ``tensors``: 0 < |x| < the smallest normal float of the dtype."""
    import torch

    sub = total = 0
    for t in tensors:
        if t is None or not t.is_floating_point():
            continue
        a = t.detach().abs()
        sub += int(((a > 0) & (a < torch.finfo(t.dtype).tiny)).sum())
        total += t.numel()
    return sub, total


def subnormal_report(model, optimizer) -> str:
    """Subnormal floats in ``model``'s parameters, their gradients and ``optimizer``'s state."""
    params = list(model.parameters())
    state = [v for st in (optimizer.state.values() if optimizer is not None else []) for v in st.values()
             if hasattr(v, "is_floating_point")]
    parts = {"parameters": subnormals(params), "gradients": subnormals([p.grad for p in params]),
             "optimizer state": subnormals(state)}
    return ", ".join(f"{k} {s:,} of {n:,}" for k, (s, n) in parts.items())


# -- sub-batches of similar length: the variant measured by --variants (slower here, not used by the family) -----
def length_groups(lengths: list[int], overhead: float = 64) -> list[list[int]]:
    """The positions of ``lengths`` in groups of similar length: the sub-batches of one optimizer step.

    Sorted by length (ties keep their order) and cut into contiguous runs that minimise
    sum over groups of (rows x longest length) + ``overhead`` x groups: the token positions computed,
    padding included, plus a fixed cost per extra pass. Exact (dynamic programming over the cut points).

    >>> length_groups([10, 50, 12, 48], overhead=20)
    [[0, 2], [3, 1]]
    >>> length_groups([10, 50, 12, 48], overhead=1000)
    [[0, 2, 3, 1]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    ordered = [lengths[i] for i in order]
    n = len(ordered)
    cost, cut = [0.0] + [float("inf")] * n, [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            c = cost[i] + (j - i) * ordered[j - 1] + overhead
            if c < cost[j]:
                cost[j], cut[j] = c, i
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


def grouped_batch(evaluator, inputs: list[str], targets: list[str], overhead: float = 64) -> list[dict]:
    """One training batch as sub-batches of similar input length (:func:`length_groups`)."""
    lengths = [min(n, evaluator.max_input_tokens) for n in evaluator.input_lengths(list(inputs))]
    return [evaluator.batch([inputs[i] for i in g], [targets[i] for i in g])
            for g in length_groups(lengths, overhead)]


def grouped_loss(evaluator, batches: list[dict], model=None):
    """The mean cross-entropy over every scored label token of ``batches``: sum_k n_k L_k / sum_k n_k.

    The whole batch's :meth:`Evaluator.loss` and gradient up to float rounding (dropout aside); one
    sub-batch: exactly :meth:`Evaluator.loss`.
    """
    if len(batches) == 1:
        return evaluator.loss(batches[0], model)
    counts = [int((b["labels"] != -100).sum()) for b in batches]
    total = sum(counts)
    return sum(evaluator.loss(b, model) * (c / total) for b, c in zip(batches, counts, strict=True) if c)


# -- the phases ---------------------------------------------------------------------------------------------------
def loss_and_gradients(loss_fn: Callable[[], object], model) -> list:
    """[the loss, then the gradient of every trainable parameter (zeros where unused)] of ``loss_fn()`` with
    dropout off (``eval`` mode), no optimizer step: what a training step computes, deterministic, to compare
    eager with compiled (compiled dropout draws its masks differently from eager's, even from one seed)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    was = model.training
    model.eval()
    try:
        loss = loss_fn()
        grads = torch.autograd.grad(loss, params, allow_unused=True)
    finally:
        model.train(was)
    return [loss.detach()] + [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]


def load_items(data: str | None, n: int):
    """e-SNLI pairs from ``data`` (the first ``n``), else the built-in synthetic items."""
    if data:
        from reasonscope.data.loaders import load_dataset
        from reasonscope.plan import DatasetConfig

        return load_dataset(DatasetConfig(name="esnli", format="esnli", path=data, limit=n)).items
    from reasonscope.data.synthetic import synthetic_items

    return synthetic_items(n // 3 + 1, seed=5)[:n]


def _masked(baseline: str, mask: str) -> str:
    """b~ without integrated gradients: the baseline's longest word masked (the benchmark's stand-in for t_leak)."""
    words = baseline.split()
    longest = max(range(len(words)), key=lambda i: len(words[i]))
    return " ".join(mask if i == longest else w for i, w in enumerate(words))


def information_phases(items, evaluator: str, seed: int, batch: int = 8, probe_batch: int = 16,
                       overheads: tuple = (None,), gradients: bool = True
                       ) -> tuple[dict[str, Phase], dict[str, object]]:
    """The information family's phases on ``items`` (see the module docstring); (phases, name -> model).

    ``gradients=False``: Phi_base, Phi and the probe only (not Phi_LA, integrated gradients, eval).
    """
    import torch

    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.evaluator import Evaluator, load_evaluator
    from reasonscope.information.leakage import batch_token_attributions
    from reasonscope.information.training import (
        LarevExample,
        _batches,
        _stack_inputs,
        adamw,
        freeze_encoder,
        larev_loss,
    )
    from reasonscope.information.variants import baseline_input

    ys = [label_text(it) for it in items]
    bs = [rule_baseline(it) for it in items]
    ev = load_evaluator(evaluator, seed=seed)
    mask = ev.tokenizer.mask_token or "<mask>"
    masked = [_masked(b, mask) for b in bs]
    r_b, _ = ev.fit_inputs([it.rationale for it in items], bs)
    b_in = [baseline_input(b) for b in bs]
    n = len(items)

    models: dict[str, object] = {}

    def training_phases(name: str, e: Evaluator, texts: list[str], size: int, params=None) -> dict[str, Phase]:
        """The phase as train_loop runs it (its seeded order, epoch 0; ``None``: one padded batch per step, the
        family's way), or as sub-batches of similar length (:func:`grouped_batch` with that overhead)."""
        e.model.train()
        out = {}
        for overhead in overheads:
            opt = adamw(params if params is not None else [p for p in e.model.parameters() if p.requires_grad],
                        3e-5)
            idxs = _batches(n, size, seed, lambda idx: idx)(0)
            if overhead is None:
                batches = [[e.batch([texts[i] for i in idx], [ys[i] for i in idx])] for idx in idxs]
            else:
                batches = [grouped_batch(e, [texts[i] for i in idx], [ys[i] for i in idx], overhead) for idx in idxs]

            def step(i: int, batches=batches, opt=opt) -> None:
                loss = grouped_loss(e, batches[i], e.model)
                opt.zero_grad()
                loss.backward()
                opt.step()

            def check(i: int, batches=batches) -> list:
                return loss_and_gradients(lambda: grouped_loss(e, batches[i], e.model), e.model)

            label = name if overhead is None else f"{name} (sub-batches, overhead {overhead})"
            models[label] = e.model
            out[label] = Phase(label, step, len(batches), size, masks=[[b["attention_mask"] for b in g]
                                                                      for g in batches], check=check,
                               optimizer=opt)
        return out

    phases = {**training_phases("phi_base", ev, b_in, batch), **training_phases("phi", ev, r_b, batch)}
    probe = Evaluator(copy.deepcopy(ev.model), ev.tokenizer, ev.kind, ev.source, ev.max_input_tokens)
    params = freeze_encoder(probe)
    phases.update(training_phases("probe", probe, [baseline_input(m) for m in masked], probe_batch, params))
    psi = Evaluator(copy.deepcopy(ev.model), ev.tokenizer, ev.kind, ev.source, ev.max_input_tokens)  # frozen
    for p in psi.model.parameters():
        p.requires_grad_(False)
    psi.model.eval()

    if not gradients:
        return phases, models
    la = load_evaluator(evaluator, seed=seed)
    la.model.train()
    la_opt = adamw([p for p in la.model.parameters() if p.requires_grad], 3e-5)
    flipped = [b.replace(w, "something", 1) if (w := max(b.split(), key=len)) else b for b in bs]
    examples = []
    for i in range(n):
        env_inputs, _ = la.fit_inputs([items[i].rationale] * 3, [bs[i], masked[i], flipped[i]])
        examples.append(LarevExample(env_inputs, baseline_input(masked[i]), ys[i]))
    la_order = _batches(n, 1, seed, lambda idx: idx[0])(0)
    la_batches = [(la.batch(examples[j].env_inputs, [ys[j]] * 3), psi.batch([examples[j].masked_input], [ys[j]]))
                  for j in la_order]

    def la_step(i: int) -> None:
        loss = larev_loss(la, la.model, psi, la_batches[i], i, len(la_batches), lambda_irm=5.0, lambda_probe=0.005)
        la_opt.zero_grad()
        loss.backward()
        la_opt.step()

    pad_id = la.tokenizer.pad_token_id or 0
    phases["phi_la"] = Phase("phi_la", la_step, len(la_batches), 1,
                             masks=[_stack_inputs(list(b), pad_id)[1] for b in la_batches])

    ig_ev = load_evaluator(evaluator, seed=seed)
    ig_ev.model.eval()
    by_len = sorted(range(n), key=lambda i: len(b_in[i]))
    ig_chunks = [by_len[i:i + 4] for i in range(0, n, 4)]

    def ig_step(i: int) -> list:
        return batch_token_attributions(ig_ev, [b_in[j] for j in ig_chunks[i]], [ys[j] for j in ig_chunks[i]], n_steps=20)

    ig_masks = [ig_ev.tokenizer([b_in[j] for j in c], padding=True, return_tensors="pt")["attention_mask"]
                for c in ig_chunks]
    phases["ig"] = Phase("ig", ig_step, len(ig_chunks), 4, masks=ig_masks, unit="baselines",
                         check=lambda i: [torch.tensor(scores) for _spans, scores in ig_step(i)])
    eval_chunks = [list(range(i, min(n, i + 16))) for i in range(0, n, 16)]

    def eval_step(i: int) -> object:
        return ig_ev.log_likelihood([r_b[j] for j in eval_chunks[i]], [ys[j] for j in eval_chunks[i]])

    phases["eval"] = Phase("eval", eval_step, len(eval_chunks), 16, backward=False,
                           check=lambda i: [torch.as_tensor(eval_step(i))],
                           masks=[ig_ev.tokenizer([r_b[j] for j in c], padding=True, truncation=True, max_length=256,
                                                  return_tensors="pt")["attention_mask"] for c in eval_chunks])
    models.update({"phi_la": la.model, "ig": ig_ev.model, "eval": ig_ev.model})
    return phases, models


def attack_phases(model: str, n_items: int) -> tuple[dict[str, Phase], object]:
    """The attack's gradient steps on the seeded word problems (seed 7); (phases, the attacked model)."""
    import torch

    from reasonscope.attack.attacker import AttackSettings
    from reasonscope.attack.executor import make_attacker
    from reasonscope.data.word_problems import word_problem_items
    from reasonscope.plan import AttackConfig, ModelConfig

    attacker = make_attacker(ModelConfig(spec=model), AttackConfig(), AttackSettings())
    items = word_problem_items(n_items, seed=7)
    cleans = attacker.answer_first_many([attacker.layout_for(it.input) for it in items])
    layouts = [attacker.layout_for(it.input, c) for it, c in zip(items, cleans, strict=True)]
    starts = [layout.with_question(attacker.draw_insertion(layout, it.id, it.input).question)
              for layout, it in zip(layouts, items, strict=True)]
    emb = attacker.model.get_input_embeddings()

    def token_step(i: int) -> object:
        return attacker.token_gradients(starts[i])

    def embedding_step(i: int) -> object:
        layout = layouts[i]
        base = emb(torch.tensor(layout.question)).detach()
        delta = torch.zeros_like(base).requires_grad_(True)
        la, lc = attacker.losses(layout, base + delta)
        (lc - attacker.lam(layout) * la).backward()
        return delta.grad

    words = attacker.word_vocabulary()

    def candidates_step(i: int) -> object:
        rng = random.Random(i)
        layout = starts[i]
        cands = []
        for _ in range(8):
            q = list(layout.question)
            q[rng.randrange(len(q))] = rng.choice(words)
            cands.append(layout.with_question(q))
        return torch.tensor(attacker._objectives(cands))

    n = len(items)
    return {"attack_token": Phase("attack_token", token_step, n, 1, unit="gradient steps",
                                  check=lambda i: [token_step(i)]),
            "attack_embedding": Phase("attack_embedding", embedding_step, n, 1, unit="gradient steps",
                                      check=lambda i: [embedding_step(i)]),
            "attack_candidates": Phase("attack_candidates", candidates_step, n, 8, backward=False,
                                       check=lambda i: [candidates_step(i)],
                                       unit="candidates")}, attacker


def side_by_side(variants: dict[str, Callable[[int], object]], steps: int, warmup: int, n_batches: int
                 ) -> dict[str, float]:
    """Mean seconds per step of each variant, the variants taking turns step by step on the same batch index.

    The order of the turns alternates (A B, then B A) so that a changing load falls on all alike.
    """
    names = list(variants)
    times: dict[str, list[float]] = {k: [] for k in names}
    for j in range(warmup + steps):
        i = j % n_batches
        for name in (names if j % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            variants[name](i)
            if j >= warmup:
                times[name].append(time.perf_counter() - t0)
    return {k: sum(v) / len(v) for k, v in times.items()}


def with_threads(fn: Callable[[int], object], threads: int) -> Callable[[int], object]:
    """``fn`` run with ``threads`` torch threads (the previous number restored after)."""
    import torch

    def run(i: int) -> object:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return fn(i)
        finally:
            torch.set_num_threads(before)

    return run


def variants_table(items, evaluator: str, seed: int, steps: int, warmup: int, threads: int) -> str:
    """Sub-batches of similar length against one padded batch (three overheads), and 1 against ``threads``
    threads, for Phi_base, Phi and the probe, side by side (:func:`side_by_side`)."""
    phases, _ = information_phases(items, evaluator, seed, overheads=(None, 32, 64, 128), gradients=False)
    lines = []
    for name in ("phi_base", "phi", "probe"):
        group = {k: v for k, v in phases.items() if k == name or k.startswith(name + " (")}
        base = name
        group[f"{name}, 1 thread"] = Phase(f"{name}, 1 thread", with_threads(phases[name].step, 1),
                                           phases[name].n_batches, phases[name].examples)
        secs = side_by_side({k: v.step for k, v in group.items()}, steps, warmup, phases[name].n_batches)
        for k, v in secs.items():
            pad = padding_share(group[k].masks[:warmup + steps]) if group[k].masks else None
            lines.append([k, f"{v:.3f}", "" if pad is None else f"{100 * pad:.0f}%", f"{secs[base] / v:.2f}"])
            print(table(("variant", "s/step", "padding", "speed-up"), [lines[-1]]).splitlines()[-1], flush=True)
    return table(("variant", "s/step", "padding", "speed-up vs one padded batch"), lines)


class Switchable:
    """``model`` compiled in place (``nn.Module.compile``) and switchable between its eager and compiled call, so
    that a phase's own step (which calls the model the family's way) runs either way on the same parameters."""

    def __init__(self, model, **options):
        model.compile(**options)
        self.model, self.impl = model, model._compiled_call_impl
        self.set(False)

    def set(self, compiled: bool) -> None:
        """Route the model's calls through the compiled graph (True) or the eager module (False)."""
        self.model._compiled_call_impl = self.impl if compiled else None

    def step(self, fn: Callable[[int], object], compiled: bool) -> Callable[[int], object]:
        """``fn`` with the model compiled or eager for its duration (eager after)."""
        return around(fn, lambda: self.set(compiled), lambda: self.set(False))


def around(fn: Callable[[int], object], before: Callable[[], object], after: Callable[[], object]
           ) -> Callable[[int], object]:
    """``fn`` with ``before()`` run first and ``after()`` run last, also when ``fn`` raises."""

    def run(i: int) -> object:
        before()
        try:
            return fn(i)
        finally:
            after()

    return run


def differences(eager: list, compiled: list) -> tuple[float, float]:
    """(max |compiled - eager| of the first tensor (the loss, or the step's output), the largest |compiled - eager|
    over the remaining tensors (the gradients; the output itself when there is one tensor) / their largest
    |eager|)."""

    first = float((compiled[0].double() - eager[0].double()).abs().max())
    rest_e, rest_c = (eager[1:], compiled[1:]) if len(eager) > 1 else (eager, compiled)
    diff = max(float((c.double() - e.double()).abs().max()) for e, c in zip(rest_e, rest_c, strict=True))
    scale = max(float(e.double().abs().max()) for e in rest_e)
    return first, diff / scale if scale else diff


def dynamo_counts() -> tuple[int, int]:
    """(graphs compiled, graph breaks) so far (``torch._dynamo.utils.counters``)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"]), int(sum(counters["graph_break"].values()))


def with_flush_denormal(fn: Callable[[int], object]) -> Callable[[int], object]:
    """``fn`` with ``torch.set_flush_denormal(True)`` for its duration (subnormal floats read and written as 0)."""
    import torch

    return around(fn, lambda: torch.set_flush_denormal(True), lambda: torch.set_flush_denormal(False))


def flush_table(args) -> str:
    """Each phase of ``args.phases`` as it runs against the same with denormals flushed to zero, side by side
    (:func:`side_by_side`, the same batches, turns alternating), with the outputs' differences (``check``)."""
    phases, _models = build_phases(args)
    rows = []
    for name in args.phases:
        phase = phases[name]
        flushed = with_flush_denormal(phase.step)
        secs = side_by_side({"default": phase.step, "flush": flushed}, args.steps, args.warmup, phase.n_batches)
        d_first = d_rest = float("nan")
        if phase.check is not None:
            d_first, d_rest = differences(phase.check(0), with_flush_denormal(phase.check)(0))
        rows.append([name, f"{secs['default']:.3f}", f"{secs['flush']:.3f}", f"{secs['default'] / secs['flush']:.2f}",
                     f"{d_first:.1e}", f"{d_rest:.1e}"])
        print(table(FLUSH_COLUMNS, [rows[-1]]).splitlines()[-1], flush=True)
    return table(FLUSH_COLUMNS, rows)


def with_competitor(fn: Callable[[int], object]) -> Callable[[int], object]:
    """``fn`` with one CPU-bound process beside it for its duration (a Python busy loop): what another job on the
    machine does to a step that uses every core."""
    import subprocess
    import sys

    def run(i: int) -> object:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.05)  # let it start spinning
            return fn(i)
        finally:
            busy.kill()
            busy.wait()

    return run


def contention_table(args) -> str:
    """Each phase of ``args.phases`` alone against the same with one busy process beside it, side by side
    (:func:`side_by_side`), and the 2048^3 ``mm`` likewise."""
    import torch

    phases, _models = build_phases(args)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    variants = {"mm 2048^3": (lambda i: torch.mm(a, b), 1)}
    variants.update({name: (phases[name].step, phases[name].n_batches) for name in args.phases})
    rows = []
    for name, (fn, n) in variants.items():
        secs = side_by_side({"alone": fn, "beside": with_competitor(fn)}, args.steps, args.warmup, n)
        rows.append([name, f"{secs['alone']:.3f}", f"{secs['beside']:.3f}", f"{secs['beside'] / secs['alone']:.2f}"])
        print(table(CONTENTION_COLUMNS, [rows[-1]]).splitlines()[-1], flush=True)
    return table(CONTENTION_COLUMNS, rows)


def with_autocast_bf16(fn: Callable[[int], object]) -> Callable[[int], object]:
    """``fn`` under ``torch.autocast("cpu", dtype=torch.bfloat16)``: what ``mixed_precision: bf16`` does to a training
    step (Accelerate's autocast; matrix products in bfloat16, parameters, gradients and optimizer state float32),
    and what a bf16 option would do to the attack's steps."""
    import torch

    def run(i: int) -> object:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return fn(i)

    return run


# what mixed_precision: bf16 changes (Phi_LA, integrated gradients and scoring stay float32: LAREV_PRECISION)
TRAINING_PHASES = ("phi_base", "phi", "probe")
DTYPE_COLUMNS = ("phase", "GFLOP/step", "float32 s/step", "bf16 s/step", "float32 / bf16", "float32 GFLOP/s",
                 "float32 peak at its shapes", "float32 share", "bf16 GFLOP/s", "bf16 peak at its shapes", "bf16 share",
                 "max abs diff, loss or output", "max rel diff, gradients or output")


def dtype_rows(args) -> dict[str, dict]:
    """Each phase of ``args.phases`` in float32 against the same under bfloat16 autocast, side by side (the two taking
    turns step by step, the order alternating: A B B A), on the same batches; FLOPs counted over the timed steps'
    batches; float32 and bfloat16 ``mm`` at the phase's own GEMM shapes; the phase's ``check`` both ways.
    Returns name -> {cells, float32 and bf16 seconds per step, examples per step}."""
    phases, models = build_phases(args)
    out = {}
    for name in args.phases:
        phase = phases[name]
        secs = side_by_side({"float32": phase.step, "bf16": with_autocast_bf16(phase.step)}, args.steps, args.warmup,
                            phase.n_batches)
        timed = [j % phase.n_batches for j in range(args.warmup, args.warmup + args.steps)]
        flops = sum(count_flops(lambda i=i, phase=phase: phase.step(i)) for i in timed) / len(timed)
        shapes: Counter = Counter()
        for i in timed[:3]:
            shapes.update(linear_shapes(lambda i=i, phase=phase: phase.step(i), models[name]))
        products = gemm_products(shapes, phase.backward)
        peaks = {"float32": mm_peak(products, args.threads, args.repeats) * 1e9,
                 "bf16": mm_peak(products, args.threads, args.repeats, "bfloat16") * 1e9}
        d_first = d_rest = float("nan")
        if phase.check is not None:
            d_first, d_rest = differences(phase.check(0), with_autocast_bf16(phase.check)(0))
        cells = [name, f"{flops / 1e9:.4g}", f"{secs['float32']:.3f}", f"{secs['bf16']:.3f}",
                 f"{secs['float32'] / secs['bf16']:.2f}"]
        for k in ("float32", "bf16"):
            rate = flops / secs[k]
            cells += [f"{rate / 1e9:.4g}", f"{peaks[k] / 1e9:.4g}", f"{100 * rate / peaks[k]:.0f}%"]
        cells += [f"{d_first:.1e}", f"{d_rest:.1e}"]
        out[name] = {"cells": cells, "float32": secs["float32"], "bf16": secs["bf16"], "examples": phase.examples}
        print(table(DTYPE_COLUMNS, [cells]).splitlines()[-1], flush=True)
    return out


def dtype_projection(rows: dict[str, dict]) -> str:
    """The LAREV e-SNLI command (:func:`larev_counts`) projected from :func:`dtype_rows`: float32 throughout, and
    ``mixed_precision: bf16`` (Phi_base, Phi and the probe in bf16; Phi_LA, integrated gradients and the forward
    passes float32)."""
    lines, total32, total16 = [], 0.0, 0.0
    for name, count in larev_counts().items():
        if name not in rows:
            continue
        r = rows[name]
        per32 = r["float32"] / r["examples"]
        per16 = (r["bf16"] if name in TRAINING_PHASES else r["float32"]) / r["examples"]
        total32 += per32 * count
        total16 += per16 * count
        lines.append([name, f"{count:,}", f"{per32:.4f}", f"{per16:.4f}", f"{per32 * count / 60:.1f}",
                      f"{per16 * count / 60:.1f}"])
    lines.append(["total (projection)", "", "", "", f"{total32 / 60:.1f}", f"{total16 / 60:.1f}"])
    return table(("phase", "examples", "float32 s per example", "bf16 s per example", "float32 minutes",
                  "mixed_precision: bf16 minutes"), lines)


CONTENTION_COLUMNS = ("phase", "alone s/step", "one busy process beside, s/step", "slow-down")
FLUSH_COLUMNS = ("phase", "s/step", "flush denormals s/step", "speed-up", "max abs diff, loss or output",
                 "max rel diff, gradients or output")


def build_phases(args) -> tuple[dict[str, Phase], dict[str, object]]:
    """The phases that ``args.phases`` names, built (information phases on ``args.data``, the attack's on the
    word problems); (phases, name -> the model each runs)."""
    phases: dict[str, Phase] = {}
    models: dict[str, object] = {}
    if INFO_PHASES & set(args.phases):
        ph, mo = information_phases(load_items(args.data, args.items), args.evaluator, args.seed)
        phases.update(ph)
        models.update(mo)
    if ATTACK_PHASES & set(args.phases):
        ph, attacker = attack_phases(args.attack_model, args.attack_items)
        phases.update(ph)
        models.update({k: attacker.model for k in ph})
    return phases, models


_SWITCHES: dict[int, Switchable] = {}


def compile_row(name: str, phase: Phase, model, steps: int, warmup: int, repeats: int, threads: int,
                options: dict, check_training: bool = False) -> list[str]:
    """One phase eager against ``torch.compile`` (``options``) of its model, side by side on the same batches.

    Eager warm-up steps, then the compiled warm-up steps (the first compiles; "compile s" = their time less
    as many eager steps), then :func:`side_by_side`; the phase's ``check`` on batch 0 both ways: the outputs,
    or for a training phase with ``check_training`` the loss and gradients without dropout (``eval`` mode: a
    second graph to compile, minutes for a real model; else not compared, "nan"); FLOPs and the mm peak at the phase's shapes as :func:`measure_phase`.
    """
    import torch

    torch.set_num_threads(threads)
    if id(model) not in _SWITCHES:  # phases that share a model share its compiled graphs
        _SWITCHES[id(model)] = Switchable(model, **options)
    switch = _SWITCHES[id(model)]
    eager, compiled = switch.step(phase.step, False), switch.step(phase.step, True)
    idx = [i % phase.n_batches for i in range(warmup)]
    t0 = time.perf_counter()
    for i in idx:
        eager(i)
    eager_warm = (time.perf_counter() - t0) / max(1, len(idx))
    graphs0, breaks0 = dynamo_counts()
    t0 = time.perf_counter()
    compiled(0)
    first = time.perf_counter() - t0
    for i in idx[1:]:
        compiled(i)
    compile_s = time.perf_counter() - t0 - eager_warm * max(1, len(idx))
    graphs, breaks = (a - b for a, b in zip(dynamo_counts(), (graphs0, breaks0), strict=True))
    print(f"  {name}: eager warm-up {eager_warm:.2f} s/step, first compiled step {first:.1f} s, "
          f"compile {compile_s:.1f} s, {graphs} graphs, {breaks} graph breaks", flush=True)
    secs = side_by_side({"eager": eager, "compiled": compiled}, steps, 0, phase.n_batches)
    d_first = d_rest = float("nan")
    if phase.check is not None and (check_training or phase.optimizer is None):
        ref = switch.step(phase.check, False)(0)
        got = switch.step(phase.check, True)(0)
        d_first, d_rest = differences(ref, got)
    timed = [i % phase.n_batches for i in range(steps)]
    flops = sum(sum(flop_counts(lambda i=i: eager(i)).values()) for i in timed[:2]) / min(2, len(timed))
    shapes = Counter()
    for i in timed[:2]:
        shapes.update(linear_shapes(lambda i=i: eager(i), model))
    peak = mm_peak(gemm_products(shapes, phase.backward), threads, repeats) * 1e9
    share = {k: flops / v / peak for k, v in secs.items()}
    graphs_all, breaks_all = (a - b for a, b in zip(dynamo_counts(), (graphs0, breaks0), strict=True))
    return [name, f"{flops / 1e9:.1f}", f"{secs['eager']:.3f}", f"{secs['compiled']:.3f}",
            f"{secs['eager'] / secs['compiled']:.2f}", f"{100 * share['eager']:.0f}%",
            f"{100 * share['compiled']:.0f}%", f"{peak / 1e9:.1f}", f"{compile_s:.1f}", f"{graphs_all} / {breaks_all}",
            f"{d_first:.1e}", f"{d_rest:.1e}"]


COMPILE_COLUMNS = ("phase", "GFLOP/step", "eager s/step", "compiled s/step", "speed-up", "eager share",
                   "compiled share", "peak at its shapes", "compile s", "graphs / breaks",
                   "max abs diff, loss or output", "max rel diff, gradients or output")


def compile_table(args) -> str:
    """Each phase of ``args.phases`` eager against ``torch.compile`` (inductor; ``args.dynamic`` shapes,
    ``args.compile_mode``), side by side (:func:`compile_row`)."""
    options = {"backend": "inductor", "dynamic": args.dynamic}
    if args.compile_mode:
        options["mode"] = args.compile_mode
    phases, models = build_phases(args)
    import torch._dynamo

    for limit in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, limit):  # several models go through Module._call_impl's one code object
            setattr(torch._dynamo.config, limit, 256)
    print(f"torch.compile options: {options}")
    rows = []
    for name in args.phases:
        rows.append(compile_row(name, phases[name], models[name], args.steps, args.warmup, args.repeats,
                                args.threads, options, args.check_training))
        print(table(COMPILE_COLUMNS, [rows[-1]]).splitlines()[-1], flush=True)
    return table(COMPILE_COLUMNS, rows)


# -- the LAREV e-SNLI command (2,000 / 300): counts per phase, from the family's defaults -------------------------
def larev_counts(train: int = 2000, test: int = 300, val_fraction: float = 0.1, epochs: int = 8, probe_epochs: int = 8,
                 larev_epochs: int = 2) -> dict[str, int]:
    """Examples each phase processes in ``reasonscope run`` of the information family with methods rev + larev.

    Phi_base and Phi: ``epochs`` x the training split; the probe ``probe_epochs`` x it; Phi_LA
    ``larev_epochs`` x it; integrated gradients: every training and validation baseline once; forward
    passes (``eval``): the validation split after each epoch of the four models, plus the test pairs'
    scoring (Phi_base on b, then Phi and Phi_LA on 4 variants with the label candidates: one encoding per
    input).
    """
    val = round(train * val_fraction)
    tr = train - val
    models_epochs = epochs * 2 + probe_epochs + larev_epochs
    return {"phi_base": epochs * tr, "phi": epochs * tr, "probe": probe_epochs * tr, "phi_la": larev_epochs * tr,
            "ig": train, "eval": models_epochs * val + test * (1 + 2 * 4 + 1)}


def main(argv: list[str] | None = None) -> list[Row]:
    """Run the benchmark; returns the phase rows (also printed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="esnli_dev.csv.gz; default: synthetic items")
    parser.add_argument("--items", type=int, default=64, help="items the batches are drawn from")
    parser.add_argument("--evaluator", default="embedded-minilm-ed")
    parser.add_argument("--attack-model", default="smollm2")
    parser.add_argument("--attack-items", type=int, default=4)
    parser.add_argument("--phases", nargs="+", default=None, help="default: all; with --compile: "
                        + " ".join(COMPILE_PHASES))
    parser.add_argument("--steps", type=int, default=6, help="timed steps per phase")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--repeats", type=int, default=5, help="timings per GEMM shape (the best counts)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-peak", action="store_true", help="skip the square-GEMM peak table")
    parser.add_argument("--no-bf16-peak", action="store_true", help="the peak table without its bfloat16 product")
    parser.add_argument("--dtype", choices=("float32", "bf16"), default="float32", help="bf16: every phase in "
                        "float32 against the same under bfloat16 autocast, side by side, with both peaks")
    parser.add_argument("--profile", action="store_true", help="profile every phase")
    parser.add_argument("--profile-below", type=float, default=None, help="profile phases under this share")
    parser.add_argument("--project", action="store_true", help="project the LAREV e-SNLI command (2,000 / 300)")
    parser.add_argument("--compile", action="store_true", help="only the phases eager against torch.compile")
    parser.add_argument("--check-training", action="store_true", help="with --compile: compare training phases' "
                        "loss and gradients in eval mode too (compiles a second graph)")
    parser.add_argument("--static", dest="dynamic", action="store_false", help="torch.compile without dynamic=True")
    parser.add_argument("--compile-mode", default=None, help="torch.compile mode, e.g. max-autotune-no-cudagraphs")
    parser.add_argument("--flush-denormal", action="store_true", help="torch.set_flush_denormal(True) first")
    parser.add_argument("--flush-variants", action="store_true", help="only the phases against the same with "
                        "denormals flushed to zero, side by side")
    parser.add_argument("--contention", action="store_true", help="only the phases alone against the same with "
                        "one busy process beside them, side by side")
    parser.add_argument("--per-step", action="store_true", help="print each timed step's seconds")
    parser.add_argument("--denormals", action="store_true", help="count subnormal floats after each phase")
    parser.add_argument("--variants", action="store_true", help="only the side-by-side variants (sub-batches, "
                        "threads) of Phi_base, Phi and the probe")
    args = parser.parse_args(argv)

    import torch

    if args.phases is None:
        args.phases = list(COMPILE_PHASES if args.compile else ALL_PHASES)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    if args.flush_denormal and not torch.set_flush_denormal(True):
        raise SystemExit("--flush-denormal: this CPU has no flush-to-zero (SSE3) support")
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"{args.threads} threads; {'float32 and bfloat16 autocast' if args.dtype == 'bf16' else 'float32'}; "
          f"CPU flags: {' '.join(cpu_flags(('avx512f', 'avx512_bf16', 'amx_bf16'))) or 'none of avx512f, avx512_bf16, amx_bf16'}; "
          f"flush denormals {'on' if args.flush_denormal else 'off'}")
    if not args.no_peak:
        square = Counter({(2048, 2048, 2048): 1})
        peaks = [["mm 2048 x 2048 x 2048, float32", str(t), f"{mm_peak(square, t, args.repeats):.1f}"]
                 for t in dict.fromkeys((args.threads, 1))]
        if not args.no_bf16_peak:
            peaks += [["mm 2048 x 2048 x 2048, bfloat16", str(t), f"{mm_peak(square, t, args.repeats, 'bfloat16'):.1f}"]
                      for t in dict.fromkeys((args.threads, 1))]
        print(table(("GEMM", "threads", "GFLOP/s"), peaks))
    if args.dtype == "bf16":
        print()
        rows = dtype_rows(args)
        print()
        print(table(DTYPE_COLUMNS, [r["cells"] for r in rows.values()]))
        if args.project:
            print()
            print(dtype_projection(rows))
        return []
    if args.compile:
        print()
        print(compile_table(args))
        return []
    if args.contention:
        print()
        print(contention_table(args))
        return []
    if args.flush_variants:
        print()
        print(flush_table(args))
        return []
    if args.variants:
        print(variants_table(load_items(args.data, args.items), args.evaluator, args.seed, args.steps, args.warmup,
                             args.threads))
        return []
    phases, models = build_phases(args)
    rows, profiles = [], {}
    if args.per_step:
        print(f"before the phases: {thread_report()}", flush=True)
    for name in args.phases:
        row = measure_phase(phases[name], models[name], args.steps, args.warmup, args.repeats, args.threads)
        rows.append(row)
        print(table(COLUMNS, [row.cells()]).splitlines()[-1], flush=True)
        if args.per_step:
            print(f"  {name} after: {thread_report()}", flush=True)
            print(f"  {name} steps (s): warm-up " + " ".join(f"{t:.2f}" for t in row.warmup_seconds) + "; timed "
                  + " ".join(f"{t:.2f}" for t in row.step_seconds) + "; other processes' CPU s during each: "
                  + " ".join(f"{t:.2f}" for t in row.others_cpu) + "; steal s: "
                  + " ".join(f"{t:.2f}" for t in row.steal), flush=True)
        if args.denormals:
            print(f"  {name} subnormal floats: {subnormal_report(models[name], phases[name].optimizer)}", flush=True)
        if args.profile or (args.profile_below is not None and row.share < args.profile_below):
            profiles[name] = profile_step(lambda name=name: phases[name].step(0))
    print()
    print(table(COLUMNS, [r.cells() for r in rows]))
    if profiles:
        parts = [label for label, _ in CATEGORIES] + ["other elementwise", "Python / framework"]
        print()
        print(table(["phase", "wall s", *parts], [[name, f"{wall:.3f}", *(f"{100 * p.get(k, 0.0) / wall:.0f}%"
                                                                           for k in parts)]
                                                  for name, (wall, p) in profiles.items()]))
        print()
        print(table(("phase", f"top {TOP_OPS} operators (share of the step's wall time)"),
                    [[name, ", ".join(f"{op.removeprefix('aten::')} {100 * t / wall:.0f}%" for op, t in p["top"])]
                     for name, (wall, p) in profiles.items()]))
    if args.project:
        counts = larev_counts()
        by = {r.phase: r for r in rows}
        lines, total, floor = [], 0.0, 0.0
        for name, count in counts.items():
            if name not in by:
                continue
            row = by[name]
            per = row.seconds / row.examples
            at_peak = row.gflop / row.peak / row.examples  # seconds per example at 100% of the peak at its shapes
            total += per * count
            floor += at_peak * count
            lines.append([name, f"{count:,}", f"{per:.4f}", f"{per * count / 60:.1f}", f"{at_peak * count / 60:.1f}"])
        lines.append(["total (projection)", "", "", f"{total / 60:.1f}", f"{floor / 60:.1f}"])
        print()
        print(table(("phase", "examples", "s per example", "minutes", "minutes at the peak"), lines))
    return rows


if __name__ == "__main__":
    main()
