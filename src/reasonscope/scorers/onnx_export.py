"""Scoring models converted once to ONNX, kept in the user cache and checked against torch.

``runtime: onnx`` (on ``families.behavior.nli`` and ``similarity``) runs the NLI cross-encoder and the
BERTScore encoder with ONNX Runtime and the ``tokenizers`` library: neither torch nor transformers is
imported, which saves their 4-5 s import and load on every run (:mod:`reasonscope.scorers.onnx_scorers`).

The conversion runs once per model and setting, through torch and transformers:

1. the tokenizer (transformers' fast tokenizer) and the model are loaded as the torch runtime loads
   them: ``AutoModelForSequenceClassification`` for NLI; for BERTScore ``AutoModel`` with its
   encoder cut to ``num_layers`` layers, as the ``bert-score`` package does;
2. the model is exported with torch's ``torch.export``-based ONNX exporter (``dynamo=True``), batch
   and sequence length dynamic. The older TorchScript tracer is not used: on transformers 5 it bakes
   the attention mask's branches into the graph (hidden states 1.2 apart on all-MiniLM-L6-v2) and
   leaves the traced torch model altered;
3. the converted model is **verified** before it is kept: a fixed set of probe inputs (padded
   batches, an empty text, a text past the length limit) is encoded by transformers and by
   ``tokenizers`` (token ids, masks and segment ids must be equal) and run through torch and ONNX
   Runtime; the largest difference of the outputs (logits, or hidden states at real tokens) must be at
   most :data:`TOLERANCE`, else the conversion fails with the figure. The figure is kept in
   ``meta.json`` and shown in the scorer's description.

Cache: ``<user cache>/onnx/<key>/`` (``REASONSCOPE_CACHE_DIR`` overrides the user cache), with
``model.onnx``, ``tokenizer.json`` and ``meta.json``. The key hashes the task (``nli`` or
``hidden-states`` and ``num_layers``), the model's local folder (a path, or the hub snapshot, whose
name is its commit) with each file's relative name, size and modification time, and the versions of
torch, transformers and onnxscript. A changed model (also new weights saved into the same folder) or
exporter gives a new conversion; processes converting the same model at once keep one of their equal
conversions; ``reasonscope cache`` does not list
conversions (they are not scores); delete the folder to convert again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..models.loading import model_loading
from ..storage.user_cache import cache_root, publish_folder
from ..storage.versions import installed_versions

log = logging.getLogger(__name__)

Task = Literal["nli", "hidden-states"]
TOLERANCE = 1e-3
"""Largest accepted difference between torch's and ONNX Runtime's outputs on the probes (logits, or
hidden states at real tokens). Measured: 3e-6 to 5e-6 on all-MiniLM-L6-v2's hidden states."""
EXPORTER = ("torch", "transformers", "onnxscript", "onnx")
CONVERSION_VERSION = 1
PAIR_MAX_LENGTH = 512
"""Truncation of an NLI pair, as the torch runtime (``max_length=512``, longest first)."""

PROBE_TEXTS = (
    "A man is eating an apple.",
    "",
    "Nobody eats anything, and the apple stays on the table for the whole afternoon while it rains.",
    "Seven plus five equals twelve, so the answer is 12.",
    "Yes.",
    " ".join(["Therefore the number of apples is larger than the number of oranges."] * 60),
)
"""Texts of the verification: different lengths (padded batches), an empty text, one past 512 tokens."""


class ConversionError(RuntimeError):
    """The model could not be converted, or its conversion did not match torch within the tolerance."""


@dataclass(frozen=True)
class Converted:
    """A verified conversion: its folder and ``meta.json``."""

    folder: Path
    meta: dict[str, Any]

    @property
    def onnx_path(self) -> Path:
        """The converted ``model.onnx`` file."""
        return self.folder / "model.onnx"

    @property
    def tokenizer_path(self) -> Path:
        """The model's ``tokenizer.json`` file."""
        return self.folder / "tokenizer.json"


def local_folder(model: str) -> Path | None:
    """The model's files on this machine.

    The path itself, or the hub cache's snapshot of an HF id (``None`` when it was never downloaded).
    """
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(model, "config.json")
    return Path(found).parent if isinstance(found, str) else None


