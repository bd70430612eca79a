r"""What the RACE classifier and the matchers read: an item's own text fields and one token stream.

Text fields
-----------
The classifier is fitted on the data's own text, never on a prompt template: an e-SNLI item's
``input`` is ``"Premise: ...\nHypothesis: ..."`` for the language model, and fitting on it made
``premise`` and ``hypothesis`` top features of most instances. An item names its text fields in
``metadata["text_fields"]`` (set by the loaders: e-SNLI ``premise, hypothesis``; AG News ``title,
description``; ECQA ``input, choices``), or the evidence settings name them (``text_fields``); a name
is a metadata key or one of the item fields ``input``, ``choices``, ``rationale``; a list value (the
choices) gives one segment per element. Without text fields the segment is the item's ``input``.

Each segment is analysed on its own, so no n-gram spans a boundary between two fields (the last
word of a premise and the first word of its hypothesis never form a bigram).

Token stream
------------
:class:`TextAnalyzer` is the one tokeniser of the family. It reproduces scikit-learn's word analyzer
(lower-cased text, ``token_pattern`` ``(?u)\b\w\w+\b``: words of two or more characters, stop words
removed *before* n-grams are formed, so a bigram may join the two words around a removed one) and
keeps each token's character span in the original text. The vectorizer builds its 1-2 grams from
this stream and the three matchers look for a feature in the same stream of the rationale, so a
feature the vectorizer formed across a dropped token ("book a flight" -> ``book flight``) is found in a
rationale that quotes the text, and a feature can never match a token the vectorizer would not have
produced (a one-character word, a stop word).

Stop words
----------
``stop_words`` is ``"function_words"`` (default), ``"english"``, ``"none"`` or a list of words.

* ``"function_words"``: scikit-learn's English list minus the words in :data:`KEPT_WORDS` (negations,
  number words, and content words the list contains such as ``fire``, ``empty``, ``front``). Function
  words such as ``the``, ``to``, ``a``, ``is`` are otherwise frequent top features, and they are
  "covered" by almost any rationale, which inflates coverage without saying anything about evidence;
  negations and numbers are kept because they are evidence (``not``, ``no``, ``two`` decide many
  e-SNLI labels). The RACE paper does not say whether stop words were removed; this is our choice.
* ``"english"``: scikit-learn's list unchanged (318 words, known to contain content words).
* ``"none"``: every token is kept (the classifier of the earlier releases).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..types import Item

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
ITEM_FIELDS = ("input", "choices", "rationale")
NEGATIONS = frozenset({"no", "not", "nor", "never", "neither", "none", "nobody", "noone", "nothing", "nowhere",
                       "cannot", "cant", "couldnt", "hasnt", "without"})
NUMBER_WORDS = frozenset({"one", "two", "three", "four", "five", "six", "eight", "nine", "ten", "eleven", "twelve",
                          "fifteen", "twenty", "forty", "fifty", "sixty", "hundred", "first", "third"})
CONTENT_WORDS = frozenset({"amount", "back", "bill", "bottom", "call", "cry", "describe", "detail", "empty", "fill",
                           "find", "fire", "found", "front", "full", "give", "interest", "keep", "mill", "move",
                           "name", "part", "put", "see", "serious", "show", "side", "sincere", "system", "take",
                           "thick", "thin", "top"})
KEPT_WORDS = NEGATIONS | NUMBER_WORDS | CONTENT_WORDS
STOP_WORD_SETTINGS = ("function_words", "english", "none")


def stop_word_set(setting: str | Sequence[str] | None) -> frozenset[str]:
    """The stop words of a setting (see the module docstring); words of a list are lower-cased."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    if setting is None or setting == "none":
        return frozenset()
    if setting == "function_words":
        return frozenset(ENGLISH_STOP_WORDS - KEPT_WORDS)
    if setting == "english":
        return frozenset(ENGLISH_STOP_WORDS)
    if isinstance(setting, str):
        raise ValueError(f"unknown stop_words {setting!r}; expected one of {STOP_WORD_SETTINGS} or a list of words")
    return frozenset(str(w).lower() for w in setting)


