"""Leakage terms and IRM environments for LAREV.

From Li, 2026, *LAREV: Leakage-Aware Rationale Evaluation with Conditional V-information*.

Attribution
-----------
Integrated Gradients (captum ``LayerIntegratedGradients``) on the input-embedding layer of Phi_base,
input = the baseline input "baseline: b", target = log p(y | b) (the summed log-likelihood of the label
tokens), reference = the same sequence with every non-special token replaced by the pad token,
``n_steps`` = 20 (captum's default Gauss-Legendre rule). A token's attribution is the sum of its
embedding attributions. Texts are attributed in batches (``ig_batch_size`` texts per call, padded, the
attention mask keeping padding out; :func:`batch_token_attributions`), with a progress bar, and every
result is cached on disk by (Phi_base's fingerprint, text, label, ``n_steps``) so that a resumed or
repeated run does not attribute a text twice (:func:`leakage_attributions`).

Leakage term t_leak
-------------------
Token attributions are summed per word of b (words = runs of letters/digits; a token belongs to the
word its character span overlaps; punctuation is never a word), and t_leak is the word with the largest
|attribution|. ``leak_terms`` says which words may be chosen: ``any`` (the default, the thesis's rule:
every word, so a function word such as "that" or "the" can be chosen, which the thesis names as a
limitation) or ``content`` (stop words, scikit-learn's English list, excluded; numbers are kept: in QA
baselines the answer is often one). Its character span in b is kept.

Environments (one example -> three baselines)
---------------------------------------------
E1 the original b; E2 t_leak replaced by a mask symbol (the tokenizer's mask token, else ``<mask>``);
E3 t_leak replaced by an antonym (a number by another number, +- up to its own size, seeded), by the
first source that gives one: an LLM rewrite through any
provider (``antonym_model``), WordNet antonyms (``wordnet``: by default the WordNet 3.1 pairs shipped with reasonscope, or a folder
of WordNet database files, or nltk's data: :mod:`reasonscope.information.wordnet`),
else a random content word of the same part of speech drawn from the other baselines (part of speech
from lemminflect's lexicon; seeded). The source used is recorded per example. A random word is a
substitution, not an antonym (E3 then only breaks the leak term's correlation with the label instead
of reversing it): such examples are counted (:func:`is_substitute`), warned about and shown in the
report, as are LLM antonym requests that gave nothing usable ("(llm gave none)").
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[a-z]+)?")


@dataclass
class LeakageTerm:
    """The leakage term of a baseline: the content word with the largest absolute attribution.

    ``word`` spans ``[start, end)`` of the baseline text; ``attribution`` is its summed token attribution
    (signed); ``word_attributions`` lists every word of the baseline with its own sum (for the tables).
    """

    word: str
    start: int
    end: int
    attribution: float
    word_attributions: list[tuple[str, float]] = field(default_factory=list)


def stop_words() -> frozenset[str]:
    """The words never taken as a leakage term: scikit-learn's English stop words."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS


def token_attributions(evaluator, text: str, target: str, *, n_steps: int = 20) -> tuple[list[tuple[int, int]], list[float]]:
    """(character offsets, attribution) of each input token of ``text`` (IG on the input embeddings)."""
    return batch_token_attributions(evaluator, [text], [target], n_steps=n_steps)[0]


