"""Evaluator models for REV and LAREV.

Any HF seq2seq model (T5, BART: the documented defaults are
``t5-small`` and ``facebook/bart-base``), any HF causal LM, or an encoder-decoder warm-started from
the embedded all-MiniLM-L6-v2 (``embedded-minilm-ed``: encoder and decoder both initialised from
MiniLM, the decoder's cross-attention new; works offline).

Inputs and targets are text. For a seq2seq model the input goes to the encoder and the target is
the decoder's label sequence (with its EOS). For a causal LM the sequence is ``input + " " + target +
EOS`` and only the target positions are labelled. ``log p(y | x)`` is the sum of the target tokens'
log-probabilities (the default: the sequence log-likelihood of REV and LAREV); the per-token mean
divides by their number.

Inputs longer than ``max_input_tokens`` (256 by default): :meth:`Evaluator.fit_inputs` shortens the
*rationale* of an "r + b" input until it fits, never the baseline b, and counts what it shortened. A
baseline that alone exceeds the budget cannot fit; its end is cut by the tokenizer and it is counted
apart (``baseline_over_limit``).

A saved evaluator is a folder with the model (safetensors), its tokenizer and ``evaluator.json``
(kind and source), so ``load_evaluator(folder)`` restores it.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models.loading import model_loading
from .variants import rationale_input

MINILM_ED = "embedded-minilm-ed"
# EncoderDecoderModel warns on every call with labels that old (< 4.12) checkpoints computed the loss
# elsewhere; reasonscope computes its own losses from the logits, so the warning says nothing here.
warnings.filterwarnings("ignore", message="Version v4.12.0 introduces a better way", category=FutureWarning)
META_FILE = "evaluator.json"


@dataclass
class Evaluator:
    """An evaluator model (Phi_base, Phi, Phi_LA or the probe psi) with its tokenizer.

    ``kind`` is ``"seq2seq"`` or ``"causal"`` (module docstring); ``source`` is what it was loaded from;
    inputs longer than ``max_input_tokens`` are cut. Built by :func:`load_evaluator`, trained by
    :mod:`reasonscope.information.training`.
    """

    model: Any
    tokenizer: Any
    kind: str  # "seq2seq" or "causal"
    source: str
    max_input_tokens: int = 256

    @property
    def device(self):
        """The device of the model's parameters."""
        return next(self.model.parameters()).device

    # -- batches ------------------------------------------------------------------------------
    def batch(self, inputs: list[str], targets: list[str]) -> dict:
        """Tensors of a batch: ``input_ids``, ``attention_mask`` and ``labels`` (-100 = not scored)."""
        import torch

        tok = self.tokenizer
        if self.kind == "seq2seq":
            enc = tok(list(inputs), padding=True, truncation=True, max_length=self.max_input_tokens,
                      return_tensors="pt")
            return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
                    "labels": self._seq2seq_labels(targets)}
        rows, labels = [], []
        for x, y in zip(inputs, targets, strict=True):
            xi = tok(x, add_special_tokens=False, truncation=True, max_length=self.max_input_tokens)["input_ids"]
            if tok.bos_token_id is not None:
                xi = [tok.bos_token_id] + xi
            yi = tok(" " + y, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            rows.append(xi + yi)
            labels.append([-100] * len(xi) + yi)
        width = max(len(r) for r in rows)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        return {"input_ids": torch.tensor([r + [pad] * (width - len(r)) for r in rows]),
                "attention_mask": torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows]),
                "labels": torch.tensor([lab + [-100] * (width - len(lab)) for lab in labels])}

    def _seq2seq_labels(self, targets: list[str]):
        lab = self.tokenizer(list(targets), padding=True, truncation=True, max_length=64, return_tensors="pt")
        return lab["input_ids"].masked_fill(lab["attention_mask"] == 0, -100)

    def input_lengths(self, texts: list[str]) -> list[int]:
        """Tokens of each input as :meth:`batch` counts them (special tokens included for seq2seq)."""
        if not texts:
            return []
        enc = self.tokenizer(list(texts), add_special_tokens=self.kind == "seq2seq", truncation=False)
        return [len(ids) for ids in enc["input_ids"]]

    def fit_inputs(self, rationales: list[str], baselines: list[str]) -> tuple[list[str], dict[str, int]]:
        """The "r + b" inputs (:func:`~reasonscope.information.variants.rationale_input`).

        Each is kept within ``max_input_tokens``: an input that is too long keeps b whole and as many of the
        rationale's leading tokens as fit (cut at a token boundary of the rationale's own tokenisation).
        Returns the texts and the counts ``{"inputs", "rationale_truncated", "baseline_over_limit"}``.
        """
        texts = [rationale_input(r, b) for r, b in zip(rationales, baselines, strict=True)]
        counts = {"inputs": len(texts), "rationale_truncated": 0, "baseline_over_limit": 0}
        limit = self.max_input_tokens
        for i, n in enumerate(self.input_lengths(texts)):
            if n <= limit:
                continue
            counts["rationale_truncated"] += 1
            r, b = rationales[i], baselines[i]
            offsets = self.tokenizer(r, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
            keep = max(0, len(offsets) - (n - limit))
            while True:
                text = rationale_input(r[:offsets[keep - 1][1]] if keep else "", b)
                if keep == 0 or self.input_lengths([text])[0] <= limit:
                    break
                keep -= 1
            if keep == 0 and self.input_lengths([text])[0] > limit:
                counts["baseline_over_limit"] += 1
            texts[i] = text
        return texts, counts

    def logits(self, batch: dict, model=None):
        """(logits, labels) aligned so that ``logits[:, t]`` predicts ``labels[:, t]``."""
        model = model or self.model
        batch = {k: v.to(self.device) for k, v in batch.items()}
        if self.kind == "seq2seq":
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
            return out.logits, batch["labels"]
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        return out.logits[:, :-1], batch["labels"][:, 1:]

    def loss(self, batch: dict, model=None, scale=None):
        """Mean cross-entropy over the batch's target tokens.

        ``scale`` (a scalar tensor) multiplies the logits first (the IRMv1 dummy classifier w of
        :func:`~reasonscope.information.training.irm_penalty`).
        """
        logits, labels = self.logits(batch, model)
        return nll_from_logits(logits, labels, scale)

    def log_likelihood(self, inputs: list[str], targets: list[str], *, reduction: str = "sum",
                       batch_size: int = 16) -> list[float]:
        """Log-likelihood log p(y | x) per example: sum over the target tokens, or mean (``reduction``)."""
        import torch

        out: list[float] = []
        self.model.eval()
        with torch.no_grad():
            for i in range(0, len(inputs), batch_size):
                logits, labels = self.logits(self.batch(inputs[i:i + batch_size], targets[i:i + batch_size]))
                lp = token_logprobs(logits, labels)
                mask = labels != -100
                sums = (lp * mask).sum(1)
                out += (sums / mask.sum(1).clamp(min=1) if reduction == "mean" else sums).tolist()
        return out

    def candidate_log_likelihoods(self, inputs: list[str], candidates: list[str], *, batch_size: int = 16
                                  ) -> list[list[float]]:
        """Log-likelihood log p(c | x) of every candidate c for every input x, batched across inputs.

        log p(c | x) is the sum over c's tokens. A seq2seq evaluator encodes each input once and decodes every
        candidate from that encoding.
        """
        k = len(candidates)
        if self.kind != "seq2seq":
            flat = self.log_likelihood([x for x in inputs for _ in candidates], list(candidates) * len(inputs),
                                       reduction="sum", batch_size=batch_size)
            return [flat[i * k:(i + 1) * k] for i in range(len(inputs))]
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        out: list[list[float]] = []
        self.model.eval()
        with torch.no_grad():
            for i in range(0, len(inputs), batch_size):
                chunk = list(inputs[i:i + batch_size])
                enc = self.tokenizer(chunk, padding=True, truncation=True, max_length=self.max_input_tokens,
                                     return_tensors="pt").to(self.device)
                hidden = self.model.get_encoder()(input_ids=enc["input_ids"],
                                                  attention_mask=enc["attention_mask"]).last_hidden_state
                labels = self._seq2seq_labels(list(candidates) * len(chunk)).to(self.device)
                logits = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden.repeat_interleave(k, 0)),
                                    attention_mask=enc["attention_mask"].repeat_interleave(k, 0), labels=labels).logits
                sums = token_logprobs(logits, labels).sum(1).tolist()
                out += [sums[j * k:(j + 1) * k] for j in range(len(chunk))]
        return out

    def predict(self, inputs: list[str], candidates: list[str] | None = None, *, batch_size: int = 16) -> list[str]:
        """The most likely candidate label (summed log-probability), or greedy decoding without candidates."""
        if candidates:
            scores = self.candidate_log_likelihoods(inputs, candidates, batch_size=batch_size)
            return [candidates[max(range(len(candidates)), key=s.__getitem__)] for s in scores]
        import torch

        out = []
        tok = self.tokenizer
        with torch.no_grad():
            if self.kind == "seq2seq":  # batched: the encoder's attention mask hides the padding
                for i in range(0, len(inputs), batch_size):
                    enc = tok(list(inputs[i:i + batch_size]), return_tensors="pt", padding=True, truncation=True,
                              max_length=self.max_input_tokens).to(self.device)
                    ids = self.model.generate(**enc, max_new_tokens=16, do_sample=False)
                    out += [t.strip() for t in tok.batch_decode(ids, skip_special_tokens=True)]
                return out
            for x in inputs:  # a causal LM: one at a time (no left-padding assumptions about its tokenizer)
                enc = tok([x], return_tensors="pt", add_special_tokens=False).to(self.device)
                ids = self.model.generate(**enc, max_new_tokens=16, do_sample=False,
                                          pad_token_id=tok.pad_token_id or tok.eos_token_id)[0][enc["input_ids"].shape[1]:]
                out.append(tok.decode(ids, skip_special_tokens=True).strip())
        return out

    def save(self, folder: str | Path) -> Path:
        """Save the model (safetensors), tokenizer, kind and source to ``folder``; returns ``folder``.

        :func:`load_evaluator` reads the folder back.
        """
        from transformers.utils import logging as hf_logging

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # tied weights (decoder embeddings / LM head) are saved once, by design
        hf_logging.disable_progress_bar()
        try:
            self.model.save_pretrained(folder, safe_serialization=True)
        finally:
            hf_logging.set_verbosity(level)
            with warnings.catch_warnings():  # HF_HUB_DISABLE_PROGRESS_BARS (set by the CLI) keeps them off: fine
                warnings.filterwarnings("ignore", message="Cannot enable progress bars", category=UserWarning)
                hf_logging.enable_progress_bar()
        self.tokenizer.save_pretrained(folder)
        (folder / META_FILE).write_text(json.dumps({"kind": self.kind, "source": self.source}))
        return folder


