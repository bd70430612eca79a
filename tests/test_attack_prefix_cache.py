"""The attack's few-shot prefix read from a cache (attack/prefix_cache.py): the same losses, gradients and
search as scoring the whole sequence, on a Llama (rotary positions) and a GPT-2 (learned positions) with
large random weights (the ``sharp`` fixture of conftest.py): a wrong position or a stale cache row
changes the losses far beyond float rounding."""

from __future__ import annotations

import pytest
import torch

from reasonscope.attack.attacker import Attacker, AttackSettings
from reasonscope.attack.layout import attack_losses, batch_losses, losses_from_logits, make_layout
from reasonscope.attack.prefix_cache import PrefixCache
from tolerance import assert_close_to_scale

QUESTION = "Ana has 3 apples and gets 5 more . How many apples does Ana have ?"


def _layout(tok, question=QUESTION):
    return make_layout(tok, question, "8", "Step one : 3 + 5 = 8 .")


def test_losses_and_question_gradients_equal_the_whole_sequence(sharp):
    model, tok = sharp
    lay = _layout(tok)
    cache = PrefixCache(model, lay.prefix)
    assert len(cache) == len(lay.prefix) > 20
    W = model.get_input_embeddings().weight
    results = []
    for prefix_cache in (None, cache):
        q = W[torch.tensor(lay.question)].detach().clone().requires_grad_(True)
        la, lc = attack_losses(model, lay, q, prefix_cache)
        (lc - 2.0 * la).backward()
        results.append((float(la), float(lc), q.grad.clone()))
    (la0, lc0, g0), (la1, lc1, g1) = results
    assert la1 == pytest.approx(la0, rel=1e-5) and lc1 == pytest.approx(lc0, rel=1e-5)
    assert float(g0.abs().max()) > 1e-3  # the gradient is not trivially zero
    assert_close_to_scale(g1, g0)
    # the cache is not consumed by a forward: a second use gives the same value
    again = attack_losses(model, lay, None, cache)
    assert float(again[0]) == pytest.approx(la0, rel=1e-5)


def test_batched_losses_equal_each_layout_alone(sharp):
    model, tok = sharp
    base = _layout(tok)
    q = base.question
    layouts = [base.with_question(q[k:] + q[:k]) for k in (0, 1, 2)]  # the question's tokens rotated
    cache = PrefixCache(model, base.prefix)
    with torch.no_grad():
        la, lc = batch_losses(model, layouts, cache)
        alone = [attack_losses(model, lay) for lay in layouts]
    assert la.shape == (3,) and len({round(float(x), 6) for x in lc}) >= 2  # the rows differ
    for i, (a, c) in enumerate(alone):
        assert float(la[i]) == pytest.approx(float(a), rel=1e-5)
        assert float(lc[i]) == pytest.approx(float(c), rel=1e-5)


def test_token_search_is_the_same_with_and_without_the_cache(sharp, monkeypatch):
    model, tok = sharp
    lay = _layout(tok)
    settings = AttackSettings(steps=3, top_k=8, candidates=16, min_similarity=None, seed=2)
    cached_attacker = Attacker(model, tok, settings)
    cached = cached_attacker.token_search(lay, "t/1", QUESTION).result
    assert cached_attacker._prefix_cache is not None and cached_attacker._prefix_cache.matches(lay.prefix)
    assert cached.steps_done >= 1
    monkeypatch.setattr(PrefixCache, "supported", staticmethod(lambda m: False))
    plain_attacker = Attacker(model, tok, settings)
    plain = plain_attacker.token_search(lay, "t/1", QUESTION).result
    assert plain_attacker._prefix_cache is None
    assert cached.perturbed_question == plain.perturbed_question
    assert cached.details["objective_trace"] == pytest.approx(plain.details["objective_trace"], rel=1e-4)


def test_offset_logits_are_read_at_the_right_positions(sharp):
    model, tok = sharp
    lay = _layout(tok)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([lay.ids])).logits[0]
    start = len(lay.prefix)
    whole = losses_from_logits(logits, lay)
    part = losses_from_logits(logits[start:], lay, offset=start)
    assert float(part[0]) == float(whole[0]) and float(part[1]) == float(whole[1])
    with pytest.raises(ValueError, match="cannot score the answer"):
        losses_from_logits(logits[lay.answer_start:], lay, offset=lay.answer_start)


