"""The attack family: losses by hand, gradient steps, the embedding ball, re-tokenisation, transfer,
resume and the end-to-end run on a tiny model (outcomes: test_attack_outcomes.py; the arithmetic
check: test_attack_arithmetic.py)."""

from __future__ import annotations

import json

import pytest
import torch

from reasonscope.attack.attacker import Attacker, AttackSettings, Chain
from reasonscope.attack.layout import attack_losses, embed_layout, encode, losses_from_logits, make_layout
from reasonscope.attack.transfer import run_transfer, transfer_chain
from reasonscope.plan import AttackConfig, StatsConfig, parse_plan
from reasonscope.storage.store import Store
from reasonscope.testing import scripted_chains
from reasonscope.types import Item
from tolerance import assert_close_to_scale

QUESTION = "Ana has 3 apples and gets 5 more . How many apples does Ana have ?"


@pytest.fixture(scope="module")
def tiny(tiny_causal_lm):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_causal_lm).eval()
    return model, AutoTokenizer.from_pretrained(tiny_causal_lm)


def _layout(tok):
    return make_layout(tok, QUESTION, "8", "Step one : 3 + 5 = 8 .")


def test_losses_against_hand_computed_cross_entropy(tiny):
    model, tok = tiny
    lay = _layout(tok)
    ids = lay.ids
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
        la, lc = attack_losses(model, lay)
    logp = torch.log_softmax(logits.double(), dim=-1)

    def mean_ce(start, n):  # position t - 1 predicts token t; the vocabulary is the class axis
        return -sum(float(logp[t - 1, ids[t]]) for t in range(start, start + n)) / n

    assert float(la) == pytest.approx(mean_ce(lay.answer_start, len(lay.answer)), rel=1e-5)
    assert float(lc) == pytest.approx(mean_ce(lay.cot_start, len(lay.cot)), rel=1e-5)
    assert lay.ids[lay.answer_start:lay.answer_start + len(lay.answer)] == encode(tok, " 8")
    batch_a, batch_c = losses_from_logits(torch.stack([logits, logits]), lay)
    assert_close_to_scale(batch_a, la.expand(2))
    assert_close_to_scale(batch_c, lc.expand(2))
    assert lay.default_lambda == len(lay.cot) / len(lay.answer)


def test_gradient_steps_raise_the_objective(tiny):
    model, tok = tiny
    lay = _layout(tok)
    attacker = Attacker(model, tok, AttackSettings(steps=4, top_k=16, candidates=48, min_similarity=None, seed=1))
    res = attacker.token_attack(lay, "t/1", QUESTION)
    trace = res.details["objective_trace"]
    assert len(trace) >= 2 and all(b > a for a, b in zip(trace, trace[1:], strict=False))
    assert res.objective_after == pytest.approx(trace[-1])
    perturbed = lay.with_question(encode(tok, " " + res.perturbed_question))
    assert res.objective_after == pytest.approx(attacker.objective(perturbed), rel=1e-4)
    n_inserted = max(1, round(0.2 * len(lay.question)))
    assert len(res.inserted) == n_inserted
    # one sign-gradient step on the embeddings raises L_c - lambda * L_a (first order)
    step = Attacker(model, tok, AttackSettings(embedding_steps=1, epsilon_p=0.02))
    delta, base, _ = step.embedding_delta(lay)
    assert step.objective(lay, base + delta) > step.objective(lay)


def test_embedding_perturbation_stays_in_the_ball_and_on_the_question(tiny):
    model, tok = tiny
    lay = _layout(tok)
    attacker = Attacker(model, tok, AttackSettings(epsilon_p=0.005))
    delta, base, eps = attacker.embedding_delta(lay)
    W = model.get_input_embeddings().weight
    assert eps == pytest.approx(0.005 * float(W.abs().max(dim=1).values.max()))
    assert delta.shape == (len(lay.question), W.shape[1])
    assert float(delta.abs().max()) <= eps * (1 + 1e-6) and float(delta.abs().max()) > 0
    clean, pert = embed_layout(model, lay)[0], embed_layout(model, lay, base + delta)[0]
    changed = (clean - pert).abs().sum(-1) > 0
    q0, q1 = lay.question_start, lay.question_start + len(lay.question)
    assert changed[q0:q1].any() and not changed[:q0].any() and not changed[q1:].any()
    res = attacker.embedding_attack(lay, "t/1")
    assert res.perturbed_question is None and res.details["linf"] <= eps * (1 + 1e-6)


