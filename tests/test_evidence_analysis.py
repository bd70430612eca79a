"""evidence.analysis: the token stream equals scikit-learn's analyzer, text fields, stop words."""

from __future__ import annotations

import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from reasonscope.evidence.analysis import (
    KEPT_WORDS,
    TextFieldError,
    item_segments,
    make_analyzer,
    stop_word_set,
)
from reasonscope.evidence.classifier import EvidenceClassifier
from reasonscope.types import Item

TEXTS = [
    "Two women are embracing while holding to go packages .",
    "I'd book a flight to N.Y.C. at 5 p.m. -- not the 7:30 one!",
    "The stock-market fell; stocks fell 3% (the DOW) in 2020...",
    "A man is not sleeping, he's awake and ÉTÉ-ready.",
    "",
]


@pytest.mark.parametrize("setting", ["none", "english", "function_words"])
@pytest.mark.parametrize("text", TEXTS)
def test_ngrams_equal_scikit_learns_word_analyzer(text, setting):
    ours = make_analyzer(setting)
    stop = sorted(ours.stop_set) or None
    reference = TfidfVectorizer(ngram_range=(1, 2), stop_words=stop).build_analyzer()
    assert ours.ngrams(text) == reference(text)


def test_token_spans_point_into_the_original_text():
    text = "I'd book a FLIGHT, then the Hotel."
    tokens = make_analyzer("function_words").tokens(text)
    assert [t.text for t in tokens] == ["book", "flight", "hotel"]  # "i", "d", "a": one character; "then", "the": stop
    assert [text[t.start:t.end] for t in tokens] == ["book", "FLIGHT", "Hotel"]


def test_segments_never_form_a_bigram_across_their_boundary():
    a = make_analyzer("none")
    assert a.ngrams(["a man sleeps", "nobody sleeps"]) == ["man", "sleeps", "man sleeps", "nobody", "sleeps",
                                                           "nobody sleeps"]
    assert "sleeps nobody" in a.ngrams("a man sleeps nobody sleeps")  # the same words as one text do


def test_function_words_keep_negations_numbers_and_content_words():
    fw = stop_word_set("function_words")
    assert {"the", "to", "a", "is", "of", "and", "while"} <= fw
    assert not {"not", "no", "nobody", "never", "two", "three", "fire", "empty", "front"} & fw
    assert fw == ENGLISH_STOP_WORDS - KEPT_WORDS and len(fw) == 318 - len(KEPT_WORDS & ENGLISH_STOP_WORDS) == 251
    assert stop_word_set("english") == ENGLISH_STOP_WORDS and stop_word_set("none") == frozenset()
    assert stop_word_set(["The", "cat"]) == {"the", "cat"}
    with pytest.raises(ValueError, match="unknown stop_words 'french'"):
        make_analyzer("french")


def test_item_segments_from_metadata_item_fields_and_settings():
    pair = Item(id="p", input="Premise: A dog runs.\nHypothesis: An animal moves.", target="entailment",
                metadata={"premise": "A dog runs.", "hypothesis": "An animal moves.",
                          "text_fields": ["premise", "hypothesis"]})
    assert item_segments(pair) == ["A dog runs.", "An animal moves."]
    assert item_segments(pair, ["input"]) == [pair.input]  # the settings win over the item's own declaration
    qa = Item(id="q", input="Where do fish live?", choices=["sea", "desert"], target="A",
              metadata={"context": "Fish live in water."})
    assert item_segments(qa) == ["Where do fish live?"]
    assert item_segments(qa, ["context", "input", "choices"]) == ["Fish live in water.", "Where do fish live?", "sea",
                                                                  "desert"]
    with pytest.raises(TextFieldError, match=r"item q: text field 'passage' is neither a metadata key of the item \(context\) "
                       r"nor one of input, choices, rationale"):
        item_segments(qa, ["passage"])
    bad = Item(id="b", input="x", metadata={"text_fields": "premise"})
    with pytest.raises(TextFieldError, match="must be a list of field names"):
        item_segments(bad)


def test_classifier_on_pairs_has_no_template_word_and_no_cross_boundary_bigram():
    rows = [("A man sleeps.", "Nobody sleeps.", "contradiction"), ("A man sleeps.", "A person rests.", "entailment"),
            ("Kids play ball.", "Nobody plays.", "contradiction"), ("Kids play ball.", "Children play.", "entailment")]
    items = [Item(id=str(i), input=f"Premise: {p}\nHypothesis: {h}", target=y,
                  metadata={"premise": p, "hypothesis": h, "text_fields": ["premise", "hypothesis"]})
             for i, (p, h, y) in enumerate(rows)]
    templated = EvidenceClassifier(analyzer=make_analyzer("none")).fit([it.input for it in items],
                                                                      [it.target for it in items])
    assert {"premise", "hypothesis", "sleeps hypothesis", "hypothesis nobody"} <= set(templated.feature_names)
    clf = EvidenceClassifier(analyzer=make_analyzer("none")).fit([item_segments(it) for it in items],
                                                                [it.target for it in items])
    names = set(clf.feature_names)
    assert not {n for n in names if {"premise", "hypothesis"} & set(n.split())}
    assert "sleeps nobody" not in names and "ball nobody" not in names and "man sleeps" in names


def test_unknown_text_field_stops_the_plan_before_any_model_call(tmp_path):
    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan

    plan = parse_plan({
        "experiment": {"name": "ev", "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "mock"}],
        "families": {"behavior": None, "evidence": {
            "train": {"name": "tr", "format": "topics", "size": 10, "split": "train"},
            "test": {"name": "te", "format": "topics", "size": 5, "split": "test"}, "text_fields": ["passage"]}},
    })
    with pytest.raises(TextFieldError, match="text field 'passage' is neither a metadata key"):
        Runner(plan, show_progress=False).run()
    assert not (tmp_path / "ev" / "summary.json").exists()
