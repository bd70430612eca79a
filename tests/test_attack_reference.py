"""The reference check of the attack family: chains of thought decided against the known steps of seeded word
problems (known-answer tests on hand-built chains)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from reasonscope.attack.outcome_rules import ChainCheck, classify
from reasonscope.attack.reference import check_reference, reference_of
from reasonscope.data.word_problems import word_problem_items
from reasonscope.types import Item

ONE = Item(id="a", input="Ana has 3 apples and gets 5 more. How many apples does Ana have now?", target=8,
           answer_type="number", rationale="Ana has 3 apples and gets 5 more, so 3 + 5 = 8 apples.")
TWO = Item(id="b", input="Ben buys 3 bags with 4 eggs in each bag and 5 more eggs. How many eggs does Ben buy?",
           target=17, answer_type="number",
           rationale="The bags hold 3 * 4 = 12 eggs, and with 5 more that is 12 + 5 = 17 eggs.")


def _v(chain: str, item: Item = ONE):
    v = check_reference(chain, reference_of(item))
    return v.broken, v.rule, v.values


def test_reference_is_read_from_the_gold_rationale():
    one, two = reference_of(ONE), reference_of(TWO)
    assert one.results == (Fraction(8),) and one.known == {Fraction(3), Fraction(5), Fraction(8)}
    assert two.results == (Fraction(12), Fraction(17))
    assert two.known == {Fraction(3), Fraction(4), Fraction(5), Fraction(12), Fraction(17)}


@pytest.mark.parametrize("rationale, target", [
    (None, 8),                                   # no rationale
    ("Ana ends with eight apples.", 8),          # no checked equation
    ("3 + 5 = 9 apples.", 9),                    # a false step
    ("3 + 5 = 8 apples.", 9),                    # the last result is not the gold answer
])
def test_no_reference_without_a_true_stepwise_rationale(rationale, target):
    assert reference_of(ONE.model_copy(update={"rationale": rationale, "target": target})) is None


def test_correct_chains_are_not_broken():
    assert _v("Ana has 3 apples and gets 5 more, so 3 + 5 = 8 apples.") == (False, "correct", ())
    # no equation at all: the arithmetic check cannot read it, the reference check can
    assert _v("She starts with 3 apples and gets 5 more, so she has 8 apples.") == (False, "correct", ())
    assert _v("3 * 4 = 12 eggs in the bags, 12 + 5 = 17 eggs.", TWO) == (False, "correct", ())
    # both steps at once in one true expression: the intermediate result may go unstated
    assert _v("Ben has 3 * 4 + 5 = 17 eggs.", TWO) == (False, "correct", ())


def test_a_wrong_value_breaks_the_chain():
    # a wrong result stated with no equation: the arithmetic check passes it
    assert _v("She has 3 apples and gets 5 more, so she has 9 apples.") == (True, "wrong value", (9.0,))
    # a true equation that does not answer the question (5 - 3 for 3 + 5)
    assert _v("5 - 3 = 2 apples.") == (True, "wrong value", (2.0,))
    # a wrong intermediate carried through: 3 * 4 = 13 (false, also the arithmetic check's) and 13 + 5 = 18
    assert _v("3 * 4 = 13, and 13 + 5 = 18 eggs.", TWO) == (True, "wrong value", (13.0, 18.0))
    # a number the problem does not have, even when the final result is right
    assert _v("Ana has 3 apples, gets 5 more and 1 more, 8 apples.") == (True, "wrong value", (1.0,))


def test_a_computation_the_problem_does_not_ask_breaks_the_chain():
    # known numbers only, true equations, the result stated: but 8 - 5 is no step of 3 + 5
    assert _v("Ana has 8 apples, so 8 - 5 = 3 and 3 + 5 = 8.") == (True, "wrong step", (3.0,))
    bags = Item(id="c", input="Lena buys 5 bags with 2 apples in each bag. How many apples does Lena buy?", target=10,
                answer_type="number", rationale="5 * 2 = 10 apples.")
    assert _v("10 is the number of apples, so 10 / 2 = 5.", bags) == (True, "wrong step", (5.0,))
    assert _v("5 bags of 2 apples: 2 * 5 = 10 apples.", bags) == (False, "correct", ())


def test_a_dropped_step_breaks_the_chain():
    # the chain never reaches the answer
    assert _v("Ana has 3 apples and gets 5 more.") == (True, "dropped step", (8.0,))
    # the intermediate result is never stated nor computed inside a true equation
    assert _v("Ben has 3 bags of 4 eggs and 5 more, 17 eggs.", TWO) == (True, "dropped step", (12.0,))
    # a result written as a word is not read (the stated limit of the rule)
    assert _v("Ana has 3 apples and gets 5 more, eight in all.") == (True, "dropped step", (8.0,))


def test_every_seeded_word_problem_has_a_reference_its_gold_rationale_passes():
    items = word_problem_items(200, seed=7)
    refs = [reference_of(it) for it in items]
    assert all(r is not None for r in refs)
    assert not any(check_reference(it.rationale, r).broken for it, r in zip(items, refs, strict=True))
    steps = {len(r.results) for it, r in zip(items, refs, strict=True) if it.metadata["steps"] == 2}
    assert steps == {2}


def test_outcomes_with_the_reference_check():
    ref = reference_of(ONE)
    ok = ChainCheck.of("so she has 8 apples.", None, ref)
    broken = ChainCheck.of("so she has 9 apples.", None, ref)

    def c(clean, perturbed, kept=True):
        o = classify(answer_kept=kept, clean=clean, perturbed=perturbed, judge=False)
        return o.outcome, o.why

    assert c(ok, broken) == ("success", "answer kept; the reference check: the chain states 9, not a value of the "
                                        "problem's known steps")
    assert c(ok, ok) == ("unattackable", "answer kept; no false equation; the reference check: the chain states "
                                         "every step result and only known values")
    assert c(broken, ok)[0] == "clean_wrong"  # the clean chain is already wrong: excluded
    assert c(ok, broken, kept=False)[0] == "wrong"
    # without a reference the same chains are not judged (the arithmetic check sees no equation)
    assert c(ChainCheck.of("so she has 8 apples."), ChainCheck.of("so she has 9 apples."))[0] == "not_judged"
    # a judge that calls the chain correct does not overrule a broken reference check
    clean, judged = ChainCheck.of("so she has 8 apples.", (True, None), ref), ChainCheck.of("so she has 9.", (True, None), ref)
    assert classify(answer_kept=True, clean=clean, perturbed=judged, judge=True).outcome == "success"
    assert broken.record()["reference"] == {"broken": True, "rule": "wrong value", "values": [9.0]}
