"""Crash safety of evaluator training: saves go beside and are renamed into place, a half-written
checkpoint is never loaded, and a kill between the steps of a save resumes from a consistent state."""

from __future__ import annotations

import json

import pytest

import reasonscope.information.training as training
from reasonscope.information.evaluator import load_evaluator
from reasonscope.information.training import TrainSettings, recover, swap_in, train_erm
from reasonscope.information.variants import baseline_input

INPUTS = [baseline_input(f"Ana has {i} apples") for i in range(6)]
TARGETS = [str(i) for i in range(6)]
SETTINGS = TrainSettings(epochs=2, lr=1e-3, batch_size=3)


DEFAULT_CHECKPOINT_MIN_S = training.CHECKPOINT_MIN_S


@pytest.fixture(autouse=True)
def checkpoint_every_epoch(monkeypatch):
    """The crash tests checkpoint after every epoch (their epochs take milliseconds, under CHECKPOINT_MIN_S)."""
    monkeypatch.setattr(training, "CHECKPOINT_MIN_S", 0.0)


def _train(model_dir, folder):
    return train_erm(load_evaluator(str(model_dir)), INPUTS, TARGETS, INPUTS[:2], TARGETS[:2], SETTINGS, folder,
                     label="m")


def test_a_half_written_checkpoint_is_detected_and_not_loaded(tiny_seq2seq, tmp_path):
    folder = tmp_path / "m"
    (folder / "checkpoint").mkdir(parents=True)
    (folder / "checkpoint" / "model.safetensors").write_bytes(b"\x00" * 10)  # torn write, no state.json
    (folder / "state.json").write_text(json.dumps({"epochs_run": 1, "best_val": 0.1, "best_epoch": 1,
                                                   "history": [], "finished": False}))
    with pytest.warns(UserWarning, match="incomplete checkpoint"):
        res = _train(tiny_seq2seq, folder)
    assert res.resumed_from == 0 and [h["epoch"] for h in res.history] == [1, 2]
    assert json.loads((folder / "state.json").read_text())["finished"]
    best = json.loads((folder / "best" / "training.json").read_text())
    assert best == {"epoch": res.best_epoch, "val_loss": res.best_val}


def test_a_kill_during_the_checkpoint_save_leaves_nothing_half_loaded(tiny_seq2seq, tmp_path, monkeypatch):
    folder = tmp_path / "m"
    real = training.swap_in
    calls = []

    def killed_on_checkpoint_swap(tmp, final):
        calls.append(final.name)
        if final.name == "checkpoint":
            raise KeyboardInterrupt  # the new checkpoint is complete in checkpoint.tmp, not yet renamed
        real(tmp, final)

    monkeypatch.setattr(training, "swap_in", killed_on_checkpoint_swap)
    with pytest.raises(KeyboardInterrupt):
        _train(tiny_seq2seq, folder)
    assert calls == ["best", "checkpoint"] and (folder / "checkpoint.tmp").is_dir()
    assert not (folder / "checkpoint").exists() and not (folder / "state.json").exists()
    monkeypatch.setattr(training, "swap_in", real)
    with pytest.warns(UserWarning, match="interrupted save, deleted unread"):
        res = _train(tiny_seq2seq, folder)
    assert res.resumed_from == 0 and not (folder / "checkpoint.tmp").exists()
    assert [h["epoch"] for h in res.history] == [1, 2]


def test_a_kill_before_the_progress_file_resumes_from_the_checkpoint(tiny_seq2seq, tmp_path, monkeypatch):
    folder = tmp_path / "m"
    real = training.write_json_atomic

    def killed(path, data):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "write_json_atomic", killed)
    with pytest.raises(KeyboardInterrupt):
        _train(tiny_seq2seq, folder)
    assert not (folder / "state.json").exists()
    assert json.loads((folder / "checkpoint" / "state.json").read_text())["epochs_run"] == 1
    monkeypatch.setattr(training, "write_json_atomic", real)
    res = _train(tiny_seq2seq, folder)
    assert res.resumed_from == 1 and [h["epoch"] for h in res.history] == [1, 2]
    assert not (folder / "checkpoint").exists()  # finished: the checkpoint goes, best stays


def test_swap_and_recover(tmp_path):
    final, tmp = tmp_path / "best", tmp_path / "best.tmp"
    final.mkdir()
    (final / "w").write_text("old")
    tmp.mkdir()
    (tmp / "w").write_text("new")
    swap_in(tmp, final)
    assert (final / "w").read_text() == "new" and not tmp.exists() and not (tmp_path / "best.old").exists()
    final.rename(tmp_path / "best.old")  # killed between the two renames of a swap
    assert recover(final) == [f"{final}: restored from best.old (a swap was interrupted)"]
    assert (final / "w").read_text() == "new"
    assert recover(final) == []


