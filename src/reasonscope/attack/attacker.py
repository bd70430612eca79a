r"""White-box MATCHA attacks on an HF causal LM: token level, embedding level, random baseline.

From *Misaligning Reasoning with Answers - A Framework for Assessing LLM CoT Robustness*
(arXiv:2505.17406).

Generation (:meth:`Attacker.answer_first_many`): greedy decoding from input embeddings with a KV
cache: the answer until the first newline (at most ``answer_tokens``), then ``"\nReasoning:"`` and
the chain of thought until a blank line or a new ``Question:`` (at most ``cot_tokens``). Greedy, so
the same input gives the same chain; the same decoder serves clean, token-perturbed and
embedding-perturbed inputs. Several inputs are decoded as one left-padded batch
(:meth:`Attacker.greedy_batch`): the clean chains of up to ``batch_size`` items at once, and the
perturbed chains of the methods of one or several items at once, after their searches
(:meth:`Attacker.regenerate`); a row that stops leaves the batch. A padded batch equals decoding each row
alone up to float rounding, which can flip a near-tie.

Token level (:meth:`Attacker.token_attack`)
    1. insert n = max(1, round(ratio * |q|)) random tokens into the question tokens q at random
       word boundaries (before a token that starts with a space, or at the end; never inside a word
       or a number), seeded per item. Random tokens come from the *word vocabulary*: tokens that
       decode to a space and 2-12 ASCII letters and re-encode to themselves. A draw that does not
       survive re-tokenisation or fails the meaning filter (embedding cosine to the original question
       below ``min_similarity``) is drawn again, at most ``insert_draws`` times in all (the draws are
       recorded); when no draw passes, the attack is *invalid* (kept, marked, excluded from the rates)
       instead of silently starting the search from a question the filter rejects, which would make
       the token attack reject every candidate and equal the random baseline;
    2. for ``steps`` rounds: the gradient g = d L_opt / d e of the objective with respect to the
       one-hot indicators e of the question tokens (embeddings = e @ W_emb); at each inserted
       position the ``top_k`` word-vocabulary tokens with the largest g are candidates; the
       ``candidates`` best (position, token) pairs by g are each evaluated with a forward pass and the
       best one is kept if it raises L_opt. A candidate is rejected before evaluation when the
       perturbed question does not survive re-tokenisation (decode, encode, compare ids) or when its
       embedding cosine to the original question (embedded MiniLM) is below ``min_similarity``. The
       search stops early when no candidate improves.
Embedding level (:meth:`Attacker.embedding_attack`)
    projected sign-gradient ascent of L_opt on the question's token embeddings only:
    delta <- clip(delta + (eps / 4) * sign(d L_opt / d delta), -eps, eps), ``steps`` = 5, with
    eps = p * max_v ||W_emb[v]||_inf (p = 0.005). Prompt, answer and reasoning embeddings are untouched.
Random baseline (:meth:`Attacker.random_attack`)
    the insertion of step 1 (the same seeded draws, so the same question the token search starts
    from) with no optimisation.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..models.forward_args import cache_argument, forward_takes, output_cache, select_cache_rows
from .layout import Layout, attack_losses, batch_losses, encode, make_layout
from .settings import AttackSettings  # the one declaration of the search parameters

_WORD = re.compile(r"^ [A-Za-z]{2,12}$")


@dataclass
class Chain:
    """An answer-first chain: the answer line and the reasoning that follows it."""

    answer: str
    reasoning: str


@dataclass
class AttackResult:
    """One method's attack on one item.

    ``seconds``: the method's search plus its share of the batched regeneration (``details.regeneration_s``,
    the wall time of the chains decoded together over their number, ``details.regeneration_batch``: the methods
    of one or several items); the clean chain is not included.
    """

    method: str
    perturbed_question: str | None  # None for embedding perturbations (no text)
    chain: Chain | None  # None until regenerated (Attacker.regenerate)
    objective_before: float
    objective_after: float
    inserted: list[int] = field(default_factory=list)  # positions of inserted tokens in the perturbed question
    rejected: dict[str, int] = field(default_factory=dict)
    steps_done: int = 0
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    # the random insertion (token and random methods): draws used, rejections by filter, whether one passed
    insertion: dict[str, Any] = field(default_factory=dict)
    invalid: str | None = None  # why the perturbed question is not a valid attack (None = valid)


@dataclass
class Perturbation:
    """A method's perturbed input before its chain is regenerated.

    Holds ``result`` (chain None, ``seconds`` the search alone), the layout to decode from and, for the
    embedding method, the question's embeddings.
    """

    result: AttackResult
    layout: Layout
    question_embeds: Any = None


@dataclass
class Insertion:
    """The random insertion a token attack starts from (and the random baseline is)."""

    question: list[int]
    inserted: list[int]
    draws: int
    rejected_retokenisation: int
    rejected_meaning: int
    similarity: float | None  # cosine to the original question (None without a meaning filter)
    passed: bool

    def record(self) -> dict[str, Any]:
        """The insertion's draw counts, similarity and outcome, as the item's record stores them."""
        return {"draws": self.draws, "rejected_retokenisation": self.rejected_retokenisation,
                "rejected_meaning": self.rejected_meaning, "similarity": self.similarity, "passed": self.passed}

    def invalid(self) -> str | None:
        """Why the insertion is not a valid attack (None when a draw passed)."""
        if self.passed:
            return None
        return (f"none of {self.draws} random insertions passed the filters ({self.rejected_retokenisation} changed "
                f"under re-tokenisation, {self.rejected_meaning} below the meaning filter's cosine)")


class Attacker:
    """The white-box MATCHA attacker of one model.

    Holds the white-box model (``.model``, ``.tokenizer``), the meaning filter and the batch size of the
    answer-first decoder; its searches and regeneration are run per item by
    :mod:`reasonscope.attack.item`.
    """

    def __init__(self, model, tokenizer, settings: AttackSettings, *, similarity=None, batch_size: int = 8):
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        self.batch_size = batch_size  # rows decoded together by answer_first_many
        self.similarity = similarity  # EmbeddingCosine-like (.pairwise(a, b)) or None
        self._words: list[int] | None = None
        self._prefix_cache = None  # the few-shot prefix's keys and values (prefix_cache.py), built on first use
        self._cache_supported: bool | None = None  # whether the model's forward takes a cache, read once
        # L_opt of unperturbed layouts and the meaning filter's cosines, by layout and by (original, text): the
        # methods of an item share the clean objective, the token and random methods the insertion (draws and
        # objective); bounded, cleared when full
        self._objective_memo: dict[tuple[tuple[int, ...], ...], float] = {}
        self._similarity_memo: dict[tuple[str, str], float] = {}
        self._original_embedding: tuple[str, Any] | None = None  # the last original question and its embedding
        self.device = next(model.parameters()).device
        for p in model.parameters():
            p.requires_grad_(False)

    def forget(self) -> None:
        """Drop what the attacker remembers between calls.

        The objectives, the meaning filter's cosines and the original question's embedding; the caches of computed
        keys and values stay.
        """
        self._objective_memo.clear()
        self._similarity_memo.clear()
        self._original_embedding = None

    # -- vocabulary ---------------------------------------------------------------------------
    def word_vocabulary(self) -> list[int]:
        """The token ids a random insertion draws from: word tokens that re-encode to themselves (cached).

        Raises:
            ValueError: The tokenizer has no such token.
        """
        if self._words is None:
            tok = self.tokenizer
            words = []
            for i in range(len(tok)):
                text = tok.decode([i])
                if _WORD.match(text) and encode(tok, text) == [i]:
                    words.append(i)
            if not words:
                raise ValueError("the tokenizer has no word tokens to insert")
            self._words = words
        return self._words

    def survives_retokenisation(self, question_ids: list[int]) -> bool:
        """Whether decoding ``question_ids`` and encoding the text again gives the same ids."""
        return encode(self.tokenizer, self.tokenizer.decode(question_ids)) == list(question_ids)

    def question_text(self, question_ids: list[int]) -> str:
        """The text of a (perturbed) question's token ids, stripped."""
        return self.tokenizer.decode(question_ids).strip()

    # -- generation ---------------------------------------------------------------------------
    def greedy_batch(self, rows: list[Any], max_new: int, stop: Callable[[list[int]], bool],
                     prefix_cache=None) -> list[list[int]]:
        """Greedy continuations of several rows of input embeddings (``[T_i, d]`` each), decoded together.

        Rows of different lengths are left-padded to the longest; the attention mask hides the padding
        and each row's position ids are ``cumsum(mask) - 1``, so a padded row gets the positions it has
        alone. One KV cache serves the batch. A row stops at the EOS token or at the first token ``t``
        with ``stop(ids + [t])`` true (``ids``: the row's tokens so far); that token is not kept. A stopped
        row leaves the batch: its rows of the cache and of the attention mask are dropped
        (:func:`~reasonscope.models.forward_args.select_cache_rows`) and the next steps run the live rows
        only, each with the keys and values it had. The loop ends when every row has stopped or after
        ``max_new`` tokens.

        Rows of equal length are stacked without a mask, so one row is exactly the unbatched decoder.
        A padded batch computes the same function, but its kernels round differently (other matrix
        shapes, a masked instead of a causal attention call): logits differ by float rounding, which can
        flip a near-tie between two tokens.

        ``prefix_cache`` (a :class:`~reasonscope.attack.prefix_cache.PrefixCache`): every row starts with the
        embeddings of its tokens (the few-shot prefix); their keys and values are read from it and only the
        rest of each row is run, the padding placed between the prefix and the rest (the same function, up to
        float rounding). Only the last position's logits are computed when the model's forward takes
        ``logits_to_keep``.
        """
        import torch

        if not rows:
            return []
        emb = self.model.get_input_embeddings()
        out: list[list[int]] = [[] for _ in rows]
        live = list(range(len(rows)))  # the row at each position of the batch
        cache_name = cache_argument(self.model) or "past_key_values"
        with torch.no_grad():
            res, mask = self.prompt_forward(rows, prefix_cache)
            cache = output_cache(res)
            for step in range(max_new):
                nxt = res.logits[:, -1].argmax(-1).tolist()
                kept = []  # the positions whose row goes on
                for b, t in enumerate(nxt):
                    row = out[live[b]]
                    if t != self.tokenizer.eos_token_id and not stop(row + [t]):
                        row.append(t)
                        kept.append(b)
                if not kept or step + 1 == max_new:
                    break
                if len(kept) < len(live):  # stopped rows leave the batch
                    index = torch.tensor(kept, device=self.device)
                    cache = select_cache_rows(cache, index)
                    mask = mask[index] if mask is not None else None
                    live, nxt = [live[b] for b in kept], [nxt[b] for b in kept]
                if mask is not None:
                    mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=1)
                res = self.model(inputs_embeds=emb(torch.tensor(nxt, device=self.device)[:, None]),
                                 **{cache_name: cache}, use_cache=True, **_padding(mask, 1))
                cache = output_cache(res)
        return out

    def prompt_forward(self, rows: list[Any], prefix_cache=None) -> tuple[Any, Any]:
        """The forward of :meth:`greedy_batch`'s prompts: ``(output, attention mask)``, the mask None without padding.

        The rows left-padded (:func:`left_padded`) after the ``prefix_cache``'s positions, which are read from it; only
        the last position's logits when the model's forward takes ``logits_to_keep``. Call under ``torch.no_grad()``.
        """
        start = len(prefix_cache) if prefix_cache is not None else 0
        embeds, mask = left_padded(rows, start)
        first = {}
        if prefix_cache is not None:
            first[cache_argument(self.model) or "past_key_values"] = prefix_cache.fresh(len(rows))
        if forward_takes(self.model, "logits_to_keep"):
            first["logits_to_keep"] = 1
        return self.model(inputs_embeds=embeds, use_cache=True, **first, **_padding(mask, embeds.shape[1])), mask

    def _prompt_embeds(self, layout: Layout, question_embeds=None):
        """Embeddings [T, d] of prefix + question + suffix; ``question_embeds`` replaces the question's."""
        import torch

        embeds = self.model.get_input_embeddings()(
            torch.tensor(layout.prefix + layout.question + layout.suffix, device=self.device))
        if question_embeds is None:
            return embeds
        q0 = layout.question_start
        return torch.cat([embeds[:q0], question_embeds, embeds[q0 + len(layout.question):]])

    def answer_first_many(self, layouts: list[Layout], question_embeds_list: list[Any] | None = None) -> list[Chain]:
        r"""Greedy answer, then greedy reasoning conditioned on it, for each layout's prompt part.

        Decoded ``batch_size`` rows at a time (:meth:`greedy_batch`): all answers of a batch first (until a
        newline, at most ``answer_tokens``), then all chains (``" " + answer`` and ``"\nReasoning:"``
        appended; until a blank line or ``Question:``, at most ``cot_tokens``). ``question_embeds_list``
        (one entry per layout, None for the layout's own question) replaces question embeddings.
        """
        qs = list(question_embeds_list) if question_embeds_list is not None else [None] * len(layouts)
        if len(qs) != len(layouts):
            raise ValueError(f"{len(layouts)} layouts but {len(qs)} question embeddings")
        out: list[Chain] = []
        for i in range(0, len(layouts), self.batch_size):
            out += self._answer_first_batch(layouts[i:i + self.batch_size], qs[i:i + self.batch_size])
        return out

    def _answer_first_batch(self, layouts: list[Layout], question_embeds_list: list[Any]) -> list[Chain]:
        import torch

        s, tok = self.settings, self.tokenizer
        emb = self.model.get_input_embeddings()
        # the few-shot prefix's keys and values, when every layout starts with it (question embeddings replace
        # only the question's)
        cache = self.prefix_cache(layouts[0]) if layouts else None
        if cache is not None and not all(cache.matches(lay.prefix) for lay in layouts):
            cache = None
        with torch.no_grad():
            prompts = [self._prompt_embeds(lay, q) for lay, q in zip(layouts, question_embeds_list, strict=True)]
            answers = [tok.decode(ids).strip() for ids in
                       self.greedy_batch(prompts, s.answer_tokens, lambda ids: "\n" in tok.decode(ids), cache)]
            fulls = [torch.cat([p, emb(torch.tensor((encode(tok, " " + a) if a else []) + lay.mid,
                                                    device=self.device))])
                     for p, a, lay in zip(prompts, answers, layouts, strict=True)]
            cots = self.greedy_batch(fulls, s.cot_tokens,
                                     lambda ids: "\n\n" in tok.decode(ids) or "Question:" in tok.decode(ids), cache)
        return [Chain(a, tok.decode(c).strip()) for a, c in zip(answers, cots, strict=True)]

    def answer_first(self, layout: Layout, question_embeds=None) -> Chain:
        """:meth:`answer_first_many` of one layout (no padding: the unbatched greedy decoder)."""
        return self.answer_first_many([layout], [question_embeds])[0]

    def regenerate(self, perturbations: list[Perturbation]) -> list[AttackResult]:
        """Decode the answer-first chains of several perturbed inputs as one batch, into their results.

        The perturbations may come from several items (:func:`reasonscope.attack.item.finish_items`). Timing:
        ``details.regeneration_s`` is the call's wall time divided by its chains (``details.regeneration_batch``),
        and it is added to ``seconds`` (which held the search alone), so the methods' ``seconds`` of the items
        sum to their attack time after the clean chains.
        """
        start = time.perf_counter()
        chains = self.answer_first_many([p.layout for p in perturbations],
                                        [p.question_embeds for p in perturbations])
        share = (time.perf_counter() - start) / max(1, len(perturbations))
        out = []
        for p, chain in zip(perturbations, chains, strict=True):
            res = p.result
            res.chain = chain
            res.details.update(regeneration_s=share, regeneration_batch=len(perturbations))
            res.seconds += share
            out.append(res)
        return out

    # -- objective ----------------------------------------------------------------------------
    def lam(self, layout: Layout) -> float:
        """The lambda of L_opt = L_c - lambda * L_a: the setting, else ``|C| / |A|`` of ``layout``."""
        return self.settings.lam if self.settings.lam is not None else layout.default_lambda

    def prefix_cache(self, layout: Layout):
        """The keys and values of ``layout``'s few-shot prefix, computed once.

        See :mod:`reasonscope.attack.prefix_cache`. None when the model's forward takes no cache.
        """
        from .prefix_cache import PrefixCache

        if self._cache_supported is None:
            self._cache_supported = PrefixCache.supported(self.model)
        if not layout.prefix or not self._cache_supported:
            return None
        if self._prefix_cache is None or not self._prefix_cache.matches(layout.prefix):
            self._prefix_cache = PrefixCache(self.model, layout.prefix)
        return self._prefix_cache

    def losses(self, layout: Layout, question_embeds=None):
        """(L_a, L_c) of ``layout``, the prefix read from its cache."""
        return attack_losses(self.model, layout, question_embeds, self.prefix_cache(layout))

    def objective(self, layout: Layout, question_embeds=None) -> float:
        """The attack objective L_opt = L_c - lambda * L_a of ``layout`` (maximised; no gradient).

        Remembered for a layout without ``question_embeds`` (the clean layout, read by each method's
        ``objective_before``; the insertion, by the token and random methods).
        """
        import torch

        key = None if question_embeds is not None else tuple(
            tuple(part) for part in (layout.prefix, layout.question, layout.suffix, layout.answer, layout.mid, layout.cot))
        if key is not None and key in self._objective_memo:
            return self._objective_memo[key]
        with torch.no_grad():
            la, lc = self.losses(layout, question_embeds)
        value = float(lc - self.lam(layout) * la)
        if key is not None:
            if len(self._objective_memo) >= 64:
                self._objective_memo.clear()
            self._objective_memo[key] = value
        return value

    def stem_cache(self, layout: Layout, question_tokens: int):
        """The keys and values of ``layout``'s prefix and its question's first ``question_tokens`` tokens.

        The few-shot prefix's cache extended by those tokens (:meth:`PrefixCache.extended
        <reasonscope.attack.prefix_cache.PrefixCache.extended>`); None when the model's forward takes no cache.
        """
        prefix = self.prefix_cache(layout)
        if prefix is None:
            return None
        return prefix.extended(self.model, layout.question[:question_tokens])

    def _objectives(self, layouts: list[Layout], batch: int = 8, *, base: Layout | None = None,
                    stem=None) -> list[float]:
        """L_opt of several layouts of equal length, batched, in the order given.

        With ``base`` (the layout they derive from: each differs from it in question tokens only) and ``stem``
        (a cache of ``base``'s first tokens, :meth:`stem_cache`), the layouts are scored in the order of their
        first token that differs from ``base``, ``batch`` at a time, each batch from its earliest differing
        token on: against ``stem`` extended by ``base``'s tokens up to there, the keys and values every row of
        the batch shares, the previous batch's extended further (same values up to float rounding). Otherwise each
        batch from the few-shot prefix on.
        """
        import torch

        order = list(range(len(layouts)))
        first: list[int] = []
        if base is not None and stem is not None and stem.holds(base.ids):
            end = base.question_start + len(base.question)
            first = [next((i for i in range(len(stem), end) if lay.ids[i] != base.ids[i]), end) for lay in layouts]
            order.sort(key=first.__getitem__)
        out = [0.0] * len(layouts)
        with torch.no_grad():
            for i in range(0, len(order), batch):
                rows = order[i:i + batch]
                chunk = [layouts[j] for j in rows]
                cache = self.prefix_cache(chunk[0])
                if first:  # the batches' heads grow: each extends the one before
                    head = min(first[j] for j in rows)
                    cache = stem = stem.extended(self.model, base.ids[len(stem):head])
                la, lc = batch_losses(self.model, chunk, cache)
                for j, value in zip(rows, (lc - self.lam(chunk[0]) * la).tolist(), strict=True):
                    out[j] = value
        return out

    # -- attacks ------------------------------------------------------------------------------
    def _insert(self, layout: Layout, rng: random.Random) -> tuple[list[int], list[int]]:
        q = list(layout.question)
        n = max(1, round(self.settings.ratio * len(q)))
        words = self.word_vocabulary()
        tok = self.tokenizer
        bounds = [i for i in range(1, len(q)) if tok.decode([q[i]]).startswith(" ")] + [len(q)]
        points = sorted(rng.choice(bounds) for _ in range(n))
        new, inserted = [], []
        j = 0
        for i, t in enumerate(q):
            while j < len(points) and points[j] == i:
                inserted.append(len(new))
                new.append(rng.choice(words))
                j += 1
            new.append(t)
        while j < len(points):
            inserted.append(len(new))
            new.append(rng.choice(words))
            j += 1
        return new, inserted

    def _rng(self, item_key: str, method: str) -> random.Random:
        return random.Random(f"{self.settings.seed}|{item_key}|{method}")

    def draw_insertion(self, layout: Layout, item_key: str, original_question: str) -> Insertion:
        """Seeded random insertions until one survives re-tokenisation and passes the meaning filter.

        At most ``insert_draws`` draws; the last draw is returned (``passed`` False) when none does.
        """
        rng = self._rng(item_key, "insert")
        retok = meaning = 0
        q, inserted, sim = list(layout.question), [], None
        for draw in range(1, self.settings.insert_draws + 1):
            q, inserted = self._insert(layout, rng)
            if not self.survives_retokenisation(q):
                retok += 1
                continue
            sim = self._similarities(original_question, [self.question_text(q)])[0]
            if sim is not None and sim < self.settings.min_similarity:
                meaning += 1
                continue
            return Insertion(q, inserted, draw, retok, meaning, sim, True)
        return Insertion(q, inserted, self.settings.insert_draws, retok, meaning, sim, False)

    def random_search(self, layout: Layout, item_key: str, original_question: str) -> Perturbation:
        """The random baseline's perturbed question (the seeded insertion), before regeneration."""
        start = time.perf_counter()
        before = self.objective(layout)
        ins = self.draw_insertion(layout, item_key, original_question)
        pert = layout.with_question(ins.question)
        res = AttackResult("random", self.question_text(ins.question), None, before, self.objective(pert),
                           ins.inserted, seconds=time.perf_counter() - start, insertion=ins.record(),
                           invalid=ins.invalid())
        return Perturbation(res, pert)

    def random_attack(self, layout: Layout, item_key: str, original_question: str) -> AttackResult:
        """The random baseline on one item: :meth:`random_search`, then the perturbed chain regenerated."""
        return self.regenerate([self.random_search(layout, item_key, original_question)])[0]

    def _similarities(self, original: str, texts: list[str]) -> list[float | None]:
        """Embedding cosine of each text to the original question (None each without a meaning filter).

        Remembered by (original, text): the token and random methods draw the same insertions. A filter that
        embeds (``embed``, as :class:`~reasonscope.scorers.similarity.EmbeddingCosine` does) embeds the original
        once per item, not once per text it is compared with (``pairwise`` of ``[original] * n``): each of those
        n rows is the embedding of the original alone (no padding in a batch of one text), and the cosines are the
        same products summed.
        """
        if self.similarity is None or self.settings.min_similarity is None or not texts:
            return [None] * len(texts)
        memo = self._similarity_memo
        todo = list(dict.fromkeys(t for t in texts if (original, t) not in memo))
        if todo:
            if len(memo) + len(todo) > 4096:
                memo.clear()
            if hasattr(self.similarity, "embed"):
                if self._original_embedding is None or self._original_embedding[0] != original:
                    self._original_embedding = (original, self.similarity.embed([original]))
                cosines = (self._original_embedding[1] * self.similarity.embed(todo)).sum(-1).tolist()
            else:
                cosines = self.similarity.pairwise([original] * len(todo), todo)
            memo.update(((original, t), float(x)) for t, x in zip(todo, cosines, strict=True))
        return [memo[(original, t)] for t in texts]

    def _similar_enough(self, original: str, texts: list[str]) -> list[bool]:
        return [x is None or x >= self.settings.min_similarity for x in self._similarities(original, texts)]

    def token_gradients(self, layout: Layout, stem=None):
        """Gradient d L_opt / d e for the one-hot indicators e of the question tokens: a [|q|, V] tensor.

        ``stem``: a cache of the layout's first tokens (:meth:`stem_cache`), read instead of running them; the
        rows of the question tokens it holds are zero (only the later rows are wanted). Without it the few-shot
        prefix's cache is read and every row is computed.
        """
        import torch

        W = self.model.get_input_embeddings().weight
        onehot = torch.nn.functional.one_hot(torch.tensor(layout.question, device=self.device),
                                             W.shape[0]).to(W.dtype).requires_grad_(True)
        if stem is not None and stem.holds(layout.ids):
            # onehot @ W is exactly W[question]: the rows the stem holds are the tokens' own embeddings
            la, lc = attack_losses(self.model, layout, onehot @ W, stem,
                                   own_embeddings=len(stem) - layout.question_start)
        else:
            la, lc = self.losses(layout, onehot @ W)
        (lc - self.lam(layout) * la).backward()
        return onehot.grad

    def token_search(self, layout: Layout, item_key: str, original_question: str) -> Perturbation:
        """The token-level search (module docstring) from the seeded insertion, before regeneration."""
        import torch

        start = time.perf_counter()
        s = self.settings
        before = self.objective(layout)
        ins = self.draw_insertion(layout, item_key, original_question)  # the random baseline's question
        inserted = ins.inserted
        current = layout.with_question(ins.question)
        best = self.objective(current)
        words = torch.tensor(self.word_vocabulary(), device=self.device)
        rejected = {"retokenisation": 0, "meaning": 0}
        steps_done = 0
        trace = [best]
        # the question before the first inserted token never changes: its keys and values are computed once
        stem = self.stem_cache(current, min(inserted)) if s.steps else None
        for _ in range(s.steps):
            grad = self.token_gradients(current, stem)
            pairs = []
            for pos in inserted:
                g = grad[pos, words]
                top = torch.topk(g, min(s.top_k, len(words)))
                pairs += [(float(v), pos, int(words[i])) for v, i in zip(top.values, top.indices, strict=True)
                          if int(words[i]) != current.question[pos]]
            pairs.sort(key=lambda p: -p[0])
            cands = []
            for _, pos, tok in pairs[: s.candidates]:
                qq = list(current.question)
                qq[pos] = tok
                if not self.survives_retokenisation(qq):
                    rejected["retokenisation"] += 1
                    continue
                cands.append(qq)
            ok = self._similar_enough(original_question, [self.question_text(c) for c in cands])
            rejected["meaning"] += sum(1 for x in ok if not x)
            cands = [c for c, keep in zip(cands, ok, strict=True) if keep]
            steps_done += 1
            if not cands:
                break
            values = self._objectives([current.with_question(c) for c in cands], base=current, stem=stem)
            k = max(range(len(values)), key=values.__getitem__)
            if values[k] <= best:
                break
            best, current = values[k], current.with_question(cands[k])
            trace.append(best)
        # a kept replacement passed both filters; with none kept the question is the insertion's
        invalid = ins.invalid() if len(trace) == 1 else None
        res = AttackResult("token", self.question_text(current.question), None, before, best, inserted, rejected,
                           steps_done, time.perf_counter() - start,
                           {"objective_trace": trace, "replacements_kept": len(trace) - 1},
                           insertion=ins.record(), invalid=invalid)
        return Perturbation(res, current)

    def token_attack(self, layout: Layout, item_key: str, original_question: str) -> AttackResult:
        """The token-level attack on one item: :meth:`token_search`, then the perturbed chain regenerated."""
        return self.regenerate([self.token_search(layout, item_key, original_question)])[0]

    def epsilon(self) -> float:
        """The L-inf budget eps = ``epsilon_p`` * the largest absolute value in the token-embedding matrix."""
        W = self.model.get_input_embeddings().weight
        return float(self.settings.epsilon_p * W.abs().max(dim=1).values.max())

    def embedding_delta(self, layout: Layout):
        """The perturbation delta [|q|, d] after the projected sign-gradient steps (and eps)."""
        import torch

        s = self.settings
        emb = self.model.get_input_embeddings()
        base = emb(torch.tensor(layout.question, device=self.device)).detach()
        eps = self.epsilon()
        delta = torch.zeros_like(base)
        for _ in range(s.embedding_steps):
            delta.requires_grad_(True)
            la, lc = self.losses(layout, base + delta)
            (lc - self.lam(layout) * la).backward()
            with torch.no_grad():
                delta = (delta + (eps / 4) * delta.grad.sign()).clamp(-eps, eps)
        return delta.detach(), base, eps

    def embedding_search(self, layout: Layout, item_key: str) -> Perturbation:
        """The embedding-level perturbation (module docstring), before regeneration."""
        start = time.perf_counter()
        before = self.objective(layout)
        delta, base, eps = self.embedding_delta(layout)
        after = self.objective(layout, base + delta)
        res = AttackResult("embedding", None, None, before, after, [], {}, self.settings.embedding_steps,
                           time.perf_counter() - start, {"epsilon": eps, "linf": float(delta.abs().max()),
                                                         "epsilon_p": self.settings.epsilon_p})
        return Perturbation(res, layout, base + delta)

    def embedding_attack(self, layout: Layout, item_key: str) -> AttackResult:
        """The embedding-level attack on one item: :meth:`embedding_search`, then the chain regenerated."""
        return self.regenerate([self.embedding_search(layout, item_key)])[0]

    def search(self, method: str, layout: Layout, item_key: str, original_question: str) -> Perturbation:
        """One method's perturbation of ``layout`` (``token``, ``embedding`` or ``random``), before regeneration."""
        if method == "token":
            return self.token_search(layout, item_key, original_question)
        if method == "embedding":
            return self.embedding_search(layout, item_key)
        if method == "random":
            return self.random_search(layout, item_key, original_question)
        raise ValueError(f"unknown attack method {method!r}; expected token, embedding or random")

    def layout_for(self, question: str, chain: Chain | None = None) -> Layout:
        """The answer-first layout of ``question``, with ``chain``'s answer and reasoning as targets."""
        return make_layout(self.tokenizer, question, chain.answer if chain else "", chain.reasoning if chain else "")


