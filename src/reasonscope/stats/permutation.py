"""Two-group permutation test of a difference in a statistic.

``permutation_test(values, groups, statistic)``: D = statistic(group True) - statistic(group False);
the group labels are shuffled ``n_permutations`` times (seeded) and
p = (1 + #{|D*| >= |D|}) / (1 + n_permutations) (two-sided, never 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def permutation_test(rows: Sequence, groups: Sequence[bool], statistic: Callable[[Sequence], float | None], *,
                     n_permutations: int = 2000, seed: int = 0) -> tuple[float | None, float | None]:
    groups = np.asarray(groups, dtype=bool)
    rows = list(rows)

    def diff(g: np.ndarray) -> float | None:
        a = statistic([r for r, x in zip(rows, g, strict=True) if x])
        b = statistic([r for r, x in zip(rows, g, strict=True) if not x])
        return None if a is None or b is None else a - b

    observed = diff(groups)
    if observed is None:
        return None, None
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_permutations):
        d = diff(rng.permutation(groups))
        if d is not None and abs(d) >= abs(observed) - 1e-12:
            hits += 1
    return observed, (1 + hits) / (1 + n_permutations)