def conversion_key(task: Task, folder: Path, num_layers: int | None) -> str:
    """Hash of what decides the conversion.

    Task, layers, the folder and every file in it (relative name, size and modification time in nanoseconds:
    the score cache's fingerprint of a model, :func:`~reasonscope.scorers.cache.model_fingerprint`), and the
    exporter's versions. A model saved again into the same folder (new weights of the same size) is a new key.
    """
    from .cache import model_fingerprint

    files = model_fingerprint(str(folder))
    blob = json.dumps({"task": task, "num_layers": num_layers, "folder": str(folder), "files": files,
                       "versions": installed_versions(EXPORTER), "conversion": CONVERSION_VERSION},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def converted(model: str, task: Task, num_layers: int | None = None) -> Converted:
    """The verified ONNX conversion of ``model`` for ``task``.

    Converting it on first use (see the module docstring). Raises :class:`ConversionError` when the exporter
    is missing or the check fails.
    """
    folder = local_folder(model)
    if folder is not None:
        target = cache_root() / "onnx" / conversion_key(task, folder, num_layers)
        if (target / "meta.json").is_file():
            return Converted(target, json.loads((target / "meta.json").read_text()))
        _raise_if_failed_before(target)
    missing = [n for n, v in installed_versions(EXPORTER).items() if v is None]
    if missing:
        raise ConversionError(f"converting {model} to ONNX needs {', '.join(missing)} "
                              "(pip install 'reasonscope[embedded,onnx]'); it is converted once, then cached")
    try:
        tokenizer, module, input_names, extra = _load_torch(model, task, num_layers)
    except ConversionError as err:  # a model this runtime cannot take: remembered, as a failed check is
        if folder is not None:
            _remember_failure(target, model, task, err)
        raise
    folder = local_folder(model)  # a hub model is in the hub cache now
    if folder is None:
        raise ConversionError(f"{model}: loaded, but its files are not found in the hub cache")
    target = cache_root() / "onnx" / conversion_key(task, folder, num_layers)
    if (target / "meta.json").is_file():
        return Converted(target, json.loads((target / "meta.json").read_text()))
    _raise_if_failed_before(target)
    log.warning("converting %s to ONNX for %s (once; kept in %s)", model, task, target)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        meta = _export(model, task, num_layers, tokenizer, module, input_names, extra, tmp)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        publish_folder(tmp, target, lambda folder: (folder / "meta.json").is_file())  # or another process's
    except ConversionError as err:  # the check failed: remembered, so that runtime auto does not retry it
        shutil.rmtree(tmp, ignore_errors=True)
        _remember_failure(target, model, task, err)
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Converted(target, json.loads((target / "meta.json").read_text()))


def _failure_file(target: Path) -> Path:
    return target.with_name(target.name + ".failed.json")


def _remember_failure(target: Path, model: str, task: Task, err: ConversionError) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    _failure_file(target).write_text(json.dumps({"model": model, "task": task, "reason": str(err)}))


def _raise_if_failed_before(target: Path) -> None:
    """Raise the :class:`ConversionError` of an earlier failed check of this conversion (same key)."""
    failed = _failure_file(target)
    if failed.is_file():
        reason = json.loads(failed.read_text()).get("reason", "")
        raise ConversionError(f"{reason} (an earlier conversion failed its check; delete {failed} to try again)")


def _load_torch(model: str, task: Task, num_layers: int | None):
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    with model_loading():
        tokenizer = AutoTokenizer.from_pretrained(model)
        net = (AutoModelForSequenceClassification if task == "nli" else AutoModel).from_pretrained(model).eval()
    if not getattr(tokenizer, "is_fast", False):
        raise ConversionError(f"{model}: the ONNX runtime needs a fast tokenizer (tokenizer.json)")
    if task == "nli":
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
                 if n in tokenizer("a", "b", return_tensors="pt")]
        extra = {"id2label": {str(k): v for k, v in net.config.id2label.items()},
                 "max_length": PAIR_MAX_LENGTH}
        output = "logits"
    else:
        from .bertscore import bertscore_encoder

        try:
            net, limit = bertscore_encoder(net, tokenizer, num_layers, model)
        except ValueError as err:
            raise ConversionError(str(err)) from None
        names = ["input_ids", "attention_mask"]  # what bert-score passes to the model
        extra = {"max_length": limit, "cls_id": tokenizer.cls_token_id, "sep_id": tokenizer.sep_token_id}
        output = "last_hidden_state"

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                kwargs["token_type_ids"] = token_type_ids
            return getattr(self.net(**kwargs), output)

    return tokenizer, Wrapped().eval(), names, extra


def _encode_torch(tokenizer, task: Task, texts: list[Any], max_length: int):
    if task == "nli":
        return tokenizer([p for p, _ in texts], [h for _, h in texts], padding=True, truncation=True,
                         max_length=max_length, return_tensors="pt")
    return tokenizer([t.strip() for t in texts], padding=True, truncation=True, max_length=max_length,
                     return_tensors="pt")


