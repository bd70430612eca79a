"""Multiple-comparison adjustment of a table of p-values (Holm 1979).

Holm's step-down adjustment controls the family-wise error rate (the probability of at least one false
rejection among the m tests of a table) under any dependence between the tests. With the m p-values
sorted ascending, p_(1) <= ... <= p_(m):

    p_adj_(k) = min(1, max_{j <= k} (m - j + 1) p_(j))

so the smallest p-value is multiplied by m, the next by m - 1, and so on, kept monotone. Rejecting
where p_adj <= alpha is Holm's procedure. Missing p-values (None) are not tests: they are left as None
and do not count in m. m counts distinct tests: two rows of a table that hold the same test (identical
matchers merged into one row, a metric listed under two names) are one test (:func:`adjust_rows`). ``none`` returns the p-values unchanged (m is still recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Literal

PAdjust = Literal["holm", "none"]


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values in the input order (see the module docstring)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def adjust(p_values: Sequence[float | None], method: PAdjust = "holm") -> list[float | None]:
    """Adjust p-values for multiple comparisons.

    Args:
        p_values: the p-values; None entries are not tests and stay None.
        method: ``holm`` (step-down, module docstring) or ``none`` (unchanged).

    Returns:
        The adjusted p-values in the input order.

    Raises:
        ValueError: for another method.
    """
    if method == "holm":
        return holm(p_values)
    if method == "none":
        return list(p_values)
    raise ValueError(f"unknown p-value adjustment {method!r}; expected 'holm' or 'none'")


def adjust_rows(rows: list[dict], method: PAdjust = "holm", *, key: str = "p_value",
                out: str = "p_adjusted", same: Callable[[dict], Hashable] | None = None) -> dict:
    """Adjust the p-values ``row[key]`` over the distinct tests of ``rows`` into ``row[out]`` (in place).

    Rows that hold the same test (the same data tested the same way: matchers that matched the same
    features, ES beside the ES reading it names) are one test, not several: ``same`` maps a row to its
    test's identity, and m counts distinct identities among the rows with a p-value. Every row of a test
    gets that test's adjusted p-value. Without ``same`` each row is its own test.

    Returns:
        What was applied, ``{"method": ..., "m": distinct tests, "rows": rows with a p-value,
        "description": "..."}``, for the output to record.
    """
    identity = same or id
    first: dict[Hashable, dict] = {}
    for r in rows:
        if r.get(key) is not None:
            first.setdefault(identity(r), r)
    tests = list(first.values())
    adjusted = dict(zip(first, adjust([r[key] for r in tests], method), strict=True))
    for r in rows:
        r[out] = adjusted.get(identity(r)) if r.get(key) is not None else None
    m = len(tests)
    shown = sum(1 for r in rows if r.get(key) is not None)
    what = "Holm step-down (family-wise error rate)" if method == "holm" else "none (unadjusted)"
    extra = shown - m
    merged = "" if not extra else "; 1 row repeats a test and counts once" if extra == 1 else \
        f"; {extra} rows repeat a test and count once"
    return {"method": method, "m": m, "rows": shown,
            "description": f"{what} over the {m} distinct tests of this table{merged}"}
