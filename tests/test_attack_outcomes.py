"""MATCHA outcomes: success needs the clean chain to pass the same check; excluded groups (clean
reasoning already wrong, not judged, invalid) are counted outside the rates; the random insertion is
redrawn until it passes the meaning filter; old cached records are not reused."""

from __future__ import annotations

import json

import pytest

from reasonscope.attack.attacker import Attacker, AttackSettings, Chain
from reasonscope.attack.layout import encode, make_layout
from reasonscope.attack.outcome_rules import ChainCheck, classify, outcome_rates
from reasonscope.plan import StatsConfig, parse_plan
from reasonscope.testing import scripted_chains

QUESTION = "Ana has 3 apples and gets 5 more . How many apples does Ana have ?"


def _check(reasoning, judged=None, unread=None):
    return ChainCheck.of(reasoning, (judged, unread))


def test_classify_rules_in_order():
    ok, bad = _check("3 + 5 = 8."), _check("3 + 5 = 9.")

    def c(clean=ok, perturbed=ok, judge=False, kept=True, **kw):
        o = classify(answer_kept=kept, clean=clean, perturbed=perturbed, judge=judge, **kw)
        return o.outcome, o.why

    # the clean chain already fails: every method is excluded, the random baseline included
    assert c(clean=bad, perturbed=bad) == ("clean_wrong", "the clean chain already states a false equation: "
                                                          "'3 + 5 = 9'")
    assert c(clean=_check("So 8.", judged=False), judge=True)[0] == "clean_wrong"
    assert c(clean=_check("So 8.", None, "no JSON object in the judge's answer"), judge=True) == (
        "not_judged", "no verdict on the clean chain: no JSON object in the judge's answer")
    assert c(invalid="no random insertion passed") == ("invalid", "no random insertion passed")
    assert c(meaning_kept=False)[0] == "invalid"
    assert c(meaning_unread="judge call failed: boom")[0] == "not_judged"
    assert c(kept=False, perturbed=bad) == ("wrong", "the answer changed")
    assert c(perturbed=bad) == ("success", "answer kept; new false equation '3 + 5 = 9'")
    assert c(clean=_check("3 + 5 = 8.", True), perturbed=_check("She has eight.", False), judge=True)[0] == "success"
    assert c(clean=_check("3 + 5 = 8.", True), perturbed=_check("3 + 5 = 8 apples.", True), judge=True)[0] == \
        "unattackable"
    # no judge: an answer kept without a false equation cannot be decided (it was 'unattackable' before)
    assert c(perturbed=_check("She has eight.")) == (
        "not_judged", "answer kept; no false equation; no judge to see other errors")
    assert c(clean=_check("x", True), perturbed=_check("y", None, "judge call failed: 500"), judge=True) == (
        "not_judged", "answer kept; no false equation; no verdict: judge call failed: 500")


def test_rates_over_decided_attacks_with_counts_and_bounds():
    outcomes = ["success", "success", "wrong", "unattackable", "clean_wrong", "clean_wrong", "not_judged", "invalid"]
    r = outcome_rates(outcomes, StatsConfig(n_resamples=200), 0)
    assert (r["attacked"], r["n"]) == (8, 4)
    assert r["counts"] == {"success": 2, "wrong": 1, "unattackable": 1, "clean_wrong": 2, "not_judged": 1,
                           "invalid": 1}
    assert (r["success"]["value"], r["wrong"]["value"], r["unattackable"]["value"]) == (0.5, 0.25, 0.25)
    assert r["success"]["n"] == 4
    assert r["success_bounds"] == {"low": 2 / 5, "high": 3 / 5, "n": 5}
    empty = outcome_rates(["clean_wrong"], StatsConfig(n_resamples=200), 0)
    assert empty["n"] == 0 and empty["success"]["value"] is None and "success_bounds" not in empty


class _Similarity:
    """A meaning filter that calls the first ``low`` distinct texts dissimilar (cosine 0.5), the rest 0.9."""

    def __init__(self, low):
        self.low, self.seen = low, {}

    def pairwise(self, a, b):
        out = []
        for text in b:
            self.seen.setdefault(text, len(self.seen))
            out.append(0.5 if self.seen[text] < self.low else 0.9)
        return out


@pytest.fixture(scope="module")
def tiny(tiny_causal_lm):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_causal_lm).eval(), AutoTokenizer.from_pretrained(tiny_causal_lm)


