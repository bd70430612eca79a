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
    """Where a feature was found in a rationale.

    Attributes:
        feature: The classifier feature looked for (a word 1-2 gram).
        start: Character offset in the rationale of the first matched token.
        end: Character offset in the rationale just after the last matched token.
        text: The rationale's text from ``start`` to ``end``.
        distance: For the edit matchers, the Levenshtein distance of the closest window (normalised for
            ``edit``, in characters for ``edit_chars``); None for ``exact`` and ``token``.
    """

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
    """The English lemma of ``word`` (simplemma), lower-cased; the ``token`` matcher compares these."""
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
        """The lemma of every stream token (computed on first use)."""
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
        """Every run of ``n`` stream tokens joined by single spaces, in order (what the edit matchers compare)."""
        if n not in self._windows:
            self._windows[n] = [" ".join(self.words[i:i + n]) for i in range(len(self.words) - n + 1)]
        return self._windows[n]

    def match_at(self, feature: str, i: int, n: int, distance: float | None = None) -> Match:
        """The :class:`Match` of ``feature`` on the ``n`` stream tokens starting at token ``i``."""
        start, end = self.spans[i][0], self.spans[i + n - 1][1]
        return Match(feature, start, end, self.text[start:end], distance)


def _feature_tokens(feature: str) -> tuple[str, ...]:
    return tuple(feature.lower().split())


def exact_match(feature: str, r: Rationale) -> Match | None:
    """The first place the feature's tokens occur as a contiguous run of the rationale's token stream.

    Punctuation and spacing between the tokens do not matter ("stock-market" matches ``stock market``),
    the word forms do ("stocks" does not match ``stock``).

    Args:
        feature: A classifier feature, its tokens separated by single spaces.
        r: The prepared rationale.

    Returns:
        The first :class:`Match` (``distance`` None), or None when the run does not occur or the feature
        is empty.

    Examples:
        >>> r = Rationale("The economy grew because the stock-market rose.")
        >>> exact_match("stock market", r).text
        'stock-market'
        >>> exact_match("stocks", r) is None
        True
    """
    seq = _feature_tokens(feature)
    i = r.first_run(seq) if seq else None
    return None if i is None else r.match_at(feature, i, len(seq))


def token_match(feature: str, r: Rationale) -> Match | None:
    """The first place the feature's lemmas occur as a contiguous run of the rationale's lemmas.

    Like :func:`exact_match` on lemmas (simplemma, English): "shares" matches ``share``, "ran" matches
    ``run``.

    Args:
        feature: A classifier feature, its tokens separated by single spaces.
        r: The prepared rationale.

    Returns:
        The first :class:`Match` (``distance`` None), or None when the lemma run does not occur.

    Examples:
        >>> token_match("economies", Rationale("The economy grew.")).text
        'economy'
    """
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
    """The closest window of the rationale within a *normalised* Levenshtein distance of the feature.

    d = Levenshtein(feature, window) / max(len(feature), len(window)), over every window of the stream
    with as many tokens as the feature; the closest window matches when d <= ``delta``.

    Args:
        feature: A classifier feature, its tokens separated by single spaces.
        r: The prepared rationale.
        delta: Largest normalised distance that matches, in [0, 1] (0: exact string equality; default 0.2).

    Returns:
        The :class:`Match` of the closest window, ``distance`` = d in [0, 1] (lower is closer), or None
        when no window is within ``delta`` or the rationale has fewer tokens than the feature.

    Examples:
        >>> m = edit_match("econmy", Rationale("The economy grew."))
        >>> m.text, round(m.distance, 3)
        ('economy', 0.143)
    """
    from rapidfuzz.distance import Levenshtein

    return _closest_window(feature, r, Levenshtein.normalized_distance, delta)


def edit_chars_match(feature: str, r: Rationale, delta_chars: int = 1) -> Match | None:
    """The closest window of the rationale within ``delta_chars`` character edits of the feature.

    The RACE paper's threshold: an absolute Levenshtein distance (insertions, deletions, substitutions)
    over the same windows as :func:`edit_match`. Lenient on short features (two edits turn any 2-letter
    word into any other).

    Args:
        feature: A classifier feature, its tokens separated by single spaces.
        r: The prepared rationale.
        delta_chars: Largest number of character edits that matches (>= 0; default 1).

    Returns:
        The :class:`Match` of the closest window, ``distance`` = the number of edits (lower is closer), or
        None when no window is within ``delta_chars``.

    Examples:
        >>> edit_chars_match("econmy", Rationale("The economy grew.")).distance
        1.0
        >>> edit_chars_match("ecnmy", Rationale("The economy grew.")) is None
        True
    """
    from rapidfuzz.distance import Levenshtein

    return _closest_window(feature, r, Levenshtein.distance, delta_chars)


def match(matcher: str, feature: str, r: Rationale, delta: float = 0.2, delta_chars: int = 1) -> Match | None:
    """Run the matcher named ``matcher`` (one of :data:`MATCHERS`) on a feature and a rationale.

    Args:
        matcher: ``exact``, ``token``, ``edit`` or ``edit_chars``.
        feature: A classifier feature, its tokens separated by single spaces.
        r: The prepared rationale.
        delta: Threshold of ``edit`` (normalised Levenshtein).
        delta_chars: Threshold of ``edit_chars`` (character edits).

    Returns:
        The :class:`Match`, or None when the feature is not found.

    Raises:
        ValueError: ``matcher`` is not one of :data:`MATCHERS`.
    """
    if matcher == "exact":
        return exact_match(feature, r)
    if matcher == "token":
        return token_match(feature, r)
    if matcher == "edit":
        return edit_match(feature, r, delta)
    if matcher == "edit_chars":
        return edit_chars_match(feature, r, delta_chars)
    raise ValueError(f"unknown matcher {matcher!r}; expected one of {MATCHERS}")
