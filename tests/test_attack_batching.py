"""The attack's batched greedy decoder (Attacker.greedy_batch, answer_first_many, regenerate) against
decoding each row alone, its per-row stop rules, and the records built with it."""

from __future__ import annotations

import types
from dataclasses import asdict, fields

import pytest
import torch

from reasonscope.attack.attacker import Attacker, AttackResult, AttackSettings, Chain
from reasonscope.attack.item import RECORD_VERSION, attack_item
from reasonscope.attack.layout import make_layout
from reasonscope.types import Item
from tolerance import assert_close_to_scale

QUESTIONS = ["Ana has 3 apples and gets 5 more . How many apples does Ana have ?", "Is a robin a bird ?",
             "The sky is blue . The sky is not blue . All birds are animals . Is a robin an animal ?"]
NEVER = lambda ids: False  # noqa: E731


def _attacker(sharp, **settings) -> Attacker:
    model, tok = sharp
    return Attacker(model, tok, AttackSettings(**{"answer_tokens": 8, "cot_tokens": 12, "min_similarity": None,
                                                  **settings}))


def _rows(attacker):
    return [attacker._prompt_embeds(make_layout(attacker.tokenizer, q)) for q in QUESTIONS]


def _unbatched_greedy(model, eos, embeds, max_new, stop):
    """The decoder before batching, one row, one token at a time (the reference)."""
    emb = model.get_input_embeddings()
    out = []
    with torch.no_grad():
        res = model(inputs_embeds=embeds[None], use_cache=True)
        for _ in range(max_new):
            nxt = int(res.logits[0, -1].argmax())
            if nxt == eos or stop(out + [nxt]):
                break
            out.append(nxt)
            res = model(inputs_embeds=emb(torch.tensor([[nxt]])), past_key_values=res.past_key_values, use_cache=True)
    return out


def _min_gap(model, row, ids) -> float:
    """The smallest top-1 minus top-2 logit along the greedy path ``ids`` from ``row``."""
    with torch.no_grad():
        full = torch.cat([row, model.get_input_embeddings()(torch.tensor(ids, dtype=torch.long))])
        top = model(inputs_embeds=full[None]).logits[0, row.shape[0] - 1:].topk(2, -1).values
    return float((top[:, 0] - top[:, 1]).min())


def test_padded_batch_equals_each_row_alone(sharp):
    attacker = _attacker(sharp)
    model, tok = sharp
    rows = _rows(attacker)
    assert len({r.shape[0] for r in rows}) == 3  # three lengths: two rows are left-padded
    alone = [_unbatched_greedy(model, tok.eos_token_id, r, 24, NEVER) for r in rows]
    assert len({tuple(a) for a in alone}) == 3
    assert all(_min_gap(model, r, a) > 1e-3 for r, a in zip(rows, alone, strict=True))  # no near-tie to flip
    assert attacker.greedy_batch(rows, 24, NEVER) == alone
    assert [attacker.greedy_batch([r], 24, NEVER)[0] for r in rows] == alone  # one row: the unbatched decoder
    assert attacker.greedy_batch(rows[1:], 24, NEVER) == alone[1:] and attacker.greedy_batch([], 24, NEVER) == []


def test_padding_is_masked_and_positions_follow_the_mask(sharp):
    """Whatever the padding holds, the padded row's last logits equal the row alone within 1e-5 with the
    mask and position ids cumsum(mask) - 1; without the mask they do not, nor (GPT-2: absolute positions)
    with positions counted from the padding. Rotary positions (Llama) are shift-invariant: there only the
    mask matters."""
    from reasonscope.attack.attacker import _padding

    attacker = _attacker(sharp)
    model = sharp[0]
    rows = _rows(attacker)
    short, width = rows[1], max(r.shape[0] for r in rows)
    pad = width - short.shape[0]
    torch.manual_seed(0)
    embeds = torch.cat([torch.randn(pad, short.shape[1]), short])[None]
    mask = torch.cat([torch.zeros(pad, dtype=torch.long), torch.ones(short.shape[0], dtype=torch.long)])[None]
    with torch.no_grad():
        alone = model(inputs_embeds=short[None]).logits[0, -1]
        padded = model(inputs_embeds=embeds, **_padding(mask, width)).logits[0, -1]
        unmasked = model(inputs_embeds=embeds).logits[0, -1]
        shifted = model(inputs_embeds=embeds, attention_mask=mask).logits[0, -1]
    assert_close_to_scale(padded, alone)
    assert float((unmasked - alone).abs().max()) > 1e-2
    if isinstance(model, __import__("transformers").GPT2LMHeadModel):
        assert float((shifted - alone).abs().max()) > 1e-2