def test_retokenisation_filter(tiny):
    model, tok = tiny
    attacker = Attacker(model, tok, AttackSettings())
    canonical, split = next((encode(tok, " " + w), encode(tok, " " + w[:k]) + encode(tok, w[k:]))
                            for w in ("apples", "animal", "contradiction", "hypothesis", "relation")
                            for k in range(1, len(w))
                            if encode(tok, " " + w[:k]) + encode(tok, w[k:]) != encode(tok, " " + w))
    assert tok.decode(split) == tok.decode(canonical)  # the same text, other tokens
    assert not attacker.survives_retokenisation(split)
    assert attacker.survives_retokenisation(canonical)
    words = attacker.word_vocabulary()
    assert words and all(tok.decode([i]).startswith(" ") and encode(tok, tok.decode([i])) == [i] for i in words)
    # insertions go to word boundaries only, never inside a word or a number
    q, inserted = attacker._insert(_layout(tok), __import__("random").Random(0))
    for pos in inserted:
        assert pos + 1 >= len(q) or tok.decode([q[pos + 1]]).startswith(" ")


def test_transfer_chain():
    assert transfer_chain("Answer: 8\nReasoning: 3 + 5 = 8.\n\nQuestion: next") == ("8", "3 + 5 = 8.")
    assert transfer_chain("no format") == ("", "")


def test_transfer_rates(tmp_path):
    from rich.console import Console

    item = Item(id="a", input="Ana has 3 apples and gets 5 more. How many?", target=8, answer_type="number")
    cfg = AttackConfig(transfer=[{"spec": "mock/scripted", "name": "api", "options": {"responses": {
        "ds/a": "Answer: 8\nReasoning: 3 + 5 = 8.", "m|token|ds/a": "Answer: 8\nReasoning: 3 + 5 = 9.",
        "ds/b": "Answer: 8\nReasoning: 3 + 5 = 7.", "m|token|ds/b": "Answer: 8\nReasoning: 3 + 5 = 9."}}}])
    store = Store(tmp_path)
    other = Item(id="b", input="Ben has 3 pears and gets 5 more. How many?", target=8, answer_type="number")
    out = run_transfer(cfg, [("m|token|ds/a", "ds/a", item, "token", "Ana has 3 apples zebra and gets 5 more. How many?"),
                             ("m|token|ds/b", "ds/b", other, "token", "Ben has 3 pears zebra and gets 5 more.")],
                       store, StatsConfig(n_resamples=200), seed=0, console=Console(stderr=True))
    api = out["api"]
    rates = api["rates"]["token"]
    # ds/b: the transfer model's clean chain already holds a false equation, so it is excluded
    assert (rates["attacked"], rates["n"], rates["counts"]["clean_wrong"]) == (2, 1, 1)
    assert rates["success"]["value"] == 1.0
    assert [r["why"] for r in api["rows"]] == ["answer kept; new false equation '3 + 5 = 9'",
                                               "the clean chain already states a false equation: '3 + 5 = 7'"]
    assert api["reasoning_check"] == "arithmetic only (no judge)"


def _fake_answer_first(self, layout, question_embeds=None):
    """The clean question gets "8" with sound reasoning; any perturbed input keeps "8" with a false equation."""
    if question_embeds is None and layout.question in (encode(self.tokenizer, " " + QUESTION),
                                                       encode(self.tokenizer, " Is a robin a bird ?")):
        return Chain("8", "3 + 5 = 8 apples.")
    return Chain("8", "3 + 5 = 9 apples.")