def batch_token_attributions(evaluator, texts: list[str], targets: list[str], *, n_steps: int = 20
                             ) -> list[tuple[list[tuple[int, int]], list[float]]]:
    """:func:`token_attributions` of several texts in one attribution call (seq2seq evaluators).

    The texts are padded to one length, the attention mask keeps the padding out of every forward pass, and
    captum runs all ``len(texts) * n_steps`` interpolation points as one batch. A causal evaluator is
    attributed one text at a time (its target follows the input, so padding would sit between them).
    """
    import torch
    from captum.attr import LayerIntegratedGradients

    if not texts:
        return []
    if evaluator.kind != "seq2seq" and len(texts) > 1:
        return [row for t, y in zip(texts, targets, strict=True)
                for row in batch_token_attributions(evaluator, [t], [y], n_steps=n_steps)]
    tok = evaluator.tokenizer
    model = evaluator.model
    model.eval()
    enc = tok(list(texts), return_tensors="pt", return_offsets_mapping=True, truncation=True, padding=True,
              max_length=evaluator.max_input_tokens, add_special_tokens=evaluator.kind == "seq2seq")
    offsets = [[tuple(o) for o in row] for row in enc.pop("offset_mapping").tolist()]
    ids = enc["input_ids"].to(evaluator.device)
    mask = enc["attention_mask"].to(evaluator.device)
    special_ids = torch.tensor(sorted(set(tok.all_special_ids)), device=ids.device)
    special = torch.isin(ids, special_ids) | (mask == 0)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    reference = torch.where(special, ids, torch.full_like(ids, pad))
    target_batch = evaluator.batch(list(texts), list(targets))

    if evaluator.kind == "seq2seq":
        labels = target_batch["labels"].to(evaluator.device)
        layer = model.get_encoder().get_input_embeddings()

        def forward(input_ids, attention_mask, labels):
            out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
            lp = torch.log_softmax(out.logits.float(), -1).gather(-1, labels.clamp(min=0)[..., None])[..., 0]
            return (lp * (labels != -100)).sum(-1)

        extra = (mask, labels)
    else:
        full = target_batch["input_ids"].to(evaluator.device)
        lab = target_batch["labels"].to(evaluator.device)
        tail = full[:, full.shape[1] - (lab != -100).sum():]
        n_input = ids.shape[1]
        layer = model.get_input_embeddings()

        def forward(input_ids):
            reps = input_ids.shape[0]
            seq = torch.cat([input_ids, tail.repeat(reps, 1)], dim=1)
            logits = model(input_ids=seq).logits[:, n_input - 1:-1].float()
            return torch.log_softmax(logits, -1).gather(-1, tail.repeat(reps, 1)[..., None])[..., 0].sum(-1)

        extra = None
    lig = LayerIntegratedGradients(forward, layer)
    attr = lig.attribute(ids, baselines=reference, additional_forward_args=extra, n_steps=n_steps,
                         internal_batch_size=n_steps * len(texts))
    attr = attr[:, : ids.shape[1]]  # a causal model's embedding layer also sees the target tokens after the input
    values = attr.sum(-1).detach().cpu().masked_fill(special.cpu(), 0.0).tolist()
    out = []
    for row_offsets, row_values, row_mask in zip(offsets, values, mask.cpu().tolist(), strict=True):
        n = sum(row_mask)  # right padding: the first n positions are the text's own tokens
        out.append((row_offsets[:n], row_values[:n]))
    return out


def leakage_attributions(evaluator, texts: list[str], targets: list[str], *, n_steps: int = 20, batch_size: int = 4,
                         cache=None, console=None, label: str = "integrated gradients"
                         ) -> list[tuple[list[tuple[int, int]], list[float]]]:
    """Token attributions of many texts, cached and batched.

    Each is looked up in ``cache`` (an
    :class:`~reasonscope.information.ig_cache.AttributionCache` of this evaluator and ``n_steps``) under
    (text, target), the rest computed ``batch_size`` texts per attribution call (texts sorted by length,
    so that a batch carries little padding) with a progress bar, each batch written to the cache as soon
    as it is done (a killed run keeps what it computed). Returns the attributions in the order of ``texts``.
    """
    keys = [cache.key(t, y) if cache is not None else str(i)
            for i, (t, y) in enumerate(zip(texts, targets, strict=True))]
    found = cache.get_many(keys) if cache is not None else {}
    # texts of similar length share a batch, so little of each attribution call is spent on padding
    todo = sorted((i for i, k in enumerate(keys) if k not in found), key=lambda i: len(texts[i]))
    progress = None
    if console is not None and todo:
        from ..execution.calls import make_progress

        progress = make_progress(console)
        progress.start()
        task = progress.add_task(f"{label} ({len(texts) - len(todo)} cached)", total=len(todo))
    try:
        for start in range(0, len(todo), max(1, batch_size)):
            chunk = todo[start:start + max(1, batch_size)]
            rows = batch_token_attributions(evaluator, [texts[i] for i in chunk], [targets[i] for i in chunk],
                                            n_steps=n_steps)
            fresh = {keys[i]: row for i, row in zip(chunk, rows, strict=True)}
            found.update(fresh)
            if cache is not None:
                cache.put_many(fresh)
            if progress is not None:
                progress.advance(task, len(chunk))
    finally:
        if progress is not None:
            progress.stop()
    return [found[k] for k in keys]