def test_each_row_stops_on_its_own_rule(sharp):
    attacker = _attacker(sharp)
    model, tok = sharp
    rows = _rows(attacker)
    alone = [_unbatched_greedy(model, tok.eos_token_id, r, 24, NEVER) for r in rows]
    # a token every row writes, each at another step: each row stops just before its first one
    t = next(x for x in alone[0] if all(x in a for a in alone) and len({a.index(x) for a in alone}) == 3)
    expected = [a[:a.index(t)] for a in alone]
    assert len({len(e) for e in expected}) == 3 and max(len(e) for e in expected) < 24
    assert attacker.greedy_batch(rows, 24, lambda ids: ids[-1] == t) == expected
    # the end-of-sequence token stops a row the same way (never kept)
    eos_attacker = Attacker(model, types.SimpleNamespace(eos_token_id=t), attacker.settings)
    assert eos_attacker.greedy_batch(rows, 24, NEVER) == expected
    # a rule on the decoded text so far: at most 5 tokens, the sixth is not kept
    assert attacker.greedy_batch(rows, 24, lambda ids: len(ids) > 5) == [a[:5] for a in alone]
    assert attacker.greedy_batch(rows, 7, NEVER) == [a[:7] for a in alone]  # max_new


def test_answer_first_many_equals_one_layout_at_a_time(sharp):
    attacker = _attacker(sharp)
    tok = attacker.tokenizer
    layouts = [make_layout(tok, q) for q in QUESTIONS]
    torch.manual_seed(0)
    noisy = attacker._prompt_embeds(layouts[0])[layouts[0].question_start:][:len(layouts[0].question)]
    noisy = noisy + torch.randn_like(noisy)  # an embedding perturbation of the first question
    qs = [None, None, None, noisy]
    layouts = layouts + [layouts[0]]
    one = [attacker.answer_first(lay, q) for lay, q in zip(layouts, qs, strict=True)]
    assert len({c.answer for c in one}) == 4 and one[3] != one[0]  # four different rows
    assert attacker.answer_first_many(layouts, qs) == one
    attacker.batch_size = 3  # chunks of 3 and 1
    assert attacker.answer_first_many(layouts, qs) == one
    assert attacker.answer_first_many(layouts[:3]) == one[:3] and attacker.answer_first_many([]) == []
    for c in one:  # the stop rules: no newline in an answer, no blank line or new question in a chain
        assert "\n" not in c.answer and "\n\n" not in c.reasoning and "Question:" not in c.reasoning
    with pytest.raises(ValueError, match="4 layouts but 1 question embeddings"):
        attacker.answer_first_many(layouts, [None])


def test_decoding_from_the_prefix_cache_equals_the_whole_prompt(sharp, monkeypatch):
    # the few-shot prefix read from its cache, the padding between it and the rest: the chains of the decoder
    # that runs every prompt whole (three question lengths, one embedding perturbation)
    from reasonscope.attack.prefix_cache import PrefixCache

    attacker = _attacker(sharp)
    tok = attacker.tokenizer
    layouts = [make_layout(tok, q) for q in QUESTIONS] + [make_layout(tok, QUESTIONS[0])]
    torch.manual_seed(0)
    noisy = attacker._prompt_embeds(layouts[0])[layouts[0].question_start:][:len(layouts[0].question)]
    qs = [None, None, None, noisy + torch.randn_like(noisy)]
    cached = attacker.answer_first_many(layouts, qs)
    assert attacker._prefix_cache is not None and len(attacker._prefix_cache) == len(layouts[0].prefix) > 20
    monkeypatch.setattr(PrefixCache, "supported", staticmethod(lambda m: False))
    whole = _attacker(sharp).answer_first_many(layouts, qs)
    assert len({c.reasoning for c in whole}) == 4 and cached == whole