def test_the_last_epoch_writes_no_checkpoint_and_a_kill_before_finishing_retrains_it(tiny_seq2seq, tmp_path,
                                                                                     monkeypatch):
    from accelerate import Accelerator

    saves = []
    real_save = Accelerator.save_state

    def counted(self, output_dir=None, **kw):
        saves.append(output_dir)
        return real_save(self, output_dir, **kw)

    monkeypatch.setattr(Accelerator, "save_state", counted)
    whole = _train(tiny_seq2seq, tmp_path / "whole")
    assert len(saves) == SETTINGS.epochs - 1  # epoch 1 only: nothing resumes after the last epoch
    assert not (tmp_path / "whole" / "checkpoint").exists()
    assert json.loads((tmp_path / "whole" / "state.json").read_text())["finished"]

    folder = tmp_path / "m"
    real = training.write_json_atomic

    def killed_when_finishing(path, data):
        if data.get("finished"):
            raise KeyboardInterrupt  # best of the last epoch is in place, state.json still says epoch 1
        real(path, data)

    monkeypatch.setattr(training, "write_json_atomic", killed_when_finishing)
    with pytest.raises(KeyboardInterrupt):
        _train(tiny_seq2seq, folder)
    assert json.loads((folder / "state.json").read_text())["epochs_run"] == 1
    assert json.loads((folder / "checkpoint" / "state.json").read_text())["epochs_run"] == 1
    monkeypatch.setattr(training, "write_json_atomic", real)
    res = _train(tiny_seq2seq, folder)
    assert res.resumed_from == 1 and [h["epoch"] for h in res.history] == [1, 2]
    assert [h["val_loss"] for h in res.history] == pytest.approx([h["val_loss"] for h in whole.history], abs=1e-6)
    assert (res.best_epoch, res.best_val) == (whole.best_epoch, pytest.approx(whole.best_val, abs=1e-6))
    assert not (folder / "checkpoint").exists() and json.loads((folder / "state.json").read_text())["finished"]


def _mapped_files(params) -> set[str]:
    """The files whose memory map holds any of ``params``' data ('' for anonymous memory)."""
    maps = []
    for line in open("/proc/self/maps"):
        parts = line.split()
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        maps.append((lo, hi, parts[5] if len(parts) > 5 and parts[5].startswith("/") else ""))
    return {next((name for lo, hi, name in maps if lo <= p.data_ptr() < hi), "") for p in params}


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/maps"), reason="reads /proc/self/maps (Linux)")
def test_own_memory_copies_weights_out_of_the_file_map_with_the_same_values(tiny_seq2seq):
    import torch

    ev = load_evaluator(str(tiny_seq2seq))
    params = [p for p in ev.model.parameters() if p.requires_grad]
    assert any(f.endswith(".safetensors") for f in _mapped_files(params))  # loaded as views of the file's map
    before = [p.detach().clone() for p in params]
    ids = [id(p) for p in params]
    shared = torch.nn.Parameter(params[0].data[:1])  # a view: shares its storage with params[0]
    training.own_memory(params + [shared])
    assert [id(p) for p in params] == ids  # the same parameter objects (modules and optimizers still hold them)
    assert all(torch.equal(a, b) for a, b in zip(before, params, strict=True))
    assert not any(f.endswith(".safetensors") for f in _mapped_files(params[1:]))
    assert params[0].untyped_storage().data_ptr() == shared.untyped_storage().data_ptr()  # the tie is kept


def test_epochs_shorter_than_the_checkpoint_interval_write_no_checkpoint(tiny_seq2seq, tmp_path, monkeypatch):
    """Epochs of milliseconds (under CHECKPOINT_MIN_S): no checkpoint, state.json only once finished; a kill in the
    last epoch trains the model again from the start, to the same validation losses."""
    from accelerate import Accelerator

    assert DEFAULT_CHECKPOINT_MIN_S == 60.0
    monkeypatch.setattr(training, "CHECKPOINT_MIN_S", DEFAULT_CHECKPOINT_MIN_S)
    saves, progress = [], []
    real_save, real_progress = Accelerator.save_state, training.write_json_atomic
    monkeypatch.setattr(Accelerator, "save_state", lambda self, d=None, **kw: saves.append(d) or real_save(self, d, **kw))
    monkeypatch.setattr(training, "write_json_atomic", lambda path, data: progress.append(data) or real_progress(path, data))
    whole = _train(tiny_seq2seq, tmp_path / "whole")
    assert saves == [] and [d["epochs_run"] for d in progress] == [2] and progress[0]["finished"]

    def killed_when_finishing(path, data):
        raise KeyboardInterrupt  # best is in place, nothing else

    folder = tmp_path / "m"
    monkeypatch.setattr(training, "write_json_atomic", killed_when_finishing)
    with pytest.raises(KeyboardInterrupt):
        _train(tiny_seq2seq, folder)
    assert not (folder / "state.json").exists() and not (folder / "checkpoint").exists()
    assert (folder / "best" / "training.json").is_file()
    monkeypatch.setattr(training, "write_json_atomic", real_progress)
    res = _train(tiny_seq2seq, folder)
    assert res.resumed_from == 0 and [h["epoch"] for h in res.history] == [1, 2]
    assert [h["val_loss"] for h in res.history] == pytest.approx([h["val_loss"] for h in whole.history], abs=1e-6)
    assert (res.best_epoch, res.best_val) == (whole.best_epoch, pytest.approx(whole.best_val, abs=1e-6))
    # the interval is counted over epochs: with it under one epoch's time, every epoch but the last is saved
    monkeypatch.setattr(training, "CHECKPOINT_MIN_S", 1e-9)
    saves.clear()
    _train(tiny_seq2seq, tmp_path / "every")
    assert len(saves) == SETTINGS.epochs - 1