def test_end_to_end_plan_resume_and_report(tmp_path, tiny_causal_lm, monkeypatch):
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "input": QUESTION, "target": 8, "answer_type": "number"}) + "\n"
                    + json.dumps({"id": "q2", "input": "Is a robin a bird ?", "target": "yes",
                                  "answer_type": "boolean"}) + "\n")
    monkeypatch.setattr(Attacker, "answer_first_many", scripted_chains(_fake_answer_first))
    plan = parse_plan({
        "experiment": {"name": "atk", "output_dir": str(tmp_path), "seed": 2},
        "models": [{"spec": f"hf/{tiny_causal_lm}", "name": "tiny"}],
        "datasets": [{"name": "qs", "format": "jsonl", "path": str(data)}],
        "families": {"attack": {"steps": 1, "candidates": 4, "min_similarity": None, "cot_tokens": 8,
                                "judge": {"spec": "mock/judge", "options": {"ok_rate": 1}},
                                "transfer": [{"spec": "mock/scripted", "name": "api",
                                              "options": {"responses": ["Answer: 8\nReasoning: 3 + 5 = 8."]}}]}},
        "stats": {"n_resamples": 200}})
    from reasonscope.pipeline.runner import Runner

    s = Runner(plan, show_progress=False).run()
    t = json.loads((s.run_dir / "summary.json").read_text())["attack"]
    m = t["models"]["tiny"]
    assert m["items"] == 2 and m["answered_correctly"] == 1  # "8" is wrong for the yes/no item
    for method in ("token", "embedding", "random"):
        r = m["rates"][method]
        assert r["n"] == r["attacked"] == 1 and r["success"]["value"] == 1.0 and r["wrong"]["value"] == 0.0
        assert r["counts"] == {"success": 1, "wrong": 0, "unattackable": 0, "clean_wrong": 0, "not_judged": 0,
                               "invalid": 0}
    assert t["reasoning_check"] == "arithmetic + judge" and "more fragile" in t["direction"]
    assert t["transfer"]["api"]["rates"]["token"]["unattackable"]["value"] == 1.0
    rows = [json.loads(x) for x in (s.run_dir / "attack_items.jsonl").read_text().splitlines()]
    assert {r["method"] for r in rows} == {"token", "embedding", "random"}
    token = next(r for r in rows if r["method"] == "token")
    assert token["perturbed_question"] != QUESTION and token["clean"]["reasoning"] == "3 + 5 = 8 apples."
    assert (s.run_dir / "attack_rates.png").is_file() and "Attack (MATCHA)" in (s.run_dir / "report.html").read_text()
    store = Store.open_existing(s.run_dir)
    scores = {(x.metric, x.item_id): x for x in store.scores(s.run_id, "attack")}
    assert scores[("token.success", "qs/q1")].value == 1.0
    assert scores[("token.success", "qs/q2")].value is None
    assert scores[("token.success", "qs/q2")].reason == "not attacked: answered incorrectly"
    store.close()
    # resume: the white-box work of every item is in the store; a second run attacks nothing

    def boom(*a, **k):
        raise AssertionError("attacked again")

    monkeypatch.setattr("reasonscope.attack.executor.attack_items", boom)
    s2 = Runner(plan, show_progress=False).run()
    t2 = json.loads((s2.run_dir / "summary.json").read_text())["attack"]
    assert t2["models"]["tiny"]["rates"] == m["rates"]


def test_plan_checks_and_white_box_only(tmp_path):
    from reasonscope.plan import PlanError

    with pytest.raises(PlanError, match="families.attack needs `datasets`"):
        parse_plan({"models": [{"spec": "smollm2"}], "families": {"attack": {}}})
    with pytest.raises(PlanError, match="methods"):
        parse_plan({"models": [{"spec": "smollm2"}], "datasets": [{"name": "s", "format": "synthetic"}],
                    "families": {"attack": {"methods": ["laser"]}}})
    cfg = parse_plan({"models": [{"spec": "smollm2"}], "datasets": [{"name": "s", "format": "synthetic"}],
                      "families": {"attack": {"judge": {"spec": "mock/judge"}}}}).families.attack
    assert cfg.judge.temperature == 0.0 and cfg.ratio == 0.2 and cfg.steps == 5 and cfg.epsilon_p == 0.005
    from rich.console import Console

    from reasonscope.attack.scoring import white_box_targets

    ok, skipped = white_box_targets([cfg.judge], Console(stderr=True))
    assert ok == [] and "white-box" in skipped["mock/judge"]


@pytest.mark.slow
def test_smollm2_token_attack_one_item():
    from reasonscope.attack.executor import make_attacker
    from reasonscope.plan import ModelConfig

    cfg = AttackConfig(cot_tokens=32)
    attacker = make_attacker(ModelConfig(spec="smollm2"), cfg, AttackSettings(cot_tokens=32))
    lay = attacker.layout_for("Lena has 12 apples and gets 7 more. How many apples does Lena have now?")
    clean = attacker.answer_first(lay)
    assert clean.answer
    question = "Lena has 12 apples and gets 7 more. How many apples does Lena have now?"
    res = attacker.token_attack(attacker.layout_for(question, clean), "x", question)
    assert res.perturbed_question and res.seconds > 0


