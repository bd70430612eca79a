"""Probability-weighted attribute scores (``scoring: expected``, G-Eval): hand-computed expectations from a
judge's log-probabilities, a re-run that calls no judge, the plan check, and a tiny local judge whose
expected score equals the one computed from its own log-probabilities after its chat template."""

from __future__ import annotations

import json
import math

import pytest

from reasonscope.attributes.expected_scores import expected_messages, judge_expected, prompt_for
from reasonscope.attributes.judging import Target
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import PlanError, parse_plan
from reasonscope.storage.store import Store


def _plan(tmp_path, judge_options, **extra):
    return parse_plan({
        "experiment": {"name": "exp", "seed": 3, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "m1", "options": {"accuracy": 0.9}}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 1}],
        "families": {"attributes": {"judges": [{"spec": "mock/judge", "name": "j", "options": judge_options}],
                                    "automatic": None, "scale": "0-10", "scoring": "expected",
                                    "attributes": ["correctness", "grammar"], **extra}}})


def test_expected_scores_by_hand_and_a_rerun_without_judge_calls(tmp_path, monkeypatch):
    """p(7) = 0.5, p(8) = 0.25, p(10) = 0.25 (the other eight scores -inf): 7*0.5 + 8*0.25 + 10*0.25 = 8.0,
    normalised 0.8; the valid mass 1.0. A judge whose valid scores are all -inf leaves the attribute
    unscored with the reason."""
    lp = {str(s): -math.inf for s in range(11)}
    lp.update({"7": math.log(0.5), "8": math.log(0.25), "10": math.log(0.25)})
    plan = _plan(tmp_path, {"logprobs": lp})
    first = Runner(plan, show_progress=False).run()
    t = json.loads((first.run_dir / "summary.json").read_text())["attributes"]
    assert t["scoring"] == "expected" and "G-Eval" in t["scoring_method"]
    assert t["judge_settings"]["j"]["template"] == "judge-expected-v3"
    assert t["scores"]["m1"]["correctness"]["value"] == pytest.approx(0.8)
    assert t["scores"]["m1"]["grammar"]["value"] == pytest.approx(0.8)
    store = Store.open_existing(first.run_dir)
    kinds = [r[0] for r in store.conn.execute("SELECT kind FROM score_models").fetchall()]
    cached = store.conn.execute("SELECT COUNT(*) FROM score_cache").fetchone()[0]
    store.close()
    assert kinds == ["judge-score"] and cached == 3  # one entry per rationale (3 items), both attributes in it

    from reasonscope.models.mock import MockModel

    def no_call(*a, **k):
        raise AssertionError("a judge was called on the re-run")

    monkeypatch.setattr(MockModel, "logprobs", no_call)
    Runner(plan, show_progress=False, reuse_finished=False).run()
    again = json.loads((first.run_dir / "summary.json").read_text())["attributes"]
    assert again["scores"] == t["scores"]
    monkeypatch.undo()

    flat = {str(s): -math.inf for s in range(11)}
    none = json.loads((Runner(_plan(tmp_path / "b", {"logprobs": flat}), show_progress=False).run().run_dir
                       / "summary.json").read_text())["attributes"]
    assert none["scores"]["m1"]["correctness"]["value"] is None
    assert none["unscored"]["j"]["correctness"] == 3
    assert "no finite log-probability" in " ".join(none["unscored_reasons"]["j"])


def test_expected_scoring_needs_the_0_10_scale():
    with pytest.raises(PlanError, match="set scale: 0-10"):
        parse_plan({"datasets": [{"name": "s", "format": "synthetic"}], "models": [{"spec": "mock/reasoner"}],
                    "families": {"attributes": {"judges": [{"spec": "mock/judge"}], "scoring": "expected"}}})


def test_tiny_local_judge_reads_scores_after_its_chat_turn(tiny_causal_lm, tmp_path):
    from reasonscope.judge.logprob_scores import scale_values
    from reasonscope.models.registry import create_model
    from reasonscope.plan import AttributesConfig, ModelConfig

    judge = create_model(ModelConfig(spec=f"hf/{tiny_causal_lm}", name="tiny"))
    cfg = AttributesConfig(judges=[], scale="0-10", scoring="expected", attributes=["correctness"], automatic=None)
    target = Target("m", "syn/q1", "Ana has 3 apples and gets 5 more. How many?", "3 + 5 = 8.\nAnswer: 8")
    store = Store(tmp_path / "run")
    got = judge_expected(judge, [target], cfg, store)[("m", "syn/q1")]
    prompt = prompt_for(judge, expected_messages(target.question, target.rationale, "correctness"))
    assert prompt == judge.prompt_text(expected_messages(target.question, target.rationale, "correctness"))
    lps = judge.logprobs_batch(prompt, list(scale_values(0, 10)))  # the whole prompt, one padded batch
    p = [math.exp(x) for x in lps]
    by_hand = sum(pi * s for pi, s in zip(p, range(11), strict=True)) / sum(p) / 10
    assert got.scores["correctness"] == pytest.approx(by_hand, rel=1e-4)
    assert 0 <= got.scores["correctness"] <= 1 and "valid mass" in got.explanations["correctness"]
