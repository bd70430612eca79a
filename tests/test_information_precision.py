"""The evaluators' training precision: ``mixed_precision: auto`` resolves by the hardware's native bfloat16, the
resolved precision is what the models' fingerprints hold, and a model trained under bf16 autocast leaves training
computing in float32 (as the same model loaded from its folder does)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reasonscope.information.evaluator import load_evaluator
from reasonscope.information.scoring import model_folders
from reasonscope.information.settings import InformationConfig
from reasonscope.information.training import (
    TrainSettings,
    cpu_has_native_bf16,
    resolve_mixed_precision,
    train_erm,
)
from reasonscope.information.variants import baseline_input
from reasonscope.plan import DatasetConfig
from reasonscope.types import Item


def _cpu(monkeypatch, avx512_bf16: bool, amx: bool, cuda: bool = False, cuda_bf16: bool = False) -> None:
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: cuda_bf16)


@pytest.mark.parametrize(("avx512_bf16", "amx", "expected"), [(True, False, "bf16"), (False, True, "bf16"),
                                                             (True, True, "bf16"), (False, False, "no")])
def test_auto_is_bf16_only_on_a_cpu_with_native_bfloat16(monkeypatch, avx512_bf16, amx, expected):
    _cpu(monkeypatch, avx512_bf16, amx)
    assert cpu_has_native_bf16() is (expected == "bf16")
    assert resolve_mixed_precision("auto") == expected


def test_auto_on_a_gpu_follows_the_gpu_and_not_the_cpu(monkeypatch):
    _cpu(monkeypatch, avx512_bf16=False, amx=False, cuda=True, cuda_bf16=True)
    assert resolve_mixed_precision("auto") == "bf16"
    _cpu(monkeypatch, avx512_bf16=True, amx=True, cuda=True, cuda_bf16=False)
    assert resolve_mixed_precision("auto") == "no"


def test_an_explicit_setting_is_kept_whatever_the_cpu(monkeypatch):
    _cpu(monkeypatch, avx512_bf16=False, amx=False)
    assert [resolve_mixed_precision(s) for s in ("no", "fp16", "bf16")] == ["no", "fp16", "bf16"]
    _cpu(monkeypatch, avx512_bf16=True, amx=True)
    assert resolve_mixed_precision("no") == "no"


def test_a_torch_without_the_cpuinfo_probes_has_no_native_bf16(monkeypatch):
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported", raising=False)
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported", raising=False)
    assert cpu_has_native_bf16() is False


def test_auto_shares_the_models_of_the_precision_it_resolves_to(monkeypatch):
    data = DatasetConfig(name="d", format="jsonl", path="d.jsonl")
    tr = [Item(id=f"t{i}", input="q", target="yes", rationale=f"r{i}") for i in range(3)]
    va = [Item(id="v", input="q", target="no", rationale="r")]
    baselines = {i.id: "b" for i in tr + va}

    def folders(precision: str) -> dict:
        cfg = InformationConfig(train=data, mixed_precision=precision)
        return model_folders(Path("root"), cfg, tr, va, baselines, seed=0)

    no, bf16 = folders("no"), folders("bf16")
    assert set(no) == {"phi_base", "phi", "probe", "phi_la"}
    assert all(no[k] != bf16[k] for k in no)  # the precision is in every model's fingerprint
    # run_information fingerprints the precision "auto" resolves to, never "auto" itself
    _cpu(monkeypatch, avx512_bf16=True, amx=False)
    assert folders(resolve_mixed_precision("auto")) == bf16
    _cpu(monkeypatch, avx512_bf16=False, amx=False)
    assert folders(resolve_mixed_precision("auto")) == no
    # float32 (the default) keeps the folders of the models trained before bf16 entered (values of that code)
    assert {k: v.name for k, v in no.items()} == {"phi_base": "phi_base-43c801dcf6", "phi": "phi-272c5529d6",
                                                  "probe": "probe-c83a723a46", "phi_la": "phi_la-505287aec1"}
    assert bf16["phi"].name == "phi-3839c43359" and bf16["phi_la"].name != "phi_la-6a089139f5"  # Phi_LA: float32


def test_a_bf16_trained_model_leaves_training_in_float32(tiny_seq2seq, tmp_path):
    inputs = [baseline_input(f"Ana has {i} apples") for i in range(6)]
    targets = [str(i) for i in range(6)]
    # a float32 training first: Accelerate's one state per process must let the bf16 one follow
    train_erm(load_evaluator(str(tiny_seq2seq)), inputs, targets, inputs[:2], targets[:2],
              TrainSettings(epochs=1, lr=1e-3, batch_size=3), tmp_path / "f32", label="f32")
    ev = load_evaluator(str(tiny_seq2seq))
    train_erm(ev, inputs, targets, inputs[:2], targets[:2], TrainSettings(epochs=1, lr=1e-3, batch_size=3,
                                                                          mixed_precision="bf16"),
              tmp_path / "m", label="m")
    from accelerate.state import AcceleratorState

    assert AcceleratorState().mixed_precision == "bf16"
    assert not hasattr(ev.model, "_original_forward")  # Accelerate's autocast wrapper removed
    trained = ev.log_likelihood(inputs[:3], targets[:3])
    loaded = load_evaluator(str(tmp_path / "m" / "best")).log_likelihood(inputs[:3], targets[:3])
    assert trained == pytest.approx(loaded, abs=1e-6)  # the same float32 numbers as the model read back


def test_a_distributed_launch_keeps_its_precision_and_a_single_process_switches(monkeypatch):
    from accelerate.state import AcceleratorState
    from accelerate.utils import DistributedType

    from reasonscope.information.training import _state_precision

    monkeypatch.setattr(AcceleratorState, "_shared_state", {"distributed_type": DistributedType.MULTI_CPU,
                                                             "_mixed_precision": "bf16"})
    with pytest.warns(UserWarning, match="Phi_LA: trains in the launch's mixed precision 'bf16', not 'no'"):
        assert _state_precision("no", "Phi_LA") == "bf16"
    assert AcceleratorState._shared_state["_mixed_precision"] == "bf16"  # the launch's state is kept
    monkeypatch.setattr(AcceleratorState, "_shared_state", {"distributed_type": DistributedType.NO,
                                                             "_mixed_precision": "bf16"})
    assert _state_precision("no", "Phi_LA") == "no" and AcceleratorState._shared_state == {}  # cleared
    assert _state_precision("bf16", "Phi") == "bf16"  # no state yet: the model's own precision


@pytest.mark.slow
def test_phi_la_trains_in_float32_when_the_other_models_train_in_bf16(tiny_seq2seq, tmp_path, monkeypatch):
    """``mixed_precision: auto`` on a CPU with native bfloat16: Phi_base, Phi and the probe train in bf16, Phi_LA
    in float32 (LAREV_PRECISION) and its fingerprint says so; the run records both the setting and what it became."""
    import json

    from typer.testing import CliRunner

    import reasonscope.cli.information as cli_information
    import reasonscope.information.training as training
    from reasonscope.cli import app
    from reasonscope.information.training import LAREV_PRECISION

    _cpu(monkeypatch, avx512_bf16=True, amx=False)
    asked = []
    real_state_precision = training._state_precision
    monkeypatch.setattr(training, "_state_precision",
                        lambda precision, label: asked.append((label, precision)) or real_state_precision(precision,
                                                                                                          label))
    real_plan = cli_information.run_command_line_plan

    def with_auto(plan, **kwargs):
        info = {**plan["families"]["information"], "mixed_precision": "auto"}
        return real_plan({**plan, "families": {"information": info}}, **kwargs)

    monkeypatch.setattr(cli_information, "run_command_line_plan", with_auto)
    res = CliRunner().invoke(app, ["information", "train", "--train", "synthetic", "--size", "2", "--evaluator",
                                   str(tiny_seq2seq), "--epochs", "1", "--probe-epochs", "1", "--larev-epochs", "1",
                                   "--output-dir", str(tmp_path), "--name", "info"])
    assert res.exit_code == 0, res.output
    assert LAREV_PRECISION == "no"
    assert asked == [("Phi_base (b -> y)", "bf16"), ("Phi (r + b -> y)", "bf16"), ("probe psi", "bf16"),
                     ("Phi_LA", "no")]
    t = json.loads((tmp_path / "info" / "summary.json").read_text())["information"]
    assert (t["settings"]["mixed_precision"], t["settings"]["mixed_precision_setting"]) == ("bf16", "auto")
