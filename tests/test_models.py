"""Providers: the hf provider on a tiny model built here, mock kinds, the embedded SmolLM2 (slow)."""

from __future__ import annotations

import asyncio
import math

import pytest

from reasonscope.models.base import GenerationRequest
from reasonscope.models.registry import create_model, split_spec
from reasonscope.plan import ModelConfig


def req(text, sample=0, temperature=0.0, max_tokens=8, item="i1"):
    return GenerationRequest(messages=[{"role": "user", "content": text}], max_tokens=max_tokens,
                             temperature=temperature, sample=sample, item_id=item)


def test_spec_parsing():
    assert split_spec("openai/gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert split_spec("hf/org/name") == ("hf", "org/name")
    assert split_spec("smollm2") == ("smollm2", "SmolLM2-135M-Instruct")
    with pytest.raises(ValueError, match="unknown provider 'gemini'"):
        split_spec("gemini/x")
    with pytest.raises(ValueError, match="needs a model after the provider"):
        split_spec("openai")


def test_hf_provider_generates_in_batches_and_scores(tiny_causal_lm):
    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}", batch_size=4, max_tokens=6))
    assert model.missing_requirements() is None
    outs = asyncio.run(model.generate([req("Ana has 3 apples"), req("The sky is blue", max_tokens=5),
                                       req("Ana has 3 apples")]))
    assert len(outs) == 3 and all(o.error is None for o in outs)
    assert outs[0].text == outs[2].text  # greedy: same prompt, same text
    assert all(o.completion_tokens <= 8 for o in outs) and outs[1].completion_tokens <= 5
    assert {o.finish_reason for o in outs} <= {"stop", "length"}
    lp = asyncio.run(model.logprobs("Ana has 3", [" apples", " apples and"]))
    assert lp[1] < lp[0] < 0  # a longer continuation has lower total log-probability
    assert model.tokenizer is not None and model.model is not None  # white-box access


def test_hf_logprobs_match_manual_computation(tiny_causal_lm):
    import torch

    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}"))
    [lp] = model.logprobs_sync("Ana has", [" 3 apples"])
    tok, net = model.tokenizer, model.model
    p = tok("Ana has", add_special_tokens=False)["input_ids"]
    c = tok(" 3 apples", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = net(torch.tensor([p + c])).logits[0]
    logp = torch.log_softmax(logits, -1)
    manual = sum(float(logp[len(p) - 1 + j, t]) for j, t in enumerate(c))
    assert math.isclose(lp, manual, rel_tol=1e-4)


def test_mock_reasoner_is_deterministic_per_item_and_sample():
    m = create_model(ModelConfig(spec="mock/reasoner", options={"accuracy": 0.5}))
    r = GenerationRequest(messages=[{"role": "user", "content": "q"}], max_tokens=64, temperature=0.7, sample=1,
                          item_id="x", meta={"target": 7, "answer_type": "number"})
    a = asyncio.run(m.generate([r]))[0].text
    assert a == asyncio.run(m.generate([r]))[0].text and a.splitlines()[-1].startswith("Answer: ")


def test_mock_reasoner_distinct_texts_names_item_variant_and_sample():
    def texts(options):
        m = create_model(ModelConfig(spec="mock/reasoner", options={"accuracy": 1.0, "seed": 3, **options}))
        rs = [GenerationRequest(messages=[{"role": "user", "content": "q"}], max_tokens=64, temperature=0.7,
                                sample=s, item_id=i, meta={"target": 7, "answer_type": "number"})
              for i in ("a", "b", "c", "d", "e", "f") for s in (0, 1, 2)]
        return [c.text for c in asyncio.run(m.generate(rs))]

    plain, distinct = texts({}), texts({"distinct_texts": True})
    assert len(set(plain)) < len(plain) == len(set(distinct))  # 4 x 4 fixed sentences repeat over 18 outputs
    assert "for item c, original, sample 2." in distinct[8]
    assert all(d.splitlines()[-1] == "Answer: 7" for d in distinct)


def test_mock_scripted_and_replay(tmp_path):
    m = create_model(ModelConfig(spec="mock/scripted", options={"responses": {"i1": ["A", "B"], "*": "Z"}}))
    outs = asyncio.run(m.generate([req("q", sample=0), req("q", sample=1), req("q", item="other")]))
    assert [o.text for o in outs] == ["A", "B", "Z"]
    path = tmp_path / "replay.jsonl"
    path.write_text('{"item_id": "i1", "sample": 0, "text": "Answer: 5"}\n')
    m = create_model(ModelConfig(spec="mock/replay", options={"path": str(path)}))
    assert asyncio.run(m.generate([req("q")]))[0].text == "Answer: 5"
    assert "needs options.path" in create_model(ModelConfig(spec="mock/replay")).missing_requirements()


@pytest.mark.slow
def test_smollm2_loads_and_generates():
    model = create_model(ModelConfig(spec="smollm2", max_tokens=24, batch_size=2))
    assert model.missing_requirements() is None
    outs = asyncio.run(model.generate([req("What is 2 plus 3?", max_tokens=24),
                                       req("Is the sky blue? Answer yes or no.", max_tokens=24)]))
    assert all(o.error is None and o.text.strip() for o in outs)
    lp = asyncio.run(model.logprobs("The capital of France is", [" Paris", " banana"]))
    assert lp[0] > lp[1]


def test_hf_logprobs_share_the_prompt_and_equal_the_padded_batch(tiny_causal_lm):
    """The prompt's key/value cache is reused for every continuation: the sums equal those of one padded
    batch of prompt + continuation rows, for one-token and several-token continuations of unequal length."""
    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}"))
    prompt = "Ana has 3 apples and gets 5 more . How many ?"
    conts = ["8", " apples", " 3 apples and 5 more", "10", " no"]
    shared, batch = model.logprobs_sync(prompt, conts), model.logprobs_batch(prompt, conts)
    assert any(len(model.tokenizer(c, add_special_tokens=False)["input_ids"]) > 2 for c in conts)
    assert all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4) for a, b in zip(shared, batch, strict=True))
    assert model.logprobs_sync(prompt, [""]) == model.logprobs_batch(prompt, [""]) == [0.0]