def _probes(task: Task) -> list[list[Any]]:
    texts = list(PROBE_TEXTS)
    if task == "nli":
        pairs = [(a, b) for a in texts for b in texts[:4]]
        return [pairs[i:i + 7] for i in range(0, len(pairs), 7)]
    return [texts[:4], texts, texts[4:5]]


def _export(model: str, task: Task, num_layers: int | None, tokenizer, module, names: list[str],
            extra: dict, folder: Path) -> dict:
    import numpy as np
    import onnxruntime as ort
    import torch
    from tokenizers import Tokenizer

    example = _encode_torch(tokenizer, task, _probes(task)[0], extra["max_length"])
    args = tuple(example[n] for n in names)
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
    with torch.no_grad():
        torch.onnx.export(module, args, str(folder / "model.onnx"), input_names=names, output_names=["output"],
                          dynamo=True, dynamic_shapes=tuple({0: batch, 1: seq} for _ in names), verbose=False)
    tokenizer.backend_tokenizer.save(str(folder / "tokenizer.json"))
    meta = {"model": model, "task": task, "num_layers": num_layers, "input_names": names,
            "pad_id": tokenizer.pad_token_id, "pad_token": tokenizer.pad_token,
            "pad_type_id": tokenizer.pad_token_type_id, "padding_side": tokenizer.padding_side,
            "versions": installed_versions(EXPORTER), **extra}
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    fast = tokenizer_for(meta, Tokenizer.from_file(str(folder / "tokenizer.json")))
    worst = 0.0
    for probe in _probes(task):
        enc = _encode_torch(tokenizer, task, probe, extra["max_length"])
        ours = encode(fast, meta, probe)
        for n in names:
            if not np.array_equal(ours[n], enc[n].numpy()):
                raise ConversionError(f"{model}: the tokenizers library encodes the probes differently from "
                                      f"transformers ({n}); the ONNX runtime cannot reproduce torch's scores")
        with torch.no_grad():
            want = module(*(enc[n] for n in names)).float().numpy()
        got = session.run(None, ours)[0]
        if task == "hidden-states":
            mask = enc["attention_mask"].numpy().astype(bool)
            want, got = want[mask], got[mask]
        worst = max(worst, float(np.abs(want - got).max()))
    if worst > TOLERANCE:
        raise ConversionError(f"{model}: the ONNX conversion differs from torch by {worst:.2e} on the probes "
                              f"(tolerance {TOLERANCE:g}); use runtime: torch")
    meta["verified_max_abs_diff"] = worst
    return meta


def tokenizer_for(meta: dict, tokenizer):
    """Set truncation and padding of a ``tokenizers.Tokenizer`` as the torch runtime encodes.

    Longest-first truncation at ``meta["max_length"]``, padding to the longest in the batch.
    """
    tokenizer.enable_truncation(max_length=int(meta["max_length"]), strategy="longest_first")
    tokenizer.enable_padding(direction=meta["padding_side"], pad_id=int(meta["pad_id"]), pad_token=meta["pad_token"],
                             pad_type_id=int(meta["pad_type_id"] or 0))
    return tokenizer


def encode(tokenizer, meta: dict, texts: list[Any]) -> dict[str, Any]:
    """The ONNX model's inputs for a batch.

    Sentence pairs (``nli``) or texts (``hidden-states``, stripped as ``bert-score`` does), as int64 arrays
    named as the model's inputs.
    """
    import numpy as np

    if meta["task"] == "nli":
        encs = tokenizer.encode_batch([(p, h) for p, h in texts])
    else:
        encs = tokenizer.encode_batch([t.strip() for t in texts])
    fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    return {n: np.asarray([getattr(e, fields[n]) for e in encs], dtype=np.int64) for n in meta["input_names"]}


def __getattr__(name: str) -> Any:
    """``runtime_settings``, now :meth:`reasonscope.scorers.runtime_choice.RuntimeChoice.identity`, with a warning."""
    if name == "runtime_settings":
        import warnings
        from importlib import import_module

        warnings.warn("reasonscope.scorers.onnx_export.runtime_settings(runtime) is replaced by reasonscope.scorers."
                      "runtime_choice.RuntimeChoice(runtime).identity(); the old name works until the next release",
                      DeprecationWarning, stacklevel=2)
        choice = import_module("reasonscope.scorers.runtime_choice").RuntimeChoice
        return lambda runtime: choice(runtime).identity() if runtime == "onnx" else {}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