@dataclass(frozen=True)
class Token:
    """One token of the stream: its lower-cased ``text`` and its span ``[start, end)`` in the original."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class TextAnalyzer:
    """Tokens with spans and word n-grams, as scikit-learn's word analyzer forms them."""

    stop_words: str | tuple[str, ...] = "function_words"
    ngram_range: tuple[int, int] = (1, 2)

    @cached_property
    def stop_set(self) -> frozenset[str]:
        """The stop words of this analyzer's ``stop_words`` setting (:func:`stop_word_set`)."""
        return stop_word_set(self.stop_words)

    @cached_property
    def _pattern(self) -> re.Pattern:
        return re.compile(TOKEN_PATTERN)

    def tokens(self, text: str) -> list[Token]:
        """The stream: lower-cased words of 2+ characters that are not stop words, with their spans."""
        text = text or ""
        lowered = text.lower()
        if len(lowered) != len(text):  # a character whose lower case is longer: keep spans on the original
            found = [(m.group(0).lower(), m.start(), m.end()) for m in self._pattern.finditer(text)]
        else:
            found = [(m.group(0), m.start(), m.end()) for m in self._pattern.finditer(lowered)]
        stop = self.stop_set
        return [Token(t, s, e) for t, s, e in found if t not in stop]

    def ngrams(self, segments: str | Sequence[str]) -> list[str]:
        """The n-grams of each segment on its own (none spans two segments), unigrams first."""
        lo, hi = self.ngram_range
        out: list[str] = []
        for segment in [segments] if isinstance(segments, str) else segments:
            words = [t.text for t in self.tokens(segment)]
            for n in range(lo, hi + 1):
                out += [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
        return out

    def describe(self) -> dict[str, Any]:
        """The analyzer's settings as the evidence table stores them (pattern, n-gram range, stop words)."""
        setting = self.stop_words if isinstance(self.stop_words, str) else list(self.stop_words)
        return {"token_pattern": TOKEN_PATTERN, "lowercase": True, "ngram_range": list(self.ngram_range),
                "stop_words": setting, "n_stop_words": len(self.stop_set)}


def make_analyzer(stop_words: str | Sequence[str] | None = "function_words") -> TextAnalyzer:
    """A :class:`TextAnalyzer` for a ``stop_words`` setting, checked now rather than at the first document.

    Args:
        stop_words: ``"function_words"`` (default), ``"english"``, ``"none"`` / None, or a list of words.

    Raises:
        ValueError: ``stop_words`` is a string that names no setting.
    """
    setting = "none" if stop_words is None else stop_words
    if not isinstance(setting, str):
        setting = tuple(str(w) for w in setting)
    analyzer = TextAnalyzer(stop_words=setting)
    analyzer.stop_set  # noqa: B018 -- validate the setting now, not at the first document
    return analyzer


class TextFieldError(ValueError):
    """An item whose declared text fields are missing or not text."""


def item_segments(item: Item, text_fields: Sequence[str] | None = None) -> list[str]:
    """The item's own text as segments.

    The named fields (settings first, then the item's ``metadata["text_fields"]``), each list element its
    own segment; else ``[item.input]``.
    """
    names = text_fields or item.metadata.get("text_fields")
    if not names:
        return [item.input]
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise TextFieldError(f"item {item.id}: metadata 'text_fields' must be a list of field names, got {names!r}")
    segments: list[str] = []
    for name in names:
        if name in ITEM_FIELDS:
            value = getattr(item, name)
        elif name in item.metadata:
            value = item.metadata[name]
        else:
            keys = ", ".join(sorted(item.metadata)) or "none"
            raise TextFieldError(f"item {item.id}: text field {name!r} is neither a metadata key of the item "
                                 f"({keys}) nor one of {', '.join(ITEM_FIELDS)}")
        if value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        if not all(isinstance(v, str | int | float) for v in values):
            raise TextFieldError(f"item {item.id}: text field {name!r} holds {type(value).__name__}, expected text")
        segments += [str(v) for v in values]
    return segments
