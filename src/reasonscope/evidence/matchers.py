"""The three RACE matchers: does a classifier feature (a word 1-2 gram) occur in a rationale?

Each returns a :class:`Match` (the feature, the character span in the rationale, the matched text,
and for edit distance the normalised distance) or ``None``.

* ``exact``: case-insensitive, word-boundary phrase match; the words of a bigram may be separated
  by any whitespace or punctuation run that contains no word character ("stock market",
  "stock-market" both match ``stock market``; "stockmarket" does not).
* ``token``: token-aware; the feature's lemma sequence occurs as a contiguous subsequence of the
  rationale's lemma sequence (lemmas from simplemma, English; tokens are ``\\w+`` runs, lowercased).
  "shares" matches ``share``, "ran" matches ``run``.
* ``edit``: some window of the rationale with the same number of tokens as the feature has a
  normalised Levenshtein distance (rapidfuzz; distance / max length) to the feature of at most
  ``delta`` (default 0.2); the closest window is reported. "econmy" matches ``economy`` (1/7).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

TOKEN_RE = re.compile(r"\w+", re.UNICODE)
MATCHERS = ("exact", "token", "edit")


@dataclass
class Match:
    feature: str
    start: int
    end: int
    text: str
    distance: float | None = None


@lru_cache(maxsize=200_000)
def lemma(word: str) -> str:
    import simplemma

    return simplemma.lemmatize(word, lang="en").lower()


class Rationale:
    """A rationale prepared once for all matchers: tokens with spans, and their lemmas."""

    def __init__(self, text: str):
        self.text = text or ""
        self.tokens = [(m.group(0).lower(), m.start(), m.end()) for m in TOKEN_RE.finditer(self.text)]
        self._lemmas: list[str] | None = None
        self._windows: dict[int, list[str]] = {}

    @property
    def lemmas(self) -> list[str]:
        if self._lemmas is None:
            self._lemmas = [lemma(t) for t, _, _ in self.tokens]
        return self._lemmas

    def windows(self, n: int) -> list[str]:
        if n not in self._windows:
            toks = [t for t, _, _ in self.tokens]
            self._windows[n] = [" ".join(toks[i:i + n]) for i in range(len(toks) - n + 1)]
        return self._windows[n]

    def span(self, i: int, n: int) -> tuple[int, int]:
        return self.tokens[i][1], self.tokens[i + n - 1][2]


@lru_cache(maxsize=100_000)
def _exact_pattern(feature: str) -> re.Pattern:
    words = [re.escape(w) for w in feature.split()]
    return re.compile(r"(?<!\w)" + r"[\W_]+".join(words) + r"(?!\w)", re.IGNORECASE)


def exact_match(feature: str, r: Rationale) -> Match | None:
    m = _exact_pattern(feature).search(r.text)
    return Match(feature, m.start(), m.end(), m.group(0)) if m else None


def token_match(feature: str, r: Rationale) -> Match | None:
    target = [lemma(w) for w in TOKEN_RE.findall(feature.lower())]
    n = len(target)
    if n == 0:
        return None
    lem = r.lemmas
    for i in range(len(lem) - n + 1):
        if lem[i:i + n] == target:
            start, end = r.span(i, n)
            return Match(feature, start, end, r.text[start:end])
    return None


def edit_match(feature: str, r: Rationale, delta: float = 0.2) -> Match | None:
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    n = len(feature.split())
    windows = r.windows(n)
    if not windows:
        return None
    best = process.extractOne(feature.lower(), windows, scorer=Levenshtein.normalized_distance, score_cutoff=delta)
    if best is None:
        return None
    _, dist, i = best
    start, end = r.span(i, n)
    return Match(feature, start, end, r.text[start:end], float(dist))


def match(matcher: str, feature: str, r: Rationale, delta: float = 0.2) -> Match | None:
    if matcher == "exact":
        return exact_match(feature, r)
    if matcher == "token":
        return token_match(feature, r)
    if matcher == "edit":
        return edit_match(feature, r, delta)
    raise ValueError(f"unknown matcher {matcher!r}; expected one of {MATCHERS}")
