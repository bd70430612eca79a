"""Rationale variants scored by REV and LAREV.

REV is *REV: Information-Theoretic Evaluation of Free-Text Rationales* (Chen et al., 2023); LAREV the
label-leakage-aware REV of Li (2026). The variants:

* ``gold``: the item's rationale;
* ``leaky``: "The answer is y." (states the label, adds no reasoning);
* ``gold_leaky``: the gold rationale followed by that sentence;
* ``vacuous``: the baseline b itself (adds nothing over b);
* ``generated:<model>``: a task model's rationale (through any provider).

A good evaluator ranks gold above the other three: the separations Gold - Leaky, Gold - Gold-Leaky
and Gold - Vacuous should be positive, and their SUM large.
"""

from __future__ import annotations

VARIANTS = ("gold", "leaky", "gold_leaky", "vacuous")
SEPARATIONS = (("gold", "leaky"), ("gold", "gold_leaky"), ("gold", "vacuous"))


def leaky(label: str) -> str:
    """The ``leaky`` rationale: a sentence that states the label and adds no reasoning.

    Examples:
        >>> leaky("yes")
        'The answer is yes.'
    """
    return f"The answer is {label}."


def variant_texts(gold: str, label: str, baseline: str) -> dict[str, str]:
    """The four rationale variants of one item (:data:`VARIANTS`), by name.

    Examples:
        >>> variant_texts("Robins are birds.", "yes", "A robin is a bird: yes.")["gold_leaky"]
        'Robins are birds. The answer is yes.'
    """
    return {"gold": gold, "leaky": leaky(label), "gold_leaky": f"{gold.rstrip()} {leaky(label)}", "vacuous": baseline}


def rationale_input(rationale: str, baseline: str) -> str:
    """The evaluator input of Phi (r + b)."""
    return f"rationale: {rationale} baseline: {baseline}"


def baseline_input(baseline: str) -> str:
    """The evaluator input of Phi_base (b alone)."""
    return f"baseline: {baseline}"