def test_attack_item_record_with_batched_regeneration(sharp):
    attacker = _attacker(sharp, steps=1, candidates=2)
    layout = make_layout(attacker.tokenizer, QUESTIONS[0])
    clean = attacker.answer_first(layout)
    item = Item(id="a", input=QUESTIONS[0], target=clean.answer, answer_type="text")
    methods = ["token", "embedding", "random"]
    record = attack_item(attacker, item, "d/a", methods)
    assert set(record) == {"version", "clean", "correct", "methods", "tokens"} and record["version"] == RECORD_VERSION
    assert record["clean"] == asdict(clean) and record["correct"] is True
    assert list(record["methods"]) == methods
    full = attacker.layout_for(item.input, clean)
    alone = {"token": attacker.token_attack(full, "d/a", item.input),
             "embedding": attacker.embedding_attack(full, "d/a"),
             "random": attacker.random_attack(full, "d/a", item.input)}
    for method, res in record["methods"].items():
        assert set(res) == {f.name for f in fields(AttackResult)} and res["method"] == method
        one = asdict(alone[method])
        # the chain decoded in the item's batch of three is the chain decoded alone, for the same method
        assert res["chain"] == one["chain"] and res["perturbed_question"] == one["perturbed_question"]
        assert res["objective_after"] == pytest.approx(one["objective_after"], rel=1e-5, abs=1e-5)
        assert res["details"]["regeneration_batch"] == 3 and one["details"]["regeneration_batch"] == 1
        assert 0 < res["details"]["regeneration_s"] < res["seconds"]
        assert set(res["details"]) == set(one["details"])
    assert len({r["details"]["regeneration_s"] for r in record["methods"].values()}) == 1  # one batch, shared
    # a clean chain decoded beforehand (the local executor's batch of items) gives the same record
    again = attack_item(attacker, item, "d/a", methods, clean=clean)
    for method in methods:
        a, b = record["methods"][method], again["methods"][method]
        assert {k: v for k, v in a.items() if k not in ("seconds", "details")} == \
               {k: v for k, v in b.items() if k not in ("seconds", "details")}
    wrong = attack_item(attacker, item, "d/a", methods, clean=Chain("no", "because"))
    assert wrong["skipped"] == "answered incorrectly" and wrong["methods"] == {}


def test_local_executor_decodes_clean_chains_in_batches(tiny_causal_lm, monkeypatch):
    from reasonscope.attack.executor import attack_items
    from reasonscope.attack.item import SearchedItem
    from reasonscope.attack.scoring import settings_of
    from reasonscope.plan import AttackConfig, ModelConfig

    batches, attacked = [], []
    real = Attacker.answer_first_many

    def spy(self, layouts, question_embeds_list=None):
        batches.append(len(layouts))
        return real(self, layouts, question_embeds_list)

    def search(attacker, item, key, methods, clean=None):
        attacked.append(list(batches))
        return SearchedItem(key, {"clean": asdict(clean)})

    monkeypatch.setattr(Attacker, "answer_first_many", spy)
    cfg = AttackConfig(methods=["random"], min_similarity=None, cot_tokens=6, answer_tokens=6)
    items = [(f"d/{i}", Item(id=str(i), input=q, target="x", answer_type="text"))
             for i, q in enumerate(QUESTIONS + ["Is the sky blue ?", "All birds are animals ."])]
    model = ModelConfig(spec=f"hf/{tiny_causal_lm}", batch_size=2)
    out = list(attack_items(model, items, cfg, settings_of(cfg, 0), search=search))
    # items 0-1 attacked after the first batch of clean chains, 2-3 after the second, 4 after the third (the
    # items have no perturbed chains to decode: no other batch)
    assert [k for k, _ in out] == [k for k, _ in items]
    assert attacked == [[2], [2], [2, 2], [2, 2], [2, 2, 1]]
    monkeypatch.setattr(Attacker, "answer_first_many", real)
    attacker = Attacker(*_loaded(tiny_causal_lm), settings_of(cfg, 0))
    assert [r["clean"] for _, r in out] == [asdict(attacker.answer_first(attacker.layout_for(it.input)))
                                            for _, it in items]