def leakage_term(text: str, offsets: list[tuple[int, int]], attributions: list[float], *,
                 exclude_stop_words: bool = False) -> LeakageTerm | None:
    """The word of ``text`` with the largest |summed token attribution| (None if there is none).

    With ``exclude_stop_words`` only content words compete (scikit-learn's English stop words left out:
    ``leak_terms: content``); without, every word does (``leak_terms: any``, the LAREV thesis's rule).
    """
    stops = stop_words() if exclude_stop_words else frozenset()
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
    """``text`` with its characters ``[start, end)`` replaced by ``new``."""
    return text[:start] + new + text[end:]


def wordnet_status(folder: str | None = None) -> str | None:
    """None when WordNet antonyms can be looked up from ``folder`` (the ``wordnet`` setting); else why not."""
    from .wordnet import open_wordnet

    return open_wordnet(folder)[1]


def wordnet_antonym(word: str, folder: str | None = None) -> str | None:
    """WordNet's antonym of ``word`` (:mod:`reasonscope.information.wordnet`).

    None when it has none or no WordNet can be read.
    """
    from .wordnet import first_antonym, open_wordnet

    reader, _ = open_wordnet(folder)
    return None if reader is None else first_antonym(reader, word)


def part_of_speech(word: str) -> str | None:
    """The first part of speech lemminflect finds for ``word`` (e.g. ``NOUN``), or None."""
    try:
        from lemminflect import getAllLemmas
    except ImportError:
        return None
    lemmas = getAllLemmas(word.lower())
    return next(iter(lemmas), None)


@dataclass
class AntonymSource:
    """Antonyms for leakage terms.

    Tried in order: ``llm`` (word -> antonym or None), then WordNet, then a random word of the same part
    of speech from ``pool``.
    """

    pool: list[str]
    llm: Callable[[str, str], str | None] | None = None  # (word, sentence) -> antonym
    seed: int = 0
    wordnet: str | None = None  # the ``wordnet`` setting; None: the shipped WordNet antonyms

    def __call__(self, word: str, sentence: str, key: str) -> tuple[str, str]:
        """The replacement of ``word`` in ``sentence`` and its source.

        A number gets another number of the same size; else the first of the LLM, WordNet, a random
        ``pool`` word of the same part of speech, any other ``pool`` word, or ``"something"``. Random
        choices are seeded by ``seed``, ``key`` and ``word``. The source names the step, with
        `` (llm gave none)`` when the LLM was asked and gave nothing.
        """
        rng = random.Random(f"{self.seed}|{key}|{word}")
        if word.isdigit():  # a number has no antonym: another number of the same size
            return str(int(word) + rng.choice([-1, 1]) * rng.randint(1, max(1, int(word)))), "other number"
        note = ""
        if self.llm is not None:
            ant = self.llm(word, sentence)
            if ant:
                return ant, "llm"
            note = " (llm gave none)"
        ant = wordnet_antonym(word, self.wordnet)
        if ant:
            return ant, "wordnet" + note
        pos = part_of_speech(word)
        same = sorted({w for w in self.pool if w.lower() != word.lower() and pos is not None
                       and part_of_speech(w) == pos})
        if same:
            return rng.choice(same), f"random {pos}{note}"
        others = sorted({w for w in self.pool if w.lower() != word.lower()})
        return (rng.choice(others), f"random word (part of speech unknown){note}") if others else ("something",
                                                                                                  f"fixed{note}")


def is_substitute(source: str) -> bool:
    """Whether an antonym source is a stand-in rather than an antonym (a random word, a fixed word)."""
    return source.startswith(("random", "fixed"))


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
    """The sorted distinct alphabetic words of ``texts`` that are not stop words (the antonym pool)."""
    stops = stop_words()
    return sorted({w for t in texts for w in _WORD.findall(t) if w.lower() not in stops and w.isalpha()})
