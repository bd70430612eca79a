"""Label log-probabilities on the embedded SmolLM2: the prompt's key/value cache shared by every
continuation, against one padded batch of prompt + continuation rows, side by side.

Two workloads of the toolkit: the LLM-as-NLI judge (3 labels after a premise/hypothesis prompt, the
behavior family's LS and the ROSCOE consistency metrics) and a G-Eval expected score (the 11 score
strings 0..10 after a judge prompt). Prints seconds per call of each path, the ratio and the largest
difference between the two paths' sums. Then the expected scores of one rationale on the twelve
attributes: each prompt as a padded batch, each prompt with its own shared cache, and the rationale's
common token prefix run once with the twelve attribute endings in one batch (``logprobs_shared``). Run: ``nice -n 10 python benchmarks/logprobs_prefix.py``.
"""

from __future__ import annotations

import time


def main(repeats: int = 20) -> None:
    import torch

    from reasonscope.judge.logprob_scores import scale_values
    from reasonscope.judge.prompts import judge_messages
    from reasonscope.models.registry import create_model
    from reasonscope.plan import ModelConfig
    from reasonscope.scorers.nli import NLI_LABELS, judge_prompt

    torch.set_num_threads(2)
    model = create_model(ModelConfig(spec="smollm2"))
    model.load()
    rationale = ("Ana has 3 apples. She buys 5 more, so 3 + 5 = 8. She gives 2 to Ben: 8 - 2 = 6. "
                 "Each apple costs $0.50, so 6 apples cost 6 * 0.50 = 3 dollars. ") * 3
    judge = model.prompt_text(judge_messages("How much are Ana's apples worth?", rationale, scale="0-10",
                                             attributes=["faithfulness"])) + '{"faithfulness": {"score": '
    nli = model.prompt_text([{"role": "user", "content": judge_prompt(rationale, "Ana ends with 6 apples.")}])
    work = {"LLM-as-NLI (3 labels)": (nli, [" " + lab for lab in NLI_LABELS]),
            "G-Eval score (11 strings)": (judge, list(scale_values(0, 10)))}
    print("one prompt, several continuations: padded batch of prompt + continuation rows vs shared prompt")
    print(f"{'workload':28} {'prompt tokens':>13} {'batch s/call':>13} {'shared s/call':>14} {'ratio':>6} {'max |diff|':>11}")
    for name, (prompt, conts) in work.items():
        n_tok = len(model.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        model.logprobs_batch(prompt, conts), model.logprobs_sync(prompt, conts)  # warm-up
        t0 = time.perf_counter()
        for _ in range(repeats):
            batch = model.logprobs_batch(prompt, conts)
        t1 = time.perf_counter()
        for _ in range(repeats):
            shared = model.logprobs_sync(prompt, conts)
        t2 = time.perf_counter()
        diff = max(abs(a - b) for a, b in zip(batch, shared, strict=True))
        b_s, s_s = (t1 - t0) / repeats, (t2 - t1) / repeats
        print(f"{name:28} {n_tok:13d} {b_s:13.3f} {s_s:14.3f} {b_s / s_s:5.2f}x {diff:11.2e}")

    # the expected judge scores of one rationale: 12 attribute prompts sharing the question and rationale
    from reasonscope.attributes.expected_scores import expected_messages
    from reasonscope.judge.attributes import ATTRIBUTES

    prompts = [model.prompt_text(expected_messages("How much are Ana's apples worth?", rationale, a))
               for a in ATTRIBUTES]
    conts = list(scale_values(0, 10))
    t0 = time.perf_counter()
    batch = [model.logprobs_batch(p, conts) for p in prompts]
    t1 = time.perf_counter()
    each = [model.logprobs_sync(p, conts) for p in prompts]
    t2 = time.perf_counter()
    shared = model.logprobs_shared(prompts, conts)
    t3 = time.perf_counter()
    diff = max(abs(a - b) for rows in (each, shared) for x, y in zip(batch, rows, strict=True)
               for a, b in zip(x, y, strict=True))
    print("\n12 attribute prompts of one rationale x 11 score strings (seconds per rationale)")
    print(f"{'padded batch per prompt':>28} {t1 - t0:8.2f} s")
    print(f"{'shared prompt per prompt':>28} {t2 - t1:8.2f} s  ({(t1 - t0) / (t2 - t1):.1f}x)")
    print(f"{'shared prefix, tails batched':>28} {t3 - t2:8.2f} s  ({(t1 - t0) / (t3 - t2):.1f}x; "
          f"max |diff| {diff:.1e})")


if __name__ == "__main__":
    main()
