"""White-box MATCHA attacks on an HF causal LM (*Misaligning Reasoning with Answers - A Framework for
Assessing LLM CoT Robustness*, arXiv:2505.17406): token level, embedding level, random baseline.

Generation (:meth:`Attacker.answer_first`): greedy decoding from input embeddings with a KV cache:
the answer until the first newline (at most ``answer_tokens``), then ``"\\nReasoning:"`` and the
chain of thought until a blank line or a new ``Question:`` (at most ``cot_tokens``). Greedy, so the
same input gives the same chain; the same decoder serves clean, token-perturbed and
embedding-perturbed inputs.

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
from dataclasses import dataclass, field
from typing import Any

from .layout import Layout, attack_losses, encode, losses_from_logits, make_layout

_WORD = re.compile(r"^ [A-Za-z]{2,12}$")


@dataclass
class AttackSettings:
    ratio: float = 0.2
    steps: int = 5
    top_k: int = 8
    candidates: int = 16
    lam: float | None = None  # None: |CoT| / |answer|
    epsilon_p: float = 0.005
    embedding_steps: int = 5
    min_similarity: float | None = 0.8
    answer_tokens: int = 16
    cot_tokens: int = 96
    insert_draws: int = 20
    seed: int = 0


@dataclass
class Chain:
    answer: str
    reasoning: str


@dataclass
class AttackResult:
    method: str
    perturbed_question: str | None  # None for embedding perturbations (no text)
    chain: Chain
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
        return {"draws": self.draws, "rejected_retokenisation": self.rejected_retokenisation,
                "rejected_meaning": self.rejected_meaning, "similarity": self.similarity, "passed": self.passed}

    def invalid(self) -> str | None:
        """Why the insertion is not a valid attack (None when a draw passed)."""
        if self.passed:
            return None
        return (f"none of {self.draws} random insertions passed the filters ({self.rejected_retokenisation} changed "
                f"under re-tokenisation, {self.rejected_meaning} below the meaning filter's cosine)")


class Attacker:
    """Holds the white-box model (``.model``, ``.tokenizer``) and, lazily, the meaning filter."""

    def __init__(self, model, tokenizer, settings: AttackSettings, *, similarity=None):
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        self.similarity = similarity  # EmbeddingCosine-like (.pairwise(a, b)) or None
        self._words: list[int] | None = None
        self.device = next(model.parameters()).device
        for p in model.parameters():
            p.requires_grad_(False)

    # -- vocabulary ---------------------------------------------------------------------------
    def word_vocabulary(self) -> list[int]:
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
        return encode(self.tokenizer, self.tokenizer.decode(question_ids)) == list(question_ids)

    def question_text(self, question_ids: list[int]) -> str:
        return self.tokenizer.decode(question_ids).strip()

    # -- generation ---------------------------------------------------------------------------
    def _greedy(self, embeds, past, max_new: int, stop) -> tuple[list[int], Any]:
        import torch

        emb = self.model.get_input_embeddings()
        out: list[int] = []
        with torch.no_grad():
            res = self.model(inputs_embeds=embeds, past_key_values=past, use_cache=True)
            for _ in range(max_new):
                nxt = int(res.logits[0, -1].argmax())
                if nxt == self.tokenizer.eos_token_id or stop(out + [nxt]):
                    break
                out.append(nxt)
                res = self.model(inputs_embeds=emb(torch.tensor([[nxt]], device=self.device)),
                                 past_key_values=res.past_key_values, use_cache=True)
        return out, res.past_key_values

    def answer_first(self, layout: Layout, question_embeds=None) -> Chain:
        """Greedy answer, then greedy reasoning conditioned on it, from the prompt part of ``layout``."""
        import torch

        emb = self.model.get_input_embeddings()
        s = self.settings
        tok = self.tokenizer
        with torch.no_grad():
            prompt_ids = layout.prefix + layout.question + layout.suffix
            embeds = emb(torch.tensor(prompt_ids, device=self.device))
            if question_embeds is not None:
                q0 = layout.question_start
                embeds = torch.cat([embeds[:q0], question_embeds, embeds[q0 + len(layout.question):]])
            answer_ids, _ = self._greedy(embeds[None], None, s.answer_tokens,
                                         lambda ids: "\n" in tok.decode(ids))
            answer = tok.decode(answer_ids).strip()
            answer_ids = encode(tok, " " + answer) if answer else []
            tail = answer_ids + layout.mid
            full = torch.cat([embeds, emb(torch.tensor(tail, device=self.device))])
            cot_ids, _ = self._greedy(full[None], None, s.cot_tokens,
                                      lambda ids: "\n\n" in tok.decode(ids) or "Question:" in tok.decode(ids))
        return Chain(answer, tok.decode(cot_ids).strip())

    def _timed_chain(self, layout: Layout, question_embeds=None) -> tuple[Chain, float]:
        start = time.perf_counter()
        chain = self.answer_first(layout, question_embeds)
        return chain, time.perf_counter() - start

    # -- objective ----------------------------------------------------------------------------
    def lam(self, layout: Layout) -> float:
        return self.settings.lam if self.settings.lam is not None else layout.default_lambda

    def objective(self, layout: Layout, question_embeds=None) -> float:
        import torch

        with torch.no_grad():
            la, lc = attack_losses(self.model, layout, question_embeds)
        return float(lc - self.lam(layout) * la)

    def _objectives(self, layouts: list[Layout], batch: int = 8) -> list[float]:
        """L_opt of several layouts of equal length, batched."""
        import torch

        out = []
        with torch.no_grad():
            for i in range(0, len(layouts), batch):
                chunk = layouts[i:i + batch]
                ids = torch.tensor([lay.ids for lay in chunk], device=self.device)
                la, lc = losses_from_logits(self.model(input_ids=ids).logits, chunk[0])
                out += (lc - self.lam(chunk[0]) * la).tolist()
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
        """Seeded random insertions until one survives re-tokenisation and passes the meaning filter, at
        most ``insert_draws`` draws; the last draw is returned (``passed`` False) when none does."""
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

    def random_attack(self, layout: Layout, item_key: str, original_question: str) -> AttackResult:
        start = time.perf_counter()
        before = self.objective(layout)
        ins = self.draw_insertion(layout, item_key, original_question)
        pert = layout.with_question(ins.question)
        chain, regen = self._timed_chain(pert)
        return AttackResult("random", self.question_text(ins.question), chain, before, self.objective(pert),
                            ins.inserted, seconds=time.perf_counter() - start, details={"regeneration_s": regen},
                            insertion=ins.record(),
                            invalid=ins.invalid())

    def _similarities(self, original: str, texts: list[str]) -> list[float | None]:
        """Embedding cosine of each text to the original question (None each without a meaning filter)."""
        if self.similarity is None or self.settings.min_similarity is None or not texts:
            return [None] * len(texts)
        return [float(x) for x in self.similarity.pairwise([original] * len(texts), texts)]

    def _similar_enough(self, original: str, texts: list[str]) -> list[bool]:
        return [x is None or x >= self.settings.min_similarity for x in self._similarities(original, texts)]

    def token_gradients(self, layout: Layout):
        """d L_opt / d e for the one-hot indicators e of the question tokens: a [|q|, V] tensor."""
        import torch

        W = self.model.get_input_embeddings().weight
        onehot = torch.nn.functional.one_hot(torch.tensor(layout.question, device=self.device),
                                             W.shape[0]).to(W.dtype).requires_grad_(True)
        la, lc = attack_losses(self.model, layout, onehot @ W)
        (lc - self.lam(layout) * la).backward()
        return onehot.grad

    def token_attack(self, layout: Layout, item_key: str, original_question: str) -> AttackResult:
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
        for _ in range(s.steps):
            grad = self.token_gradients(current)
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
            values = self._objectives([current.with_question(c) for c in cands])
            k = max(range(len(values)), key=values.__getitem__)
            if values[k] <= best:
                break
            best, current = values[k], current.with_question(cands[k])
            trace.append(best)
        chain, regen = self._timed_chain(current)
        final = self.question_text(current.question)
        # a kept replacement passed both filters; with none kept the question is the insertion's
        invalid = ins.invalid() if len(trace) == 1 else None
        return AttackResult("token", final, chain, before, best, inserted, rejected, steps_done,
                            time.perf_counter() - start, {"objective_trace": trace, "regeneration_s": regen,
                                                          "replacements_kept": len(trace) - 1},
                            insertion=ins.record(), invalid=invalid)

    def epsilon(self) -> float:
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
            la, lc = attack_losses(self.model, layout, base + delta)
            (lc - self.lam(layout) * la).backward()
            with torch.no_grad():
                delta = (delta + (eps / 4) * delta.grad.sign()).clamp(-eps, eps)
        return delta.detach(), base, eps

    def embedding_attack(self, layout: Layout, item_key: str) -> AttackResult:
        start = time.perf_counter()
        before = self.objective(layout)
        delta, base, eps = self.embedding_delta(layout)
        after = self.objective(layout, base + delta)
        chain, regen = self._timed_chain(layout, base + delta)
        return AttackResult("embedding", None, chain, before, after, [], {}, self.settings.embedding_steps,
                            time.perf_counter() - start,
                            {"epsilon": eps, "linf": float(delta.abs().max()),
                             "epsilon_p": self.settings.epsilon_p, "regeneration_s": regen})

    def layout_for(self, question: str, chain: Chain | None = None) -> Layout:
        return make_layout(self.tokenizer, question, chain.answer if chain else "", chain.reasoning if chain else "")
