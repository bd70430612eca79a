"""Benchmark: the attributes judge's G-Eval expected scores on llama.cpp, one prompt at a time against the
prompts of one rationale decoded together, side by side.

    python benchmarks/expected_scores_llama.py --run runs/demo --order ABBA

The work is what the demo's attributes phase asks of its judge (the embedded SmolLM2 on llama.cpp): for each of
the first ``--units`` rationales of a finished run (``samples.jsonl``: variant ``original``, sample 0, no error),
its twelve attribute prompts (:func:`reasonscope.attributes.expected_scores.expected_messages` in the model's chat
template, the attribute last) and the log-probabilities of the eleven score strings "0".."10" after each.

* A, one prompt at a time: :meth:`LlamaCppRuntime.logprobs` per prompt (each prompt's start kept from the prompt
  before, its rest decoded alone, then "10"'s second token), what the runtime did before ``logprobs_shared``;
* B, the rationale's prompts together: :meth:`LlamaCppRuntime.logprobs_shared` (the common start once, the twelve
  rests in one batch, the continuations in one more), what the family runs now.

Each side has its own model instance (its own llama.cpp contexts, so neither runs in a context sized for the
other); each letter of ``--order`` times all units once (A B B A: each side early and late). Printed per run:
seconds, prompts per second, ``llama_decode`` calls; then each side's median and the ratio A / B, the largest
difference between the two sides' log-probabilities and between their expected scores (0-10 scale), and the
number of expected scores equal when rounded to 2 decimals.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def rationales(run: Path, n: int) -> list[tuple[str, str]]:
    """(question, rationale) of the first ``n`` original, first-sample, error-free rows of ``run/samples.jsonl``."""
    out = []
    with (run / "samples.jsonl").open() as f:
        for line in f:
            row = json.loads(line)
            if row.get("variant") == "original" and row.get("sample") == 0 and not row.get("error"):
                out.append((row["input"], row["prediction"] or ""))
            if len(out) == n:
                break
    if not out:
        raise SystemExit(f"{run / 'samples.jsonl'}: no original, first-sample row without an error")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="a finished run folder (its samples.jsonl)")
    ap.add_argument("--units", type=int, default=18, help="rationales judged (the demo: 18)")
    ap.add_argument("--order", default="ABBA", help="A = one prompt at a time, B = together, in this order")
    args = ap.parse_args()
    if set(args.order) - {"A", "B"}:
        raise SystemExit(f"--order: letters A and B only, got {args.order!r}")

    from reasonscope.attributes.expected_scores import expected_messages, prompt_for
    from reasonscope.judge.attributes import ATTRIBUTES
    from reasonscope.judge.logprob_scores import expected_score, scale_values
    from reasonscope.models.registry import create_model
    from reasonscope.plan import ModelConfig

    values = scale_values(0, 10)
    conts = list(values)
    models = {k: create_model(ModelConfig(spec="smollm2", runtime="llama-cpp")) for k in "AB"}
    units = [[prompt_for(models["A"], expected_messages(q, r, a)) for a in ATTRIBUTES]
             for q, r in rationales(args.run, args.units)]
    n_prompts = sum(len(u) for u in units)

    def side_a(model):
        return [[model.logprobs_sync(p, conts) for p in u] for u in units]

    def side_b(model):
        return [model.logprobs_shared(u, conts) for u in units]

    sides = {"A": side_a, "B": side_b}
    models["A"].logprobs_sync(units[0][0], conts)  # untimed: the model's pages, each side's contexts
    models["B"].logprobs_shared(units[0], conts)
    seconds: dict[str, list[float]] = {"A": [], "B": []}
    results = {}
    for letter in args.order:
        rt = models[letter].llama()
        decodes = []
        real = rt._decode
        rt._decode = lambda ctx, entries, real=real, decodes=decodes: decodes.append(len(entries)) or real(ctx, entries)
        t0 = time.perf_counter()
        got = sides[letter](models[letter])
        seconds[letter].append(time.perf_counter() - t0)
        rt._decode = real
        results.setdefault(letter, got)
        print(f"{letter}: {seconds[letter][-1]:.2f} s, {n_prompts / seconds[letter][-1]:.1f} prompts/s, "
              f"{len(decodes)} decode calls ({sum(decodes)} tokens)", flush=True)
    if not (seconds["A"] and seconds["B"]):
        return
    med = {k: statistics.median(v) for k, v in seconds.items()}
    flat_a = [x for u in results["A"] for p in u for x in p]
    flat_b = [x for u in results["B"] for p in u for x in p]
    diff = max(abs(a - b) for a, b in zip(flat_a, flat_b, strict=True))
    exp_a = [expected_score(dict(zip(conts, p, strict=True)), values).value for u in results["A"] for p in u]
    exp_b = [expected_score(dict(zip(conts, p, strict=True)), values).value for u in results["B"] for p in u]
    ediff = max(abs(a - b) for a, b in zip(exp_a, exp_b, strict=True))
    same = sum(round(a, 2) == round(b, 2) for a, b in zip(exp_a, exp_b, strict=True))
    print(f"{len(units)} rationales x {len(ATTRIBUTES)} attributes = {n_prompts} prompts")
    print(f"median: one at a time {med['A']:.2f} s, together {med['B']:.2f} s, A / B = {med['A'] / med['B']:.2f}")
    print(f"largest difference: log-probability {diff:.2e} nats, expected score {ediff:.2e} (0-10); "
          f"expected scores equal to 2 decimals: {same}/{len(exp_a)}")
    for model in models.values():
        model.close()


if __name__ == "__main__":
    main()
