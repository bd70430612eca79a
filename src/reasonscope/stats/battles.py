"""Pairwise battles: validation, aggregation into a win matrix, and the comparison graph.

A battle is ``(model_a, model_b, outcome)``: two different models named by strings and an outcome of
1 (``model_a`` wins), 0 (``model_b`` wins) or 0.5 (a tie). Anything else is an input error that names
the record (:class:`BattleError`): an outcome such as ``2.0``, ``"1"`` or ``True``, a name that is not
a string, a record that is not a triple, and a *self-battle* (a model against itself carries no
information about its rating; online Elo would even move its rating). Callers that read such records
from data (preference files) drop self-battles first and count them.

:func:`win_matrix` aggregates battles into ``W``, a K x K matrix with ``W[i, j]`` the wins of model i
over model j, a tie counting half a win for each side. It first counts identical records
(``collections.Counter``), so validating and aggregating a million battles costs one hashing pass
plus work proportional to the number of distinct (a, b, outcome) cells (at most 3 K (K - 1)).

:func:`comparison_graph` reports what decides whether Bradley-Terry ratings exist and can be compared:

* the *components* of the comparison graph (models linked when they met): ratings in different
  components are not comparable (each component is only determined up to its own offset);
* the win graph (i -> j when i won or tied against j): the maximum-likelihood ratings are finite only
  when every component is strongly connected in it (Zermelo 1929; Ford 1957). Otherwise some group
  of models never lost (or never won) against the rest of its component and its rating is unbounded.
  The groups are named: ``never_lost`` / ``never_won`` for single models, ``unbounded_groups`` for
  every strongly connected group that lies above or below the rest of its component.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

Battle = tuple[str, str, float]
OUTCOMES = (0.0, 0.5, 1.0)


class BattleError(ValueError):
    """A battle record that cannot be rated; the message names the record (0-based index)."""


def _problem(record) -> str | None:
    """Why one record is not a valid battle, or None."""
    if not isinstance(record, tuple | list) or len(record) != 3:
        return "expected a (model_a, model_b, outcome) triple"
    a, b, s = record
    for side, name in (("model_a", a), ("model_b", b)):
        if not isinstance(name, str):
            return f"{side} must be a model name (a string), got {type(name).__name__} {name!r}"
    if isinstance(s, bool) or not isinstance(s, int | float | np.integer | np.floating) \
            or not any(s == o for o in OUTCOMES):
        return f"outcome must be 1 (model_a wins), 0 (model_b wins) or 0.5 (tie), got {s!r}"
    if a == b:
        return f"model {a!r} plays itself: a self-battle says nothing about its rating (drop it before rating)"
    return None


def _raise_first_problem(battles: Sequence) -> None:
    for i, record in enumerate(battles):
        why = _problem(record)
        if why:
            raise BattleError(f"battle record {i} ({record!r}): {why}")
    raise AssertionError("no invalid record found")  # pragma: no cover - callers only come here with one


def count_battles(battles: Sequence[Battle]) -> Counter:
    """Identical battles counted, ``{(a, b, outcome): n}`` with float outcomes; every record validated.

    Raises:
        BattleError: Naming the first invalid record (index and value) and what was expected.
    """
    try:
        counts = Counter(battles)
    except TypeError:  # records given as lists, or an unhashable field
        try:
            counts = Counter(tuple(b) if isinstance(b, list) else b for b in battles)
        except TypeError:
            _raise_first_problem(battles)
    out: Counter = Counter()
    for cell, n in counts.items():
        if _problem(cell) is not None:
            _raise_first_problem(battles)
        a, b, s = cell
        out[(a, b, float(s))] += n
    return out


@dataclass
class WinMatrix:
    """Battles aggregated: ``wins[i, j]`` = wins of ``models[i]`` over ``models[j]`` (ties count half)."""

    models: list[str]
    wins: np.ndarray
    n_battles: int
    n_ties: int

    @property
    def games(self) -> np.ndarray:
        """``games[i, j]``: battles between models i and j (symmetric)."""
        return self.wins + self.wins.T


def win_matrix(cells: Counter | Sequence[Battle], models: Iterable[str] | None = None) -> WinMatrix:
    """Aggregate battles (or counted cells from :func:`count_battles`) into a :class:`WinMatrix`.

    ``models`` fixes the order (and may include models without battles); default: sorted names.
    """
    if not isinstance(cells, Counter):
        cells = count_battles(cells)
    names = sorted({m for a, b, _ in cells for m in (a, b)}) if models is None else list(models)
    index = {m: i for i, m in enumerate(names)}
    wins = np.zeros((len(names), len(names)))
    ties = 0
    for (a, b, s), n in cells.items():
        i, j = index[a], index[b]
        wins[i, j] += s * n
        wins[j, i] += (1.0 - s) * n
        ties += n if s == 0.5 else 0
    return WinMatrix(names, wins, int(sum(cells.values())), int(ties))


@dataclass
class ComparisonGraph:
    """Connectivity of the battles: comparable groups and whether finite ratings exist."""

    components: list[list[str]]
    never_lost: list[str] = field(default_factory=list)
    never_won: list[str] = field(default_factory=list)
    unbounded_groups: list[list[str]] = field(default_factory=list)
    unbounded: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)

    @property
    def connected(self) -> bool:
        """Whether all models lie in one comparable group."""
        return len(self.components) <= 1

    @property
    def mle_exists(self) -> bool:
        """Finite maximum-likelihood Bradley-Terry ratings exist (every component strongly connected)."""
        return not self.unbounded

    def as_dict(self) -> dict:
        """The graph's fields and properties as a JSON-ready dict (``absent`` excluded)."""
        return {"components": self.components, "connected": self.connected, "mle_exists": self.mle_exists,
                "never_lost": self.never_lost, "never_won": self.never_won,
                "unbounded_groups": self.unbounded_groups, "unbounded": self.unbounded}

    def warnings(self) -> list[str]:
        """Plain-language warnings naming the models (empty when ratings are finite and comparable)."""
        out = []
        if not self.connected:
            groups = " | ".join("{" + ", ".join(c) + "}" for c in self.components)
            out.append(f"the comparison graph has {len(self.components)} disconnected groups ({groups}): ratings "
                       "are comparable only within a group (each group is centred on its own)")
        if self.never_lost:
            out.append(f"never lost: {', '.join(self.never_lost)} (rating unbounded above)")
        if self.never_won:
            out.append(f"never won: {', '.join(self.never_won)} (rating unbounded below)")
        singles = set(self.never_lost) | set(self.never_won)
        groups = [g for g in self.unbounded_groups if not (len(g) == 1 and g[0] in singles)]
        if groups:
            out.append("no finite maximum-likelihood rating: these groups never lost (or never won) against the "
                       "rest of their component: " + " | ".join("{" + ", ".join(g) + "}" for g in groups))
        return out


