"""benchmarks/evidence_replication.py: premise-whole test order, predictions for the null runs, the likelihood plan."""

from __future__ import annotations

import yaml

from reasonscope.plan import parse_plan


def test_test_rows_go_premise_by_premise(load_benchmark):
    er = load_benchmark("evidence_replication")
    rows = [{"Sentence1": p, "pairID": str(i)} for i, p in enumerate("abacbca")]
    assert [r["pairID"] for r in er.by_premise(rows)] == ["0", "2", "6", "1", "4", "3", "5"]


def test_prediction_rows_keep_unparseable_ones_unparseable(load_benchmark):
    er = load_benchmark("evidence_replication")
    rows = [{"item_id": "x", "predicted": "neutral", "rationale": "r"}, {"item_id": "y", "predicted": None,
                                                                        "rationale": ""}]
    assert er.prediction_rows(rows, "smollm2") == [
        {"id": "x", "label": "neutral", "rationale": "r", "model": "smollm2"},
        {"id": "y", "output": "", "model": "smollm2"}]


def test_the_likelihood_plan_relabels_the_stored_predictions(load_benchmark, tmp_path):
    er = load_benchmark("evidence_replication")
    path = er.likelihood_plan(tmp_path / "plan.yaml", tmp_path, tmp_path / "train.csv", tmp_path / "test.csv",
                              tmp_path / "llm_predictions.jsonl", "smollm2", 3, None)
    plan = parse_plan(yaml.safe_load(path.read_text()))
    ev = plan.families.evidence
    assert (ev.label_reading, ev.predictions) == ("likelihood", str(tmp_path / "llm_predictions.jsonl"))
    assert [m.spec for m in plan.models] == ["smollm2"] and plan.experiment.seed == 3
    assert (ev.train.path, ev.test.format) == (str(tmp_path / "train.csv"), "esnli")


def test_the_constant_run_gives_one_label_and_the_hypothesis(load_benchmark):
    er = load_benchmark("evidence_replication")
    rows = [{"pairID": "p1", "Sentence1": "A dog runs.", "Sentence2": "An animal moves.", "gold_label": "entailment"}]
    assert er.constant_predictions(rows, "entailment") == [
        {"id": "p1", "label": "entailment", "rationale": "An animal moves.", "model": "constant"}]


def test_stored_labels_counts_what_is_stored_so_far(load_benchmark, monkeypatch, capsys, tmp_path):
    er = load_benchmark("evidence_replication")
    from reasonscope.storage import store as store_module

    class FakeStore:
        def run(self):
            return {"run_id": "r1"}

        def run_generations(self, run_id):
            out = '{"label": "contradiction", "rationale": "r"}'
            return [{"item_id": "p1", "variant": "evidence", "done": True, "text": out},
                    {"item_id": "p2", "variant": "evidence", "done": True, "text": "no json"},
                    {"item_id": "p3", "variant": "evidence", "done": False, "text": None}]

        def close(self):
            pass

    monkeypatch.setattr(store_module.Store, "open_existing", classmethod(lambda cls, d: FakeStore()))
    rows = [{"pairID": "p1", "Sentence1": "a", "gold_label": "contradiction"},
            {"pairID": "p2", "Sentence1": "a", "gold_label": "neutral"},
            {"pairID": "p3", "Sentence1": "b", "gold_label": "entailment"}]
    er.stored_labels(tmp_path, rows)
    out = capsys.readouterr().out
    assert "2 of 3 pairs (1 whole premises); accuracy 0.500" in out
    assert "predicted: entailment 0, neutral 0, contradiction 1, (unparseable) 1" in out
    assert "| neutral | 0 | 0 | 0 | 1 |" in out