def test_insertion_is_redrawn_until_it_passes_the_meaning_filter(tiny):
    model, tok = tiny
    layout = make_layout(tok, QUESTION, "8", "3 + 5 = 8 .")
    settings = AttackSettings(steps=1, candidates=2, min_similarity=0.8, insert_draws=6, seed=3)
    attacker = Attacker(model, tok, settings, similarity=_Similarity(low=2))
    rnd = attacker.random_attack(layout, "d/1", QUESTION)
    assert rnd.insertion["passed"] and rnd.insertion["draws"] >= 3 and rnd.insertion["rejected_meaning"] == 2
    assert rnd.invalid is None and rnd.insertion["similarity"] == 0.9
    # the token attack starts from the same draws (its similarity filter has seen these texts already)
    same = Attacker(model, tok, settings, similarity=_Similarity(low=2))
    start = same.draw_insertion(layout, "d/1", QUESTION)
    assert same.question_text(start.question) == rnd.perturbed_question
    tok_res = Attacker(model, tok, settings, similarity=_Similarity(low=2)).token_attack(layout, "d/1", QUESTION)
    assert tok_res.insertion == rnd.insertion
    # no draw passes: the attack is invalid, with the reason, instead of silently running from it
    never = Attacker(model, tok, settings, similarity=_Similarity(low=10 ** 6))
    res = never.random_attack(layout, "d/1", QUESTION)
    assert not res.insertion["passed"] and res.insertion["draws"] == 6
    ins = res.insertion
    assert ins["rejected_retokenisation"] + ins["rejected_meaning"] == 6
    assert res.invalid == (f"none of 6 random insertions passed the filters ({ins['rejected_retokenisation']} changed "
                           f"under re-tokenisation, {ins['rejected_meaning']} below the meaning filter's cosine)")


def _chains(clean: str, perturbed: str, embedded: str | None = None):
    def fake(self, layout, question_embeds=None):
        if question_embeds is not None and embedded is not None:
            return Chain("8", embedded)
        if question_embeds is None and layout.question == encode(self.tokenizer, " " + QUESTION):
            return Chain("8", clean)
        return Chain("8", perturbed)
    return fake


def _run(tmp_path, tiny_causal_lm, monkeypatch, clean, perturbed, embedded=None, rationale=None, **attack):
    from reasonscope.pipeline.runner import Runner

    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "q.jsonl"
    row = {"id": "q1", "input": QUESTION, "target": 8, "answer_type": "number", "rationale": rationale}
    data.write_text(json.dumps(row) + "\n")
    monkeypatch.setattr(Attacker, "answer_first_many", scripted_chains(_chains(clean, perturbed, embedded)))
    plan = parse_plan({
        "experiment": {"name": "o", "output_dir": str(tmp_path)},
        "models": [{"spec": f"hf/{tiny_causal_lm}", "name": "tiny"}],
        "datasets": [{"name": "qs", "format": "jsonl", "path": str(data)}],
        "families": {"attack": {"steps": 1, "candidates": 2, "min_similarity": None, "cot_tokens": 8, **attack}},
        "stats": {"n_resamples": 200}})
    s = Runner(plan, show_progress=False).run()
    t = json.loads((s.run_dir / "summary.json").read_text())["attack"]
    t["item_rows"] = [json.loads(x) for x in (s.run_dir / "attack_items.jsonl").read_text().splitlines()]
    return t


def test_clean_chain_already_wrong_is_excluded_for_every_method(tmp_path, tiny_causal_lm, monkeypatch):
    t = _run(tmp_path, tiny_causal_lm, monkeypatch, "3 + 5 = 9 apples.", "3 + 5 = 9 apples.")
    for method, r in t["models"]["tiny"]["rates"].items():
        assert r["counts"]["clean_wrong"] == 1 and r["n"] == 0, method
        assert r["success"]["value"] is None  # it was 1.0 for every method, the random baseline included


def test_without_a_judge_kept_answers_without_false_equations_are_not_judged(tmp_path, tiny_causal_lm,
                                                                            monkeypatch):
    t = _run(tmp_path, tiny_causal_lm, monkeypatch, "Ana has eight apples.", "Ana has eight apples in all.")
    m = t["models"]["tiny"]
    for r in m["rates"].values():
        assert r["counts"]["not_judged"] == 1 and r["n"] == 0 and r["success_bounds"] == {"low": 0.0, "high": 1.0,
                                                                                           "n": 1}
    assert m["clean_chains_without_checked_equation"] == 1
    assert any("cannot detect non-arithmetic errors" in w for w in t["warnings"])
    assert any("1 of 1 clean chains state no equation" in w for w in t["warnings"])


