"""Training the evaluators of REV and LAREV on Hugging Face Accelerate (LAREV thesis, Li 2026).

One loop (:func:`train_loop`) serves every model: AdamW at a fixed learning rate, mini-batches in a
seeded order per epoch, the validation loss after each epoch, and **model selection on it** (the
best epoch's weights are saved as safetensors with their config and tokenizer in ``OUT/best``, with
``best/training.json`` naming its epoch and validation loss). After an epoch that is not the last, once the
epochs since the last checkpoint took :data:`CHECKPOINT_MIN_S` (60 s), the Accelerate state (weights, optimizer,
RNG) and the progress (``state.json``) go to ``OUT/checkpoint``, and the progress is copied to ``OUT/state.json``:
a killed run continues from the last checkpoint (shorter epochs are trained again, the same way), and a finished
one is loaded instead of trained. After the last epoch only ``best`` and ``OUT/state.json`` (``finished``) are
written, and the previous checkpoint is deleted: nothing resumes from a finished model, and a kill before
``state.json`` names it finished trains again from that checkpoint (or from the start when there is none). Before
the first optimizer step the trainable parameters are copied out of the weights file's memory map
(:func:`own_memory`). Mixed precision and multi-GPU / multi-node come from Accelerate
(``mixed_precision`` setting; ``accelerate launch`` for several processes, each taking its share of
every batch list). Mixed precision covers the training steps and the validation loss of each epoch (Accelerate's
``torch.autocast``); the trained model leaves :func:`train_loop` without it, so integrated gradients and scoring
compute in float32 whatever the setting (and a model loaded from its finished folder computes the same).
``auto`` resolves to ``bf16`` on hardware with native bfloat16 (:func:`resolve_mixed_precision`). Phi_LA trains
in float32 whatever the setting (:data:`LAREV_PRECISION`).

Crash safety: nothing is overwritten in place. ``best`` and ``checkpoint`` are written to
``<name>.tmp`` and swapped in by renames (the old folder moves to ``<name>.old`` and is deleted
after), ``state.json`` is written to a temporary file and renamed over the old one. A kill at any
point leaves either the old or the new folder whole: a leftover ``.tmp`` is deleted unread, a lone
``.old`` is moved back. Only the checkpoint's own ``state.json`` says which epoch its weights belong
to, so a checkpoint without one (half-written by an older version, or damaged) is never loaded: the
run warns and starts that model afresh.

The models (defaults from the LAREV thesis: lr 3e-5; 8 epochs for Phi_base, Phi and the probe,
2 for Phi_LA; batch 8, probe batch 16, Phi_LA batch = one example's three environments):

* Phi_base: ERM on b -> y.      Phi: ERM on r + b -> y (gold rationales).
* probe psi: a copy of the trained Phi; encoder frozen (``requires_grad = False`` on every encoder
  parameter), the rest trained on the leakage-masked baseline b~ -> y.
* Phi_LA: from the trained Phi (``larev_init: phi``, the default and this project's departure) or from
  the pretrained backbone (``larev_init: backbone``, the thesis's setting; see :func:`train_larev`), loss
  per example
  L = ERM + lambda_IRM(t) * IRM - lambda_probe(t) * L_probe, where
  ERM = mean over the three environments of CE(y | r + b_e), IRM = the IRMv1 penalty
  (:func:`irm_penalty`) summed over the environments (the thesis's Eq. 4.6 and 4.10; its Eq. 4.7
  averages them, which makes our lambda_IRM three times its lambda_IRM there), L_probe = CE of the frozen probe's decoder on Phi_LA's encoding of b~
  (gradients reach Phi_LA's encoder, never psi), and lambda(t) = lambda * min(1, t / (T / 3)) for step
  t of T (linear warm-up over the first third). Weights by dataset (:mod:`reasonscope.information.defaults`):
  ECQA 5 / 5e-4, e-SNLI 25 / 0.005.
  Model selection on the ERM validation loss of r + b.
  One step is one forward pass (:func:`larev_loss`: the three environments and b~ encoded as one
  batch, the environments decoded as one batch with one dummy IRM scale per row,
  :func:`irm_penalty_rows`): the same loss as one pass per term, a step 1.8x faster on CPU (2.6x with
  the fused optimizer; ``benchmarks/information_training.py``).

Every model's optimizer is AdamW with torch's fused kernel on CPU and CUDA (:func:`adamw`).
"""

