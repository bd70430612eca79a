"""The RACE matchers: does a classifier feature (a word 1-2 gram) occur in a rationale?

Every matcher reads the rationale through the classifier's own token stream
(:class:`~reasonscope.evidence.analysis.TextAnalyzer`: lower-cased words of 2+ characters, stop words
removed), so a feature is looked for among exactly the tokens the vectorizer would have formed it
from. Each returns a :class:`Match` (the feature, the character span in the rationale from the first
to the last matched token, the text of that span, and for the edit matchers the distance) or ``None``.

* ``exact``: the feature's tokens are a contiguous run of the rationale's stream. "stock-market" and
  "stock  market" match ``stock market``, "stockmarket" and "stocks" do not; "book a flight" matches
  ``book flight`` (the one-character "a" is not in the stream, as it was not in the classifier's input).
* ``token``: token-aware; the lemma sequence of the feature (simplemma, English) is a contiguous run of
  the lemmas of the rationale's stream: "shares" matches ``share``, "ran" matches ``run``.
* ``edit``: some window of the stream with the feature's number of tokens, joined by single spaces,
  has a *normalised* Levenshtein distance (rapidfuzz; distance / length of the longer string) to the
  feature of at most ``delta`` (default 0.2). "econmy" matches ``economy`` (1/7).
* ``edit_chars``: the same windows with an *absolute* threshold: at most ``delta_chars`` character
  edits (default 1). This is the threshold of the RACE paper (characters; its sweep is 1-5). An absolute
  threshold is lenient on short features (two edits turn any 2-letter word into any other), the
  normalised one scales with the feature's length; both are offered and every table says which.
The closest window is reported for both edit matchers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .analysis import TextAnalyzer, make_analyzer

MATCHERS = ("exact", "token", "edit", "edit_chars")


@dataclass
class Match:
    feature: str
    start: int
    end: int
    text: str
    distance: float | None = None


def threshold_label(matcher: str, delta: float, delta_chars: int) -> str:
    """How a matcher's threshold reads in a table ('' for the matchers without one)."""
    if matcher == "edit":
        return f"normalised Levenshtein <= {delta:g}"
    if matcher == "edit_chars":
        return f"absolute Levenshtein <= {delta_chars} character{'' if delta_chars == 1 else 's'}"
    return ""


@lru_cache(maxsize=200_000)
def lemma(word: str) -> str:
    import simplemma

    return simplemma.lemmatize(word, lang="en").lower()


class Rationale:
    """A rationale prepared once for all matchers: its token stream with spans, lemmas, windows."""

    def __init__(self, text: str, analyzer: TextAnalyzer | None = None):
        self.text = text or ""
        self.analyzer = analyzer or make_analyzer()
        stream = self.analyzer.tokens(self.text)
        self.words = [t.text for t in stream]
        self.spans = [(t.start, t.end) for t in stream]
        self._lemmas: list[str] | None = None
        self._first: dict[int, dict[tuple[str, ...], int]] = {}
        self._windows: dict[int, list[str]] = {}

    @property
    def lemmas(self) -> list[str]:
        if self._lemmas is None:
            self._lemmas = [lemma(w) for w in self.words]
        return self._lemmas

    def first_run(self, seq: tuple[str, ...], lemmas: bool = False) -> int | None:
        """Index of the first run of ``len(seq)`` stream tokens (or their lemmas) equal to ``seq``."""
        n = len(seq)
        key = -n if lemmas else n
        if key not in self._first:
            toks = self.lemmas if lemmas else self.words
            index: dict[tuple[str, ...], int] = {}
            for i in range(len(toks) - n + 1):
                index.setdefault(tuple(toks[i:i + n]), i)
            self._first[key] = index
        return self._first[key].get(seq)

    def windows(self, n: int) -> list[str]:
        if n not in self._windows:
            self._windows[n] = [" ".join(self.words[i:i + n]) for i in range(len(self.words) - n + 1)]
        return self._windows[n]

    def match_at(self, feature: str, i: int, n: int, distance: float | None = None) -> Match:
        start, end = self.spans[i][0], self.spans[i + n - 1][1]
        return Match(feature, start, end, self.text[start:end], distance)


def _feature_tokens(feature: str) -> tuple[str, ...]:
    return tuple(feature.lower().split())


def exact_match(feature: str, r: Rationale) -> Match | None:
    seq = _feature_tokens(feature)
    i = r.first_run(seq) if seq else None
    return None if i is None else r.match_at(feature, i, len(seq))


def token_match(feature: str, r: Rationale) -> Match | None:
    seq = tuple(lemma(w) for w in _feature_tokens(feature))
    i = r.first_run(seq, lemmas=True) if seq else None
    return None if i is None else r.match_at(feature, i, len(seq))


def _closest_window(feature: str, r: Rationale, scorer, cutoff: float) -> Match | None:
    from rapidfuzz import process

    n = len(_feature_tokens(feature))
    windows = r.windows(n) if n else []
    if not windows:
        return None
    best = process.extractOne(feature.lower(), windows, scorer=scorer, score_cutoff=cutoff)
    if best is None:
        return None
    _, dist, i = best
    return r.match_at(feature, i, n, float(dist))


def edit_match(feature: str, r: Rationale, delta: float = 0.2) -> Match | None:
    from rapidfuzz.distance import Levenshtein

    return _closest_window(feature, r, Levenshtein.normalized_distance, delta)


def edit_chars_match(feature: str, r: Rationale, delta_chars: int = 1) -> Match | None:
    from rapidfuzz.distance import Levenshtein

    return _closest_window(feature, r, Levenshtein.distance, delta_chars)


def match(matcher: str, feature: str, r: Rationale, delta: float = 0.2, delta_chars: int = 1) -> Match | None:
    if matcher == "exact":
        return exact_match(feature, r)
    if matcher == "token":
        return token_match(feature, r)
    if matcher == "edit":
        return edit_match(feature, r, delta)
    if matcher == "edit_chars":
        return edit_chars_match(feature, r, delta_chars)
    raise ValueError(f"unknown matcher {matcher!r}; expected one of {MATCHERS}")