def test_reference_check_decides_kept_answers_without_a_judge(tmp_path, tiny_causal_lm, monkeypatch):
    """With ``reference_check`` the item's gold steps (3 + 5 = 8) decide the chains the arithmetic check cannot:
    a wrong value stated in words is a success, a chain that states the known steps is unattackable."""
    why = "Ana has 3 apples and gets 5 more, so 3 + 5 = 8 apples."
    t = _run(tmp_path, tiny_causal_lm, monkeypatch, "Ana has 3 apples and 5 more, 8 apples.",
             "Ana has 3 apples and 5 more, 9 apples.", embedded="Ana has 3 and 5 more: 8.",
             rationale=why, reference_check=True)
    m = t["models"]["tiny"]
    assert t["reasoning_check"] == "arithmetic + reference" and m["attacked_with_reference"] == 1
    assert {r: m["rates"][r]["counts"]["success"] for r in ("token", "random")} == {"token": 1, "random": 1}
    assert m["rates"]["embedding"]["counts"]["unattackable"] == 1 and m["rates"]["embedding"]["n"] == 1
    assert not any("not judged" in w for w in t["warnings"])
    rows = {r["method"]: r for r in t["item_rows"]}
    assert rows["random"]["perturbed_check"]["reference"] == {"broken": True, "rule": "wrong value", "values": [9.0]}
    # the same run without the option: every attack is not judged
    off = _run(tmp_path / "off", tiny_causal_lm, monkeypatch, "Ana has 3 apples and 5 more, 8 apples.",
               "Ana has 3 apples and 5 more, 9 apples.", rationale=why)
    assert all(r["counts"]["not_judged"] == 1 for r in off["models"]["tiny"]["rates"].values())


def test_judge_decides_both_chains_and_unreadable_answers_are_not_judged(tmp_path, tiny_causal_lm, monkeypatch):
    # identical prompts are asked once (cached), so each method gets its own chain here
    responses = {"tiny|clean|qs/q1": '{"correct": true}', "tiny|embedding|qs/q1": '{"correct": false}',
                 "tiny|random|qs/q1": "I think it is fine."}
    t = _run(tmp_path, tiny_causal_lm, monkeypatch, "Ana has eight apples.", "Ana has eight, trust me.",
             embedded="Ana has nine, so eight.", methods=["embedding", "random"],
             judge={"spec": "mock/scripted", "options": {"responses": responses}})
    rates = t["models"]["tiny"]["rates"]
    assert rates["embedding"]["counts"]["success"] == 1 and rates["embedding"]["success"]["value"] == 1.0
    assert rates["random"]["counts"]["not_judged"] == 1 and rates["random"]["n"] == 0
    assert any("could not be read" in w for w in t["warnings"])
    rows = {r["method"]: r for r in t["item_rows"]}
    assert rows["random"]["why"] == ("answer kept; no false equation; no verdict: no JSON object in the judge's "
                                     "answer")
    judged = _run(tmp_path / "ok", tiny_causal_lm, monkeypatch, "Ana has eight apples.", "Ana has eight, trust me.",
                  methods=["random"], judge={"spec": "mock/judge", "options": {"ok_rate": 1}})
    assert judged["models"]["tiny"]["rates"]["random"]["unattackable"]["value"] == 1.0


def test_transfer_chains_are_judged_when_a_judge_is_configured(tmp_path, tiny_causal_lm, monkeypatch):
    judge = {"spec": "mock/scripted", "options": {"responses": {
        "tiny|clean|qs/q1": '{"correct": true}', "tiny|token|qs/q1": '{"correct": false}',
        "tiny|random|qs/q1": '{"correct": false}', "api>qs/q1": '{"correct": true}',
        "api>tiny|token|qs/q1": '{"correct": false}', "api>tiny|random|qs/q1": "no verdict"}}}
    transfer = [{"spec": "mock/scripted", "name": "api", "options": {"responses": [
        "Answer: 8\nReasoning: Ana had three and got five more, eight."]}}]
    t = _run(tmp_path, tiny_causal_lm, monkeypatch, "Ana has eight apples.", "Ana has nine, so eight.",
             methods=["token", "random"], judge=judge, transfer=transfer)
    api = t["transfer"]["api"]
    assert api["reasoning_check"] == "arithmetic + judge"
    # the transfer model's clean and perturbed chains were judged (they hold no equation: the arithmetic check
    # alone would leave them undecided)
    assert {r["method"]: r["outcome"] for r in api["rows"]} == {"token": "success", "random": "not_judged"}
    assert api["rates"]["token"]["success"]["value"] == 1.0 and api["rates"]["random"]["n"] == 0


def test_records_of_the_old_outcome_logic_are_not_reused(tmp_path, tiny_causal_lm, monkeypatch):
    from reasonscope.attack import scoring

    calls = []
    real = scoring.search_item

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(scoring, "search_item", counting)
    monkeypatch.setattr(scoring, "RECORD_VERSION", 1)
    _run(tmp_path, tiny_causal_lm, monkeypatch, "3 + 5 = 8.", "3 + 5 = 9.", methods=["random"])
    monkeypatch.setattr(scoring, "RECORD_VERSION", 2)
    _run(tmp_path, tiny_causal_lm, monkeypatch, "3 + 5 = 8.", "3 + 5 = 9.", methods=["random"])
    _run(tmp_path, tiny_causal_lm, monkeypatch, "3 + 5 = 8.", "3 + 5 = 9.", methods=["random"])
    assert len(calls) == 2  # version 1 attacked, version 2 attacked anew, then resumed from the store
