r"""Answer-first prompting and the two MATCHA losses.

From *Misaligning Reasoning with Answers* (arXiv:2505.17406).

Prompt
------
A few-shot, plain-text prompt (our own examples): each example is ``Question: ...``, then
``Answer: ...``, then ``Reasoning: ...``, so the model commits to an answer first and then writes a
chain of thought conditioned on it. The sequence fed to the model is the concatenation of
separately tokenised pieces (no special tokens added)::

    prefix   = few-shot examples + "Question:"
    question = " " + question text              <- the only part an attack perturbs
    suffix   = "\nAnswer:"
    answer   = " " + answer text                 (target of L_a)
    mid      = "\nReasoning:"
    cot      = " " + reasoning text              (target of L_c)

Losses
------
With logits z_t of the causal LM over the whole sequence (position t predicts token t + 1):

* L_a = (1/|A|) sum_{t in A} CE(z_{t-1}, x_t), the mean cross-entropy over the answer tokens A;
* L_c = (1/|C|) sum_{t in C} CE(z_{t-1}, x_t), the mean cross-entropy over the chain-of-thought tokens C;
* the attack objective (maximised) is L_opt = L_c - lambda * L_a, lambda = |C| / |A| by default.

The targets are the model's own original answer and chain of thought. The cross-entropy is taken
with the vocabulary as the class axis (a [T, V] logits matrix against T targets), not the sequence
axis: the public MATCHA code passes a [1, T, V] tensor to ``cross_entropy``, which PyTorch reads as
T classes over V positions; we do not reproduce that.
"""

from __future__ import annotations

from dataclasses import dataclass

FEW_SHOT = """Answer the question first, then explain the reasoning that leads to that answer.

Question: A baker fills 4 trays with 6 rolls each. How many rolls are on the trays?
Answer: 24
Reasoning: There are 4 trays and each holds 6 rolls, so 4 * 6 = 24 rolls.

Question: Lena had 15 stamps and gave 6 to her brother. How many stamps does Lena have now?
Answer: 9
Reasoning: Lena starts with 15 stamps and gives away 6, so 15 - 6 = 9 stamps are left.

Question: Is every robin a bird?
Answer: yes
Reasoning: A robin is a kind of songbird, and all songbirds are birds, so every robin is a bird.

Question:"""
PROMPT_VERSION = "matcha-answer-first-v1"


@dataclass
class Layout:
    """Token ids of the answer-first sequence, piece by piece (see the module docstring)."""

    prefix: list[int]
    question: list[int]
    suffix: list[int]
    answer: list[int]
    mid: list[int]
    cot: list[int]

    @property
    def ids(self) -> list[int]:
        """The whole sequence: prefix, question, suffix, answer, mid and chain."""
        return self.prefix + self.question + self.suffix + self.answer + self.mid + self.cot

    @property
    def question_start(self) -> int:
        """The position of the question's first token in :attr:`ids`."""
        return len(self.prefix)

    @property
    def answer_start(self) -> int:
        """The position of the answer's first token in :attr:`ids`."""
        return len(self.prefix) + len(self.question) + len(self.suffix)

    @property
    def cot_start(self) -> int:
        """The position of the chain of thought's first token in :attr:`ids`."""
        return self.answer_start + len(self.answer) + len(self.mid)

    def with_question(self, question: list[int]) -> Layout:
        """A copy of the layout with ``question`` as its question tokens."""
        return Layout(self.prefix, list(question), self.suffix, self.answer, self.mid, self.cot)

    @property
    def default_lambda(self) -> float:
        """The default lambda of L_opt: ``|C| / |A|`` (``|A|`` taken as 1 when empty)."""
        return len(self.cot) / max(1, len(self.answer))


def encode(tokenizer, text: str) -> list[int]:
    """The token ids of ``text`` without special tokens."""
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def make_layout(tokenizer, question: str, answer: str = "", cot: str = "") -> Layout:
    """The answer-first layout of a question, with the answer and chain as targets when given."""
    return Layout(encode(tokenizer, FEW_SHOT), encode(tokenizer, " " + question.strip()),
                  encode(tokenizer, "\nAnswer:"), encode(tokenizer, " " + answer.strip()) if answer else [],
                  encode(tokenizer, "\nReasoning:"), encode(tokenizer, " " + cot.strip()) if cot else [])


