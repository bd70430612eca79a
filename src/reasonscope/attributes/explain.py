"""Which attributes explain human preferences?

LightGBM + SHAP (*Rethinking Human Preference Evaluation of LLM Rationales*, Q2).

Features: for each preference record, attribute(A) - attribute(B) per attribute (missing scores
stay NaN, which LightGBM handles). Label: 1 when the human preferred A, 0 when B; ties are left out.
A LightGBM classifier is evaluated by stratified k-fold cross-validation (accuracy and ROC AUC,
seeded), then refitted on all records; SHAP's TreeExplainer gives per-record attributions. The
importance of an attribute is its mean |SHAP value|; its direction is the sign of the correlation
between the feature and its SHAP values (+: a higher score for A than for B pushes toward A).
Plots: SHAP beeswarm and bar (PNG), drawn by :func:`reasonscope.report.attributes_view.shap_plots`
from the stored values.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Explanation:
    """A LightGBM + SHAP explanation of human preferences by attribute.

    Attributes:
        attributes: the feature names, in column order.
        n: the number of labelled pairs.
        cv_accuracy: cross-validated accuracy of the classifier; None when it was not cross-validated.
        cv_auc: cross-validated ROC AUC; None when it was not cross-validated.
        importance: one ``{"attribute", "mean_abs_shap", "direction"}`` per attribute, most important first.
        shap_values: the SHAP values (n x attributes) of the model fitted on all pairs.
        features: the feature matrix the model was fitted on.
    """
    attributes: list[str]
    n: int
    cv_accuracy: float | None
    cv_auc: float | None
    importance: list[dict] = field(default_factory=list)  # sorted, most important first
    shap_values: np.ndarray | None = None
    features: np.ndarray | None = None


def explain_preferences(features: np.ndarray, labels: np.ndarray, attributes: list[str], *, folds: int = 5,
                        seed: int = 0, n_estimators: int = 200) -> Explanation:
    """Explain human preference labels by attribute features with LightGBM and SHAP.

    A LightGBM classifier (200 trees, learning rate 0.05, 15 leaves) is cross-validated with stratified
    ``folds`` folds, only when both labels occur and each occurs at least ``folds`` times, then fitted on
    all pairs; TreeSHAP explains that model. An attribute's importance is mean |SHAP| (higher: it weighs
    more in the prediction); its direction is the sign of the Pearson correlation between the feature and
    its SHAP values (``+``: a higher feature value pushes towards label 1; ``0`` when fewer than 3 values
    are present or either is constant).

    Args:
        features: one row per pair, one column per attribute (NaN where missing).
        labels: 0/1 per pair.
        attributes: the column names.
        folds: the number of cross-validation folds.
        seed: seeds the folds and the model.
        n_estimators: the number of trees.

    Returns:
        The :class:`Explanation`; ``cv_accuracy`` and ``cv_auc`` are None when cross-validation was not run.
    """
    import lightgbm as lgb
    import shap
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    X = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=int)
    params = {"n_estimators": n_estimators, "learning_rate": 0.05, "num_leaves": 15, "min_child_samples": 5,
              "random_state": seed, "verbose": -1, "deterministic": True, "n_jobs": 1}
    acc = auc = None
    if len(set(y)) == 2 and min(np.bincount(y)) >= folds:
        preds, probs = np.zeros_like(y), np.zeros(len(y))
        for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y):
            m = lgb.LGBMClassifier(**params).fit(X[train], y[train])
            probs[test] = m.predict_proba(X[test])[:, 1]
            preds[test] = (probs[test] >= 0.5).astype(int)
        acc, auc = float(accuracy_score(y, preds)), float(roc_auc_score(y, probs))
    model = lgb.LGBMClassifier(**params).fit(X, y)
    with warnings.catch_warnings():  # shap's note that its LightGBM output format changed: handled just below
        warnings.filterwarnings("ignore", message="LightGBM binary classifier with TreeExplainer shap values output",
                                category=UserWarning)
        sv = shap.TreeExplainer(model).shap_values(X)
    sv = sv[1] if isinstance(sv, list) else sv
    if sv.ndim == 3:  # (n, features, classes) in some shap versions
        sv = sv[..., 1]
    importance = []
    for k, attr in enumerate(attributes):
        col, vals = X[:, k], sv[:, k]
        ok = ~np.isnan(col)
        direction = 0.0
        if ok.sum() > 2 and np.std(col[ok]) > 0 and np.std(vals[ok]) > 0:
            direction = float(np.corrcoef(col[ok], vals[ok])[0, 1])
        importance.append({"attribute": attr, "mean_abs_shap": float(np.abs(vals).mean()),
                           "direction": "+" if direction > 0 else ("-" if direction < 0 else "0")})
    importance.sort(key=lambda r: -r["mean_abs_shap"])
    return Explanation(attributes, len(y), acc, auc, importance, sv, X)
