"""The wiring of benchmarks/information_ablations.py: one plan per ablation (the bare command's settings with
one change), a finished ablation kept and not re-run, and the table read from each run's summary."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from reasonscope.plan import parse_plan


def _summary(gold_leaky: float, acc: float) -> dict:
    e = {"value": gold_leaky, "low": gold_leaky - 0.01, "high": gold_leaky + 0.01, "n": 300, "p_value": 0.002}
    s = {"value": 2 * gold_leaky, "low": -0.5, "high": 0.5, "n": 300, "p_value": None}
    return {"information": {"accuracy": {"larev": {"gold": acc, "leaky": acc, "gold_leaky": acc, "vacuous": acc}},
                            "separation": {"larev": {"gold-leaky": e, "SUM": s}},
                            "training": {"phi_la": {"best_val_loss": 0.123}}, "n_test": 300}}


def test_ablation_plans_resume_and_table(tmp_path, monkeypatch, capsys, load_benchmark):
    bench = load_benchmark("information_ablations")
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    runs, out = tmp_path / "runs", tmp_path / "out"
    calls: list[dict] = []

    def fake_run(cmd, stdout, stderr):  # `reasonscope run PLAN`: writes the run's summary.json
        plan = yaml.safe_load(Path(cmd[-1]).read_text())
        calls.append(plan)
        info = plan["families"]["information"]
        (runs / "information").mkdir(parents=True, exist_ok=True)
        acc = 0.5 if info.get("larev_init") == "backbone" else 0.7
        (runs / "information" / "summary.json").write_text(json.dumps(_summary(-0.012, acc)))
        return 0

    monkeypatch.setattr(bench.subprocess, "call", fake_run)
    argv = ["--train", str(train), "--test", str(test), "--wordnet", str(tmp_path / "dict"), "--runs", str(runs),
            "--out", str(out), "--only", "reference", "init-backbone", "probe-x10", "relation-word"]
    bench.main(argv)
    assert len(calls) == 4
    ref, backbone, probe, word = (c["families"]["information"] for c in calls)
    # the names `reasonscope information train` gives the files, so its trained models are reused
    assert (ref["train"]["name"], ref["test"]["name"]) == ("train-train", "test-test")
    assert (ref["epochs"], ref["probe_epochs"], ref["larev_epochs"]) == (2, 2, 1)
    assert ref["wordnet"] == str((tmp_path / "dict").resolve()) and "larev_init" not in ref
    assert backbone["larev_init"] == "backbone" and probe["lambda_probe"] == 0.05
    # the ablations change the phrase baseline; relation-word swaps in the one-verb baseline alone
    assert ref["nli_relation"] == backbone["nli_relation"] == "phrase" and word["nli_relation"] == "word"
    assert ref["lambda_irm"] == backbone["lambda_irm"] == 25.0  # the thesis's e-SNLI weight, set in the plan
    assert {k: v for k, v in word.items() if k != "nli_relation"} == {k: v for k, v in ref.items()
                                                                      if k != "nli_relation"}
    calls[0]["families"]["information"]["wordnet"] = None  # (no WNDB files here: the plan checks the folder)
    parse_plan(calls[0], "<ablation plan>")  # otherwise a valid plan
    printed = capsys.readouterr().out
    assert "| reference | 0.700 / 0.700 / 0.700 | 0.123 | -0.012 [-0.022, -0.002], p 0.0020 |" in printed
    assert "| init-backbone | 0.500 / 0.500 / 0.500 |" in printed
    # finished ablations are kept: a second call runs nothing and prints the same rows
    bench.main(argv)
    assert len(calls) == 4
    assert "| probe-x10 | 0.700" in capsys.readouterr().out
    assert json.loads((out / "probe-x10.json").read_text())["ablation"]["overrides"] == {"lambda_probe": 0.05}


def test_a_failed_ablation_is_reported_and_not_kept(tmp_path, monkeypatch, capsys, load_benchmark):
    bench = load_benchmark("information_ablations")
    monkeypatch.setattr(bench.subprocess, "call", lambda cmd, stdout, stderr: 2)
    bench.main(["--train", str(tmp_path / "a.csv"), "--test", str(tmp_path / "b.csv"), "--runs", str(tmp_path / "r"),
                "--out", str(tmp_path / "o"), "--only", "irm-off"])
    assert "irm-off: exit 2, see" in capsys.readouterr().out
    assert not (tmp_path / "o" / "irm-off.json").exists()
