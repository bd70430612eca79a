r"""The reference check: a chain of thought decided against the known steps of its problem.

The arithmetic check (:mod:`reasonscope.attack.arithmetic`) calls a chain wrong only when it states a
false equation. A chain that states a wrong value in words (``so she has 8 apples`` for 3 + 4), writes a
true equation that does not answer the question (``5 - 3 = 2`` for 5 + 3), or never reaches a result
passes it. Where the intermediate results of a problem are known, these chains can be decided: the
seeded word problems (:func:`reasonscope.data.word_problems.word_problem_items`) are correct by
construction and their gold rationale states every step as an equation.

Reference (:func:`reference_of`)
    The *steps* are the links of the item's gold rationale that the arithmetic check reads and finds
    true, in order; each step's *result* is its right side. The *known values* K are the numbers of
    the question, every number of the gold rationale (operands and results) and the gold answer. An
    item has no reference (None) when it has no rationale, when a link of the rationale is false or
    none is checked, or when the last result is not the gold answer.

Rule (:func:`check_reference`), for a clean or a perturbed chain, against the *original* question's
reference (the meaning filter keeps the perturbed question's meaning, so its steps are the same):

1. **wrong value**: the chain states a number (written in digits, read as the arithmetic check reads
   numbers) that is not in K. The chain is broken.
2. **wrong step**: the chain holds a true equation (arithmetic check) whose value is not a step's
   result: it computes something the problem does not ask from known numbers (``10 / 2 = 5`` for 5
   bags of 2). The chain is broken.
3. **dropped step**: a step's result is not stated in the chain. An intermediate result may go
   unstated when the chain holds a true equation (arithmetic check) one of whose sides equals a
   later step's result: ``3 + 4 + 5 = 12`` computes the two steps of 3 + 4 = 7, 7 + 5 = 12 at once.
   The chain is broken (the last step's result unstated: the chain does not reach the answer).
4. Otherwise the chain is **correct** (not broken).

A broken chain is what the publication's judge is asked to find, reasoning that is incorrect; the
rule is stricter than a reader in two stated ways: numbers written as words are not read (a result
written only as ``seven`` counts as unstated), and any number outside K counts, also one an attack
inserted into the question and the chain repeats. It is more lenient in one: it reads values, not words,
so a chain stating only the right values (``10 is the answer.``) is correct. Equal values compare exactly
(fractions). False
equations are the arithmetic check's; the attack outcome combines both (:mod:`.outcomes`).

Range and direction: the verdict is ``broken`` True (reasoning incorrect) or False (correct), with
the rule that decided and the values it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..types import Item
from .arithmetic import check_arithmetic, stated_numbers


@dataclass(frozen=True)
class Reference:
    """The known steps of one problem: each step's result, in order, and every known value."""

    results: tuple[Fraction, ...]
    known: frozenset[Fraction]


@dataclass(frozen=True)
class ReferenceVerdict:
    """The reference check of one chain.

    ``broken`` is True when the reasoning is incorrect by the module's rule; ``rule`` names the rule
    that decided (``wrong value``, ``wrong step``, ``dropped step`` or ``correct``) and ``values`` the
    numbers it is about (the unknown numbers stated, the values of the equations that are no step, or
    the results not stated).
    """

    broken: bool
    rule: str
    values: tuple[float, ...] = field(default_factory=tuple)

    @property
    def why(self) -> str:
        """The verdict in words, as an outcome's reason shows it."""
        shown = ", ".join(f"{v:g}" for v in self.values)
        if self.rule == "wrong value":
            return f"states {shown}, not a value of the problem's known steps"
        if self.rule == "wrong step":
            return f"computes {shown}, not a result of the problem's known steps"
        if self.rule == "dropped step":
            return f"does not state the step result {shown}"
        return "states every step result and only known values"

    def record(self) -> dict:
        """The verdict as written to ``attack_items.jsonl``."""
        return {"broken": self.broken, "rule": self.rule, "values": list(self.values)}


def reference_of(item: Item) -> Reference | None:
    """The item's reference (module docstring), or None when its gold rationale does not give one.

    Examples:
        >>> from reasonscope.types import Item
        >>> it = Item(id="a", input="Ana has 3 apples and gets 4 more. How many?", target=7,
        ...           answer_type="number", rationale="3 + 4 = 7 apples.")
        >>> ref = reference_of(it)
        >>> [int(r) for r in ref.results], sorted(int(v) for v in ref.known)
        ([7], [3, 4, 7])
    """
    if not item.rationale:
        return None
    check = check_arithmetic(item.rationale)
    if not check.checked or not check.passed:
        return None
    results = tuple(Fraction(e.rhs).limit_denominator(10**6) for e in check.checked)
    try:
        gold = Fraction(str(item.target))
    except (TypeError, ValueError):
        return None
    if results[-1] != gold:
        return None
    known = set(stated_numbers(item.input)) | set(stated_numbers(item.rationale)) | {gold}
    return Reference(results, frozenset(known))


def check_reference(chain: str, ref: Reference) -> ReferenceVerdict:
    """Decide one chain against a reference: the first rule of the module docstring that applies.

    Args:
        chain: The chain of thought (clean or perturbed).
        ref: The reference of the original problem (:func:`reference_of`).

    Returns:
        ``broken`` True with rule ``wrong value`` (the unknown numbers), ``wrong step`` (the values of true
        equations that are no step) or ``dropped step`` (the unstated results), else ``broken`` False with
        rule ``correct``.

    Examples:
        >>> ref = Reference((Fraction(7),), frozenset({Fraction(3), Fraction(4), Fraction(7)}))
        >>> check_reference("3 + 4 = 7 apples.", ref).broken
        False
        >>> v = check_reference("She has 3 apples and gets 4 more, so she has 8.", ref)
        >>> v.rule, v.values
        ('wrong value', (8.0,))
        >>> check_reference("She has 3 apples and gets 4 more.", ref).rule
        'dropped step'
    """
    stated = stated_numbers(chain)
    unknown = sorted({v for v in stated if v not in ref.known})
    if unknown:
        return ReferenceVerdict(True, "wrong value", tuple(float(v) for v in unknown))
    seen = set(stated)
    computed = {Fraction(x).limit_denominator(10**6) for e in check_arithmetic(chain).checked if e.holds
                for x in (e.lhs, e.rhs) if x is not None}
    stray = sorted(computed - set(ref.results))
    if stray:
        return ReferenceVerdict(True, "wrong step", tuple(float(v) for v in stray))
    dropped = [r for i, r in enumerate(ref.results)
               if r not in seen and not any(later in computed for later in ref.results[i + 1:])]
    if dropped:
        return ReferenceVerdict(True, "dropped step", tuple(float(v) for v in dropped))
    return ReferenceVerdict(False, "correct")
