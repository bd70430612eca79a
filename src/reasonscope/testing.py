"""Tiny models built locally (a config plus a tokenizer trained here, saved with ``save_pretrained``)
for tests and benchmarks: they load through the real ``from_pretrained`` path with no download.
Their weights are random: they exercise code paths and costs, not quality."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "Ana has 3 apples and gets 5 more . How many apples does Ana have ?",
    "Step one : 3 + 5 = 8 . Answer : 8",
    "The sky is blue . The sky is not blue . All birds are animals .",
    "A robin is a bird . Is a robin an animal ? Yes . No .",
    "entailment neutral contradiction premise hypothesis relation statement first second",
] * 4


def build_tiny_causal_lm(folder: str | Path, hidden: int = 32, layers: int = 2) -> Path:
    """A small Llama with a byte-level BPE tokenizer trained on :data:`CORPUS`."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, special_tokens=["<s>", "</s>", "<pad>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


def build_tiny_nli(folder: str | Path, hidden: int = 32, layers: int = 2) -> Path:
    """A small BERT cross-encoder with ENTAILMENT / NEUTRAL / CONTRADICTION labels."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1)
    wp.save_model(str(folder))
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                     num_attention_heads=4, num_labels=3,
                     id2label={0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"},
                     label2id={"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2})
    BertForSequenceClassification(cfg).save_pretrained(folder)
    return folder
