"""Attribute-specific ratings (*Rethinking Human Preference Evaluation of LLM Rationales*, Q3).

Two analyses, both with online Elo and Bradley-Terry at the maximum-likelihood optimum with
battle-level bootstrap intervals and rank bounds (:func:`reasonscope.stats.ratings.rate_battles`):

* :func:`ratings_table`: per attribute, the models of a run meet on every item they were both judged
  on (:func:`reasonscope.attributes.elo.attribute_battles`).
* :func:`preference_ratings`: the publication's re-evaluation of preference data (MT-Bench, Chatbot
  Arena). The recorded battles are rated twice: once decided by the human label (the usual
  leaderboard) and once per attribute, decided by the judged attribute scores of the two responses
  (the mean over the judges). Each attribute's ratings are compared with the human-label ratings
  over the models both rate: Spearman's rho and Kendall's tau-b between the two sets of
  Bradley-Terry ratings (``scipy.stats``; None with fewer than 3 models or constant ratings). A high
  correlation means the attribute orders the models as the human preferences do; a low one, that
  it measures something the preferences do not reward.

Warnings name models whose ratings are not comparable (disconnected comparison graph) or unbounded
(never lost / never won), per attribute; they start with ``ratings`` so that a rebuild can replace
them (:data:`RATING_WARNING_PREFIXES`).
"""

from __future__ import annotations

from typing import Any

from ..stats.ratings import rate_battles
from .elo import TIE_TOLERANCE, attribute_battles, human_battles, preference_battles

RATING_WARNING_PREFIXES = ("ratings", "preference ratings")


def ratings_table(per_unit: dict[tuple[str, str], dict[str, float | None]], *, margin: float, n_resamples: int,
                  seed: int, confidence: float) -> dict[str, dict]:
    """Per attribute: battles, online Elo and bootstrapped Bradley-Terry of the models (2+ models)."""
    by_question: dict[str, dict[str, dict[str, float | None]]] = {}
    for (model, unit), row in per_unit.items():
        by_question.setdefault(unit, {})[model] = row
    out = {}
    for attr, battles in attribute_battles(by_question, margin=margin).items():
        if len({m for a, b, _ in battles for m in (a, b)}) < 2:
            continue
        out[attr] = rate_battles(battles, n_resamples=n_resamples, seed=seed, confidence=confidence)
    return out


def rank_agreement(ratings: dict[str, float], reference: dict[str, float]) -> dict[str, Any]:
    """Spearman's rho and Kendall's tau-b between two rating sets over their common models."""
    from scipy.stats import kendalltau, spearmanr

    common = sorted(set(ratings) & set(reference))
    out: dict[str, Any] = {"models": len(common), "spearman": None, "kendall": None}
    if len(common) < 3:
        out["reason"] = "needs 3+ models rated by both"
        return out
    x, y = [ratings[m] for m in common], [reference[m] for m in common]
    if len(set(x)) < 2 or len(set(y)) < 2:
        out["reason"] = "constant ratings"
        return out
    out["spearman"] = float(spearmanr(x, y).statistic)
    out["kendall"] = float(kendalltau(x, y).statistic)
    return out


def _points(table: dict) -> dict[str, float]:
    return {m: v["rating"] for m, v in table["bradley_terry"].items()}


def preference_ratings(rows: list[dict], attributes: list[str], *, margin: float, n_resamples: int, seed: int,
                       confidence: float) -> dict[str, Any]:
    """Human-label ratings and attribute-decided ratings of the recorded battles, and their rank agreement.

    ``rows``: one per preference record, ``{"model_a", "model_b", "human": "a"|"b"|"tie", "a": {attribute:
    score}, "b": {...}}`` (as stored under ``preferences.scores``).
    """
    from types import SimpleNamespace

    records = [SimpleNamespace(model_a=r["model_a"], model_b=r["model_b"], winner=r["human"]) for r in rows]
    human, self_battles = human_battles(records)
    settings = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    out: dict[str, Any] = {"margin": margin, "tie_tolerance": TIE_TOLERANCE, "self_battles": self_battles,
                           "human": None, "attributes": {}}
    if len({m for a, b, _ in human for m in (a, b)}) < 2:
        return out
    out["human"] = rate_battles(human, **settings)
    reference = _points(out["human"])
    battles, unscored = preference_battles(rows, attributes, margin=margin)
    for attr in attributes:
        if len({m for a, b, _ in battles[attr] for m in (a, b)}) < 2:
            continue
        rated = rate_battles(battles[attr], **settings)
        rated["unscored_records"] = unscored[attr]
        rated["agreement_with_human"] = rank_agreement(_points(rated), reference)
        out["attributes"][attr] = rated
    return out


def rating_warnings(ratings: dict[str, dict], label: str = "ratings") -> list[str]:
    """One warning per distinct message, naming the attributes it concerns."""
    by_message: dict[str, list[str]] = {}
    for attr, r in ratings.items():
        for w in r.get("warnings", []):
            by_message.setdefault(w, []).append(attr)
    return [f"{label} ({', '.join(attrs)}): {w}" for w, attrs in by_message.items()]


def preference_warnings(pref: dict[str, Any]) -> list[str]:
    """Warnings of the preference ratings (human labels and each attribute)."""
    out = []
    if pref.get("self_battles"):
        out.append(f"preference ratings: {pref['self_battles']} record(s) of a model against itself skipped")
    if pref.get("human"):
        out += rating_warnings({"human labels": pref["human"]}, "preference ratings")
    out += rating_warnings(pref.get("attributes", {}), "preference ratings")
    return out
