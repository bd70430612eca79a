"""evidence.matchers: every matcher reads the rationale through the classifier's token stream."""

from __future__ import annotations

import random

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from reasonscope.evidence.analysis import make_analyzer
from reasonscope.evidence.matchers import (
    Rationale,
    edit_chars_match,
    edit_match,
    exact_match,
    match,
    threshold_label,
    token_match,
)


def _text(m):
    return m.text if m else None


@pytest.mark.parametrize("feature,text,expected", [
    ("book flight", "I want to book a flight now", "book a flight"),      # "a" was never in the stream
    ("book flight", "book the flight", "book the flight"),                # "the" is a function word
    ("movie good", "the movie was good", "movie was good"),
    ("stock market", "the Stock -- Market fell", "Stock -- Market"),
    ("stock market", "stockmarket news", None),
    ("not good", "it is not good", "not good"),                           # negations stay in the stream
    ("book flight", "book, flight", "book, flight"),
])
def test_exact_matches_bigrams_formed_across_dropped_tokens(feature, text, expected):
    m = exact_match(feature, Rationale(text))
    assert _text(m) == expected
    if m:
        assert text[m.start:m.end] == m.text


def test_no_stop_words_keeps_every_two_letter_word():
    r = Rationale("the movie was good", make_analyzer("none"))
    assert exact_match("movie good", r) is None and _text(exact_match("movie was", r)) == "movie was"
    assert _text(exact_match("book flight", Rationale("book a flight", make_analyzer("none")))) == "book a flight"


def test_a_token_the_vectorizer_never_forms_is_never_matched():
    # "the" is not a feature under the default stop words, and one-character words never are
    r = Rationale("the cat is a pet")
    assert r.words == ["cat", "pet"]
    assert exact_match("the", r) is None and token_match("the", r) is None
    assert exact_match("a", r) is None and edit_chars_match("a", r, 1) is None


@pytest.mark.parametrize("feature,text,expected", [
    ("score goal", "they scored the goal", "scored the goal"),
    ("score goal", "they scored a big goal", None),
    ("share", "investors sold their shares", "shares"),
    ("book flight", "booked a flight", "booked a flight"),
])
def test_token_matcher_uses_the_lemmas_of_the_stream(feature, text, expected):
    assert _text(token_match(feature, Rationale(text))) == expected


@pytest.mark.parametrize("feature,text,delta,expected,distance", [
    ("economy", "the econmy grew", 0.2, "econmy", 1 / 7),
    ("economy", "the ecnmy grew", 0.2, None, None),                   # 2 / 7 = 0.286
    ("book flight", "book a flihgt", 0.2, "book a flihgt", 2 / 11),   # window "book flihgt": 2 edits / 11
])
def test_normalised_edit_threshold(feature, text, delta, expected, distance):
    m = edit_match(feature, Rationale(text), delta)
    assert _text(m) == expected
    if m:
        assert m.distance == pytest.approx(distance)


@pytest.mark.parametrize("feature,text,chars,expected,distance", [
    ("economy", "the ecnmy grew", 1, None, None),
    ("economy", "the ecnmy grew", 2, "ecnmy", 2),
    ("team", "the teams won", 1, "teams", 1),
    ("tv", "an ox grazed", 2, "ox", 2),                    # absolute thresholds are lenient on short features
    ("international", "internasional news", 1, "internasional", 1),
])
def test_absolute_edit_threshold_in_characters(feature, text, chars, expected, distance):
    m = edit_chars_match(feature, Rationale(text), chars)
    assert _text(m) == expected
    if m:
        assert m.distance == distance
    # the same cases under the normalised threshold read differently for short and long features
    if feature == "tv":
        assert edit_match(feature, Rationale(text), 0.2) is None


def test_threshold_labels_name_the_kind_of_threshold():
    assert threshold_label("edit", 0.2, 1) == "normalised Levenshtein <= 0.2"
    assert threshold_label("edit_chars", 0.2, 3) == "absolute Levenshtein <= 3 characters"
    assert threshold_label("exact", 0.2, 1) == ""
    with pytest.raises(ValueError, match="unknown matcher 'fuzzy'"):
        match("fuzzy", "x", Rationale("x"))


def _independent_exact_coverage(features: list[str], rationale: str, stop_words: str) -> float:
    """Reference: a feature is covered iff scikit-learn's own analyzer forms it from the rationale."""
    stop = sorted(make_analyzer(stop_words).stop_set) or None
    formed = set(TfidfVectorizer(ngram_range=(1, 2), stop_words=stop).build_analyzer()(rationale))
    return sum(f in formed for f in features) / len(features)


@pytest.mark.parametrize("stop_words", ["none", "function_words"])
def test_exact_coverage_equals_an_independent_implementation(stop_words):
    rng = random.Random(7)
    vocab = ["book", "a", "flight", "the", "not", "good", "Movie", "I", "to", "go", "two", "dogs", "run", "x"]
    analyzer = make_analyzer(stop_words)
    for _ in range(400):
        source = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 12)))
        rationale = rng.choice([", ", " - ", " ", ". "]).join(rng.choice(vocab) for _ in range(rng.randint(0, 12)))
        features = analyzer.ngrams(source)
        if not features:
            continue
        r = Rationale(rationale, analyzer)
        ours = sum(exact_match(f, r) is not None for f in features) / len(features)
        assert ours == _independent_exact_coverage(features, rationale, stop_words), (source, rationale)
