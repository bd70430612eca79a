"""Benchmark: training throughput (examples/s) of Phi (ERM on r + b) and Phi_LA (ERM over three
environments + IRMv1 + the frozen probe's loss) with the MiniLM encoder-decoder on CPU, the previous
training step against the current one side by side, and the overhead factor of LAREV over REV training
per example.

Synthetic items with gold rationales; environments are built with fixed leakage terms (the answer
word masked / replaced) so that only training is timed; the probe is a copy of Phi with a frozen
encoder. One epoch each, batch 8 for Phi (the document's setting) and one example's three
environments per step for Phi_LA. Variants, all on the same examples and seed:

* Phi: AdamW's per-tensor loop (before) and its fused kernel (now, ``training.adamw``);
* Phi_LA: the previous step (one forward and one IRM dummy scale per environment, b~ encoded alone,
  AdamW loop; kept here as :func:`per_environment_larev_loss`), the one-pass step
  (``training.larev_loss``) with the AdamW loop, and the one-pass step with fused AdamW (now).

Before timing, the previous and the one-pass Phi_LA loss are computed on the first examples without
dropout and their largest difference is printed (the two compute the same value). The load average is
printed with the numbers: on a shared machine, compare variants of one run only.

    python benchmarks/information_training.py --items 120
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from pathlib import Path

import reasonscope.information.training as training


def per_environment_larev_loss(evaluator, model, psi, ex_batch, step, total, *, lambda_irm, lambda_probe):
    """The previous Phi_LA loss (the reference): one forward and one dummy scale w per environment
    (``training.irm_penalty``), then Phi_LA's encoder on b~ alone for the probe term."""
    env_batch, masked_batch = ex_batch
    n_env = env_batch["input_ids"].shape[0]
    penalty, losses = training.irm_penalty([
        lambda w, i=i: evaluator.loss({k: v[i:i + 1] for k, v in env_batch.items()}, model, scale=w)
        for i in range(n_env)])
    masked = {k: v.to(evaluator.device) for k, v in masked_batch.items()}
    hidden = training._encoder(model)(input_ids=masked["input_ids"],
                                      attention_mask=masked["attention_mask"]).last_hidden_state
    probe = training.probe_loss(psi, hidden, masked["attention_mask"], masked["labels"])
    return sum(losses) / n_env + training.warmup(lambda_irm, step, total) * penalty \
        - training.warmup(lambda_probe, step, total) * probe


def loop_adamw(params, lr):
    """The previous optimizer: torch's AdamW without the fused kernel."""
    import torch

    return torch.optim.AdamW(params, lr=lr)


@contextlib.contextmanager
def using(**replacements):
    """Replace functions of ``reasonscope.information.training`` for the duration of one variant."""
    saved = {name: getattr(training, name) for name in replacements}
    for name, fn in replacements.items():
        setattr(training, name, fn)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(training, name, fn)