def test_a_cache_of_another_prefix_is_not_used(sharp):
    model, tok = sharp
    lay = _layout(tok)
    other = PrefixCache(model, lay.prefix[1:])  # a cache of another prefix
    assert not other.matches(lay.prefix)
    with torch.no_grad():
        whole = attack_losses(model, lay)
        given_other = attack_losses(model, lay, None, other)
        batch_whole = batch_losses(model, [lay, lay])
        batch_other = batch_losses(model, [lay, lay], other)
    assert [float(x) for x in given_other] == [float(x) for x in whole]
    assert torch.equal(batch_other[0], batch_whole[0]) and torch.equal(batch_other[1], batch_whole[1])


def test_batch_losses_refuses_layouts_that_differ_beyond_the_question(sharp):
    model, tok = sharp
    lay = _layout(tok)
    other_answer = make_layout(tok, QUESTION, "9", "Step one : 3 + 5 = 8 .")
    with pytest.raises(ValueError, match="layout 1 differs from layout 0"):
        batch_losses(model, [lay, other_answer])


def test_a_model_without_a_cache_argument_is_scored_on_the_whole_sequence(sharp):
    model, tok = sharp

    class NoCache(torch.nn.Module):  # a causal LM whose forward takes no past_key_values
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def get_input_embeddings(self):
            return self.inner.get_input_embeddings()

        def forward(self, input_ids=None, inputs_embeds=None):
            return self.inner(input_ids=input_ids, inputs_embeds=inputs_embeds)

    lay = _layout(tok)
    plain = Attacker(NoCache(model), tok, AttackSettings(min_similarity=None))
    assert not PrefixCache.supported(plain.model)
    value = plain.objective(lay)
    assert plain._prefix_cache is None
    assert value == pytest.approx(Attacker(model, tok, AttackSettings(min_similarity=None)).objective(lay), rel=1e-5)


def test_the_cache_argument_is_read_under_either_name():
    # transformers 5.24 renamed the forward's ``past_key_values`` (argument and output) to ``cache``
    from types import SimpleNamespace

    from reasonscope.models.forward_args import cache_argument, output_cache

    class New:
        def forward(self, input_ids=None, cache=None, **kwargs):
            return None

    class Old:
        def forward(self, input_ids=None, past_key_values=None, **kwargs):
            return None

    class Neither:
        def forward(self, input_ids=None, **kwargs):
            return None

    assert cache_argument(New()) == "cache" and cache_argument(Old()) == "past_key_values"
    assert cache_argument(Neither()) is None and not PrefixCache.supported(Neither())
    assert output_cache(SimpleNamespace(cache="kv")) == "kv"
    assert output_cache(SimpleNamespace(past_key_values="kv")) == "kv"


def _candidates(tok, lay):
    """Candidates of a search round: the question with one token replaced, at positions 6, 3 and 9 (not in order)."""
    words = [tok.convert_tokens_to_ids(w) for w in ("▁red", "▁blue", "▁green")]
    words = [w for w in words if w != tok.unk_token_id] or [5, 6, 7]
    out = []
    for pos in (6, 3, 9, 3, 6, 9, 3, 9, 6):
        q = list(lay.question)
        q[pos] = words[len(out) % len(words)] if q[pos] != words[len(out) % len(words)] else words[0] + 1
        out.append(lay.with_question(q))
    return out


def test_candidates_scored_from_the_stem_equal_the_whole_sequence(sharp):
    # each batch of candidates runs from its earliest replaced token on, against the chain's keys and values
    # up to there; the objectives equal scoring each whole sequence (no cache, every logit) up to float rounding
    model, tok = sharp
    lay = _layout(tok)
    attacker = Attacker(model, tok, AttackSettings(min_similarity=None))
    cands = _candidates(tok, lay)
    lam = attacker.lam(lay)
    with torch.no_grad():
        expected = []
        for c in cands:
            la, lc = losses_from_logits(model(input_ids=torch.tensor([c.ids])).logits[0], c)
            expected.append(float(lc - lam * la))
    stem = attacker.stem_cache(lay, 2)
    changed = list(lay.question)
    changed[1] += 1  # a question that differs from the stem's at its second token
    assert len(stem) == len(lay.prefix) + 2 and stem.holds(lay.ids) and not stem.holds(lay.with_question(changed).ids)
    widths = []
    hook = model.register_forward_pre_hook(
        lambda m, a, k: widths.append(tuple(k["input_ids"].shape)) if k.get("input_ids") is not None else None,
        with_kwargs=True)
    try:
        got = attacker._objectives(cands, batch=4, base=lay, stem=stem)
    finally:
        hook.remove()
    assert len({round(v, 4) for v in expected}) >= 3  # the candidates differ: a mixed-up order would show
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-5)
    q0, total = lay.question_start, len(lay.ids)
    # batches by first replaced token: (3, 3, 3, 6), (6, 6, 9, 9), (9,); each after the stem's extension to it
    assert widths == [(1, 1), (4, total - q0 - 3), (1, 3), (4, total - q0 - 6), (1, 3), (1, total - q0 - 9)]


