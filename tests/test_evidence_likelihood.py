"""Evidence labels by log-likelihood (``label_reading: likelihood``, lm-eval's multiple-choice method):
the most likely class replaces the sampled label (hand-set log-probabilities), a re-run makes no model call,
a run that cannot rebuild the model keeps the sampled labels with a warning, and a tiny local model reads
the label where its JSON answer starts."""

from __future__ import annotations

import json
import math

import pytest

from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan
from reasonscope.storage.store import Store

TOPICS = ["business", "sci_tech", "sports", "world"]


def _plan(tmp_path, reading: str, logprobs: dict[str, float] | None = None):
    return parse_plan({
        "experiment": {"name": "evl", "seed": 3, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "mock",
                    "options": {"accuracy": 0.7, "logprobs": logprobs or {}}}],
        "families": {"behavior": None, "evidence": {
            "train": {"name": "tr", "format": "topics", "size": 40, "split": "train"},
            "test": {"name": "te", "format": "topics", "size": 8, "split": "test"},
            "label_reading": reading, "sweep_k": [5], "sweep_delta": [0.2], "n_permutations": 200}},
        "stats": {"n_resamples": 200}})


def test_most_likely_label_replaces_the_sampled_one_and_is_cached(tmp_path, monkeypatch):
    sampled = Runner(_plan(tmp_path / "s", "sampled"), show_progress=False).run()
    store = Store.open_existing(sampled.run_dir)
    from reasonscope.evidence.scoring import class_labels

    store_labels = class_labels(store.items("tr")["tr"])
    store.close()
    favourite = store_labels[-1]
    lps = {lab: math.log(0.1) for lab in store_labels}
    lps[favourite] = math.log(0.6)
    first = Runner(_plan(tmp_path / "l", "likelihood", lps), show_progress=False).run()
    out = json.loads((first.run_dir / "summary.json").read_text())["evidence"]["mock"]
    llm = out["llm"]
    assert llm["label_reading"] == "likelihood" and "lm-eval multiple choice" in llm["label_method"]
    lines = [json.loads(x) for x in (first.run_dir / "evidence_instances.jsonl").read_text().splitlines()]
    assert {x["predicted"] for x in lines} == {favourite}
    sampled_out = [json.loads(x) for x in (sampled.run_dir / "evidence_instances.jsonl").read_text().splitlines()]
    assert llm["labels_changed"] == sum(x["predicted"] != favourite for x in sampled_out)
    total = 0.1 * (len(store_labels) - 1) + 0.6
    probs = next(iter(llm["label_probabilities"].values()))
    assert probs[favourite] == pytest.approx(0.6 / total)
    # the rationales are the written ones
    assert [x["rationale"] for x in lines] == [x["rationale"] for x in sampled_out]

    from reasonscope.models.mock import MockModel

    def no_call(*a, **k):
        raise AssertionError("the model was asked again")

    monkeypatch.setattr(MockModel, "logprobs", no_call)
    Runner(_plan(tmp_path / "l", "likelihood", lps), show_progress=False, reuse_finished=False).run()
    again = json.loads((first.run_dir / "summary.json").read_text())["evidence"]["mock"]
    assert again["llm"]["label_probabilities"] == llm["label_probabilities"]


def test_without_the_plan_model_sampled_labels_stay_with_a_warning():
    from reasonscope.evidence.scoring import Prediction
    from reasonscope.evidence.stored import relabel_by_likelihood

    preds = {"a": Prediction("sports", "the match", None, "")}
    got = relabel_by_likelihood(preds, "imported", [], [], TOPICS, None)
    assert got["label_method"] == "sampled (fallback)" and "cannot rebuild" in got["warning"]
    assert preds["a"].label == "sports"


def test_tiny_local_model_reads_the_label_where_its_json_starts(tiny_causal_lm):
    from reasonscope.evidence.likelihood import JSON_START, likelihood_labels
    from reasonscope.evidence.scoring import build_messages
    from reasonscope.models.registry import create_model
    from reasonscope.plan import ModelConfig
    from reasonscope.types import Item

    lm = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}", name="tiny"))
    item = Item(id="t1", input="The striker scored twice in the final.", target="sports")
    got = likelihood_labels(lm, [item], TOPICS, build_messages)["t1"]
    prompt = lm.prompt_text(build_messages(item, TOPICS)) + JSON_START
    lps = lm.logprobs_batch(prompt, [lab + '"' for lab in TOPICS])
    assert got["label"] == TOPICS[max(range(4), key=lps.__getitem__)]
    norm = [math.exp(v - max(lps)) for v in lps]
    assert got["probabilities"][got["label"]] == pytest.approx(max(norm) / sum(norm), rel=1e-4)