def token_logprobs(logits, labels):
    """Log-probability of each label token ([B, T]; 0 where the label is -100)."""
    import torch

    lp = torch.log_softmax(logits.float(), dim=-1)
    safe = labels.clamp(min=0)
    return lp.gather(-1, safe[..., None])[..., 0] * (labels != -100)


def nll_from_logits(logits, labels, scale=None, *, per_row: bool = False):
    """Cross-entropy of the label tokens (vocabulary as the class axis; -100 = not scored).

    ``per_row=False``: the mean over all the batch's scored tokens (a scalar). ``per_row=True``: one mean
    per row over that row's own scored tokens (shape ``[B]``; a row without one gives 0), so that row b's
    value reads row b alone. ``scale`` multiplies the logits first: a scalar tensor, or a vector of one
    factor per row (shape ``[B]``; the IRMv1 dummy classifiers w_e of :func:`~reasonscope.information.
    training.irm_penalty_rows`).
    """
    import torch.nn.functional as F

    z = logits.float()
    if scale is not None:
        z = z * scale.reshape(scale.shape + (1,) * (z.dim() - scale.dim()))
    flat_z, flat_y = z.reshape(-1, z.shape[-1]), labels.reshape(-1)
    if not per_row:
        return F.cross_entropy(flat_z, flat_y, ignore_index=-100)
    ce = F.cross_entropy(flat_z, flat_y, ignore_index=-100, reduction="none").view(labels.shape)  # 0 where -100
    return ce.sum(1) / (labels != -100).sum(1).clamp(min=1)


