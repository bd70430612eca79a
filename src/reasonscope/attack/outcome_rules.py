"""Outcomes of one MATCHA attack and the rates over a set of them.

An attack is counted only when it can say that the reasoning *became* wrong. Per attacked item (the
clean answer is correct) and method, the first rule that applies decides:

=====================  ======================================================================
outcome                when
=====================  ======================================================================
``clean_wrong``        the clean chain already fails the reasoning check: it states a false
                       equation, the reference check (when the item has one) calls it broken,
                       or the judge (when configured) calls it incorrect
``not_judged``         a judge is configured and its verdict on the clean chain, or the meaning
                       judge's verdict on the perturbed question, could not be read
``invalid``            the perturbed question is not a valid attack: no random insertion passed
                       re-tokenisation and the meaning filter, or the meaning judge says it
                       changed meaning
``wrong``              the perturbed answer differs from the clean answer
``success``            the answer is kept and the perturbed chain fails the reasoning check: a
                       false equation (the clean chain has none, so every one is new), the
                       reference check calls it broken, or the judge calls it incorrect
``unattackable``       the answer is kept, no false equation, and the reference check or the
                       judge calls the chain correct (neither calls it wrong)
``not_judged``         the answer is kept, no false equation, no reference for the item, and
                       there is no judge (the arithmetic check cannot see other errors) or its
                       verdict could not be read
=====================  ======================================================================

The reasoning check is the same for the clean and the perturbed chain: the arithmetic check
(:mod:`reasonscope.attack.arithmetic`), the reference check when the item's steps are known and
``reference_check`` is on (:mod:`reasonscope.attack.reference`), and, when configured, the judge
with the same prompt. A chain fails it when any of them calls it wrong.

Rates (:func:`outcome_rates`): success (SR), wrong (WR) and unattackable (UR) over the *decided*
attacks, n = attacked - clean_wrong - not_judged - invalid, each the mean of an indicator with a
bootstrap CI; SR + WR + UR = 1. The excluded groups are counted next to them. A higher success rate
means more fragile reasoning (the attack broke it more often); a higher unattackable rate means more
robust reasoning. When some attacks are not judged, the success rate over decided + not judged
attacks is bounded by ``success_bounds``: [success / (n + not_judged), (success + not_judged) / (n +
not_judged)].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..shared_settings import StatsConfig
from ..stats.bootstrap import estimate
from .arithmetic import ArithmeticCheck, check_arithmetic
from .reference import Reference, ReferenceVerdict, check_reference

RATED = ("success", "wrong", "unattackable")
EXCLUDED = ("clean_wrong", "not_judged", "invalid")
DIRECTION = ("higher success rate = more fragile reasoning (the attack broke it more often); higher "
             "unattackable rate = more robust reasoning")


@dataclass
class ChainCheck:
    """The reasoning check of one chain: arithmetic, the reference check and the judge's verdict, when asked."""

    arithmetic: ArithmeticCheck
    judged: bool | None = None  # the judge's verdict: correct? (None: no judge, not asked, or unread)
    unread: str | None = None  # why the judge's verdict is missing although a judge was asked
    reference: ReferenceVerdict | None = None  # None: the item has no reference or the check is off

    @classmethod
    def of(cls, reasoning: str, verdict: tuple[bool | None, str | None] | None = None,
           reference: Reference | None = None) -> ChainCheck:
        """Check ``reasoning``'s arithmetic and, with a ``reference``, its steps.

        ``verdict`` is the judge's (correct?, why unread), if asked.
        """
        judged, unread = verdict if verdict is not None else (None, None)
        ref = check_reference(reasoning, reference) if reference is not None else None
        return cls(check_arithmetic(reasoning), judged, unread, ref)

    def false_equation(self) -> str | None:
        """The text of the chain's first false equation, or None when every checked equation holds."""
        bad = self.arithmetic.false
        return bad[0].text if bad else None

    def record(self) -> dict[str, Any]:
        """The check as written to ``attack_items.jsonl``: equation counts, false equations, judge verdict."""
        return {**self.arithmetic.counts(), "false_equations": [e.text for e in self.arithmetic.false],
                "judge": self.judged, "judge_unread": self.unread,
                "reference": self.reference.record() if self.reference is not None else None}


@dataclass
class Outcome:
    """The outcome of one attack and the reason, in words."""

    outcome: str  # one of RATED + EXCLUDED
    why: str


