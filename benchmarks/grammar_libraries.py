"""Grammar libraries for constrained decoding on CPU: llguidance vs xgrammar, side by side.

For each library, on the embedded SmolLM2 tokenizer (49,152 tokens) and the attribute judge's JSON
schema (twelve attributes, each ``{"score": int 0-10, "explanation": str}``):

* setup: building the library's tokenizer description (once per model);
* compile: compiling the schema into a grammar (once per schema; cached by the provider);
* mask: the mean time to compute one next-token mask and accept one token, while replaying the tokens of
  a valid answer (so every step is a real decoding step);
* forward: the mean time of one SmolLM2 forward step (batch 1, 300-token prompt, KV cache) for scale:
  the ratio mask / forward is the per-token overhead of constraining.

outlines (1.x) compiles schemas through outlines-core into an index over the whole vocabulary and
lm-format-enforcer 0.11.3 does not import with transformers 5.x (see the docs page), so both are
reported from their install plans only. Run: ``nice -n 10 python benchmarks/grammar_libraries.py``.
"""

from __future__ import annotations

import json
import time


def judge_schema() -> dict:
    from reasonscope.judge.attributes import ATTRIBUTES
    from reasonscope.judge.schemas import attribute_scores_schema

    return attribute_scores_schema(list(ATTRIBUTES), 10)


def valid_answer() -> str:
    from reasonscope.judge.attributes import ATTRIBUTES

    return json.dumps({a: {"score": 7, "explanation": "The steps follow from the question."} for a in ATTRIBUTES})


def bench_llguidance(tok, schema: dict, ids: list[int], vocab: int) -> dict:
    import llguidance
    import llguidance.hf
    import numpy as np

    t0 = time.perf_counter()
    lltok = llguidance.hf.from_tokenizer(tok, n_vocab=vocab)
    t1 = time.perf_counter()
    grammar = llguidance.LLMatcher.grammar_from_json_schema(schema)
    matcher = llguidance.LLMatcher(lltok, grammar)
    t2 = time.perf_counter()
    for t in ids:
        mask = np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8)
        assert mask[t // 8] >> (t % 8) & 1, "a valid token was masked"
        matcher.consume_token(t)
    t3 = time.perf_counter()
    return {"setup_s": t1 - t0, "compile_s": t2 - t1, "mask_ms": 1000 * (t3 - t2) / len(ids)}


def bench_xgrammar(tok, schema: dict, ids: list[int], vocab: int) -> dict:
    import xgrammar as xgr

    t0 = time.perf_counter()
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab)
    compiler = xgr.GrammarCompiler(info)
    t1 = time.perf_counter()
    compiled = compiler.compile_json_schema(json.dumps(schema))
    matcher = xgr.GrammarMatcher(compiled)
    t2 = time.perf_counter()
    bitmask = xgr.allocate_token_bitmask(1, vocab)
    for t in ids:
        matcher.fill_next_token_bitmask(bitmask, 0)
        assert matcher.accept_token(t), "a valid token was refused"
    t3 = time.perf_counter()
    return {"setup_s": t1 - t0, "compile_s": t2 - t1, "mask_ms": 1000 * (t3 - t2) / len(ids)}


def forward_ms(model, tok) -> float:
    import torch

    prompt = tok("word " * 300, return_tensors="pt")
    with torch.no_grad():
        out = model(**prompt, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for _ in range(20):
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return 1000 * (time.perf_counter() - t0) / 20


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from reasonscope.models.smollm2 import converted_path

    torch.set_num_threads(1)
    path = converted_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    vocab = model.config.vocab_size
    schema = judge_schema()
    ids = tok(valid_answer(), add_special_tokens=False)["input_ids"]
    fwd = forward_ms(model, tok)
    print(f"SmolLM2 forward step (batch 1, 1 thread): {fwd:.1f} ms; answer replayed: {len(ids)} tokens")
    print(f"{'library':<12} {'setup s':>8} {'compile s':>10} {'mask ms/token':>14} {'mask/forward':>13}")
    for name, fn in (("llguidance", bench_llguidance), ("xgrammar", bench_xgrammar)):
        try:
            r = fn(tok, schema, ids, vocab)
        except ImportError as err:
            print(f"{name:<12} not installed ({err})")
            continue
        print(f"{name:<12} {r['setup_s']:>8.2f} {r['compile_s']:>10.3f} {r['mask_ms']:>14.3f} "
              f"{r['mask_ms'] / fwd:>13.5f}")


if __name__ == "__main__":
    main()