def losses_from_logits(logits, layout: Layout, offset: int = 0):
    """The losses (L_a, L_c) from logits of shape [T, V] over ``layout.ids``.

    Logits of shape [B, T, V] give each loss of shape [B].

    ``logits[..., i, :]`` is the logit vector at position ``offset + i`` of the sequence (``offset`` > 0
    when the prefix was read from a cache).
    """
    import torch.nn.functional as F

    a0, c0 = layout.answer_start - offset, layout.cot_start - offset
    na, nc = len(layout.answer), len(layout.cot)
    if na == 0 or nc == 0:
        raise ValueError("the losses need a non-empty answer and chain of thought")
    if a0 < 1:
        raise ValueError(f"logits from position {offset} cannot score the answer at {layout.answer_start}")
    ids = layout.ids
    import torch

    device = logits.device
    a_t = torch.tensor(ids[a0 + offset:a0 + offset + na], device=device)
    c_t = torch.tensor(ids[c0 + offset:c0 + offset + nc], device=device)
    if logits.dim() == 2:
        la = F.cross_entropy(logits[a0 - 1:a0 - 1 + na].float(), a_t)
        lc = F.cross_entropy(logits[c0 - 1:c0 - 1 + nc].float(), c_t)
        return la, lc
    b = logits.shape[0]
    la = F.cross_entropy(logits[:, a0 - 1:a0 - 1 + na].float().reshape(b * na, -1), a_t.repeat(b),
                         reduction="none").reshape(b, na).mean(1)
    lc = F.cross_entropy(logits[:, c0 - 1:c0 - 1 + nc].float().reshape(b * nc, -1), c_t.repeat(b),
                         reduction="none").reshape(b, nc).mean(1)
    return la, lc


def embed_layout(model, layout: Layout, question_embeds=None):
    """Input embeddings [1, T, d] of the layout; ``question_embeds`` ([q, d]) replaces the question's."""
    import torch

    emb = model.get_input_embeddings()
    device = emb.weight.device
    ids = torch.tensor(layout.ids, device=device)
    full = emb(ids)
    if question_embeds is not None:
        q0 = layout.question_start
        full = torch.cat([full[:q0], question_embeds, full[q0 + len(layout.question):]], dim=0)
    return full[None]


def _logits(model, rows: list[list[int]], prefix_cache, limit: int, keep_from: int, **inputs):
    """Forward pass that reuses a cached head of the sequence: (logits [B, T', V], the position of their first column).

    The part after the cache's tokens is run against ``prefix_cache`` when the cache holds the first tokens of
    every row of ``rows`` (token ids) and no more than ``limit`` of them (the inputs from ``limit`` on may differ
    from those tokens' own embeddings), else the whole sequence. When the model's forward takes
    ``logits_to_keep``, only the logits from position ``keep_from`` on are computed (the losses read none
    before the answer). ``inputs``: ``input_ids`` [B, T] or ``inputs_embeds`` [B, T, d] of the whole sequence.
    """
    from ..models.forward_args import forward_takes

    start, extra = 0, {}
    if prefix_cache is not None and len(prefix_cache) <= limit and all(prefix_cache.holds(r) for r in rows):
        start = len(prefix_cache)
        inputs = {name: value[:, start:] for name, value in inputs.items()}
        extra[prefix_cache.argument] = prefix_cache.fresh(len(rows))
    keep_from = max(keep_from, start)
    total = len(rows[0])
    if keep_from > start and forward_takes(model, "logits_to_keep"):
        extra["logits_to_keep"] = total - keep_from
    else:
        keep_from = start
    return model(**inputs, **extra).logits, keep_from


def attack_losses(model, layout: Layout, question_embeds=None, prefix_cache=None, *, own_embeddings: int = 0):
    """The losses (L_a, L_c) of the model on the layout, differentiable w.r.t. ``question_embeds``.

    With a :class:`~reasonscope.attack.prefix_cache.PrefixCache` of the layout's first tokens, only the rest of
    the sequence is run (same values up to float rounding). The cache may reach into the question by at most
    ``own_embeddings`` tokens: the question's first ``own_embeddings`` rows of ``question_embeds`` must be their
    tokens' own embeddings (no gradient reaches them through the cache). Without ``question_embeds`` any head of
    the sequence may be cached.
    """
    limit = len(layout.ids) if question_embeds is None else layout.question_start + own_embeddings
    logits, offset = _logits(model, [layout.ids], prefix_cache, limit, layout.answer_start - 1,
                             inputs_embeds=embed_layout(model, layout, question_embeds))
    return losses_from_logits(logits[0], layout, offset)


def batch_losses(model, layouts: list[Layout], prefix_cache=None):
    """The losses (L_a, L_c), each of shape [B], of layouts that differ only in their question's tokens.

    Same prefix and question length, the same suffix, answer, mid and chain: every row is scored with the
    first's positions and targets. A ``prefix_cache`` is used when it holds the first tokens of every row (the
    few-shot prefix, or more: the search's candidates share the question up to their first changed token). No
    gradient tracking is set up here: call under ``torch.no_grad()``.

    Raises:
        ValueError: A layout differs from the first in more than its question's tokens.
    """
    import torch

    first = layouts[0]
    for i, lay in enumerate(layouts[1:], 1):
        if (len(lay.prefix), len(lay.question)) != (len(first.prefix), len(first.question)) or \
                (lay.suffix, lay.answer, lay.mid, lay.cot) != (first.suffix, first.answer, first.mid, first.cot):
            raise ValueError(f"layout {i} differs from layout 0 in more than its question's tokens: "
                             "batch_losses scores every row with the first row's positions and targets")
    rows = [lay.ids for lay in layouts]
    ids = torch.tensor(rows, device=next(model.parameters()).device)
    logits, offset = _logits(model, rows, prefix_cache, len(rows[0]), first.answer_start - 1, input_ids=ids)
    return losses_from_logits(logits, first, offset)