def test_hf_logprobs_shared_equal_each_prompt_alone(tiny_causal_lm):
    """Prompts that share a beginning: the common token prefix is run once and the endings in one batch; every
    number equals that prompt's own padded batch (tokenised whole), including a prompt that is the prefix."""
    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}"))
    prefix = "Ana has 3 apples and gets 5 more ."
    prompts = [prefix + " How many ?", prefix + " Is it 8 ? Say yes or no .", prefix]
    conts = ["8", " yes", " 3 apples"]
    got = model.logprobs_shared(prompts, conts)
    for prompt, row in zip(prompts, got, strict=True):
        want = model.logprobs_batch(prompt, conts)
        assert all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4) for a, b in zip(row, want, strict=True))
    # only endings of several tokens: the output layer skips the positions before the shortest ending's last
    for prompt, row in zip(prompts[:2], model.logprobs_shared(prompts[:2], conts), strict=True):
        want = model.logprobs_batch(prompt, conts)
        assert all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4) for a, b in zip(row, want, strict=True))


def test_hf_generate_reports_finished_rows_and_keeps_the_outputs(tiny_causal_lm):
    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}", batch_size=4, max_tokens=6))
    batch = [req("Ana has 3 apples"), req("The sky is blue"), req("Bob has 2 pears")]
    plain = asyncio.run(model.generate(batch))
    reports: list[int] = []
    watched = asyncio.run(model.generate(batch, on_done=reports.append))
    assert [c.text for c in watched] == [c.text for c in plain]  # watching never changes the decoding
    assert sum(reports) == 3 and all(n > 0 for n in reports)


def test_rows_finished_counts_each_row_once_when_it_emits_a_stop_token():
    import torch

    from reasonscope.models.hf_provider import _RowsFinished

    reports: list[int] = []
    watch = _RowsFinished(prompt_len=2, stop_ids=(0, 0, None), report=reports.append)
    # prompt [5, 6] (a stop id inside the prompt must not count), then decoding steps
    steps = [[[5, 0, 7], [5, 6, 8], [5, 6, 9]],
             [[5, 0, 7, 0], [5, 6, 8, 0], [5, 6, 9, 4]],
             [[5, 0, 7, 0, 0], [5, 6, 8, 0, 0], [5, 6, 9, 4, 3]]]
    for ids in steps:
        stop = watch(torch.tensor(ids), None)
        assert stop.tolist() == [False, False, False]  # it never stops generation
    watch.finish(3)
    assert reports == [2, 1]  # two rows finished at step 2, the row cut at max_tokens reported at the end


def test_api_generate_reports_each_request_as_it_finishes():
    model = create_model(ModelConfig(spec="mock/reasoner"))
    reports: list[int] = []
    outs = asyncio.run(model.generate([req("2 + 2", item="a"), req("3 + 3", item="b")], on_done=reports.append))
    assert len(outs) == 2 and reports == [1, 1]


def test_hf_logprobs_shared_without_logits_to_keep(tiny_causal_lm):
    """A model whose forward does not take ``logits_to_keep`` gets every position's logits: same numbers."""
    model = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}"))
    model.load()
    real = model.model

    class Plain:  # forward without logits_to_keep
        def forward(self, input_ids, attention_mask=None, past_key_values=None, use_cache=None):
            return real(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values,
                        use_cache=use_cache)

        __call__ = forward

    prefix = "Ana has 3 apples and gets 5 more ."
    prompts, conts = [prefix + " How many ?", prefix + " Is it 8 ? Say yes or no ."], ["8", " 3 apples"]
    want = model.logprobs_shared(prompts, conts)
    model.model = Plain()
    got = model.logprobs_shared(prompts, conts)
    assert all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4) for g, w in zip(got, want, strict=True)
               for a, b in zip(g, w, strict=True))
