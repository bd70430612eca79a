"""BERTScore F1 by greedy matching of unit token vectors, for any encoder that gives them.

BERTScore (Zhang et al., 2020, *BERTScore: Evaluating Text Generation with BERT*), no IDF, no baseline
rescaling. For a candidate x and a reference y, with unit token vectors from layer ``num_layers``:
P = mean over x's tokens of max over y's tokens of the cosine, R = the same from y to x,
F1 = 2PR / (P + R) in [-1, 1] (0 when either text has no token or P + R = 0); higher is more similar.
As in the ``bert-score`` package, [CLS] and [SEP] take part in the max but carry no weight in the mean,
and each text is stripped and truncated at the model's limit.

One departure from ``bert-score``: it pads a batch of pairs to its longest text and lets a padded position
(cosine 0) win the max when every real cosine of a token is negative, so a pair's score could depend on
the other pairs of its batch; here the max is over real tokens only. The two agree whenever some cosine
of each token is non-negative (tested against ``bert-score`` pair by pair on the embedded MiniLM).

Each distinct text is encoded once, the texts sorted by length so that a batch pads little; the
subclasses give the vectors: :class:`reasonscope.scorers.similarity.TorchBERTScoreF1` (transformers on
torch) and :class:`reasonscope.scorers.onnx_scorers.OnnxBERTScoreF1` (ONNX Runtime).
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Similarity


def bertscore_encoder(net, tokenizer, num_layers: int | None, model: str):
    """``(encoder, input limit)``: the module BERTScore reads, as the ``bert-score`` package builds it.

    The encoder of an encoder-decoder, its ``encoder.layer`` cut to ``num_layers`` layers (None: all),
    and the longest input the tokenizer and the position embeddings allow. Raises ``ValueError`` for a
    model without ``encoder.layer`` or with fewer layers than asked. Both runtimes build the module
    here (:class:`reasonscope.scorers.similarity.BERTScoreF1`, :mod:`reasonscope.scorers.onnx_export`).
    """
    import torch

    if hasattr(net, "decoder") and hasattr(net, "encoder"):
        net = net.encoder
    layers = getattr(getattr(net, "encoder", None), "layer", None)
    if layers is None:
        raise ValueError(f"{model}: BERTScore supports encoders with encoder.layer (BERT, RoBERTa, DeBERTa, "
                         "MiniLM, ...)")
    if num_layers is not None:
        if num_layers > len(layers):
            raise ValueError(f"{model}: num_layers={num_layers}, but the model has {len(layers)} layers")
        net.encoder.layer = torch.nn.ModuleList(list(layers)[:num_layers])
    return net, min(int(tokenizer.model_max_length), int(getattr(net.config, "max_position_embeddings", 512)))


class GreedyBERTScore(Similarity):
    """BERTScore F1 from each text's unit token vectors (module docstring); subclasses implement :meth:`vectors`."""

    def vectors(self, texts: Sequence[str]) -> list:
        """Each text's unit token vectors (tokens x dim, numpy), with a weight per token (0 for [CLS], [SEP])."""
        raise NotImplementedError

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        """BERTScore F1 of each pair ``(a[i], b[i])``, in [-1, 1]; higher is more similar.

        Greedy matching of unit token vectors with [CLS] and [SEP] left out: precision and recall are the mean
        best cosine of each token, F1 their harmonic mean; 0.0 when either text has no token or p + r = 0.
        """
        if not a:
            return []
        unique = sorted(set(a) | set(b), key=len)  # batches of similar length
        vec = dict(zip(unique, self.vectors(unique), strict=True))
        return [self._f1(vec[x], vec[y]) for x, y in zip(a, b, strict=True)]

    @staticmethod
    def _f1(x, y) -> float:
        (vx, wx), (vy, wy) = x, y
        if not wx.sum() or not wy.sum():
            return 0.0
        sim = vx @ vy.T
        p = float((sim.max(axis=1) * wx).sum() / wx.sum())
        r = float((sim.max(axis=0) * wy).sum() / wy.sum())
        return 2 * p * r / (p + r) if p + r else 0.0
