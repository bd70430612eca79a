"""Per-attribute battles (seed 003, Q3): on each question, every two models that both have a score
for an attribute meet; the higher score wins, and scores within ``margin`` of each other tie. The
battles feed :mod:`reasonscope.stats.ratings` (online Elo, Bradley-Terry, bootstrap CIs and ranks).
Unscored attributes (None) produce no battle."""

from __future__ import annotations

from itertools import combinations

from ..stats.ratings import Battle


def attribute_battles(scores: dict[str, dict[str, dict[str, float | None]]], *,
                      margin: float = 0.0) -> dict[str, list[Battle]]:
    """``scores[question][model][attribute]`` -> ``{attribute: [(model_a, model_b, outcome), ...]}``."""
    out: dict[str, list[Battle]] = {}
    for question in sorted(scores):
        by_model = scores[question]
        for a, b in combinations(sorted(by_model), 2):
            for attr in sorted(set(by_model[a]) & set(by_model[b])):
                sa, sb = by_model[a][attr], by_model[b][attr]
                if sa is None or sb is None:
                    continue
                outcome = 0.5 if abs(sa - sb) <= margin else (1.0 if sa > sb else 0.0)
                out.setdefault(attr, []).append((a, b, outcome))
    return out


def human_battles(records) -> list[Battle]:
    """Battles from human preference labels (``winner`` a / b / tie)."""
    value = {"a": 1.0, "b": 0.0, "tie": 0.5}
    return [(r.model_a, r.model_b, value[r.winner]) for r in records]
