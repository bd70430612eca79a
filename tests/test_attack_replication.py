"""The wiring of benchmarks/attack_replication.py on a few items: the tiny causal LM with scripted
answer-first chains, generated word problems and a two-row GSM8K file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from reasonscope.attack.attacker import Attacker, Chain
from reasonscope.data.word_problems import word_problem_items
from reasonscope.testing import scripted_chains

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "attack_replication.py"
GSM8K = [{"question": "Tom has 4 pens and buys 3 more. How many pens does he have?",
          "answer": "He has 4+3=<<4+3=7>>7 pens.\n#### 7"},
         {"question": "A box holds 6 eggs. How many eggs are in 2 boxes?",
          "answer": "There are 6*2=<<6*2=12>>12 eggs.\n#### 12"}]


def _script(questions: dict[str, tuple[str, str]]):
    """Clean question: the gold answer with the gold rationale. Embedding-perturbed input (the same question
    tokens, other embeddings): the answer kept with a false equation (success). Token and random insertions:
    another answer (wrong)."""

    def one(self, layout, question_embeds=None):
        answer, why = questions.get(self.tokenizer.decode(layout.question).strip(), ("0", "1 + 1 = 2"))
        if question_embeds is None:
            return Chain(answer, why)
        return Chain(answer, "2 + 2 = 5")

    return one


def test_replication_benchmark_wiring(tmp_path, tiny_causal_lm, monkeypatch, capsys, load_benchmark):
    items = word_problem_items(3, seed=7)
    questions = {it.input: (str(it.target), it.rationale) for it in items}
    # the first GSM8K problem is answered correctly with its gold solution, the second wrongly
    questions[GSM8K[0]["question"]] = ("7", "He has 4+3=<<4+3=7>>7 pens.")
    questions[GSM8K[1]["question"]] = ("8", "6 * 2 = 8")
    monkeypatch.setattr(Attacker, "answer_first_many", scripted_chains(_script(questions)))
    data = tmp_path / "gsm8k_train.jsonl.gz"
    with gzip.open(data, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in GSM8K))
    out = load_benchmark("attack_replication").main([
        "--size", "3", "--gsm8k", str(data), "--gsm8k-limit", "2", "--model", f"hf/{tiny_causal_lm}",
        "--min-similarity", "-1", "--steps", "1", "--candidates", "2", "--cot-tokens", "8",
        "--store", str(tmp_path / "store")])
    wp, gsm = out["word-problems"], out["gsm8k-train"]
    assert (wp["items"], wp["correct"], wp["attacked"], wp["clean_pass"]) == (3, 3, 3, 3)
    assert (gsm["items"], gsm["correct"], gsm["attacked"], gsm["clean_pass"]) == (2, 1, 1, 1)
    assert wp["kinds"] == {"add": {"items": 2, "correct": 2, "clean_pass": 2},
                           "add_add": {"items": 1, "correct": 1, "clean_pass": 1}}
    assert gsm["kinds"] == {"all": {"items": 2, "correct": 1, "clean_pass": 1}}
    for m in ("token", "random"):  # the scripted insertions change the answer: decided, wrong
        r = wp["methods"][m]
        assert (r["decided"], r["counts"]["wrong"], r["counts"]["success"], r["kept_k"], r["valid"]) == (3, 3, 0, 0, 3)
        assert r["sr"]["value"] == 0.0 and r["kept"]["value"] == 0.0
    e = wp["methods"]["embedding"]  # answer kept, a new false equation: success
    assert (e["decided"], e["counts"]["success"], e["kept_k"]) == (3, 3, 3)
    assert e["sr"]["value"] == 1.0 and e["sr_wide"]["value"] == 1.0
    assert 0.29 < e["sr"]["low"] < 0.3  # Clopper-Pearson 95% for 3 of 3: [0.292, 1]
    assert gsm["methods"]["embedding"]["decided"] == 1
    # the word problems are decided with the reference check too; the arithmetic check alone decides the same here
    assert e["success_by"] == {"false equation": 3, "wrong value": 0, "wrong step": 0, "dropped step": 0, "judge": 0}
    assert wp["arithmetic_alone"]["token"] == {"decided": 3, "success": 0, "not_judged": 0}
    assert "arithmetic_alone" not in gsm  # GSM8K's gold solutions are no reference
    # paired: token and random both fail on the same 3 problems; embedding succeeds on all 3 (3 discordant pairs:
    # McNemar exact p = 2 * (1/2)^3 = 0.25)
    assert (wp["paired"]["token"]["n"], wp["paired"]["token"]["p_value"], wp["paired"]["token"]["difference"]) == (
        3, 1.0, 0.0)
    pe = wp["paired"]["embedding"]
    assert (pe["only_a"], pe["only_b"], pe["difference"], pe["p_value"]) == (3, 0, 1.0, 0.25)
    # every generated rationale states a result; the planted change is detected in each
    k, n, rate = wp["detection clean chains that pass"]
    assert (k, n) == (3, 3) and rate["value"] == 1.0
    printed = capsys.readouterr().out
    assert "14.7%" in printed and "word-problems" in printed and "gsm8k-train" in printed
    assert "wall time" in printed and "McNemar exact p = 0.25" in printed


def test_attack_dataset_replaces_the_plans_datasets(tmp_path, tiny_causal_lm, monkeypatch):
    """``families.attack.dataset`` (as the demo sets it): the attack runs on those items only."""
    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan

    items = word_problem_items(2, seed=7)
    monkeypatch.setattr(Attacker, "answer_first_many", scripted_chains(_script(
        {it.input: (str(it.target), it.rationale) for it in items})))
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "input": "What is 2 + 2?", "target": 4, "answer_type": "number"}) + "\n")
    plan = parse_plan({
        "experiment": {"name": "wp", "output_dir": str(tmp_path), "seed": 7},
        "models": [{"spec": f"hf/{tiny_causal_lm}", "name": "tiny"}],
        "datasets": [{"name": "qs", "format": "jsonl", "path": str(data)}],
        "families": {"attack": {"steps": 1, "candidates": 2, "min_similarity": None, "cot_tokens": 8,
                                "dataset": {"name": "word-problems", "format": "word_problems", "size": 2}}},
        "stats": {"n_resamples": 200}})
    s = Runner(plan, show_progress=False).run()
    t = json.loads((s.run_dir / "summary.json").read_text())["attack"]["models"]["tiny"]
    assert (t["items"], t["answered_correctly"], t["attacked"]) == (2, 2, 2)
    rows = [json.loads(x) for x in (s.run_dir / "attack_items.jsonl").read_text().splitlines()]
    assert {r["item"] for r in rows} == {"word-problems/wp-0", "word-problems/wp-1"}
    assert t["rates"]["embedding"]["counts"]["success"] == 2 and t["rates"]["random"]["counts"]["wrong"] == 2


def test_demo_attacks_the_benchmarks_first_word_problems():
    from reasonscope.data.loaders import load_dataset
    from reasonscope.demo import ATTACK_ITEMS, demo_plan
    from reasonscope.plan import parse_plan

    plan = parse_plan(demo_plan("runs"), "<demo plan>")
    ds = plan.families.attack.dataset
    assert (ds.name, ds.format, ds.size, ds.seed) == ("word-problems", "word_problems", ATTACK_ITEMS, 7)
    assert [it.input for it in load_dataset(ds).items] == [it.input for it in word_problem_items(60, 7)[:ATTACK_ITEMS]]
    # the benchmark's defaults are the demo's attack settings, so the demo's outcomes are its first rows
    a = plan.families.attack
    text = BENCH.read_text()
    for flag, value in (("--seed", plan.experiment.seed), ("--steps", a.steps), ("--candidates", a.candidates),
                        ("--cot-tokens", a.cot_tokens)):
        assert f'"{flag}", type=int, default={value},' in text


def test_judge_validation_counts_the_judges_verdicts_on_clean_and_planted_chains(tmp_path, monkeypatch, capsys,
                                                                                  load_benchmark):
    """The judge sees each clean chain that passes the arithmetic check and the same chain with one planted
    wrong result; a judge that reads the arithmetic passes the first and flags the second."""
    from rich.console import Console

    from reasonscope.attack.arithmetic import check_arithmetic
    from reasonscope.shared_settings import StatsConfig
    from reasonscope.storage.store import Store

    bench = load_benchmark("attack_replication")
    asked: list[tuple[str, str]] = []

    def judge(cfg, cases, store, *, seed, console):
        asked.extend((cid, reasoning) for cid, _, _, reasoning in cases)
        verdicts = {cid: (check_arithmetic(reasoning).passed, None) for cid, _, _, reasoning in cases[:-1]}
        verdicts[cases[-1][0]] = (None, "unreadable")  # the last verdict could not be read
        return verdicts

    monkeypatch.setattr(bench, "judge_chains", judge)
    rows = [{"item": f"wp/{i}", "question": f"What is {i} + 2?", "clean": {"answer": str(i + 2),
                                                                          "reasoning": f"{i} + 2 = {i + 2}."}}
            for i in range(3)]
    rows.append({"item": "wp/3", "question": "What is 2 + 2?", "clean": {"answer": "5", "reasoning": "2 + 2 = 5."}})
    rows.append(dict(rows[0]))  # one row per method: a chain is asked once
    out = bench.judge_validation("mock/judge", rows, Store(tmp_path / "s"), StatsConfig(), Console(highlight=False))
    # wp/3's clean chain fails the check: not asked; 3 clean + 3 planted, the last planted one unreadable
    assert [cid for cid, _ in asked] == ["ok|wp/0", "bad|wp/0", "ok|wp/1", "bad|wp/1", "ok|wp/2", "bad|wp/2"]
    assert all(not check_arithmetic(r).passed for cid, r in asked if cid.startswith("bad|"))
    assert out["correct_passed"]["value"] == 1.0 and out["correct_passed"]["n"] == 3
    assert out["planted_detected"]["value"] == 1.0 and out["planted_detected"]["n"] == 2
    assert out["unreadable"] == 1
    printed = capsys.readouterr().out
    assert "calls a correct chain correct 3/3" in printed and "calls a planted wrong result incorrect 2/2" in printed


def test_paired_test_counts_discordant_problems_and_gives_mcnemars_exact_p(load_benchmark):
    """Token against random on the same problems: 6 problems only token breaks, 1 only random, 2 both, 3 neither;
    one problem with an excluded random attack is left out. McNemar exact: 2 * P(X <= 1), X ~ Bin(7, 1/2) =
    2 * 8 / 128 = 0.125; SR difference (8 - 3) / 12."""
    from reasonscope.shared_settings import StatsConfig

    bench = load_benchmark("attack_replication")
    pattern = [("success", "wrong")] * 6 + [("wrong", "success")] + [("success", "success")] * 2 + \
        [("unattackable", "wrong")] * 3 + [("success", "not_judged")]
    rows = [{"item": f"wp/{i}", "method": m, "outcome": o} for i, pair in enumerate(pattern)
            for m, o in zip(("token", "random"), pair, strict=True)]
    out = bench.paired_test(rows, "token", "random", StatsConfig())
    assert (out["n"], out["both"], out["only_a"], out["only_b"]) == (12, 2, 6, 1)
    assert out["p_value"] == pytest.approx(0.125)
    assert out["difference"] == pytest.approx(5 / 12)
    assert out["low"] < 5 / 12 < out["high"]
    assert "success both 2, token only 6, random only 1, neither 3" in out["line"]
    rows = [{"item": "wp/0", "method": "token", "outcome": "success", "perturbed_check": {"false_equations": []}}]
    rows[0]["perturbed_check"]["reference"] = {"rule": "dropped step"}
    assert bench.success_by(rows)["dropped step"] == 1
