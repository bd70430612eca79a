"""LAREV's integrated-gradients phase: batched attributions equal the per-text ones, results are cached
by (evaluator fingerprint, text, label, steps) and survive a kill, and antonym stand-ins are counted."""

from __future__ import annotations

import pytest

from reasonscope.information.evaluator import load_evaluator
from reasonscope.information.ig_cache import AttributionCache
from reasonscope.information.leakage import (
    AntonymSource,
    batch_token_attributions,
    is_substitute,
    leakage_attributions,
    token_attributions,
)
from reasonscope.information.scoring import antonym_notes
from reasonscope.information.variants import baseline_input
from reasonscope.scorers.cache import clear_score_cache, score_cache_summary
from reasonscope.storage.store import Store
from tolerance import assert_close_to_scale

pytest.importorskip("captum")

TEXTS = [baseline_input("Ana has 8 apples."), baseline_input("The man put carpeting in the bedroom because it was cold."),
         baseline_input("Yes."), baseline_input("A dog runs, which means that an animal moves.")]
TARGETS = ["8", "bedroom", "yes", "entailment"]


def test_batched_attributions_equal_the_per_text_ones(tiny_seq2seq):
    ev = load_evaluator(str(tiny_seq2seq))
    batched = batch_token_attributions(ev, TEXTS, TARGETS, n_steps=8)
    for text, target, (offsets, values) in zip(TEXTS, TARGETS, batched, strict=True):
        one_offsets, one_values = token_attributions(ev, text, target, n_steps=8)
        assert offsets == one_offsets  # padding positions are dropped
        assert_close_to_scale(values, one_values)
        assert any(abs(v) > 0 for v in values)
        assert values[-1] == 0.0  # the closing special token is never attributed


def test_causal_evaluators_are_attributed_one_text_at_a_time(tiny_causal_lm):
    ev = load_evaluator(str(tiny_causal_lm))
    rows = batch_token_attributions(ev, TEXTS[:2], TARGETS[:2], n_steps=4)
    assert [len(o) for o, _ in rows] == [len(token_attributions(ev, t, y, n_steps=4)[0])
                                         for t, y in zip(TEXTS[:2], TARGETS[:2], strict=True)]


def attribution_rows(store) -> int:
    return sum(r["entries"] for r in score_cache_summary(store) if r["kind"] == "attribution")


def test_attributions_are_cached_by_fingerprint_text_and_steps(tiny_seq2seq, tmp_path, monkeypatch):
    ev = load_evaluator(str(tiny_seq2seq))
    import reasonscope.information.leakage as leakage

    calls: list[int] = []
    real = leakage.batch_token_attributions

    def counting(evaluator, texts, targets, *, n_steps):
        calls.append(len(texts))
        return real(evaluator, texts, targets, n_steps=n_steps)

    monkeypatch.setattr(leakage, "batch_token_attributions", counting)
    phi_a, phi_b = tmp_path / "phi_base-a", tmp_path / "phi_base-b"
    phi_a.mkdir(), phi_b.mkdir()
    store = Store(tmp_path / "run")
    cache = AttributionCache(store, phi_a, 6)
    first = leakage_attributions(ev, TEXTS, TARGETS, n_steps=6, batch_size=3, cache=cache)
    assert calls == [3, 1] and attribution_rows(store) == 4  # two attribution calls for four texts
    store.close()
    store = Store(tmp_path / "run")  # a new process: read back from disk
    again = leakage_attributions(ev, TEXTS, TARGETS, n_steps=6, batch_size=3, cache=AttributionCache(store, phi_a, 6))
    assert calls == [3, 1] and again == first
    leakage_attributions(ev, TEXTS[:1], TARGETS[:1], n_steps=7, cache=AttributionCache(store, phi_a, 7))
    leakage_attributions(ev, TEXTS[:1], TARGETS[:1], n_steps=6, cache=AttributionCache(store, phi_b, 6))
    leakage_attributions(ev, TEXTS[:1], ["9"], n_steps=6, cache=AttributionCache(store, phi_a, 6))
    assert calls == [3, 1, 1, 1, 1] and attribution_rows(store) == 7  # other steps, evaluator or label: computed anew
    listed = {r["model"]: r["entries"] for r in score_cache_summary(store) if r["kind"] == "attribution"}
    assert listed == {"integrated gradients (6 steps) on Phi_base phi_base-a": 5,
                      "integrated gradients (7 steps) on Phi_base phi_base-a": 1,
                      "integrated gradients (6 steps) on Phi_base phi_base-b": 1}
    assert clear_score_cache(store, "attribution") == 7 and attribution_rows(store) == 0


def test_a_kill_keeps_the_finished_batches(tiny_seq2seq, tmp_path, monkeypatch):
    ev = load_evaluator(str(tiny_seq2seq))
    import reasonscope.information.leakage as leakage

    real = leakage.batch_token_attributions
    done: list[int] = []

    def dies_on_second_batch(evaluator, texts, targets, *, n_steps):
        if done:
            raise KeyboardInterrupt
        done.append(len(texts))
        return real(evaluator, texts, targets, n_steps=n_steps)

    monkeypatch.setattr(leakage, "batch_token_attributions", dies_on_second_batch)
    store = Store(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        leakage_attributions(ev, TEXTS, TARGETS, n_steps=4, batch_size=2, cache=AttributionCache(store, tmp_path, 4))
    store.close()
    assert attribution_rows(Store(tmp_path / "run")) == 2


def test_antonym_stand_ins_are_named_and_counted():
    pool = ["attic", "garden", "happily"]
    gave_none = AntonymSource(pool, llm=lambda w, s: None, seed=1)
    word, source = gave_none("bedroom", "He slept in the bedroom.", "k")
    assert word in ("attic", "garden") and source == "random NOUN (llm gave none)" and is_substitute(source)
    assert not is_substitute("llm") and not is_substitute("wordnet") and not is_substitute("other number")
    assert AntonymSource([], seed=0)("bedroom", "x", "k") == ("something", "fixed")
    notes = antonym_notes({"llm": 5, "random NOUN (llm gave none)": 2, "random ADJ": 1, "other number": 2})
    assert len(notes) == 2
    assert notes[0].startswith("3 of 10 antonym environments (E3) hold a random word")
    assert "(the antonym model gave none; WordNet had none)" in notes[0]
    assert "(no antonym_model is set; WordNet is unavailable: no data)" in antonym_notes({"random ADJ": 1},
                                                                                        wordnet="no data")[0]
    assert notes[1].startswith("2 of 10 antonym requests to the antonym model gave no usable word")
    assert antonym_notes({"llm": 3, "wordnet": 1}) == []
