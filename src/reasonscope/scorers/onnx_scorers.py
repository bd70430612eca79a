"""The NLI cross-encoder and BERTScore on ONNX Runtime (``runtime: onnx``), without torch or transformers.

The models are the verified conversions of :mod:`reasonscope.scorers.onnx_export`; the texts are
encoded by the ``tokenizers`` library with the model's own ``tokenizer.json`` (checked equal to
transformers' encoding at conversion). Importing ONNX Runtime, numpy and ``tokenizers`` and opening
both sessions takes about 0.1 s, against 4-5 s for torch and transformers' imports and loads.

Inputs are sent in batches of ``batch_size`` in the order given: behind the score cache they arrive
sorted by length (:class:`reasonscope.scorers.cache.CachedScorer`), so a batch pads to similar lengths.
BERTScore's distinct texts are sorted by length the same way before they are encoded.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import NLIScorer, resolve_model
from .bertscore import GreedyBERTScore
from .onnx_export import Converted, converted, encode, tokenizer_for


def _session(conv: Converted):
    import onnxruntime as ort
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(conv.onnx_path), options, providers=["CPUExecutionProvider"])
    return session, tokenizer_for(conv.meta, Tokenizer.from_file(str(conv.tokenizer_path)))


class OnnxCrossEncoderNLI(NLIScorer):
    """NLI by the converted cross-encoder on ONNX Runtime.

    p(contradiction) = softmax(logits)[contradiction label] of the converted cross-encoder, the pair encoded
    as the torch runtime does (longest-first truncation at 512 tokens).
    """

    def __init__(self, model: str, batch_size: int = 16):
        conv = converted(model, "nli")
        labels = {int(i): str(n).lower() for i, n in conv.meta["id2label"].items()}
        idx = [i for i, n in labels.items() if "contradict" in n]
        if len(idx) != 1:
            raise ValueError(f"{model}: no 'contradiction' label among {sorted(labels.values())}")
        self.index = idx[0]
        self.session, self.tokenizer = _session(conv)
        self.meta = conv.meta
        self.batch_size = batch_size
        self.description = (f"hf-cross-encoder:{model}:onnx (verified against torch: max |diff| "
                            f"{conv.meta['verified_max_abs_diff']:.1e})")

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """p(contradiction) of each pair, in [0, 1], in batches of ``batch_size``."""
        import numpy as np

        pairs = [(p, h) for p, h in pairs]
        out: list[float] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start:start + self.batch_size]
            logits = self.session.run(None, encode(self.tokenizer, self.meta, batch))[0].astype(np.float64)
            probs = np.exp(logits - logits.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            out.extend(float(p) for p in probs[:, self.index])
        return out


class OnnxBERTScoreF1(GreedyBERTScore):
    """BERTScore F1 with the converted encoder on ONNX Runtime.

    The matching is :class:`~reasonscope.scorers.bertscore.GreedyBERTScore`'s; this class gives the vectors.
    """

    def __init__(self, model: str, num_layers: int | None, batch_size: int = 8):
        conv = converted(resolve_model(model), "hidden-states", num_layers)
        self.session, self.tokenizer = _session(conv)
        self.meta = conv.meta
        self.batch_size = batch_size
        self.description = (f"bertscore-f1:{model}:layer{num_layers}:onnx (verified against torch: max |diff| "
                            f"{conv.meta['verified_max_abs_diff']:.1e})")

    def vectors(self, texts: Sequence[str]) -> list:
        """Each text's unit token vectors (tokens x dim), with a weight per token (0 for [CLS] and [SEP])."""
        import numpy as np

        texts = list(texts)
        out: list = []
        special = {self.meta["cls_id"], self.meta["sep_id"]}
        for start in range(0, len(texts), self.batch_size):
            inputs = encode(self.tokenizer, self.meta, texts[start:start + self.batch_size])
            hidden = self.session.run(None, inputs)[0].astype(np.float64)
            for row in range(len(hidden)):
                real = inputs["attention_mask"][row].astype(bool)
                vecs = hidden[row][real]
                vecs /= np.linalg.norm(vecs, axis=-1, keepdims=True)
                weight = np.array([0.0 if t in special else 1.0 for t in inputs["input_ids"][row][real]])
                out.append((vecs, weight))
        return out