def test_a_model_without_log_probabilities_keeps_its_sampled_labels(monkeypatch):
    from reasonscope.evidence.scoring import Prediction
    from reasonscope.evidence.stored import relabel_by_likelihood
    from reasonscope.models.mock import MockModel
    from reasonscope.plan import ModelConfig
    from reasonscope.types import Item

    async def refuse(self, prompt, continuations):
        raise NotImplementedError("provider 'mock' does not expose log-probabilities")

    monkeypatch.setattr(MockModel, "logprobs", refuse)
    preds = {"a": Prediction("sports", "the match", None, ""),
             "b": Prediction(None, "", "generation failed: timeout", "")}
    items = [Item(id="a", input="The match ended 2-1."), Item(id="b", input="Rain today.")]
    got = relabel_by_likelihood(preds, "m", [ModelConfig(spec="mock/reasoner", name="m")], items, TOPICS, None)
    assert got["label_method"] == "sampled (fallback)"
    assert "does not expose log-probabilities" in got["warning"] and preds["a"].label == "sports"


def test_an_api_model_reads_labels_of_several_tokens_by_their_first_token():
    """An OpenAI-compatible server returns the first answer token's 20 alternatives: "entailment" is not one
    token, so it is read by its longest prefix there, plus its capitalised form (SmolLM2 on llama.cpp's
    server answers "Ent" / "ent" / "Cont" ...)."""
    from reasonscope.evidence.likelihood import first_token_candidates as candidates
    from reasonscope.evidence.likelihood import first_token_logprobs, likelihood_labels
    from reasonscope.models.registry import create_model
    from reasonscope.plan import ModelConfig
    from reasonscope.testing import FakeOpenAIServer
    from reasonscope.types import Item

    labels = ["entailment", "neutral", "contradiction"]
    assert candidates(["yes", "A"]) == ["ye", "yes", "Ye", "Yes", "A"]
    # hand-computed: entailment = log(0.2 + 0.1) (longest prefixes "ent" and "Ent"; "en" is shorter), neutral =
    # log(0.05) ("Neu" only), contradiction: "C" is one letter, no prefix among the alternatives
    read = {"en": math.log(0.4), "ent": math.log(0.2), "Ent": math.log(0.1), "Neu": math.log(0.05),
            "C": -0.1}
    got = first_token_logprobs(labels, read)
    assert got[:2] == pytest.approx([math.log(0.3), math.log(0.05)]) and got[2] == -math.inf

    top = [{"token": t, "logprob": math.log(p), "bytes": None}
           for t, p in [("Ent", 0.5), (" ent", 0.2), ("Cont", 0.1), ("The", 0.1), ("neutral", 0.05)]]

    class Server(FakeOpenAIServer):
        def response(self, n, body, answer, words):
            out = super().response(n, body, answer, words)
            out["choices"][0]["logprobs"] = {"content": [{"token": "Ent", "logprob": math.log(0.5), "bytes": None,
                                                          "top_logprobs": top}]}
            return out

    with Server(reply=lambda body: "Ent") as srv:
        model = create_model(ModelConfig(spec="openai-compatible/local", base_url=srv.base_url, max_retries=0))
        item = Item(id="p1", input="Premise: a boy rides. Hypothesis: a child rides.", target="entailment")
        out = likelihood_labels(model, [item], labels, lambda it, labs: [{"role": "user", "content": it.input}])
    assert len(srv.bodies) == 1 and srv.bodies[0]["top_logprobs"] == 20
    res = out["p1"]
    assert res["label"] == "entailment" and "top_logprobs" in res["method"]
    total = 0.7 + 0.1 + 0.05  # entailment 0.5 + 0.2, contradiction 0.1 ("Cont"), neutral 0.05
    assert res["probabilities"] == pytest.approx({"entailment": 0.7 / total, "neutral": 0.05 / total,
                                                  "contradiction": 0.1 / total})
