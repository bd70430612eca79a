"""Benchmark: training steps of Phi (ERM on r + b) and Phi_LA (ERM over three environments + IRMv1 +
the frozen probe's loss) with the MiniLM encoder-decoder on CPU, the previous step against the current
one side by side, and the cost of LAREV over REV training per example.

Synthetic items with gold rationales; environments are built with fixed leakage terms (the answer
word masked / replaced) so that only training is timed; the probe is a copy of Phi (one epoch) with a
frozen encoder. Batch 8 for Phi (the document's setting), one example's three environments per step
for Phi_LA. Variants, each with its own model and optimizer, from the same initial weights:

* Phi: AdamW's per-tensor loop (before) and its fused kernel (now, ``training.adamw``);
* Phi_LA: the previous step (one forward and one IRM dummy scale per environment, b~ encoded alone,
  AdamW loop; kept here as :func:`per_environment_larev_loss`), the one-pass step
  (``training.larev_loss``) with the AdamW loop, and the one-pass step with fused AdamW (now).

A step is what the training loop does per batch: the loss, ``zero_grad``, backward, the optimizer step.
The variants take turns batch by batch (the order rotating), so that a shared machine's changing load
falls on all of them alike; the first two steps of each are left out as warm-up. Before timing, the
previous and the one-pass Phi_LA loss are computed on the first examples without dropout and their
largest difference is printed (the two compute the same value).

    python benchmarks/information_training.py --items 60
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import reasonscope.information.training as training

WARMUP_STEPS = 2


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


def interleaved_steps(variants: dict, batches: list, loss_fn) -> dict[str, list[float]]:
    """Seconds of each training step per variant, the variants taking turns batch by batch.
    ``variants``: name -> (evaluator, optimizer); ``loss_fn(name, evaluator, batch, step, total)``."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for evaluator, _ in variants.values():
        evaluator.model.train()
    for step, batch in enumerate(batches):
        for name in names[step % len(names):] + names[:step % len(names)]:
            evaluator, optimizer = variants[name]
            t0 = time.perf_counter()
            loss = loss_fn(name, evaluator, batch, step, len(batches))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            times[name].append(time.perf_counter() - t0)
    return {name: t[WARMUP_STEPS:] for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--evaluator", default="embedded-minilm-ed")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import os

    import torch

    from reasonscope.data.synthetic import synthetic_items
    from reasonscope.information.baseline import label_text, rule_baseline
    from reasonscope.information.evaluator import load_evaluator
    from reasonscope.information.training import LarevExample, TrainSettings, train_probe
    from reasonscope.information.variants import baseline_input, rationale_input

    torch.set_num_threads(args.threads)
    items = synthetic_items(max(1, args.items // 3), seed=5)[: args.items]
    ys = [label_text(it) for it in items]
    bs = [rule_baseline(it) for it in items]
    inputs = [rationale_input(it.rationale, b) for it, b in zip(items, bs, strict=True)]
    masked = [b.replace(y, "[MASK]") for b, y in zip(bs, ys, strict=True)]
    flipped = [b.replace(y, "something") for b, y in zip(bs, ys, strict=True)]
    examples = [LarevExample([rationale_input(it.rationale, e) for e in (b, m, f)], baseline_input(m), y)
                for it, b, m, f, y in zip(items, bs, masked, flipped, ys, strict=True)]
    load_before = os.getloadavg()[0]

    def fresh(optimizer):
        ev = load_evaluator(args.evaluator)
        return ev, optimizer([p for p in ev.model.parameters() if p.requires_grad], TrainSettings().lr)

    phi_variants = {"AdamW loop (before)": fresh(loop_adamw), "fused AdamW (now)": fresh(training.adamw)}
    phi = phi_variants["fused AdamW (now)"][0]
    phi_batches = [phi.batch(inputs[i:i + 8], ys[i:i + 8]) for i in range(0, len(inputs), 8)]
    phi_sizes = [len(inputs[i:i + 8]) for i in range(0, len(inputs), 8)][WARMUP_STEPS:]  # the timed steps' batches
    rows = [("Phi", name, phi_sizes, t) for name, t in interleaved_steps(
        phi_variants, phi_batches, lambda name, ev, batch, step, total: ev.loss(batch)).items()]
    with tempfile.TemporaryDirectory() as tmp:
        psi = train_probe(phi, [baseline_input(m) for m in masked], ys, [baseline_input(m) for m in masked[:8]],
                          ys[:8], TrainSettings(epochs=1, batch_size=16), Path(tmp) / "probe")
    del phi_variants, phi
    diff, largest = largest_loss_difference(examples, psi, args.evaluator, 10)
    loss_of = {"per environment, AdamW loop (before)": per_environment_larev_loss,
               "one pass, AdamW loop": training.larev_loss, "one pass, fused AdamW (now)": training.larev_loss}
    la_variants = {"per environment, AdamW loop (before)": fresh(loop_adamw),
                   "one pass, AdamW loop": fresh(loop_adamw), "one pass, fused AdamW (now)": fresh(training.adamw)}
    la = next(iter(la_variants.values()))[0]
    la_batches = [(la.batch(ex.env_inputs, [ex.target] * 3), psi.batch([ex.masked_input], [ex.target]))
                  for ex in examples]
    rows += [("Phi_LA", name, [1] * (len(la_batches) - WARMUP_STEPS), t) for name, t in interleaved_steps(
        la_variants, la_batches, lambda name, ev, batch, step, total: loss_of[name](
            ev, ev.model, psi, batch, step, total, lambda_irm=5.0, lambda_probe=5e-4)).items()]
    print(f"evaluator {args.evaluator}, {args.threads} torch threads: {len(items)} training examples, "
          f"{len(phi_batches)} Phi steps and {len(la_batches)} Phi_LA steps per variant (first {WARMUP_STEPS} "
          f"not timed); 1-min load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"Phi_LA loss, previous vs one-pass step, first 10 examples: largest |difference| {diff:.2e} "
          f"(losses up to {largest:.1f})")
    # every column from the same timed steps: total examples over total seconds, and the mean step
    print(f"{'model':7} {'variant':38} {'ms/step (mean)':>15} {'examples/s':>11} {'speed-up':>9}")
    per_s, first = {}, {}
    for model, name, sizes, t in rows:
        per_s[model, name] = sum(sizes) / sum(t)
        first.setdefault(model, per_s[model, name])
        print(f"{model:7} {name:38} {1000 * statistics.mean(t):>15.0f} {per_s[model, name]:>11.2f} "
              f"{per_s[model, name] / first[model]:>8.2f}x")
    before = per_s["Phi", "AdamW loop (before)"] / per_s["Phi_LA", "per environment, AdamW loop (before)"]
    now = per_s["Phi", "fused AdamW (now)"] / per_s["Phi_LA", "one pass, fused AdamW (now)"]
    print(f"LAREV / REV training cost per example (Phi_LA step per example / Phi step per example): "
          f"{before:.1f}x before, {now:.1f}x now")


if __name__ == "__main__":
    main()
