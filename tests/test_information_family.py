"""The information family's run-level checks: the baseline-only accuracy on held-out items and its
warning (hand values, and shown in the CLI and the report), substitutions and truncation in the
outputs, the reduction named next to every table."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import yaml
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.information.report_view import information_sheets
from reasonscope.information.scoring import baseline_leak_warning, baseline_only_accuracy

runner = CliRunner()


class FixedEvaluator(SimpleNamespace):
    """Candidate log-likelihoods from tables keyed by input text: the predicted label gets ``ll`` if it is
    the true one, else -0.001 (and the true label ``ll``)."""

    def candidate_log_likelihoods(self, inputs, candidates):
        rows = []
        for x in inputs:
            row = [-50.0] * len(candidates)
            row[candidates.index(self.y[x])] = self.ll[x]
            if self.preds[x] != self.y[x]:
                row[candidates.index(self.preds[x])] = -0.001
            rows.append(row)
        return rows


def test_baseline_only_accuracy_and_warning_by_hand():
    from reasonscope.information.variants import baseline_input

    b = {"a": "A dog runs, which means that an animal moves.", "b": "x", "c": "y", "d": "z"}
    y = {"a": "entailment", "b": "neutral", "c": "contradiction", "d": "neutral"}
    ev = FixedEvaluator(preds={baseline_input(b[i]): p for i, p in zip("abcd", ["entailment", "neutral",
                                                                                "contradiction", "entailment"],
                                                                       strict=True)},
                        ll={baseline_input(b[i]): v for i, v in zip("abcd", [-0.01, -0.02, -0.03, -2.0], strict=True)},
                        y={baseline_input(b[i]): y[i] for i in "abcd"})
    got = baseline_only_accuracy(ev, list("abcd"), b, y, ["contradiction", "entailment", "neutral"], "test")
    assert got["accuracy"] == 0.75 and got["n"] == 4 and got["split"] == "test"
    assert got["mean_log_p_label"] == pytest.approx(-2.06 / 4)
    assert got["mean_p_label"] == pytest.approx(sum(math.exp(v) for v in (-0.01, -0.02, -0.03, -2.0)) / 4)
    assert baseline_leak_warning(got, 0.95, False) is None
    text = baseline_leak_warning(got, 0.75, False)
    assert text.startswith("the baseline alone gives the label away: from b alone, Phi_base ranks the true label "
                           "first for 75.0% of 4 held-out test items (mean p(y | b) = 0.769")
    assert "mean log p(y | b) = -0.515 nats" in text and "is at most 0.515 nats" in text
    assert "Table 5.10" in text and "methods: [rev, larev]" in text
    assert "Compare with the LAREV rows" in baseline_leak_warning(got, 0.5, True)
    assert baseline_leak_warning({"accuracy": None}, 0.5, True) is None


def test_warning_substitutions_and_reduction_reach_cli_and_report(tiny_seq2seq, tmp_path):
    plan = {"experiment": {"name": "leak", "output_dir": str(tmp_path), "seed": 0},
            "families": {"information": {
                "train": {"name": "tr", "format": "synthetic", "size": 3, "seed": 1},
                "test": {"name": "te", "format": "synthetic", "size": 1, "seed": 2},
                "methods": ["rev"], "evaluator": str(tiny_seq2seq), "epochs": 1, "lr": 1e-3,
                "max_input_tokens": 24, "baseline_warn_accuracy": 0.0}}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    res = runner.invoke(app, ["run", str(path)])
    assert res.exit_code == 0, res.output
    t = json.loads((tmp_path / "leak" / "summary.json").read_text())["information"]
    assert t["reduction"] == "sum" and t["baseline_only"]["split"] == "test" and t["baseline_only"]["n"] == 3
    assert t["penalties"] is None  # REV only
    assert sum(t["baseline_rules"].values()) == 12 and set(t["baseline_rules"]) <= {"question", "yes-no", "fallback"}
    tr = t["truncation"]
    assert tr["max_input_tokens"] == 24 and tr["rationale_truncated"] > 0  # 24 tokens: every r + b is cut
    assert tr["training"]["inputs"] == 9 and set(tr["scoring"]) == {"gold", "leaky", "gold_leaky", "vacuous"}
    leak = [w for w in t["warnings"] if w.startswith("the baseline alone gives the label away")]
    assert len(leak) == 1 and any("their rationale was shortened" in w for w in t["warnings"])
    flat = " ".join(res.output.split())
    assert "sum over y's tokens" in flat and "the baseline alone gives the label away" in flat
    assert flat.count("Run LAREV (methods: [rev, larev])") == 1  # printed once (in the summary), markup escaped
    assert "inputs over 24 tokens (rationale shortened, b kept)" in flat
    html = (tmp_path / "leak" / "report.html").read_text()
    assert "REV cannot mean much here." in html and "log p over y&#39;s tokens" in html and "sum over y&#39;s tokens" in html
    sheets = information_sheets(t)
    assert {r["log p reduction"] for r in sheets["information_scores"]} == {"sum over y's tokens"}
    assert sheets["information_baseline_only"][0]["label given away"] is True
    assert sum(r["rationale shortened"] for r in sheets["information_truncation"]) == tr["rationale_truncated"]
    assert {r["what"] for r in sheets["information_substitutions"]} == {"baseline"}


def test_substitution_rows_flag_the_stand_ins():
    from reasonscope.information.report_view import substitution_rows

    t = {"baseline_rules": {"question": 7, "fallback": 2, "llm failed -> rule": 1},
         "training": {"antonym_sources": {"llm": 4, "random NOUN (llm gave none)": 3, "wordnet": 1}},
         "substitutes": ["fallback", "llm failed -> rule", "random NOUN (llm gave none)"]}
    rows = substitution_rows(t)
    assert [(r["what"], r["built by"], r["count"], r["of"], r["substitution"]) for r in rows] == [
        ("baseline", "fallback", 2, 10, True), ("baseline", "llm failed -> rule", 1, 10, True),
        ("baseline", "question", 7, 10, False), ("antonym environment (E3)", "llm", 4, 8, False),
        ("antonym environment (E3)", "random NOUN (llm gave none)", 3, 8, True),
        ("antonym environment (E3)", "wordnet", 1, 8, False)]


def test_rerun_reads_evaluator_scores_back_from_the_store(tiny_seq2seq, tmp_path, monkeypatch):
    """A second run of the same plan trains nothing and scores nothing: every log-likelihood and greedy
    prediction of the trained evaluators is read back from the score cache (kind ``evaluator``), and the
    tables are the same numbers. Retraining (a new ``best`` folder) would be a new scorer."""
    import sqlite3

    from reasonscope.information.evaluator import Evaluator

    plan = {"experiment": {"name": "again", "output_dir": str(tmp_path), "seed": 0},
            "families": {"information": {
                "train": {"name": "tr", "format": "synthetic", "size": 3, "seed": 1},
                "test": {"name": "te", "format": "synthetic", "size": 1, "seed": 2},
                "methods": ["rev"], "evaluator": str(tiny_seq2seq), "epochs": 1, "lr": 1e-3}}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    assert runner.invoke(app, ["run", str(path)]).exit_code == 0
    first = json.loads((tmp_path / "again" / "summary.json").read_text())["information"]
    con = sqlite3.connect(tmp_path / "again" / "store.sqlite")
    cached = con.execute("SELECT COUNT(*) FROM score_cache c JOIN score_models m ON m.scorer = c.scorer "
                         "WHERE m.kind = 'evaluator'").fetchone()[0]
    con.close()
    assert cached >= 3 * 4  # 3 test items x 4 variants under Phi, plus Phi_base's baselines

    calls = []
    for name in ("log_likelihood", "candidate_log_likelihoods", "predict"):
        monkeypatch.setattr(Evaluator, name, lambda self, *a, _n=name, **k: calls.append(_n))
    res = runner.invoke(app, ["run", str(path)])
    assert res.exit_code == 0, res.output
    assert calls == []
    second = json.loads((tmp_path / "again" / "summary.json").read_text())["information"]
    assert second["absolute"] == first["absolute"] and second["accuracy"] == first["accuracy"]
    assert second["baseline_only"] == first["baseline_only"]
