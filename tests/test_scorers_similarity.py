"""scorers.similarity: embeddings pooled as each model defines them (sentence-transformers), or refused."""

from __future__ import annotations

import json

import pytest
import torch

from reasonscope.plan import SimilarityConfig
from reasonscope.scorers.similarity import EmbeddingCosine, UnknownPooling, make_similarity, resolve_model
from tolerance import assert_close_to_scale

TEXTS = ["The sky is blue .", "Ana has 3 apples and gets 5 more .", "A robin is a bird .", ""]


def _hidden(path, texts, max_length=256):
    """Last hidden states and attention masks of the bare HF model (the reference poolings start here)."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    enc = tok(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        return model(**enc).last_hidden_state, enc["attention_mask"]


def _mean(hidden, mask):
    m = mask[..., None].float()
    return torch.nn.functional.normalize((hidden * m).sum(1) / m.sum(1).clamp(min=1), dim=-1)


def _cls(hidden, mask):
    return torch.nn.functional.normalize(hidden[:, 0], dim=-1)


@pytest.fixture(scope="module")
def tiny_bert(tiny_nli):
    """A tiny BERT saved as a plain HF model (no sentence-transformers files)."""
    return tiny_nli


@pytest.fixture(scope="module")
def tiny_cls_encoder(tiny_bert, tmp_path_factory):
    """The same BERT saved as a sentence-transformers model whose configuration says CLS pooling."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    folder = tmp_path_factory.mktemp("tiny-cls")
    encoder = Transformer(str(tiny_bert))
    SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), pooling_mode="cls"),
                                 Normalize()], device="cpu").save(str(folder))
    assert json.loads((folder / "modules.json").read_text())[1]["type"].endswith("Pooling")
    return folder


def test_cls_pooled_model_gets_its_cls_vector_not_a_mean(tiny_bert, tiny_cls_encoder):
    sim = EmbeddingCosine(str(tiny_cls_encoder))
    assert sim.pooling == "cls" and sim.description.endswith(":cls-pooling")
    hidden, mask = _hidden(tiny_bert, TEXTS)
    got = sim.embed(TEXTS)
    assert_close_to_scale(got, _cls(hidden, mask))
    assert (got - _mean(hidden, mask)).abs().max() > 0.05  # what hand mean pooling used to return
    assert sim.pairwise(TEXTS[:2], TEXTS[:2]) == [pytest.approx(1.0, abs=1e-5)] * 2


def test_model_without_pooling_configuration_is_refused_unless_stated(tiny_bert):
    with pytest.raises(UnknownPooling, match="no sentence-transformers configuration .* state the pooling"):
        EmbeddingCosine(str(tiny_bert))
    sim, reason = make_similarity(SimilarityConfig(method="embedding", model=str(tiny_bert)))
    assert sim is None and "pooling" in reason
    hidden, mask = _hidden(tiny_bert, TEXTS)
    stated = EmbeddingCosine(str(tiny_bert), pooling="cls")
    assert_close_to_scale(stated.embed(TEXTS), _cls(hidden, mask))
    mean = make_similarity(SimilarityConfig(method="embedding", model=str(tiny_bert), pooling="mean"))[0]
    assert mean.description.endswith(":mean-pooling")
    assert_close_to_scale(mean.embed(TEXTS), _mean(hidden, mask))


def test_embedded_minilm_loads_offline_with_its_mean_pooling_and_unchanged_values():
    sim = EmbeddingCosine("embedded-minilm")
    assert sim.pooling == "mean" and sim.description == "embedding-cosine:embedded-minilm:mean-pooling"
    texts = TEXTS + ["word " * 400]  # longer than the model's 256-token limit: truncated the same way
    hidden, mask = _hidden(resolve_model("embedded-minilm"), texts)
    assert (sim.embed(texts) - _mean(hidden, mask)).abs().max() < 1e-6