from __future__ import annotations

import copy
import json
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .evaluator import Evaluator, load_evaluator


@dataclass
class TrainSettings:
    """Settings of one training run of an evaluator (epochs, learning rate, batch size, seed, precision)."""

    epochs: int = 8
    lr: float = 3e-5
    batch_size: int = 8
    seed: int = 0
    mixed_precision: str = "no"


@dataclass
class TrainResult:
    """The outcome of :func:`train_loop`.

    ``folder`` holds the best checkpoint (epoch ``best_epoch``, validation loss ``best_val``); ``history``
    has one entry per epoch; ``resumed_from`` is the epoch training resumed after (0 for a fresh run).
    """

    folder: Path
    epochs_run: int
    best_epoch: int
    best_val: float
    history: list[dict] = field(default_factory=list)
    resumed_from: int = 0
    examples_per_s: float | None = None


CHECKPOINT_MIN_S = 60.0
"""Seconds of training after which an epoch's checkpoint is written (:func:`train_loop`).

After an epoch that is not the last, the checkpoint (weights, optimizer, RNG) and ``state.json`` are written once the
epochs since the last checkpoint (or since the training began or resumed) took at least this long, training and
validation counted; epochs that took less are cheaper to train again after a kill than to save after each: the
embedded MiniLM encoder-decoder's checkpoint is about 0.6 GB and took 1.8 s to write on 2 cores, longer than the
demo's epochs of 18 examples. A kill then resumes from the last checkpoint written (the RNG state restored, so the
epochs trained again are the same), or trains the model afresh when none was."""