def test_cli_attack(tmp_path, tiny_causal_lm, monkeypatch):
    from typer.testing import CliRunner

    from reasonscope.cli import app

    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "input": QUESTION, "target": 8, "answer_type": "number"}) + "\n")
    monkeypatch.setattr(Attacker, "answer_first_many", scripted_chains(_fake_answer_first))
    res = CliRunner().invoke(app, ["attack", "--model", f"hf/{tiny_causal_lm}", "--dataset", str(data), "--method",
                                   "random", "--method", "embedding", "--output-dir", str(tmp_path), "--name", "a"])
    assert res.exit_code == 0, res.output
    t = json.loads((tmp_path / "a" / "summary.json").read_text())["attack"]
    assert list(t["models"]) == [f"hf/{tiny_causal_lm}"] and t["methods"] == ["random", "embedding"]
    assert t["reasoning_check"] == "arithmetic only (no judge)"
    assert t["models"][f"hf/{tiny_causal_lm}"]["rates"]["random"]["success"]["value"] == 1.0
    assert any("cannot detect non-arithmetic errors" in w for w in t["warnings"])
    assert "decided" in res.output and "more fragile" in res.output
    res = CliRunner().invoke(app, ["attack", "--model", "mock/reasoner", "--dataset", str(data), "--method", "random",
                                   "--output-dir", str(tmp_path), "--name", "b"])
    assert res.exit_code == 0, res.output  # a black-box model is skipped with its reason, nothing crashes
    assert "white-box" in json.loads((tmp_path / "b" / "summary.json").read_text())["attack"]["skipped_models"][
        "mock/reasoner"]
    res = CliRunner().invoke(app, ["attack", "--method", "laser"])
    assert res.exit_code == 2 and "methods" in res.output


def test_meaning_judge_makes_changed_questions_invalid(tmp_path, tiny_causal_lm, monkeypatch):
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "input": QUESTION, "target": 8, "answer_type": "number"}) + "\n")
    monkeypatch.setattr(Attacker, "answer_first_many", scripted_chains(_fake_answer_first))
    plan = parse_plan({
        "experiment": {"name": "m", "output_dir": str(tmp_path)},
        "models": [{"spec": f"hf/{tiny_causal_lm}", "name": "tiny"}],
        "datasets": [{"name": "qs", "format": "jsonl", "path": str(data)}],
        "families": {"attack": {"steps": 1, "candidates": 2, "min_similarity": None, "meaning_judge": True,
                                "judge": {"spec": "mock/judge", "options": {"meaning_changed": True, "ok_rate": 1}}}},
        "stats": {"n_resamples": 200}})
    from reasonscope.pipeline.runner import Runner

    s = Runner(plan, show_progress=False).run()
    rows = [json.loads(x) for x in (s.run_dir / "attack_items.jsonl").read_text().splitlines()]
    by = {r["method"]: r for r in rows}
    assert by["token"]["outcome"] == by["random"]["outcome"] == "invalid"
    assert by["token"]["why"] == "the judge says the perturbed question changed meaning"
    assert by["embedding"]["outcome"] == "success"  # no text to judge; its equation is still false
    rates = json.loads((s.run_dir / "summary.json").read_text())["attack"]["models"]["tiny"]["rates"]
    assert rates["token"]["counts"]["invalid"] == 1 and rates["token"]["n"] == 0
    assert rates["token"]["success"]["value"] is None  # nothing decided: no rate, not 0


def test_ray_executor_equals_local(tiny_causal_lm):
    """Items attacked by Ray actors give the records the local executor gives (greedy, seeded)."""
    import ray

    from reasonscope.attack.executor import attack_items, make_attacker
    from reasonscope.attack.scoring import settings_of
    from reasonscope.plan import ModelConfig

    cfg = AttackConfig(steps=1, candidates=2, min_similarity=None, cot_tokens=6, answer_tokens=6)
    settings = settings_of(cfg, 0)
    model = ModelConfig(spec=f"hf/{tiny_causal_lm}")
    attacker = make_attacker(model, cfg, settings)
    items = []
    for i, q in enumerate([QUESTION, "Is a robin a bird ? Yes ."]):
        clean = attacker.answer_first(attacker.layout_for(q))  # the tiny model's own answer counts as correct
        items.append((f"d/{i}", Item(id=str(i), input=q, target=clean.answer, answer_type="text")))
    local = dict(attack_items(model, items, cfg, settings, executor="local"))
    try:
        remote = dict(attack_items(model, items, cfg, settings, executor="ray"))
    finally:
        ray.shutdown()
    assert set(remote) == set(local) == {"d/0", "d/1"}
    for key in local:
        assert set(local[key]["methods"]) == {"token", "embedding", "random"}
        for method, res in local[key]["methods"].items():
            other = remote[key]["methods"][method]
            assert other["perturbed_question"] == res["perturbed_question"] and other["chain"] == res["chain"]
            assert other["objective_after"] == pytest.approx(res["objective_after"], abs=1e-4)