def test_token_gradients_from_the_stem_equal_the_whole_sequence(sharp):
    model, tok = sharp
    lay = _layout(tok)
    attacker = Attacker(model, tok, AttackSettings(min_similarity=None))
    whole = attacker.token_gradients(lay)
    from_stem = attacker.token_gradients(lay, attacker.stem_cache(lay, 4))
    assert from_stem.shape == whole.shape and float(whole[4:].abs().max()) > 1e-3
    assert_close_to_scale(from_stem[4:], whole[4:])
    assert float(from_stem[:4].abs().max()) == 0.0  # the stem's tokens get no gradient


def test_the_clean_objective_and_the_insertions_cosines_are_computed_once(sharp):
    # the three methods of an item share the clean objective; the token and random methods draw the same insertion
    model, tok = sharp
    lay = _layout(tok)

    class Cosine:
        texts: list[str] = []

        def pairwise(self, a, b):
            Cosine.texts += b
            return [0.9] * len(b)

    attacker = Attacker(model, tok, AttackSettings(steps=0, min_similarity=0.5, seed=1), similarity=Cosine())
    attacker.prefix_cache(lay)  # built once, before counting
    forwards = []
    hook = model.register_forward_pre_hook(lambda m, a, k: forwards.append(1), with_kwargs=True)
    try:
        before = attacker.objective(lay)
        assert attacker.objective(lay) == before and len(forwards) == 1
        random = attacker.random_search(lay, "t/1", QUESTION).result
        assert len(Cosine.texts) == 1 and len(forwards) == 2  # the insertion's cosine and objective
        token = attacker.token_search(lay, "t/1", QUESTION).result
    finally:
        hook.remove()
    assert len(Cosine.texts) == 1 and len(forwards) == 2  # both remembered: no new cosine, no new forward
    assert token.perturbed_question == random.perturbed_question and token.objective_before == before
    assert token.objective_after == random.objective_after


def test_the_original_question_is_embedded_once_for_the_meaning_filter(sharp, monkeypatch):
    """With an embedding filter the original is embedded once, and the cosines are those of ``pairwise`` exactly
    (the original's embedding alone is its row in a batch of its copies)."""
    from reasonscope.scorers.similarity import EmbeddingCosine

    model, tok = sharp
    sim = EmbeddingCosine("embedded-minilm")
    texts = [QUESTION.replace("apples", w) for w in ("pears", "red apples", "stones and apples", "plums")]
    # the texts embedded as the attacker will (two calls): the same batches of texts on the other side
    expected = sim.pairwise([QUESTION] * 2, texts[:2]) + sim.pairwise([QUESTION] * 2, texts[2:])
    embedded = []
    real = EmbeddingCosine.embed
    monkeypatch.setattr(EmbeddingCosine, "embed", lambda self, t: embedded.append(list(t)) or real(self, t))
    attacker = Attacker(model, tok, AttackSettings(min_similarity=0.5), similarity=sim)
    assert attacker._similarities(QUESTION, texts[:2]) == expected[:2]
    assert attacker._similarities(QUESTION, texts) == expected  # the first two remembered
    assert embedded == [[QUESTION], texts[:2], texts[2:]]
    assert len(set(expected)) == 4 and all(0 < x < 1 for x in expected)
    other = "Tom has 2 cars and buys 1 more. How many cars does Tom have?"
    assert attacker._similarities(other, texts[:1]) == sim.pairwise([other], texts[:1])
    assert embedded[3:] == [[other], texts[:1]] * 2  # the attacker's two embeddings, then pairwise's own two
    attacker.forget()  # nothing remembered: the original and the text are embedded again, to the same cosine
    assert attacker._similarities(other, texts[:1]) == sim.pairwise([other], texts[:1])
    assert embedded[7:] == [[other], texts[:1]] * 2  # the attacker's two embeddings, then pairwise's own two
