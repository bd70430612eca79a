"""Weighted strategies: Q = Σ_m w_m M_m / Σ_{m available} w_m.

The seven built-in strategies of the behavioural framework (Şenol, Agrawal, Liu, 2026) (weights normalised to sum to 1), plus user
strategies from the plan (``families.behavior.strategies``), validated before anything runs
(known metric keys, numbers, non-negative, non-zero sum; see :func:`reasonscope.config.normalize_weights`).
A metric that is not applicable for a model (e.g. RS with no qualifying item, CS with K = 1) is
left out and the remaining weights renormalised; the output lists what was left out.
"""

from __future__ import annotations

from .settings import normalize_weights

BUILTIN_STRATEGIES: dict[str, dict[str, float]] = {
    "balanced": {"CQ": 1 / 6, "CS": 1 / 6, "RS": 1 / 6, "LS": 1 / 6, "ES": 1 / 6, "SS": 1 / 6},
    "safety_priority": {"CQ": 0.30, "CS": 0.20, "RS": 0.30, "LS": 0.10, "ES": 0.05, "SS": 0.05},
    "accuracy_priority": {"CQ": 0.40, "CS": 0.25, "RS": 0.15, "LS": 0.10, "ES": 0.05, "SS": 0.05},
    "efficiency_priority": {"CQ": 0.20, "CS": 0.15, "RS": 0.15, "LS": 0.10, "ES": 0.30, "SS": 0.10},
    "medical_triage": {"CQ": 0.40, "CS": 0.05, "RS": 0.30, "LS": 0.20, "ES": 0.03, "SS": 0.02},
    "legal_compliance": {"CQ": 0.15, "CS": 0.25, "RS": 0.20, "LS": 0.35, "ES": 0.03, "SS": 0.02},
    "edge_device": {"CQ": 0.30, "CS": 0.03, "RS": 0.10, "LS": 0.05, "ES": 0.50, "SS": 0.02},
}


def all_strategies(user: dict[str, dict] | None = None) -> dict[str, dict[str, float]]:
    out = {name: normalize_weights(name, w) for name, w in BUILTIN_STRATEGIES.items()}
    for name, w in (user or {}).items():
        out[name] = normalize_weights(name, w)
    return out


def composite(weights: dict[str, float], metrics: dict[str, float | None]) -> tuple[float | None, list[str]]:
    """Weighted mean over available metrics; returns (score, metrics left out)."""
    left_out = [m for m, w in weights.items() if w > 0 and metrics.get(m) is None]
    used = {m: w for m, w in weights.items() if w > 0 and metrics.get(m) is not None}
    total = sum(used.values())
    if total == 0:
        return None, left_out
    return sum(w * float(metrics[m]) for m, w in used.items()) / total, left_out