def largest_loss_difference(examples, psi, source: str, n: int) -> tuple[float, float]:
    """max |previous - one-pass| Phi_LA loss (full penalty weights, dropout off) over ``n`` examples, and
    the largest loss it was measured on."""
    from reasonscope.information.evaluator import load_evaluator

    phi_la = load_evaluator(source)
    phi_la.model.eval()
    diff = largest = 0.0
    for ex in examples[:n]:
        batch = (phi_la.batch(ex.env_inputs, [ex.target] * len(ex.env_inputs)), psi.batch([ex.masked_input],
                                                                                            [ex.target]))
        values = [float(fn(phi_la, phi_la.model, psi, batch, 1, 1, lambda_irm=5.0, lambda_probe=5e-4).detach())
                  for fn in (per_environment_larev_loss, training.larev_loss)]
        diff, largest = max(diff, abs(values[0] - values[1])), max(largest, abs(values[0]))
    return diff, largest


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=120)
    parser.add_argument("--evaluator", default="embedded-minilm-ed")
    args = parser.parse_args()

    import torch

    from reasonscope.data.synthetic import synthetic_items
    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.evaluator import load_evaluator
    from reasonscope.information.training import (
        LarevExample,
        TrainSettings,
        train_erm,
        train_larev,
        train_probe,
    )
    from reasonscope.information.variants import baseline_input, rationale_input

    torch.set_num_threads(2)
    items = synthetic_items(max(1, args.items // 3), seed=5)[: args.items]
    ys = [label_text(it) for it in items]
    bs = [rule_baseline(it) for it in items]
    inputs = [rationale_input(it.rationale, b) for it, b in zip(items, bs, strict=True)]
    masked = [b.replace(y, "[MASK]") for b, y in zip(bs, ys, strict=True)]
    flipped = [b.replace(y, "something") for b, y in zip(bs, ys, strict=True)]
    examples = [LarevExample([rationale_input(it.rationale, e) for e in (b, m, f)], baseline_input(m), y)
                for it, b, m, f, y in zip(items, bs, masked, flipped, ys, strict=True)]
    rows = []  # (model, variant, examples/s in the loop, wall s per example)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        load_evaluator(args.evaluator)
        load_s = time.perf_counter() - t0
        phi = None
        for name, opt in (("AdamW loop (before)", loop_adamw), ("fused AdamW (now)", training.adamw)):
            phi = load_evaluator(args.evaluator)
            t0 = time.perf_counter()
            with using(adamw=opt):
                res = train_erm(phi, inputs, ys, inputs[:8], ys[:8], TrainSettings(epochs=1),
                                Path(tmp) / f"phi-{opt.__name__}", label="phi")
            rows.append(("Phi", name, res.examples_per_s, (time.perf_counter() - t0) / len(items)))
        psi = train_probe(phi, [baseline_input(m) for m in masked], ys, [baseline_input(m) for m in masked[:8]], ys[:8],
                          TrainSettings(epochs=1, batch_size=16), Path(tmp) / "probe")
        diff, largest = largest_loss_difference(examples, psi, args.evaluator, 10)
        variants = (("per environment, AdamW loop (before)", per_environment_larev_loss, loop_adamw),
                    ("one pass, AdamW loop", training.larev_loss, loop_adamw),
                    ("one pass, fused AdamW (now)", training.larev_loss, training.adamw))
        for i, (name, loss_fn, opt) in enumerate(variants):
            t0 = time.perf_counter()
            with using(larev_loss=loss_fn, adamw=opt):
                _, la = train_larev(args.evaluator, examples, psi, inputs[:8], ys[:8],
                                    TrainSettings(epochs=1, batch_size=1), Path(tmp) / f"phi_la-{i}")
            rows.append(("Phi_LA", name, la.examples_per_s, (time.perf_counter() - t0) / len(items)))
    load_after = os.getloadavg()[0]
    print(f"evaluator {args.evaluator}: load {load_s:.1f} s, {len(items)} training examples, 1 epoch each; "
          f"1-min load average {load_before:.1f} before, {load_after:.1f} after")
    print(f"Phi_LA loss, previous vs one-pass step, first 10 examples: largest |difference| {diff:.2e} "
          f"(losses up to {largest:.1f})")
    print(f"{'model':7} {'variant':38} {'examples/s (loop)':>18} {'s/example (wall)':>17} {'speed-up':>9}")
    first = {}
    for model, name, per_s, wall in rows:
        first.setdefault(model, per_s)
        print(f"{model:7} {name:38} {per_s:>18.2f} {wall:>17.3f} {per_s / first[model]:>8.2f}x")
    speed = {(m, n): s for m, n, s, _ in rows}
    before = speed[("Phi", "AdamW loop (before)")] / speed[("Phi_LA", variants[0][0])]
    now = speed[("Phi", "fused AdamW (now)")] / speed[("Phi_LA", variants[-1][0])]
    print(f"LAREV / REV training cost per example: {before:.1f}x before, {now:.1f}x now")


if __name__ == "__main__":
    main()
