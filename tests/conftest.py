"""Shared fixtures: tiny models built in the test session (config + a tokenizer trained here, saved to
a temp dir and loaded through the real ``from_pretrained`` path). No download, no network."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CORPUS = [
    "Ana has 3 apples and gets 5 more . How many apples does Ana have ?",
    "Step one : 3 + 5 = 8 . Answer : 8",
    "The sky is blue . The sky is not blue . All birds are animals .",
    "A robin is a bird . Is a robin an animal ? Yes . No .",
    "entailment neutral contradiction premise hypothesis relation statement first second",
] * 4


def _train_wordpiece(folder):
    from tokenizers import BertWordPieceTokenizer

    tok = BertWordPieceTokenizer(lowercase=True)
    tok.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1)
    tok.save_model(str(folder))
    from transformers import BertTokenizerFast

    return BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory):
    """A 2-layer Llama with a byte-level BPE tokenizer trained on CORPUS."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-llama")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, special_tokens=["<s>", "</s>", "<pad>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory):
    """A 2-layer BERT cross-encoder with entailment/neutral/contradiction labels."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("tiny-nli")
    tok = _train_wordpiece(folder)
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, num_labels=3,
                     id2label={0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"},
                     label2id={"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2})
    BertForSequenceClassification(cfg).save_pretrained(folder)
    return folder