def test_local_executor_decodes_the_perturbed_chains_of_several_items_together(tiny_causal_lm, monkeypatch):
    """Consecutive items' perturbed chains are decoded together, as many items as fit in the batch's rows; a
    record is yielded once its chains are decoded, in the items' order; skipped items take no row."""
    from reasonscope.attack.executor import DECODE_ROWS, attack_items, make_attacker
    from reasonscope.attack.item import SearchedItem
    from reasonscope.attack.scoring import settings_of
    from reasonscope.plan import AttackConfig, ModelConfig

    events = []

    def search(attacker, item, key, methods, clean=None):
        events.append(("search", key))
        rows = [] if item.target == "skip" else [object()] * len(methods)  # one row per method
        return SearchedItem(key, {"item": key}, rows)

    def finish(attacker, searched):
        events.append(("finish", [s.key for s in searched], sum(len(s.perturbations) for s in searched)))
        return [s.record for s in searched]

    cfg = AttackConfig(methods=["random", "embedding"], min_similarity=None, cot_tokens=4, answer_tokens=4)
    targets = ["a", "a", "skip", "a", "a", "a", "a"]
    items = [(f"d/{i}", Item(id=str(i), input=QUESTIONS[i % 3], target=t, answer_type="text"))
             for i, t in enumerate(targets)]
    model = ModelConfig(spec=f"hf/{tiny_causal_lm}", batch_size=5)  # 5 items per clean batch, 5 rows per decode
    out = list(attack_items(model, items, cfg, settings_of(cfg, 0), search=search, finish=finish))
    assert [k for k, _ in out] == [k for k, _ in items] and [r["item"] for _, r in out] == [k for k, _ in items]
    assert [e for e in events if e[0] == "finish"] == [
        ("finish", ["d/0", "d/1"], 4),  # a next item's two rows would make 6 > 5
        ("finish", ["d/2", "d/3", "d/4"], 4),  # d/2 is skipped: no row
        ("finish", ["d/5", "d/6"], 4)]  # the second clean batch (items 5-6)
    # each group is finished right after its last item's search, before the next item is searched
    assert events.index(("finish", ["d/0", "d/1"], 4)) == events.index(("search", "d/1")) + 1
    assert events.index(("finish", ["d/2", "d/3", "d/4"], 4)) == events.index(("search", "d/4")) + 1
    # the model's settings name no batch_size: the attack's own number of rows, whatever the model generates with
    assert make_attacker(ModelConfig(spec=f"hf/{tiny_causal_lm}"), cfg, settings_of(cfg, 0)).batch_size == DECODE_ROWS


def test_finish_items_decodes_several_items_as_each_alone(sharp):
    from reasonscope.attack.item import finish_items, search_item

    attacker = _attacker(sharp, steps=1, candidates=2)
    methods = ["token", "embedding", "random"]
    items, cleans = [], []
    for i, q in enumerate(QUESTIONS):
        clean = attacker.answer_first(make_layout(attacker.tokenizer, q))
        items.append(Item(id=str(i), input=q, target=clean.answer, answer_type="text"))
        cleans.append(clean)
    searched = [search_item(attacker, it, f"d/{it.id}", methods, clean=c) for it, c in zip(items, cleans, strict=True)]
    skipped = search_item(attacker, items[0], "d/x", methods, clean=Chain("no", "because"))
    assert [len(s.perturbations) for s in searched] == [3, 3, 3] and skipped.perturbations == []
    together = finish_items(attacker, searched[:2] + [skipped] + searched[2:])
    assert together[2]["skipped"] == "answered incorrectly"
    alone = [attack_item(attacker, it, f"d/{it.id}", methods, clean=c) for it, c in zip(items, cleans, strict=True)]
    chains = [[m["chain"] for m in r["methods"].values()] for r in together[:2] + together[3:]]
    assert chains == [[m["chain"] for m in r["methods"].values()] for r in alone]
    assert len({tuple(c["reasoning"] for c in row) for row in chains}) == 3  # the items' chains differ
    for record in together[:2] + together[3:]:
        assert {m["details"]["regeneration_batch"] for m in record["methods"].values()} == {9}
    assert finish_items(attacker, []) == []


def test_stopped_rows_leave_the_batch(sharp, monkeypatch):
    """Each step runs the rows still decoding only, and their tokens are those of the batch that keeps every row."""
    attacker = _attacker(sharp)
    model, tok = sharp
    rows = _rows(attacker)
    alone = [_unbatched_greedy(model, tok.eos_token_id, r, 24, NEVER) for r in rows]
    stops = [3, 9, 24]  # row i keeps stops[i] tokens
    limit = {tuple(a[:n]) for a, n in zip(alone, stops, strict=True)}
    widths = []
    forward = type(model).forward

    def counting(self, *args, **kwargs):
        widths.append(kwargs["inputs_embeds"].shape[0])
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(type(model), "forward", counting)
    out = attacker.greedy_batch(rows, 24, lambda ids: tuple(ids[:-1]) in limit)
    assert out == [a[:n] for a, n in zip(alone, stops, strict=True)]
    # the prompts, then 3 steps of 3 rows, 6 of 2, 14 of 1 (the step after the 24th token is not run)
    assert widths == [3] + [3] * 3 + [2] * 6 + [1] * 14


def _loaded(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
