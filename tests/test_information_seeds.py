"""The wiring of benchmarks/information_seeds.py and the checks it reports: the plan of each (seed, weight, split),
a finished row kept, the weight chosen on the validation split only, premise-clustered separations and the
warning for an evaluator that reads b."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from reasonscope.information.tables import reads_baseline_warning, separations
from reasonscope.plan import parse_plan
from reasonscope.shared_settings import StatsConfig


def _info(acc_gold: float, acc_vacuous: float, total: float) -> dict:
    e = {"value": total / 3, "low": total / 3 - 0.01, "high": total / 3 + 0.01, "n": 101, "p_value": 0.01}
    return {"accuracy": {"larev": {"gold": acc_gold, "leaky": acc_gold, "gold_leaky": acc_gold,
                                   "vacuous": acc_vacuous}},
            "separation": {"larev": {"gold-leaky": e, "gold-gold_leaky": e, "gold-vacuous": e,
                                     "SUM": {**e, "value": total}}},
            "training": {"phi_la": {"best_val_loss": 0.5}}, "n_test": 300, "n_clusters": 101,
            "clustered_by": "premise"}


def test_seed_plans_resume_and_the_choice_on_validation(tmp_path, monkeypatch, capsys, load_benchmark):
    bench = load_benchmark("information_seeds")
    split, runs, out = tmp_path / "split", tmp_path / "runs", tmp_path / "out"
    calls: list[dict] = []
    # validation: weight 5 reads b (0.80 / 0.79), 10 reads r with SUM 0.30, 25 reads r with SUM 0.20
    fake = {5.0: _info(0.80, 0.79, 0.9), 10.0: _info(0.75, 0.45, 0.3), 25.0: _info(0.70, 0.40, 0.2)}

    def fake_run(cmd, stdout, stderr, env):  # `reasonscope run PLAN`: writes the run's summary.json
        plan = yaml.safe_load(Path(cmd[-1]).read_text())
        calls.append(plan)
        assert env["OMP_NUM_THREADS"] == "1"
        folder = Path(plan["experiment"]["output_dir"]) / plan["experiment"]["name"]
        folder.mkdir(parents=True, exist_ok=True)
        info = fake[plan["families"]["information"]["lambda_irm"]]
        (folder / "summary.json").write_text(json.dumps({"information": info}))
        return 0

    monkeypatch.setattr(bench.subprocess, "call", fake_run)
    argv = ["--split", str(split), "--seeds", "0", "1", "--weights", "5", "10", "25", "--runs", str(runs),
            "--out", str(out)]
    bench.main(argv)
    assert len(calls) == 12  # 2 seeds x 3 weights x (validation, test)
    first = calls[0]
    info = first["families"]["information"]
    assert first["experiment"] == {"name": "seed-0", "output_dir": str(runs.resolve()), "seed": 0}
    assert info["train"]["path"] == str((split / "train.csv").resolve())
    assert info["test"]["path"] == str((split / "validation.csv").resolve())
    assert calls[1]["families"]["information"]["test"]["path"] == str((split / "test.csv").resolve())
    # the thesis's setting: Phi_LA from the backbone, any word as leakage term, one-verb baseline
    assert (info["larev_init"], info["leak_terms"], info["nli_relation"], info["lambda_irm"]) == (
        "backbone", "any", "word", 5.0)
    assert calls[6]["experiment"]["seed"] == 1 and calls[6]["experiment"]["name"] == "seed-1"
    parse_plan(first, "<seed plan>")  # a valid plan
    printed = capsys.readouterr().out
    assert "| 0 | 10 | validation | 0.750 / 0.750 / 0.750 / 0.450 | 0.500 | +0.100 [+0.090, +0.110] |" in printed
    assert "| 0 | 5 | test | 0.800 / 0.800 / 0.800 / 0.790 |" in printed and "| no |" in printed
    assert "seed 0: chosen on validation: lambda_IRM 10 (largest validation SUM (+0.300)" in printed
    assert "pairs 300 in 101 premises" in printed
    bench.main(argv)  # finished rows are kept: nothing runs again
    assert len(calls) == 12
    assert bench.choose({5.0: fake[5.0]}) == (None, "no weight gives a Phi_LA that reads r on the validation pairs")


def test_separations_clustered_by_premise_against_hand_values():
    per_item = {"gold": {"a": 1.0, "b": 3.0, "c": 2.0}, "leaky": {"a": 0.0, "b": 1.0, "c": 2.0},
                "gold_leaky": {"a": 1.0, "b": 3.0, "c": 2.0}, "vacuous": {"a": 1.0, "b": 3.0, "c": 2.0}}
    stats = StatsConfig(n_resamples=200, n_permutations=99)
    plain = separations(per_item, stats, 0)
    assert plain["gold-leaky"]["value"] == pytest.approx(1.0) and plain["gold-leaky"]["n"] == 3
    # differences a 1, b 2, c 0; premises P = {a, b} (mean 1.5), Q = {c} (0): mean over premises 0.75
    clustered = separations(per_item, stats, 0, {"a": "P", "b": "P", "c": "Q"})
    assert clustered["gold-leaky"]["value"] == pytest.approx(0.75)
    assert (clustered["gold-leaky"]["n"], clustered["gold-leaky"]["n_items"]) == (2, 3)
    assert clustered["SUM"]["value"] == pytest.approx(0.75) and clustered["SUM"]["n"] == 2


def test_the_reads_b_warning():
    assert reads_baseline_warning("larev", {"gold": 0.80, "vacuous": 0.50}, 300) is None
    why = reads_baseline_warning("larev", {"gold": 0.963, "vacuous": 0.990}, 300)
    assert why.startswith("LAREV: Phi_LA reads b, not r: it is right for 96.3% of 300 test items with the Gold "
                          "rationale and 99.0% with the Vacuous one")
    assert reads_baseline_warning("rev", {"gold": 0.80, "vacuous": 0.76}, 10).startswith("REV: Phi reads b")
    assert reads_baseline_warning("larev", {"gold": 0.80}, 300) is None


def test_the_mechanism_settings_reach_the_plan_and_the_row_shows_every_epoch(tmp_path, monkeypatch, capsys,
                                                                             load_benchmark):
    """``--weights 0 --lambda-probe 0 --larev-epochs 3``: plain ERM for Phi_LA from the backbone; the row prints
    Phi_LA's validation loss after each epoch; without ``--lambda-probe`` the plan leaves the dataset default."""
    bench = load_benchmark("information_seeds")
    plans: list[dict] = []

    def fake_run(cmd, stdout, stderr, env):
        plan = yaml.safe_load(Path(cmd[-1]).read_text())
        plans.append(plan)
        folder = Path(plan["experiment"]["output_dir"]) / plan["experiment"]["name"]
        folder.mkdir(parents=True, exist_ok=True)
        info = _info(0.9, 0.6, 0.3)
        info["training"]["phi_la"] = {"best_val_loss": 0.71, "history": [
            {"epoch": 1, "val_loss": 0.93}, {"epoch": 2, "val_loss": 0.71}, {"epoch": 3, "val_loss": 0.75}]}
        (folder / "summary.json").write_text(json.dumps({"information": info}))
        return 0

    monkeypatch.setattr(bench.subprocess, "call", fake_run)
    common = ["--split", str(tmp_path / "split"), "--runs", str(tmp_path / "runs"), "--splits", "validation",
              "--weights", "0", "--larev-epochs", "3"]
    bench.main([*common, "--lambda-probe", "0", "--out", str(tmp_path / "probe0")])
    info = plans[0]["families"]["information"]
    assert (info["lambda_irm"], info["lambda_probe"], info["larev_epochs"], info["larev_init"]) == (0.0, 0.0, 3, "backbone")
    parse_plan(plans[0], "<seed plan>")
    assert "| 0 | 0 | validation | 0.900 / 0.900 / 0.900 / 0.600 | 0.710 (epochs 0.93, 0.71, 0.75) |" in \
        capsys.readouterr().out
    bench.main([*common, "--out", str(tmp_path / "default")])
    assert "lambda_probe" not in plans[1]["families"]["information"]
