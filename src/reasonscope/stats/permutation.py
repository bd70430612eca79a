"""Permutation test of the RACE asymmetry difference between two groups.

Per group g: A(g) = mean(S_i, i in g, S_i defined) - mean(C_i, i in g, C_i defined), with S the
support coverages and C the contradiction coverages (NaN = empty set). The statistic is
D = A(group) - A(not group); group labels are shuffled ``n_permutations`` times (seeded, vectorised
in chunks) and p = (1 + #{|D*| >= |D|}) / (1 + n_permutations) (two-sided, never 0). Permutations in
which a group has no defined S or C are counted as not extreme.
"""

from __future__ import annotations

import numpy as np


def _group_asymmetry(mask: np.ndarray, s: np.ndarray, s_ok: np.ndarray, c: np.ndarray, c_ok: np.ndarray):
    """A for each row of ``mask`` (P x n booleans); NaN where a mean is undefined."""
    m = mask.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ms = (m @ s) / (m @ s_ok)
        mc = (m @ c) / (m @ c_ok)
    return ms - mc


def asymmetry_permutation_test(support, contradict, groups, *, n_permutations: int = 2000, seed: int = 0,
                               chunk: int = 256) -> tuple[float | None, float | None]:
    s_raw = np.asarray([np.nan if v is None else v for v in support], dtype=float)
    c_raw = np.asarray([np.nan if v is None else v for v in contradict], dtype=float)
    g = np.asarray(groups, dtype=bool)
    s_ok, c_ok = ~np.isnan(s_raw), ~np.isnan(c_raw)
    s, c = np.nan_to_num(s_raw), np.nan_to_num(c_raw)
    s_ok_f, c_ok_f = s_ok.astype(float), c_ok.astype(float)
    observed = (_group_asymmetry(g[None], s, s_ok_f, c, c_ok_f) - _group_asymmetry(~g[None], s, s_ok_f, c, c_ok_f))[0]
    if np.isnan(observed):
        return None, None
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_permutations:
        p = min(chunk, n_permutations - done)
        perm = np.stack([rng.permutation(g) for _ in range(p)])
        d = _group_asymmetry(perm, s, s_ok_f, c, c_ok_f) - _group_asymmetry(~perm, s, s_ok_f, c, c_ok_f)
        hits += int(np.sum(np.abs(d) >= abs(observed) - 1e-12))  # NaN compares False: not extreme
        done += p
    return float(observed), (1 + hits) / (1 + n_permutations)
