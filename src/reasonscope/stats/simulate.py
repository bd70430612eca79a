"""Seeded synthetic battle sets with known strengths, for tests and benchmarks of the rating methods.

* :func:`balanced_battles`: K models with N(0, 1) strengths (natural-log scale), every battle between
  two distinct models drawn uniformly, a share of ties.
* :func:`leaderboard_battles`: a leaderboard-shaped set: K models spread uniformly over ``spread``
  Elo points, the number of battles of each pair drawn from a heavy-tailed (Pareto, shape 1.2)
  weight, so a few pairs dominate and many pairs meet rarely, as on public arenas; a share of ties.

Outcomes: with probability ``ties`` a tie, otherwise a win of a with probability
1 / (1 + e^(b_b - b_a)). Model order within a battle is random.
"""

from __future__ import annotations

import math

import numpy as np

from .battles import Battle


def _battles(strength: np.ndarray, a: np.ndarray, b: np.ndarray, ties: float, rng) -> list[Battle]:
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    tie = rng.random(a.size) < ties
    outcome = np.where(tie, 0.5, np.where(rng.random(a.size) < p, 1.0, 0.0))
    names = [f"model-{i:02d}" for i in range(strength.size)]
    return [(names[i], names[j], float(s)) for i, j, s in zip(a.tolist(), b.tolist(), outcome.tolist(), strict=True)]


def balanced_battles(n: int = 50_000, models: int = 12, *, ties: float = 0.1, seed: int = 0) -> list[Battle]:
    """``n`` battles between ``models`` models of N(0, 1) strengths, pairs drawn uniformly.

    Args:
        n: the number of battles.
        models: the number of models, named ``model-00``, ``model-01``...
        ties: the probability of a tie.
        seed: seeds the strengths and the battles.

    Returns:
        ``(model_a, model_b, score of a)`` battles (1 win, 0.5 tie, 0 loss).
    """
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    return _battles(strength, a, b, ties, rng)


def leaderboard_battles(n: int = 50_000, models: int = 40, *, spread: float = 1100.0, ties: float = 0.15,
                        seed: int = 0) -> list[Battle]:
    """``n`` leaderboard-shaped battles (module docstring).

    Args:
        n: the number of battles.
        models: the number of models, with Elo ratings uniform over [0, ``spread``].
        spread: the range of the true Elo ratings.
        ties: the probability of a tie.
        seed: seeds the ratings, the pair weights and the battles.

    Returns:
        ``(model_a, model_b, score of a)`` battles (1 win, 0.5 tie, 0 loss).
    """
    rng = np.random.default_rng(seed)
    strength = np.sort(rng.uniform(0.0, spread, models)) * math.log(10) / 400
    first, second = np.triu_indices(models, k=1)
    weight = rng.pareto(1.2, first.size) + 1e-3
    pair = rng.choice(first.size, size=n, p=weight / weight.sum())
    swap = rng.random(n) < 0.5
    a = np.where(swap, second[pair], first[pair])
    b = np.where(swap, first[pair], second[pair])
    return _battles(strength, a, b, ties, rng)