def left_padded(rows: list[Any], start: int = 0) -> tuple[Any, Any]:
    """The rows of input embeddings (``[T_i, d]`` each) after their first ``start`` as one left-padded batch.

    Returns ``(embeds, mask)``: ``embeds`` ``[n, width, d]`` with each row's embeddings at its end, and the attention
    mask ``[n, start + width]`` (1 for the ``start`` cached positions and each row's own, 0 for its padding); the
    mask is None when the rows have one length (stacked as they are).
    """
    import torch

    rows = [r[start:] for r in rows]
    n, width = len(rows), max(r.shape[0] for r in rows)
    if all(r.shape[0] == width for r in rows):
        return torch.stack(rows), None
    embeds = rows[0].new_zeros((n, width, rows[0].shape[1]))
    mask = torch.zeros((n, start + width), dtype=torch.long, device=rows[0].device)
    mask[:, :start] = 1
    for i, r in enumerate(rows):
        embeds[i, width - r.shape[0]:] = r
        mask[i, start + width - r.shape[0]:] = 1
    return embeds, mask


def _padding(mask, last: int) -> dict[str, Any]:
    """The attention mask and the position ids (``cumsum(mask) - 1``) of the ``last`` new columns.

    None without padding (the model's own positions, as for one row).
    """
    if mask is None:
        return {}
    return {"attention_mask": mask, "position_ids": (mask.cumsum(-1) - 1).clamp(min=0)[:, -last:]}
