"""Battles for attribute-specific ratings (*Rethinking Human Preference Evaluation of LLM Rationales*, Q3).

Who wins a battle on an attribute
    The model whose response has the higher attribute score (the mean over the judges that scored
    it). Two scores tie when ``|s_a - s_b| <= margin + 1e-9``: the default margin 0 makes only equal
    scores tie, as in the publication, and the fixed tolerance of 1e-9 makes the comparison exact at
    the boundary whatever the floating-point noise of the scores (0.95 - 0.90 and 0.90 - 0.85 are
    both 0.05 to within 1e-16, so both tie under a margin of 0.05, and 0.3 ties with 0.1 + 0.2 under
    margin 0). A margin > 0 is an option this project adds (judges' scores are coarse; a margin treats
    near-equal scores as ties); it is recorded with the ratings.

Where the battles come from
    * :func:`attribute_battles`: a run's generations: on each item, every two models that both have
      a score for the attribute meet once.
    * :func:`preference_battles`: the recorded battles of a preference set (MT-Bench human
      judgments, Chatbot Arena): each record is one battle between its two models, decided by the
      judged attribute scores of the two responses instead of the human label, as the publication does.
    * :func:`human_battles`: the same records decided by the human label.

A score that is missing (unscored) gives no battle, counted. A record of a model against itself
(``model_a == model_b``) is skipped and counted: it carries no information about a rating.
"""

from __future__ import annotations

from itertools import combinations

from ..stats.ratings import Battle

TIE_TOLERANCE = 1e-9
HUMAN_OUTCOME = {"a": 1.0, "b": 0.0, "tie": 0.5}


def outcome(score_a: float, score_b: float, margin: float = 0.0) -> float:
    """1 when ``score_a`` wins, 0 when ``score_b`` wins, 0.5 when ``|score_a - score_b| <= margin + 1e-9``."""
    diff = score_a - score_b
    if abs(diff) <= margin + TIE_TOLERANCE:
        return 0.5
    return 1.0 if diff > 0 else 0.0


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
                out.setdefault(attr, []).append((a, b, outcome(sa, sb, margin)))
    return out


def human_battles(records) -> tuple[list[Battle], int]:
    """Battles decided by the human label (``winner`` a / b / tie) and the number of self-battles skipped."""
    battles = [(r.model_a, r.model_b, HUMAN_OUTCOME[r.winner]) for r in records if r.model_a != r.model_b]
    return battles, len(records) - len(battles)


def preference_battles(rows: list[dict], attributes: list[str], *, margin: float = 0.0
                       ) -> tuple[dict[str, list[Battle]], dict[str, int]]:
    """Each preference record re-decided by the judged attribute scores of its two responses.

    ``rows``: ``{"model_a", "model_b", "a": {attribute: score or None}, "b": {...}}`` per record.
    Returns ``{attribute: battles}`` and ``{attribute: records without a battle because a score is missing}``;
    self-battles are left out (count them with :func:`human_battles`).
    """
    battles: dict[str, list[Battle]] = {a: [] for a in attributes}
    unscored = dict.fromkeys(attributes, 0)
    for row in rows:
        if row["model_a"] == row["model_b"]:
            continue
        for attr in attributes:
            sa, sb = row["a"].get(attr), row["b"].get(attr)
            if sa is None or sb is None:
                unscored[attr] += 1
                continue
            battles[attr].append((row["model_a"], row["model_b"], outcome(sa, sb, margin)))
    return battles, unscored