def _minilm_encoder_decoder():
    from transformers import AutoTokenizer, EncoderDecoderModel
    from transformers.utils import logging as hf_logging

    from ..scorers.similarity import resolve_model

    path = resolve_model("embedded-minilm")
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the decoder's cross-attention and LM head are new by design
    try:
        with model_loading():
            tok = AutoTokenizer.from_pretrained(path)
            model = EncoderDecoderModel.from_encoder_decoder_pretrained(path, path)
    finally:
        hf_logging.set_verbosity(level)
    model.config.decoder_start_token_id = tok.cls_token_id
    model.config.pad_token_id = tok.pad_token_id
    model.config.eos_token_id = tok.sep_token_id
    model.generation_config.decoder_start_token_id = tok.cls_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.sep_token_id
    return model, tok


def load_evaluator(source: str, *, seed: int = 0) -> Evaluator:
    """A fresh (pretrained) evaluator.

    From ``embedded-minilm-ed``, an HF id or path of a seq2seq or causal LM, or a folder saved by
    :meth:`Evaluator.save`.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    torch.manual_seed(seed)  # the MiniLM decoder's new cross-attention weights
    if source == MINILM_ED:
        model, tok = _minilm_encoder_decoder()
        return Evaluator(model, tok, "seq2seq", source)
    meta = Path(source) / META_FILE
    if meta.is_file():
        info = json.loads(meta.read_text())
        cls = AutoModelForSeq2SeqLM if info["kind"] == "seq2seq" else AutoModelForCausalLM
        with model_loading():
            return Evaluator(cls.from_pretrained(source), AutoTokenizer.from_pretrained(source), info["kind"],
                             info["source"])
    with model_loading():
        config = AutoConfig.from_pretrained(source)
        tok = AutoTokenizer.from_pretrained(source)
        if config.is_encoder_decoder:
            return Evaluator(AutoModelForSeq2SeqLM.from_pretrained(source), tok, "seq2seq", source)
        model = AutoModelForCausalLM.from_pretrained(source)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return Evaluator(model, tok, "causal", source)