LAREV_PRECISION = "no"
"""Phi_LA trains in float32 whatever ``mixed_precision`` says (it applies to Phi_base, Phi and the probe): bf16
made its one-example steps only 1.06x faster, and trained under bfloat16 autocast it moved further from the
float32 Phi_LA (per-item LAREV scores correlated 0.15-0.35) than in float32 from a bf16 Phi (0.38-0.60); neither
keeps LAREV's numbers, while REV's models keep theirs (docs/performance.md, "bf16 on the AVX-512 host")."""


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively: AVX512_BF16 or AMX tiles, as torch's cpuinfo reports them.

    Without them torch emulates a bfloat16 product: 0.9 GFLOP/s against 121 for float32 on an AVX2 host, where
    with AVX512_BF16 it runs about 2.1x faster than float32 (docs/performance.md).
    """
    import torch

    cpu = getattr(torch, "cpu", None)
    return any(bool(getattr(cpu, name, lambda: False)()) for name in ("_is_avx512_bf16_supported",
                                                                        "_is_amx_tile_supported"))


def resolve_mixed_precision(setting: str) -> str:
    """The precision the evaluators train in for the ``mixed_precision`` setting.

    The setting itself, or for ``auto`` ``bf16`` where the hardware computes bfloat16 natively (a CUDA GPU that
    supports it; without one a CPU with AVX512_BF16 or AMX, :func:`cpu_has_native_bf16`) and ``no`` (float32)
    elsewhere.

    A run's resolved precision is what its models' fingerprints and its recorded settings hold, so ``auto`` and the
    precision it resolves to share trained models, and one host's bf16 models are never read as float32 ones.
    """
    if setting != "auto":
        return setting
    import torch

    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "no"
    return "bf16" if cpu_has_native_bf16() else "no"


def irm_penalty(env_losses: list[Callable[[Any], Any]]):
    """IRMv1 (invariant risk minimisation, Arjovsky et al. 2019), one environment at a time.

    penalty = sum_e (d L_e(w * logits_e) / d w at w = 1)^2 >= 0, 0 when no environment's loss can be
    lowered by rescaling its logits. Each callable takes the scalar dummy classifier w and returns that
    environment's loss; returns (penalty, [L_e at w = 1]), differentiable w.r.t. the model
    (``create_graph``). :func:`irm_penalty_rows` computes the same from one batch whose rows are the
    environments (what Phi_LA's training uses).
    """
    import torch

    penalty, losses = 0.0, []
    for fn in env_losses:
        w = torch.tensor(1.0, requires_grad=True)
        loss = fn(w)
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        penalty = penalty + g.pow(2)
        losses.append(loss)
    return penalty, losses


def irm_penalty_rows(logits, labels):
    """IRMv1 penalty for environments that are the rows of one batch, from one forward pass.

    The value of :func:`irm_penalty` with L_e = the mean cross-entropy of row e's label tokens, from one
    forward instead of one per environment.

    w is a vector of one dummy scale per row (all 1, ``requires_grad``); row e's logits are multiplied by
    w_e and L_e is that row's own mean over its scored tokens (:func:`~reasonscope.information.evaluator.
    nll_from_logits` with ``per_row``). L_e depends on w_e alone, so the gradient of sum_e L_e w.r.t. the
    vector w has the components d L_e / d w_e: one ``autograd.grad`` gives every environment's term.
    penalty = sum_e (d L_e / d w_e at w = 1)^2. Equal to the per-environment computation up to float
    rounding (tested on hand-built inputs and on a tiny seq2seq model, padded rows included).

    Parameters: ``logits`` [n_env, T, V] and ``labels`` [n_env, T] (-100 = not scored), as
    :meth:`~reasonscope.information.evaluator.Evaluator.logits` aligns them.
    Returns (penalty, L) with L of shape [n_env] (L_e at w = 1), both differentiable w.r.t. the model.
    """
    import torch

    from .evaluator import nll_from_logits

    w = torch.ones(labels.shape[0], device=logits.device, requires_grad=True)
    losses = nll_from_logits(logits, labels, w, per_row=True)
    (g,) = torch.autograd.grad(losses.sum(), w, create_graph=True)
    return g.pow(2).sum(), losses


def warmup(value: float, step: int, total: int) -> float:
    """lambda(t) = value * min(1, t / (total / 3))."""
    ramp = max(1.0, total / 3.0)
    return value * min(1.0, step / ramp)


def _state(folder: Path) -> dict:
    p = folder / "state.json"
    try:
        return json.loads(p.read_text()) if p.is_file() else {}
    except (OSError, ValueError):
        return {}


def write_json_atomic(path: Path, data: dict) -> None:
    """Write JSON beside ``path`` and rename it into place (never a half-written file)."""
    import os

    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def swap_in(tmp: Path, final: Path) -> None:
    """Replace the folder ``final`` by the complete folder ``tmp`` with renames only."""
    import shutil

    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def recover(final: Path) -> list[str]:
    """Undo what a kill during :func:`swap_in` or a save can leave.

    Delete ``<final>.tmp`` (incomplete), move a lone ``<final>.old`` back. Returns notes on what was found.
    """
    import shutil

    notes = []
    tmp, old = final.with_name(final.name + ".tmp"), final.with_name(final.name + ".old")
    if tmp.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        notes.append(f"{tmp}: an interrupted save, deleted unread")
    if old.exists():
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.rename(final)
            notes.append(f"{final}: restored from {old.name} (a swap was interrupted)")
    return notes


def resume_point(folder: Path) -> tuple[dict, list[str]]:
    """The progress of the last whole checkpoint and notes on anything that cannot be trusted.

    The progress is ``checkpoint/state.json`` ({} when there is none); the notes name anything found that
    cannot be trusted (a checkpoint without its own progress file is not loaded).
    """
    import shutil

    notes = recover(folder / "checkpoint") + recover(folder / "best")
    ckpt = folder / "checkpoint"
    if not ckpt.is_dir():
        if _state(folder).get("epochs_run") and not _state(folder).get("finished"):
            notes.append(f"{folder}/state.json reports {_state(folder)['epochs_run']} epochs but there is no "
                         "checkpoint: training starts afresh")
        return {}, notes
    state = _state(ckpt)
    if not state.get("epochs_run"):
        shutil.rmtree(ckpt, ignore_errors=True)
        notes.append(f"{ckpt}: incomplete checkpoint (no state.json naming its epoch), not loaded; training "
                     "starts afresh")
        return {}, notes
    best = folder / "best" / "training.json"
    if best.is_file():  # the best folder describes its own weights (it may be one epoch ahead of the checkpoint)
        meta = json.loads(best.read_text())
        state = {**state, "best_val": meta["val_loss"], "best_epoch": meta["epoch"]}
    return state, notes


def train_loop(evaluator: Evaluator, batches: Callable[[int], list[Any]], loss_fn: Callable[[Any, Any, int, int], Any],
               val_fn: Callable[[], float], settings: TrainSettings, folder: str | Path, *,
               params: list | None = None, label: str = "train", console=None, n_examples: int = 0) -> TrainResult:
    """Train ``evaluator.model`` in place.

    ``batches(epoch)`` gives the epoch's batches (already shuffled),
    ``loss_fn(model, batch, step, total_steps)`` the loss of one batch, ``val_fn()`` the validation loss.
    """
    import logging
    import time

    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    logging.getLogger("accelerate").setLevel(logging.ERROR)  # "removed shared tensor" notes on every save
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    early = recover(folder / "best")
    done = _state(folder)
    if done.get("finished") and (folder / "best" / "evaluator.json").is_file():
        _load_best(evaluator, folder)
        return TrainResult(folder, done["epochs_run"], done["best_epoch"], done["best_val"], done["history"],
                           resumed_from=done["epochs_run"], examples_per_s=done.get("examples_per_s"))
    state, notes = resume_point(folder)
    for note in early + notes:
        warnings.warn(note, stacklevel=2)
        if console is not None:
            from rich.markup import escape

            console.print(f"[yellow]{escape(label)}:[/yellow] {escape(note)}")
    set_seed(settings.seed)
    precision = _state_precision(resolve_mixed_precision(settings.mixed_precision), label)
    accelerator = Accelerator(mixed_precision=precision, cpu=not torch.cuda.is_available())
    trainable = params if params is not None else [p for p in evaluator.model.parameters() if p.requires_grad]
    own_memory(trainable)
    optimizer = adamw(trainable, settings.lr)
    model, optimizer = accelerator.prepare(evaluator.model, optimizer)
    evaluator.model = model
    start_epoch = int(state.get("epochs_run", 0))
    if start_epoch:
        accelerator.load_state(str(folder / "checkpoint"))
    history = list(state.get("history", []))
    best_val = state.get("best_val", float("inf"))
    best_epoch = state.get("best_epoch", 0)
    first = batches(start_epoch)  # built once: it also gives the number of batches per epoch
    per_epoch = len(shard(first, 0, accelerator.num_processes))  # optimizer steps per epoch (each process)
    total = per_epoch * settings.epochs
    seen, elapsed = 0, 0.0
    unsaved = 0.0  # seconds of training (and validation) since the last checkpoint, or since this call began
    progress = None
    if console is not None:
        from ..execution.calls import make_progress

        progress = make_progress(console)
        progress.start()
        task = progress.add_task(label, total=total, completed=start_epoch * per_epoch)
    try:
        for epoch in range(start_epoch, settings.epochs):
            model.train()
            t0 = time.perf_counter()
            train_loss = 0.0
            epoch_batches = first if epoch == start_epoch else batches(epoch)
            mine = shard(epoch_batches, accelerator.process_index, accelerator.num_processes)
            for i, batch in enumerate(mine):
                step = epoch * per_epoch + i
                with accelerator.autocast():
                    loss = loss_fn(model, batch, step, total)
                optimizer.zero_grad()
                accelerator.backward(loss)
                optimizer.step()
                train_loss += float(loss.detach())
                if progress is not None:
                    progress.advance(task)
            elapsed += time.perf_counter() - t0
            seen += n_examples
            model.eval()
            val = float(val_fn())
            unsaved += time.perf_counter() - t0
            history.append({"epoch": epoch + 1, "train_loss": train_loss / max(1, len(mine)), "val_loss": val})
            if accelerator.is_main_process:
                if val < best_val:
                    best_val, best_epoch = val, epoch + 1
                    unwrapped = accelerator.unwrap_model(model)
                    tmp = folder / "best.tmp"
                    Evaluator(unwrapped, evaluator.tokenizer, evaluator.kind, evaluator.source).save(tmp)
                    (tmp / "training.json").write_text(json.dumps({"epoch": best_epoch, "val_loss": best_val}))
                    swap_in(tmp, folder / "best")
                finished = epoch + 1 == settings.epochs
                progress_state = {"epochs_run": epoch + 1, "best_val": best_val, "best_epoch": best_epoch,
                                  "history": history, "finished": finished,
                                  "examples_per_s": seen / elapsed if elapsed else None}
                # after the last epoch nothing resumes: best and state.json are the record; before it, a checkpoint
                # once the epochs since the last one took CHECKPOINT_MIN_S (state.json names the checkpoint's epoch)
                checkpoint = not finished and unsaved >= CHECKPOINT_MIN_S
                if checkpoint:
                    tmp = folder / "checkpoint.tmp"
                    accelerator.save_state(str(tmp))
                    (tmp / "state.json").write_text(json.dumps(progress_state))
                    swap_in(tmp, folder / "checkpoint")
                    unsaved = 0.0
                if finished or checkpoint:
                    write_json_atomic(folder / "state.json", progress_state)
            accelerator.wait_for_everyone()
    finally:
        if progress is not None:
            progress.stop()
    # without Accelerate's autocast wrapper: after training the model computes in float32 (scoring, integrated
    # gradients), as one loaded from its finished folder does
    evaluator.model = accelerator.unwrap_model(model, keep_fp32_wrapper=False)
    if state.get("finished") and start_epoch >= settings.epochs and accelerator.is_main_process:
        write_json_atomic(folder / "state.json", state)  # killed after the last checkpoint, before this file
    if _state(folder).get("finished"):
        import shutil

        shutil.rmtree(folder / "checkpoint", ignore_errors=True)  # the best weights stay in OUT/best
    _load_best(evaluator, folder)
    return TrainResult(folder, settings.epochs, best_epoch, best_val, history, start_epoch,
                       seen / elapsed if elapsed else None)


def _state_precision(precision: str, label: str) -> str:
    """The precision an ``Accelerator`` of this process can take for a model that asks for ``precision``.

    Accelerate keeps one state per process and refuses an ``Accelerator`` of another ``mixed_precision`` once it
    is set (Phi_LA trains in float32 after a bf16 Phi; a notebook or a pipeline that trains twice). Outside
    ``accelerate launch`` that state holds nothing else, so it is cleared and ``precision`` is used. A
    distributed run's state is left as it is: the model trains in the launch's precision, with a warning.
    """
    from accelerate.state import AcceleratorState
    from accelerate.utils import DistributedType

    state = AcceleratorState._shared_state
    if not state or state.get("_mixed_precision") == precision:
        return precision
    if state.get("distributed_type") == DistributedType.NO:
        AcceleratorState._reset_state()
        return precision
    launched = str(state.get("_mixed_precision"))
    warnings.warn(f"{label}: trains in the launch's mixed precision {launched!r}, not {precision!r} (accelerate "
                  "keeps one precision per distributed process)", stacklevel=3)
    return launched


def shard(batches: list, index: int, processes: int) -> list:
    """Process ``index``'s share of an epoch's batches under ``accelerate launch``: every ``processes``-th one.

    Each optimizer step averages one batch per process (DDP), so a step sees ``processes x batch_size``
    examples. Every process gets the same number of batches, as every step needs all of them: when the
    count does not divide, the epoch's first batches are repeated to fill the last round (as torch's
    ``DistributedSampler`` pads). One process: the batches unchanged.

    >>> shard([0, 1, 2, 3, 4], 1, 2), shard([0, 1, 2, 3, 4], 0, 2), shard([0, 1, 2], 0, 1)
    ([1, 3, 0], [0, 2, 4], [0, 1, 2])
    """
    padded = batches + [batches[i % len(batches)] for i in range(-len(batches) % processes)] if batches else []
    return padded[index::processes]


def adamw(params: list, lr: float):
    """AdamW (torch's defaults besides ``lr``), fused where every parameter is a CPU or CUDA tensor.

    The fused kernel makes one vectorised pass over all parameters instead of one loop per tensor (on CPU 6.6x
    faster for the MiniLM encoder-decoder's 49M parameters, 30 vs 199 ms a step), the same update up to float
    rounding (within 1e-6, tested). Elsewhere (another device type, no parameters, or a torch without a fused
    kernel for the device: CPU needs torch 2.4) the per-tensor loop.
    """
    import torch

    fused = bool(params) and all(p.device.type in ("cpu", "cuda") for p in params)
    if fused:
        try:
            return torch.optim.AdamW(params, lr=lr, fused=True)
        except RuntimeError:  # this torch has no fused AdamW for the parameters' device
            pass
    return torch.optim.AdamW(params, lr=lr)


def own_memory(params: list) -> None:
    """Copy each parameter into the process's own memory before the optimizer first writes it.

    transformers loads safetensors weights as views of the file's copy-on-write memory map: the first update of
    each 4 KB page then copies it out of the file in a page fault of its own. On the embedded MiniLM encoder-decoder
    (49 M parameters, 2 cores) that made the first fused AdamW step of each model 0.6-1.4 s against 31-34 ms for the
    next ones; one copy of every parameter first takes a fraction of that. The values are the same bits. A
    parameter whose storage another parameter shares (a view) is left as it is, so that no tie is split.
    """
    from collections import Counter

    import torch

    sharing = Counter(p.untyped_storage().data_ptr() for p in params)
    with torch.no_grad():
        for p in params:
            if sharing[p.untyped_storage().data_ptr()] == 1:
                p.data = p.data.clone()


def _load_best(evaluator: Evaluator, folder: Path) -> None:
    from safetensors.torch import load_file

    files = sorted((folder / "best").glob("*.safetensors"))
    weights = {}
    for f in files:
        weights.update(load_file(f))
    missing, unexpected = evaluator.model.load_state_dict(weights, strict=False)
    if unexpected:
        raise RuntimeError(f"{folder}/best does not match the evaluator: unexpected weights {unexpected[:3]}")
    evaluator.model.eval()


def _batches(n: int, size: int, seed: int, make: Callable[[list[int]], Any]) -> Callable[[int], list[Any]]:
    def for_epoch(epoch: int) -> list[Any]:
        order = list(range(n))
        random.Random(f"{seed}|{epoch}").shuffle(order)
        return [make(order[i:i + size]) for i in range(0, n, size)]
    return for_epoch


def _val_loss(evaluator: Evaluator, inputs: list[str], targets: list[str], size: int = 16) -> float:
    import torch

    if not inputs:
        return 0.0
    total, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(inputs), size):
            b = evaluator.batch(inputs[i:i + size], targets[i:i + size])
            total += float(evaluator.loss(b)) * len(b["input_ids"])
            n += len(b["input_ids"])
    return total / n


def train_erm(evaluator: Evaluator, inputs: list[str], targets: list[str], val_inputs: list[str],
              val_targets: list[str], settings: TrainSettings, folder: str | Path, *, label: str,
              console=None) -> TrainResult:
    """Phi_base (inputs = b) or Phi (inputs = r + b): plain cross-entropy."""
    make = lambda idx: evaluator.batch([inputs[i] for i in idx], [targets[i] for i in idx])  # noqa: E731
    return train_loop(evaluator, _batches(len(inputs), settings.batch_size, settings.seed, make),
                      lambda model, batch, step, total: evaluator.loss(batch, model),
                      lambda: _val_loss(evaluator, val_inputs, val_targets), settings, folder, label=label,
                      console=console, n_examples=len(inputs))


def freeze_encoder(evaluator: Evaluator) -> list:
    """Freeze every encoder parameter; return the parameters left trainable (the decoder side)."""
    if evaluator.kind != "seq2seq":
        raise ValueError("the leakage probe needs an encoder-decoder evaluator (T5, BART, embedded-minilm-ed); "
                         f"{evaluator.source} is a causal LM")
    encoder = evaluator.model.get_encoder()
    frozen = {id(p) for p in encoder.parameters()}
    for p in encoder.parameters():
        p.requires_grad_(False)
    return [p for p in evaluator.model.parameters() if id(p) not in frozen]


def train_probe(phi: Evaluator, masked_inputs: list[str], targets: list[str], val_inputs: list[str],
                val_targets: list[str], settings: TrainSettings, folder: str | Path, *, console=None) -> Evaluator:
    """psi: initialised from the trained Phi, encoder frozen, decoder trained on b~ -> y."""
    psi = Evaluator(copy.deepcopy(phi.model), phi.tokenizer, phi.kind, phi.source, phi.max_input_tokens)
    params = freeze_encoder(psi)
    make = lambda idx: psi.batch([masked_inputs[i] for i in idx], [targets[i] for i in idx])  # noqa: E731
    train_loop(psi, _batches(len(masked_inputs), settings.batch_size, settings.seed, make),
               lambda model, batch, step, total: psi.loss(batch, model),
               lambda: _val_loss(psi, val_inputs, val_targets), settings, folder, params=params, label="probe psi",
               console=console, n_examples=len(masked_inputs))
    for p in psi.model.parameters():
        p.requires_grad_(False)
    return psi


def _encoder(model):
    """The encoder of a seq2seq model, also when Accelerate wrapped it (``.module``)."""
    return model.get_encoder() if hasattr(model, "get_encoder") else model.module.get_encoder()


def probe_loss(psi: Evaluator, hidden, attention_mask, labels):
    """Cross-entropy of the frozen probe's decoder reading ``hidden``.

    ``hidden`` is Phi_LA's encoding of the masked baseline b~ (gradients flow into Phi_LA's encoder only:
    psi's parameters are frozen).
    """
    from transformers.modeling_outputs import BaseModelOutput

    from .evaluator import nll_from_logits

    labels = labels.to(hidden.device)
    out = psi.model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=attention_mask,
                    labels=labels)
    return nll_from_logits(out.logits, labels)


@dataclass
class LarevExample:
    """One LAREV training example: the three environment inputs, the masked baseline input and the label."""

    env_inputs: list[str]  # r + b_e for e in (original, mask, antonym)
    masked_input: str  # b~ as Phi_base input text
    target: str


def _stack_inputs(batches: list[dict], pad_id: int):
    """The ``input_ids`` and ``attention_mask`` of several batches as one, right-padded to the widest.

    Padding has attention 0, so each row's encoding is the one it gets alone, up to float rounding.
    """
    import torch
    import torch.nn.functional as F

    width = max(b["input_ids"].shape[1] for b in batches)
    ids = torch.cat([F.pad(b["input_ids"], (0, width - b["input_ids"].shape[1]), value=pad_id) for b in batches])
    mask = torch.cat([F.pad(b["attention_mask"], (0, width - b["attention_mask"].shape[1]), value=0)
                      for b in batches])
    return ids, mask


def larev_loss(evaluator: Evaluator, model, psi: Evaluator, ex_batch: tuple[dict, dict], step: int, total: int, *,
               lambda_irm: float, lambda_probe: float) -> Any:
    """Phi_LA's loss on one example: L = ERM + lambda_IRM(t) * IRM - lambda_probe(t) * L_probe.

    ERM = mean_e L_e, L_e = the mean CE of y's tokens given r + b_e (e = original, mask, antonym); IRM =
    sum_e (d L_e / d w_e at w = 1)^2 (IRMv1); L_probe = the CE of the frozen probe psi's decoder on
    Phi_LA's encoding of the masked baseline b~; lambda(t) = :func:`warmup`. ``ex_batch`` = (the three
    environments as one batch of ``evaluator``, b~ -> y as a batch of ``psi``); ``model`` is Phi_LA (an
    encoder-decoder, as the probe requires).

    One forward pass per step (the cost, not the value, differs from computing each term alone):
    * Phi_LA's encoder encodes the three environments and b~ as one batch of four rows, right-padded to
      the widest (the attention mask keeps padding out);
    * Phi_LA's decoder scores the three environments as one batch, and :func:`irm_penalty_rows` takes
      every environment's L_e and d L_e / d w_e from it (one dummy scale per row, one ``autograd.grad``)
      instead of one forward and one ``autograd.grad`` per environment;
    * psi's decoder reads the fourth row's encoding.
    The value equals the per-term computation up to float rounding (tested, with the gradient w.r.t.
    the model). In training mode dropout draws its masks for the batch instead of row by row: the same
    distribution, not the same random numbers as a per-environment run.
    """
    from transformers.modeling_outputs import BaseModelOutput

    env_batch, masked_batch = ex_batch
    n_env = env_batch["input_ids"].shape[0]
    pad_id = evaluator.tokenizer.pad_token_id or 0
    ids, mask = (t.to(evaluator.device) for t in _stack_inputs([env_batch, masked_batch], pad_id))
    hidden = _encoder(model)(input_ids=ids, attention_mask=mask).last_hidden_state
    labels = env_batch["labels"].to(evaluator.device)
    logits = model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden[:n_env]), attention_mask=mask[:n_env],
                   labels=labels).logits
    penalty, losses = irm_penalty_rows(logits, labels)
    probe = probe_loss(psi, hidden[n_env:], mask[n_env:], masked_batch["labels"])
    return losses.mean() + warmup(lambda_irm, step, total) * penalty - warmup(lambda_probe, step, total) * probe


def train_larev(source: str, examples: list[LarevExample], psi: Evaluator, val_inputs: list[str],
                val_targets: list[str], settings: TrainSettings, folder: str | Path, *, lambda_irm: float,
                lambda_probe: float, console=None, max_input_tokens: int = 256) -> tuple[Evaluator, TrainResult]:
    """Train Phi_LA starting from ``source``; one example (three environments) per step.

    ``lambda_irm`` and ``lambda_probe`` weigh the penalties (no default here: a run takes them from
    :func:`reasonscope.information.defaults.penalty_weights`).

    ``source`` is the trained Phi's checkpoint by default (``larev_init: phi``) or the pretrained backbone
    (``larev_init: backbone``, the LAREV thesis's setting). Starting from Phi is this project's departure:
    with an evaluator whose output head starts untrained (the embedded MiniLM encoder-decoder), the IRM
    penalty reaches full weight before the backbone has learnt to produce labels, and its trivial minimum
    (near-uniform outputs) wins: on 360 e-SNLI training pairs Phi_LA from the backbone reached a
    validation loss of 9.39 per token (uniform: 10.33) and 33% accuracy, from Phi 0.86 and 83%.
    """
    phi_la = load_evaluator(source, seed=settings.seed)
    phi_la.max_input_tokens = max_input_tokens
    phi_la.model.to(psi.device)

    def make(idx):
        ex = examples[idx[0]]
        return (phi_la.batch(ex.env_inputs, [ex.target] * len(ex.env_inputs)),
                psi.batch([ex.masked_input], [ex.target]))

    result = train_loop(phi_la, _batches(len(examples), 1, settings.seed, make),
                        lambda model, batch, step, total: larev_loss(phi_la, model, psi, batch, step, total,
                                                                     lambda_irm=lambda_irm, lambda_probe=lambda_probe),
                        lambda: _val_loss(phi_la, val_inputs, val_targets), settings, folder, label="Phi_LA",
                        console=console, n_examples=len(examples))
    return phi_la, result
