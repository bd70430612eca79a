"""The evidence classifier of RACE: TF-IDF over word 1-2 grams + logistic regression.

Choices (documented here and in docs/families/evidence.md):

* ``TfidfVectorizer(min_df, max_features, sublinear_tf=False)`` over the 1-2 grams of
  :class:`~reasonscope.evidence.analysis.TextAnalyzer` (scikit-learn's word analyzer: lower-cased
  words of 2+ characters; stop words removed, by default the function words); L2-normalised rows.
  A document is an item's list of text segments (its own fields, never a prompt template); the
  n-grams of each segment are formed separately, so none spans two fields.
* ``LogisticRegression(C, max_iter=2000, random_state=seed)`` (multinomial for 3+ classes). For two
  classes scikit-learn keeps one weight vector w for the second class; the first class gets -w, so
  contributions are always "toward class c".
* Multi-label data (GoEmotions: ``metadata.labels``) is handled one-vs-rest: one binary logistic
  regression per label, each label's weight vector taken from its own model.
* Contribution of feature f to class c in instance x: ``coef[c, f] * tfidf(x)[f]``, only for the
  features present in x (tfidf > 0). The top-k features by absolute contribution (ties broken by
  feature text) are split into supporting (> 0) and contradicting (< 0) sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .analysis import TextAnalyzer, make_analyzer

Document = str | Sequence[str]  # one text, or an item's text segments


@dataclass
class Feature:
    """One n-gram feature of an instance and its pull toward the evaluated class.

    ``weight`` is the class's logistic-regression coefficient, ``tfidf`` the feature's value in the instance
    and ``contribution = weight * tfidf`` (> 0 supports the class, < 0 contradicts it).
    """

    text: str
    weight: float
    tfidf: float
    contribution: float


class EvidenceClassifier:
    """The RACE evidence classifier: TF-IDF over word 1-2 grams plus logistic regression (module docstring).

    Fitted on the training set by :func:`reasonscope.evidence.scoring.run_evidence`; its top features per test
    instance are what a rationale is expected to cite.

    Args:
        min_df: ``TfidfVectorizer``'s ``min_df``.
        max_features: ``TfidfVectorizer``'s ``max_features`` (None: every n-gram).
        C: Inverse regularisation strength of the logistic regression.
        seed: ``random_state`` of the logistic regression.
        analyzer: The tokeniser (default :func:`~reasonscope.evidence.analysis.make_analyzer`).
    """

    def __init__(self, *, min_df: int | float = 1, max_features: int | None = None, C: float = 1.0, seed: int = 0,
                 analyzer: TextAnalyzer | None = None):
        self.min_df, self.max_features, self.C, self.seed = min_df, max_features, C, seed
        self.analyzer = analyzer or make_analyzer()
        self.vectorizer = None
        self.classes: list[str] = []
        self.coef: np.ndarray | None = None  # (n_classes, n_features)
        self.multilabel = False
        self._models: list = []

    def fit(self, texts: list[Document], labels: list[str] | list[list[str]]) -> EvidenceClassifier:
        """Fit the vectorizer and the logistic regression(s); returns ``self``.

        Labels given as lists make the data multi-label: one binary model per label (one-vs-rest), a label
        that is on every document or on none getting zero weights.
        """
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self.vectorizer = TfidfVectorizer(analyzer=self.analyzer.ngrams, min_df=self.min_df,
                                          max_features=self.max_features)
        X = self.vectorizer.fit_transform(texts)
        self.feature_names = self.vectorizer.get_feature_names_out()
        self.multilabel = bool(labels) and isinstance(labels[0], list | tuple)
        if self.multilabel:
            self.classes = sorted({lab for labs in labels for lab in labs})
            rows = []
            self._models = []
            for c in self.classes:
                y = np.array([c in labs for labs in labels], dtype=int)
                if y.min() == y.max():  # a label with no negative (or no positive) example: no evidence
                    rows.append(np.zeros(X.shape[1]))
                    self._models.append(None)
                    continue
                m = LogisticRegression(C=self.C, max_iter=2000, random_state=self.seed).fit(X, y)
                rows.append(m.coef_[0])
                self._models.append(m)
            self.coef = np.vstack(rows)
        else:
            m = LogisticRegression(C=self.C, max_iter=2000, random_state=self.seed).fit(X, labels)
            self.classes = [str(c) for c in m.classes_]
            self.coef = np.vstack([-m.coef_[0], m.coef_[0]]) if len(self.classes) == 2 else m.coef_
            self._models = [m]
        return self

    def transform(self, texts: list[Document]):
        """The TF-IDF rows of ``texts`` (a sparse matrix, one L2-normalised row per document)."""
        return self.vectorizer.transform(texts)

    def predict(self, texts: list[Document]) -> list[str]:
        """The predicted class of each text.

        Multi-label: the label with the highest linear score ``tfidf @ coef``.
        """
        X = self.transform(texts)
        if not self.multilabel:
            return [str(c) for c in self._models[0].predict(X)]
        scores = X @ self.coef.T
        return [self.classes[int(i)] for i in np.asarray(scores).argmax(axis=1)]

    def class_index(self, label: str) -> int:
        """The row of ``label`` in :attr:`coef`.

        Raises:
            KeyError: ``label`` is not a class of the fitted classifier.
        """
        try:
            return self.classes.index(label)
        except ValueError:
            raise KeyError(f"label {label!r} is not a class of the classifier {self.classes}") from None

    def top_features(self, row, label: str, k: int) -> list[Feature]:
        """Top-k features of one TF-IDF row (a 1 x F sparse matrix) by |contribution| toward ``label``."""
        c = self.class_index(label)
        row = row.tocsr()
        idx, vals = row.indices, row.data
        if idx.size == 0:
            return []
        weights = self.coef[c, idx]
        contrib = weights * vals
        names = self.feature_names
        order = sorted(range(idx.size), key=lambda j: (-abs(contrib[j]), names[idx[j]]))[:k]
        return [Feature(str(names[idx[j]]), float(weights[j]), float(vals[j]), float(contrib[j]))
                for j in order if contrib[j] != 0]


def split_sets(features: list[Feature]) -> tuple[list[Feature], list[Feature]]:
    """Split features into the supporting set S (contribution > 0) and the contradicting set C (< 0)."""
    return [f for f in features if f.contribution > 0], [f for f in features if f.contribution < 0]