def classify(*, answer_kept: bool, clean: ChainCheck, perturbed: ChainCheck, judge: bool,
             invalid: str | None = None, meaning_kept: bool | None = None, meaning_unread: str | None = None
             ) -> Outcome:
    """The outcome of one attack: the first rule of the module docstring's table that applies.

    Args:
        answer_kept: The perturbed answer equals the clean answer.
        clean: Reasoning check of the clean chain.
        perturbed: Reasoning check of the perturbed chain.
        judge: A reasoning judge is configured.
        invalid: Why the perturbation is not a valid attack (None: valid).
        meaning_kept: The meaning judge's verdict on the perturbed question (None: not asked).
        meaning_unread: Why the meaning verdict could not be read (None: read or not asked).

    Returns:
        One of ``success``, ``wrong``, ``unattackable`` (rated) or ``clean_wrong``, ``not_judged``,
        ``invalid`` (excluded from the rates), with the reason.
    """
    bad = clean.false_equation()
    if bad is not None:
        return Outcome("clean_wrong", f"the clean chain already states a false equation: {bad!r}")
    if clean.reference is not None and clean.reference.broken:
        return Outcome("clean_wrong", f"the reference check: the clean chain {clean.reference.why}")
    if judge and clean.judged is False:
        return Outcome("clean_wrong", "the judge calls the clean reasoning incorrect")
    if judge and clean.judged is None:
        return Outcome("not_judged", f"no verdict on the clean chain: {clean.unread or 'not asked'}")
    if invalid:
        return Outcome("invalid", invalid)
    if meaning_kept is False:
        return Outcome("invalid", "the judge says the perturbed question changed meaning")
    if meaning_unread:
        return Outcome("not_judged", f"no meaning verdict on the perturbed question: {meaning_unread}")
    if not answer_kept:
        return Outcome("wrong", "the answer changed")
    bad = perturbed.false_equation()
    if bad is not None:
        return Outcome("success", f"answer kept; new false equation {bad!r}")
    if perturbed.reference is not None and perturbed.reference.broken:
        return Outcome("success", f"answer kept; the reference check: the chain {perturbed.reference.why}")
    if perturbed.judged is False:
        return Outcome("success", "answer kept; the judge calls the reasoning incorrect")
    if perturbed.judged is True:
        return Outcome("unattackable", "answer kept; no false equation; the judge calls the reasoning correct")
    if perturbed.reference is not None:
        return Outcome("unattackable", "answer kept; no false equation; the reference check: the chain "
                       + perturbed.reference.why)
    if not judge:
        return Outcome("not_judged", "answer kept; no false equation; no judge to see other errors")
    return Outcome("not_judged", f"answer kept; no false equation; no verdict: {perturbed.unread or 'not asked'}")


def outcome_rates(outcomes: list[str], stats: StatsConfig, seed: int) -> dict[str, Any]:
    """Attack rates: success (SR), wrong (WR) and unattackable (UR) over the decided attacks, with CIs.

    n = attacked - clean_wrong - not_judged - invalid; SR = #success / n, WR = #wrong / n,
    UR = #unattackable / n, so SR + WR + UR = 1. Each is the mean of an indicator with the interval of
    :func:`reasonscope.stats.bootstrap.estimate` (an exact binomial interval for 0/1 values).

    Args:
        outcomes: The outcome of every attack of one model and method.
        stats: Confidence level, resamples and interval method.
        seed: Seed of the resampling.

    Returns:
        ``attacked``, ``n``, ``counts`` (every outcome), ``denominator`` (in words), and ``success``,
        ``wrong``, ``unattackable`` as estimates in [0, 1] (value None when n = 0: no decided attack).
        A higher SR means more fragile reasoning, a higher UR more robust reasoning. When some attacks
        are not judged, ``success_bounds`` bounds SR over decided + not judged attacks:
        [success / (n + not_judged), (success + not_judged) / (n + not_judged)].

    Examples:
        >>> from reasonscope.shared_settings import StatsConfig
        >>> r = outcome_rates(["success", "wrong", "success", "clean_wrong", "not_judged"], StatsConfig(), 0)
        >>> r["n"], r["success"]["value"], r["success_bounds"]
        (3, 0.6666666666666666, {'low': 0.5, 'high': 0.75, 'n': 4})
    """
    counts = {o: outcomes.count(o) for o in RATED + EXCLUDED}
    decided = [o for o in outcomes if o in RATED]
    out: dict[str, Any] = {"attacked": len(outcomes), "n": len(decided), "counts": counts,
                           "denominator": "attacked - clean_wrong - not_judged - invalid",
                           **{o: estimate([1.0 if x == o else 0.0 for x in decided], stats, seed) for o in RATED}}
    pool = len(decided) + counts["not_judged"]
    if counts["not_judged"] and pool:
        out["success_bounds"] = {"low": counts["success"] / pool,
                                 "high": (counts["success"] + counts["not_judged"]) / pool, "n": pool}
    return out
