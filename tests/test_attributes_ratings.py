"""Attribute-specific ratings: the tie rule at its boundary, preference battles decided by attribute scores
and compared with the human-label ratings, the gold answer hidden from judges by default, and the
re-rating of a stored run with another margin (CLI and report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonscope.attributes.elo import attribute_battles, human_battles, outcome, preference_battles
from reasonscope.attributes.ratings import preference_ratings, rank_agreement, ratings_table
from reasonscope.cli import app
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import AttributesConfig, parse_plan
from reasonscope.storage.store import Store

runner = CliRunner()


def test_ties_are_exact_at_the_boundary():
    # 0.95 - 0.90 = 0.04999999999999993 and 0.90 - 0.85 = 0.05000000000000004: both tie under margin 0.05
    assert outcome(0.95, 0.90, 0.05) == 0.5 and outcome(0.90, 0.85, 0.05) == 0.5
    assert outcome(0.85, 0.90, 0.05) == 0.5
    assert outcome(0.96, 0.90, 0.05) == 1.0 and outcome(0.84, 0.90, 0.05) == 0.0
    # margin 0 (the default): only equal scores tie, floating-point noise included
    assert outcome(0.1 + 0.2, 0.3) == 0.5 and outcome((0.9 + 0.8) / 2, 0.85) == 0.5
    assert outcome(0.91, 0.9) == 1.0 and outcome(0.9, 0.91) == 0.0
    assert AttributesConfig().margin == 0.0 and AttributesConfig().show_reference is False
    scores = {"q": {"m1": {"grammar": 0.95}, "m2": {"grammar": 0.90}, "m3": {"grammar": 0.85}}}
    assert attribute_battles(scores, margin=0.05)["grammar"] == [("m1", "m2", 0.5), ("m1", "m3", 1.0),
                                                                   ("m2", "m3", 0.5)]
    assert attribute_battles(scores)["grammar"] == [("m1", "m2", 1.0), ("m1", "m3", 1.0), ("m2", "m3", 1.0)]


def _rows() -> list[dict]:
    """Three models; humans prefer A > B > C. Grammar orders them the same way, conciseness the reverse,
    correctness is missing on one record; one record is a self-battle."""
    order = {"A": 3, "B": 2, "C": 1}
    rows = []
    for i, (x, y) in enumerate([("A", "B"), ("B", "C"), ("A", "C")] * 6):
        first, second = (x, y) if i % 2 else (y, x)
        human = "a" if order[first] > order[second] else "b"
        if i % 5 == 0:
            human = "a" if human == "b" else "b"  # a few upsets keep every rating finite
        rows.append({"id": f"r{i}", "model_a": first, "model_b": second, "human": human,
                     "a": {"grammar": order[first] / 10, "conciseness": 1 - order[first] / 10,
                           "correctness": None if i == 0 else 0.5},
                     "b": {"grammar": order[second] / 10, "conciseness": 1 - order[second] / 10,
                           "correctness": 0.5}})
    rows.append({"id": "self", "model_a": "A", "model_b": "A", "human": "a", "a": {"grammar": 1.0},
                 "b": {"grammar": 0.0}})
    return rows


def test_preference_battles_are_decided_by_the_attribute_scores():
    rows = _rows()
    battles, unscored = preference_battles(rows, ["grammar", "conciseness", "correctness"])
    assert len(battles["grammar"]) == 18 and unscored == {"grammar": 0, "conciseness": 0, "correctness": 1}
    first = rows[0]  # B vs A: grammar 0.2 vs 0.3 -> A (model_b) wins; conciseness the reverse
    assert battles["grammar"][0] == ("B", "A", 0.0) and battles["conciseness"][0] == ("B", "A", 1.0)
    assert (first["model_a"], first["model_b"]) == ("B", "A")
    assert all(s == 0.5 for *_, s in battles["correctness"])  # equal scores tie
    human, skipped = human_battles([type("R", (), {"model_a": r["model_a"], "model_b": r["model_b"],
                                                   "winner": r["human"]}) for r in rows])
    assert skipped == 1 and len(human) == 18


def test_preference_ratings_compared_with_the_human_ratings():
    p = preference_ratings(_rows(), ["grammar", "conciseness", "correctness"], margin=0.0, n_resamples=30, seed=0,
                           confidence=0.95)
    assert p["self_battles"] == 1 and p["margin"] == 0.0 and p["tie_tolerance"] == 1e-9
    human = {m: v["rank"] for m, v in p["human"]["bradley_terry"].items()}
    assert human == {"A": 1, "B": 2, "C": 3}
    grammar = p["attributes"]["grammar"]
    assert grammar["agreement_with_human"] == {"models": 3, "spearman": pytest.approx(1.0),
                                               "kendall": pytest.approx(1.0)}
    assert p["attributes"]["conciseness"]["agreement_with_human"]["spearman"] == pytest.approx(-1.0)
    assert any("never lost: A" in w for w in grammar["warnings"])  # grammar decides every battle for A
    corr = p["attributes"]["correctness"]
    assert corr["unscored_records"] == 1 and corr["ties"] == 17
    assert corr["agreement_with_human"]["spearman"] is None and corr["agreement_with_human"]["reason"]
    assert rank_agreement({"A": 1.0, "B": 2.0}, {"A": 1.0, "B": 2.0})["spearman"] is None  # 2 models


def test_ratings_table_warns_about_unbounded_models():
    per_unit = {("A", f"q{i}"): {"grammar": 0.9} for i in range(3)}
    per_unit.update({("B", f"q{i}"): {"grammar": 0.2} for i in range(3)})
    g = ratings_table(per_unit, margin=0.0, n_resamples=20, seed=0, confidence=0.95)["grammar"]
    assert g["fit"]["graph"]["never_lost"] == ["A"] and g["fit"]["graph"]["never_won"] == ["B"]
    assert g["bradley_terry"]["A"]["rank"] == 1 and g["bradley_terry"]["B"]["rank_high"] == 2


def _preferences(path: Path) -> Path:
    rows = []
    for i in range(18):
        good, bad = f"Clear reasoning number {i}.\nAnswer: {i}", f"muddled muddled {i} {i}\nAnswer: {i}"
        pair = [("x", "y"), ("y", "z"), ("x", "z")][i % 3]
        rows.append({"question": f"What is {i}?", "response_a": good, "response_b": bad, "model_a": pair[0],
                     "model_b": pair[1], "winner": "a" if i % 4 else "b"})
    rows.append({"question": "Same?", "response_a": "a", "response_b": "b", "model_a": "x", "model_b": "x",
                 "winner": "tie"})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_preference_attribute_elo_end_to_end_and_rerated_with_another_margin(tmp_path):
    judges = [{"spec": "mock/judge", "name": "j1"}, {"spec": "mock/judge", "name": "j2", "options": {"seed": 2}}]
    plan = parse_plan({"experiment": {"name": "pref", "output_dir": str(tmp_path)},
                       "families": {"attributes": {"judges": judges, "preferences": str(_preferences(tmp_path / "p.jsonl")),
                                                   "automatic": None, "pairwise": False, "rating_resamples": 20,
                                                   "attributes": ["grammar", "correctness"]}}})
    s = Runner(plan, show_progress=False).run()
    summary = json.loads((s.run_dir / "summary.json").read_text())["attributes"]
    pref = summary["preferences"]
    assert len(pref["scores"]) == 19 and pref["ratings"]["self_battles"] == 1
    assert set(pref["ratings"]["attributes"]) == {"grammar", "correctness"}
    row = pref["scores"][0]
    grammar = pref["ratings"]["attributes"]["grammar"]
    assert grammar["battles"] == 18 and set(grammar["agreement_with_human"]) >= {"spearman", "kendall", "models"}
    # the stored per-record scores decide the battles: recompute the first one by hand
    expected = 0.5 if row["a"]["grammar"] == row["b"]["grammar"] else float(row["a"]["grammar"] > row["b"]["grammar"])
    assert preference_battles([row], ["grammar"])[0]["grammar"] == [(row["model_a"], row["model_b"], expected)]
    assert pref["human_ratings"] == pref["ratings"]["human"]["bradley_terry"]
    assert any("a model against itself skipped" in w for w in summary["warnings"])
    for name in ("attributes_preference_elo.png", "tables/attributes_preference_ratings.csv",
                 "tables/attributes_preference_agreement.csv"):
        assert (s.run_dir / name).is_file(), name
    html = (s.run_dir / "report.html").read_text()
    assert "Gold answer shown to the judges: no" in html and "attributes_preference_elo" in html
    res = runner.invoke(app, ["attributes", "elo", str(s.run_dir), "--margin", "0.5", "--resamples", "10"])
    assert res.exit_code == 0, res.output
    assert "preference battles decided by each attribute" in res.output
    rerated = json.loads((s.run_dir / "summary.json").read_text())["attributes"]["preferences"]["ratings"]
    assert rerated["margin"] == 0.5 and rerated["attributes"]["grammar"]["ties"] >= grammar["ties"]


def test_gold_answer_hidden_from_judges_by_default_and_recorded(tmp_path):
    def run(extra: dict, name: str):
        plan = parse_plan({"experiment": {"name": name, "output_dir": str(tmp_path)},
                           "models": [{"spec": "mock/reasoner", "name": "m"}],
                           "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
                           "families": {"attributes": {"judges": [{"spec": "mock/judge"}], "automatic": None,
                                                       "attributes": ["correctness"], **extra}}})
        s = Runner(plan, show_progress=False).run()
        store = Store.open_existing(s.run_dir)
        scores = [x for x in store.scores(s.run_id, "attributes") if x.metric == "judge.correctness"]
        key = scores[0].details["judges"]["mock/judge"]["key"]
        request = store.conn.execute("SELECT request FROM generations WHERE key=?", (key,)).fetchone()[0]
        store.close()
        return scores, request, json.loads((s.run_dir / "summary.json").read_text())["attributes"]

    scores, request, table = run({}, "hidden")
    assert "Reference answer" not in request and table["show_reference"] is False
    assert all(x.details["reference_shown"] is False for x in scores)
    scores, request, table = run({"show_reference": True}, "shown")
    assert "Reference answer" in request and table["show_reference"] is True
    assert all(x.details["reference_shown"] is True for x in scores)
