"""Agreement between judges on one attribute: Krippendorff's alpha (``krippendorff`` package, interval
level, missing scores allowed) and the mean pairwise Spearman correlation over the items both
judges scored."""

from __future__ import annotations

from itertools import combinations

import numpy as np


def krippendorff_alpha(scores: dict[str, dict[str, float | None]], level: str = "interval") -> float | None:
    """``scores[judge][item]`` -> alpha over the items, None when fewer than 2 judges or no variation."""
    import krippendorff

    judges = sorted(scores)
    items = sorted({i for j in judges for i in scores[j]})
    if len(judges) < 2 or not items:
        return None
    data = np.array([[np.nan if scores[j].get(i) is None else scores[j][i] for i in items] for j in judges],
                    dtype=float)
    values = data[~np.isnan(data)]
    if values.size < 2 or np.all(values == values[0]):
        return None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def mean_spearman(scores: dict[str, dict[str, float | None]]) -> float | None:
    from scipy.stats import spearmanr

    rhos = []
    for a, b in combinations(sorted(scores), 2):
        common = [i for i in scores[a] if scores[a][i] is not None and scores[b].get(i) is not None]
        if len(common) < 3:
            continue
        x, y = [scores[a][i] for i in common], [scores[b][i] for i in common]
        if len(set(x)) < 2 or len(set(y)) < 2:
            continue
        rhos.append(float(spearmanr(x, y).statistic))
    return sum(rhos) / len(rhos) if rhos else None
