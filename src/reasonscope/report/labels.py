"""Human labels for every column the report's tables print (the xlsx and csv keep the machine names).

A column of a family's table (the family's :class:`~reasonscope.report.view.FamilyReport`, ``view``) takes
its label, in order, from the family's own labels (:attr:`~reasonscope.report.view.FamilyReport.column_labels`),
from the family's metric catalogue (with its unit; a column may name the catalogue key that explains it,
:attr:`~reasonscope.report.view.FamilyReport.spec_aliases`), from :data:`COLUMNS` (counts, settings, test
columns shared by the tables), from a prefix rule (``setting_k`` -> "Setting: k", ``mean_<model>`` ->
"Mean score: <model>"), and as a last resort from the key itself with underscores turned into spaces, so no
snake_case key ever reaches the page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..metric_specs import MetricSpec

if TYPE_CHECKING:
    from .view import FamilyReport

# machine key -> label, shared by the tables of every family (a family's own labels win over these)
COLUMNS: dict[str, str] = {
    "model": "Model", "dataset": "Dataset", "type": "Item type", "item": "Item", "method": "Method",
    "attribute": "Attribute", "judge": "Judge", "matcher": "Matcher", "group": "Predictions",
    "threshold": "Matcher threshold", "variant": "Rationale variant", "strategy": "Strategy",
    "n": "n", "items": "Items", "failed": "Failed generations", "pending": "Pending", "unparseable": "Unparseable",
    "truncated": "Truncated", "failed_generations": "Failed generations policy", "user": "User strategy",
    "p_value": "p", "p_adjusted": "p (adjusted)", "p_adjust": "Adjustment", "test": "Test", "null": "Null hypothesis",
    "n_permutations": "Permutations", "relabellings": "Relabellings drawn", "model_a": "Model A", "model_b": "Model B", "metric": "Metric",
    "ES_reading": "ES reading", "reading": "How to read",
    "no_rationale": "No rationale", "label_reading": "Label read as",
    "support": "Support coverage", "contradict": "Contradiction coverage",
    "k": "Top-k features", "delta": "delta (normalised edits)", "delta_chars": "delta (characters)",
    "support_correct": "Support coverage, correct", "contradict_correct": "Contradiction coverage, correct",
    "support_incorrect": "Support coverage, incorrect", "contradict_incorrect": "Contradiction coverage, incorrect",
    "asymmetry_correct": "Asymmetry, correct", "asymmetry_incorrect": "Asymmetry, incorrect",
    "value": "Mean score", "unscored": "Unscored answers", "alpha_p_value": "p (alpha > 0)",
    "alpha_p_adjusted": "p (alpha, adjusted)", "alpha_test": "Test", "alpha_null": "Null hypothesis",
    "spearman": "Spearman rho between judges", "units": "Judged units", "battles": "Battles", "ties": "Ties",
    "draws_unbounded": "Unbounded ratings", "flags": "Flags", "direction": "Direction",
    "kendall_vs_human": "Kendall tau vs human labels", "models": "Models", "unscored_records": "Unscored records",
    "margin": "Tie margin", "human_bt": "Human-label BT rating (Elo)", "human_rank": "Human-label rank",
    "score": "Score (nats)", "separation": "Separation", "log p reduction": "log p over y's tokens",
    "gold": "Gold", "leaky": "Leaky", "gold_leaky": "Gold-Leaky", "vacuous": "Vacuous",
    "phi_base_on_b": "Baseline evaluator on b", "best_epoch": "Best epoch", "best_val_loss": "Best validation loss",
    "examples_per_s": "Examples per second", "lambda_irm": "lambda IRM", "lambda_probe": "lambda probe",
    "source": "Source", "held-out split": "Held-out split", "Phi_base accuracy on b": "Baseline evaluator accuracy on b",
    "mean p(y | b)": "Mean p(y | b)", "warn at": "Warned at accuracy", "label given away": "Label given away",
    "what": "What", "built by": "Built by", "count": "Count", "of": "Of", "substitution": "Substitution",
    "inputs": "Inputs", "rationale shortened": "Rationale shortened", "b over the limit": "b over the limit",
    "limit (tokens)": "Limit (tokens)",
    "answered_correctly": "Answered correctly", "attacked": "Attacked",
    "clean_reasoning_already_wrong": "Clean reasoning already wrong", "not_judged": "Not judged",
    "invalid_attack": "Invalid attack", "decided (n)": "Decided (n)",
    "success_bounds_with_not_judged": "Success if not-judged counted either way",
    "insertion_redrawn": "Insertions redrawn", "insertion_no_valid_draw": "No valid insertion",
    "transfer_model": "Transfer model", "outcome": "Outcome", "why": "Why",
}

PREFIXES: tuple[tuple[str, str], ...] = (("setting_", "Setting: "), ("mean_", "Mean score: "))


def column_spec(key: str, view: FamilyReport | None) -> MetricSpec | None:
    """The catalogue entry that describes column ``key`` of a table of family ``view``, or None."""
    return view.find_spec(view.spec_aliases.get(key, key)) if view is not None else None


def column_label(key: str, view: FamilyReport | None = None) -> str:
    """The label shown for column ``key`` of a table of family ``view`` (see the module docstring)."""
    if view is not None and key in view.column_labels:
        return view.column_labels[key]
    spec = column_spec(key, view)
    if spec is not None:
        return f"{spec.label} ({spec.unit})" if spec.unit else spec.label
    if key in COLUMNS:
        return COLUMNS[key]
    if key.startswith("model:"):  # a model's column of a grid: its name exactly as given
        return key.removeprefix("model:")
    for prefix, label in PREFIXES:
        if key.startswith(prefix):
            return label + key[len(prefix):].replace("_", " ")
    return humanise(key)


def has_label(key: str, view: FamilyReport | None = None) -> bool:
    """Whether ``key`` has a declared label (not the :func:`humanise` fallback)."""
    return bool((view is not None and (key in view.column_labels or column_spec(key, view))) or key in COLUMNS
                or key.startswith("model:") or any(key.startswith(p) for p, _ in PREFIXES))


def humanise(key: str) -> str:
    """``"setting_max_features"`` -> ``"Setting max features"``."""
    text = key.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_low", "lower end of the 95% CI of {}"), ("_high", "upper end of the 95% CI of {}"),
    ("_text", "{} with its 95% CI as text, rounded by the column rule"), ("_n", "items with a value of {}"),
    ("_failed", "failed generations read by {}"), ("_reason", "why {} has no value"),
    ("_left_out", "metrics {} left out (n/a), weights renormalised"))
PLAIN_BOUNDS = {"low": "lower end of the 95% CI of the estimate in this row",
                "high": "upper end of the 95% CI of the estimate in this row"}
DIRECTION_WORDS = {True: "higher is better", False: "lower is better"}


def column_guide(sheets: dict[str, Any], families: dict[str, FamilyReport]) -> list[dict[str, Any]]:
    """One row per column of every table: label, unit, direction and meaning (the workbook's ``columns`` sheet).

    ``families``: sheet -> the family whose catalogue describes its metric columns. A column ``K_low``,
    ``K_high``, ``K_text``, ``K_n``... is described through its ``K``.
    """
    out = []
    for sheet, rows in sheets.items():
        if not isinstance(rows, list) or not rows:
            continue
        family = families.get(sheet)
        for key in dict.fromkeys(k for r in rows for k in r):
            base, pattern = key, "{}"
            for suffix, text in SUFFIXES:
                if key.endswith(suffix) and key[: -len(suffix)] in rows[0]:
                    base, pattern = key[: -len(suffix)], text
                    break
            spec = column_spec(base, family)
            meaning = PLAIN_BOUNDS.get(key) or pattern.format(column_label(base, family))
            if base == key and spec is not None and spec.description:
                meaning = spec.description
            out.append({"table": sheet, "column": key, "label": column_label(key, family),
                        "unit": (spec.unit or "0-1") if spec is not None and spec.range == (0.0, 1.0) and not spec.unit
                        else (spec.unit if spec is not None else ""),
                        "direction": DIRECTION_WORDS.get(spec.higher_is_better, "neither") if spec is not None else "",
                        "meaning": meaning})
    return out