def comparison_graph(wm: WinMatrix) -> ComparisonGraph:
    """Components of the comparison graph and the groups whose ratings are unbounded (see module doc)."""
    from scipy.sparse.csgraph import connected_components

    games = wm.games
    played = games.sum(axis=1) > 0
    names = wm.models
    absent = [m for m, p in zip(names, played, strict=True) if not p]
    idx = np.flatnonzero(played)
    if idx.size == 0:
        return ComparisonGraph([], absent=absent)
    sub_games, sub_wins = games[np.ix_(idx, idx)], wm.wins[np.ix_(idx, idx)]
    n_weak, weak = connected_components(sub_games > 0, directed=False)
    _, strong = connected_components(sub_wins > 0, directed=True, connection="strong")
    components = sorted(sorted(names[idx[k]] for k in np.flatnonzero(weak == c)) for c in range(n_weak))
    beat = sub_wins > 0
    never_lost, never_won, groups, unbounded = [], [], [], []
    for s in np.unique(strong):
        members = np.flatnonzero(strong == s)
        component = np.flatnonzero(weak == weak[members[0]])
        if members.size == component.size:
            continue  # the whole component is strongly connected: finite ratings
        unbounded += [names[idx[k]] for k in members]
        outside = np.setdiff1d(component, members)
        lost_outside = beat[np.ix_(outside, members)].any()
        won_outside = beat[np.ix_(members, outside)].any()
        group = sorted(names[idx[k]] for k in members)
        if not lost_outside or not won_outside:
            groups.append(group)
        if members.size == 1:
            if not lost_outside:
                never_lost.append(group[0])
            if not won_outside:
                never_won.append(group[0])
    return ComparisonGraph(components, sorted(never_lost), sorted(never_won), sorted(groups), sorted(unbounded),
                           absent)


def elo_scale(scale: float = 400.0, base: float = 10.0) -> float:
    """Elo points per unit of the natural-log Bradley-Terry strength.

    ``scale / ln(base)``: 173.7 with the defaults.
    """
    return scale / math.log(base)
