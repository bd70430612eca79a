"""Leakage terms and IRM environments for LAREV (seed 002).

Attribution
-----------
Integrated Gradients (captum ``LayerIntegratedGradients``) on the input-embedding layer of Phi_base,
input = the baseline input "baseline: b", target = log p(y | b) (the summed log-likelihood of the label
tokens), reference = the same sequence with every non-special token replaced by the pad token,
``n_steps`` = 20 (Riemann trapezoid). A token's attribution is the sum of its embedding attributions.

Leakage term t_leak
-------------------
Token attributions are summed per word of b (words = runs of letters/digits; a token belongs to the
word its character span overlaps), and t_leak is the word with the largest |attribution| among the
*content* words: stop words (scikit-learn's English list) and punctuation are excluded, so "the" or
"." can never be chosen (numbers are kept: in QA baselines the answer is often one). Its character span in b is kept.

Environments (one example -> three baselines)
---------------------------------------------
E1 the original b; E2 t_leak replaced by a mask symbol (the tokenizer's mask token, else ``<mask>``);
E3 t_leak replaced by an antonym (a number by another number, +- up to its own size, seeded), by the
first source that gives one: an LLM rewrite through any
provider (``antonym_model``), WordNet antonyms (when ``nltk`` and its WordNet data are installed),
else a random content word of the same part of speech drawn from the other baselines (part of speech
from lemminflect's lexicon; seeded). The source used is recorded per example.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[a-z]+)?")


@dataclass
class LeakageTerm:
    word: str
    start: int
    end: int
    attribution: float
    word_attributions: list[tuple[str, float]] = field(default_factory=list)


def stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS


def token_attributions(evaluator, text: str, target: str, *, n_steps: int = 20) -> tuple[list[tuple[int, int]], list[float]]:
    """(character offsets, attribution) of each input token of ``text`` (IG on the input embeddings)."""
    import torch
    from captum.attr import LayerIntegratedGradients

    tok = evaluator.tokenizer
    model = evaluator.model
    model.eval()
    enc = tok([text], return_tensors="pt", return_offsets_mapping=True, truncation=True,
              max_length=evaluator.max_input_tokens, add_special_tokens=evaluator.kind == "seq2seq")
    offsets = [tuple(o) for o in enc.pop("offset_mapping")[0].tolist()]
    ids = enc["input_ids"].to(evaluator.device)
    special = torch.tensor([tid in tok.all_special_ids for tid in ids[0].tolist()], device=ids.device)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    reference = torch.where(special, ids, torch.full_like(ids, pad))
    n_input = ids.shape[1]
    target_batch = evaluator.batch([text], [target])

    if evaluator.kind == "seq2seq":
        labels = target_batch["labels"].to(evaluator.device)
        layer = model.get_encoder().get_input_embeddings()

        def forward(input_ids):
            reps = input_ids.shape[0]
            out = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels.repeat(reps, 1))
            lp = torch.log_softmax(out.logits.float(), -1).gather(-1, labels.repeat(reps, 1)[..., None].clamp(min=0))
            return (lp[..., 0] * (labels.repeat(reps, 1) != -100)).sum(-1)
    else:
        full = target_batch["input_ids"].to(evaluator.device)
        labels = target_batch["labels"].to(evaluator.device)
        tail = full[:, full.shape[1] - (labels != -100).sum():]
        layer = model.get_input_embeddings()

        def forward(input_ids):
            reps = input_ids.shape[0]
            seq = torch.cat([input_ids, tail.repeat(reps, 1)], dim=1)
            logits = model(input_ids=seq).logits[:, n_input - 1:-1].float()
            return torch.log_softmax(logits, -1).gather(-1, tail.repeat(reps, 1)[..., None])[..., 0].sum(-1)

    lig = LayerIntegratedGradients(forward, layer)
    attr = lig.attribute(ids, baselines=reference, n_steps=n_steps, internal_batch_size=n_steps)
    values = attr.sum(-1)[0].detach().cpu().tolist()
    return offsets, [0.0 if s else v for v, s in zip(values, special.tolist(), strict=True)]


def leakage_term(text: str, offsets: list[tuple[int, int]], attributions: list[float]) -> LeakageTerm | None:
    """The content word of ``text`` with the largest |summed token attribution| (None if there is none)."""
    stops = stop_words()
    words = []
    for m in _WORD.finditer(text):
        score = sum(a for (s, e), a in zip(offsets, attributions, strict=True) if e > m.start() and s < m.end()
                    and e > s)
        words.append((m, score))
    table = [(m.group(0), round(a, 6)) for m, a in words]
    content = [(m, a) for m, a in words if m.group(0).lower() not in stops]
    if not content:
        return None
    m, a = max(content, key=lambda x: abs(x[1]))
    return LeakageTerm(m.group(0), m.start(), m.end(), a, table)


def replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def wordnet_antonym(word: str) -> str | None:
    try:
        from nltk.corpus import wordnet as wn

        for syn in wn.synsets(word):
            for lemma in syn.lemmas():
                for ant in lemma.antonyms():
                    return ant.name().replace("_", " ")
    except (ImportError, LookupError):
        return None
    return None


def part_of_speech(word: str) -> str | None:
    try:
        from lemminflect import getAllLemmas
    except ImportError:
        return None
    lemmas = getAllLemmas(word.lower())
    return next(iter(lemmas), None)


@dataclass
class AntonymSource:
    """Antonyms for leakage terms: ``llm`` (word -> antonym or None), then WordNet, then a random word of the
    same part of speech from ``pool``."""

    pool: list[str]
    llm: Callable[[str, str], str | None] | None = None  # (word, sentence) -> antonym
    seed: int = 0

    def __call__(self, word: str, sentence: str, key: str) -> tuple[str, str]:
        rng = random.Random(f"{self.seed}|{key}|{word}")
        if word.isdigit():  # a number has no antonym: another number of the same size
            return str(int(word) + rng.choice([-1, 1]) * rng.randint(1, max(1, int(word)))), "other number"
        if self.llm is not None:
            ant = self.llm(word, sentence)
            if ant:
                return ant, "llm"
        ant = wordnet_antonym(word)
        if ant:
            return ant, "wordnet"
        pos = part_of_speech(word)
        same = sorted({w for w in self.pool if w.lower() != word.lower() and pos is not None
                       and part_of_speech(w) == pos})
        if same:
            return rng.choice(same), f"random {pos}"
        others = sorted({w for w in self.pool if w.lower() != word.lower()})
        return (rng.choice(others), "random word (part of speech unknown)") if others else ("something", "fixed")


def environments(baseline: str, term: LeakageTerm | None, mask_token: str, antonym: AntonymSource, key: str
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """({"original", "mask", "antonym"} -> baseline text, provenance)."""
    if term is None:
        return {"original": baseline, "mask": baseline, "antonym": baseline}, {"antonym": "no content word"}
    ant, source = antonym(term.word, baseline, key)
    return ({"original": baseline, "mask": replace_span(baseline, term.start, term.end, mask_token),
             "antonym": replace_span(baseline, term.start, term.end, ant)},
            {"leak": term.word, "antonym": ant, "antonym_source": source})


def content_words(texts: list[str]) -> list[str]:
    stops = stop_words()
    return sorted({w for t in texts for w in _WORD.findall(t) if w.lower() not in stops and w.isalpha()})
