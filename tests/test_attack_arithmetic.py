"""The attack family's arithmetic check: grammar, precision rule, skipped links, calculator annotations,
known-bad chains, and the false-flag / detection rates on the real GSM8K solutions."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pytest

from reasonscope.attack.arithmetic import check_arithmetic, evaluate, find_equations
from reasonscope.attack.checker_validation import corrupt_operator, corrupt_result, validate_checker

GSM8K = next((p / "shared" / "data" / "gsm8k_train.jsonl.gz" for p in Path(__file__).resolve().parents
              if (p / "shared" / "data" / "gsm8k_train.jsonl.gz").is_file()), None)


def _links(text):
    return [(e.text, e.holds) for e in check_arithmetic(text).equations]


@pytest.mark.parametrize("text", [
    "100 / 3 = 33.33",  # rounded at the stated precision
    "2/3 = 0.67",
    "50 / 3 = 16 whole boxes",  # truncated to the stated precision
    "15 / 90 * 100 = 16.66",
    "50% * 20 = 10",  # x% is x/100
    "$20 * 50% = $10",
    "9 / 27 * 100 = 33.33%",  # percent points
    "It costs $17,500 - $2,500 = $15,000 in all.",  # thousands separators
    "250 x 12 = 3 000 grams",
    "20 * 2 = 40 + 5 = 45",  # running computation
    "25 / 1/3 = 75",  # an unspaced fraction is one number
    "1 1/2 * 4 = 6",  # mixed number
    "4 trays * 6 rolls = 24 rolls",  # units
    "60 minutes x 2/3 = 40 minutes",
    "12 steps * 8 inches/step = 96 inches",
    "$1 / 2 = 50 cents",
    "**4 * 6 = 24**",
    "10 ÷ 4 = 2.5 and 3 × 4 = 12 and 2^3 = 8",
])
def test_correct_statements_pass(text):
    check = check_arithmetic(text)
    assert check.passed and check.checked, check.equations


@pytest.mark.parametrize("text, reason", [
    ("x * 4/5 = 240", "fragment: a side starts with an operator"),  # not read as 4/5 = 240
    ("the side x 2/3 = 40", "fragment: the left side follows the word 'x'"),
    ("He has 3 times 4 = 13", "fragment: the left side follows the word 'times'"),
    ("So 12 = 3 * 5", "a lone number after words (the left side may be a verbal expression)"),
    ("Total = 5", "a side is empty"),
    ("Day 4:2(50+100+120)=540", "fragment: the left side is glued to the text before it"),
    ("2 hours + 30 minutes = 150 minutes", "different units of one kind (not converted)"),
    ("Step 1: 1 = 2 hours", "no operation in the chain"),
    ("It took 12 + 8(26) = 220 minutes", "does not parse: does not parse as a whole"),
])
def test_unreadable_statements_are_skipped_with_a_reason(text, reason):
    check = check_arithmetic(text)
    assert check.passed and not check.checked
    assert [e.reason for e in check.skipped] == [reason]
    assert check.counts() == {"checked": 0, "false": 0, "skipped": 1}


@pytest.mark.parametrize("text, bad", [
    ("So 15 - 6 = 8 stamps are left.", "15 - 6 = 8 stamps"),  # a changed result
    ("There are 4 trays * 6 rolls = 26 rolls.", "4 trays * 6 rolls = 26 rolls"),
    ("She pays 4 + 6 = 24 dollars.", "4 + 6 = 24 dollars"),  # a wrong operator
    ("The discount is 20% * $50 = $12.", "20% * $50 = $12"),  # a wrong percent
    ("25% of 80 = 25", "25% of 80 = 25"),
    ("3 * 4 = 12 = 13", "12 = 13"),  # one false link of a chain
    ("2 + 2 = 5 = 5", "2 + 2 = 5"),
    ("5 * 3 = 15 + 2 = 18", "15 + 2 = 18"),
    ("100 / 3 = 33.4", "100 / 3 = 33.4"),  # wrong at the stated precision
    ("10/3 = 3.4", "10/3 = 3.4"),  # rounding up is not rounding
    ("5 / 0 = 1", "5 / 0 = 1"),
])
def test_known_bad_statements_are_flagged(text, bad):
    check = check_arithmetic(text)
    assert not check.passed
    assert [e.text for e in check.false] == [bad]


def test_values_reasons_and_chains():
    eq = find_equations("So 15 - 6 = 8 stamps")[0]
    assert (eq.lhs, eq.rhs, eq.holds) == (9.0, 8.0, False)
    assert _links("3 * 4 = 12 = 13") == [("3 * 4 = 12", True), ("12 = 13", False)]
    running = find_equations("20 * 2 = 40 + 5 = 45")
    assert [e.reason for e in running] == ["running computation", ""]
    assert find_equations("9 / 27 * 100 = 33.33%")[0].reason == "percent points"
    assert find_equations("$1 / 2 = 50 cents")[0].reason == "cents"
    assert find_equations("5 / 0 = 1")[0].reason == "division by zero"
    assert check_arithmetic("No numbers to check here.").counts() == {"checked": 0, "false": 0, "skipped": 0}
    assert check_arithmetic("The 3rd step: 50% of it.").passed  # no '=': nothing stated


def test_calculator_annotations_are_checked_and_removed_from_the_prose():
    ok = check_arithmetic("Natalia sold 48/2 = <<48/2=24>>24 clips.")
    assert ok.passed and [(e.text, e.source) for e in ok.checked] == [("48/2 = 24", "annotation"),
                                                                      ("48/2 = 24 clips", "text")]
    prose = check_arithmetic("Natalia sold 48/2 = <<48/2=24>>25 clips.")
    assert [(e.text, e.source) for e in prose.false] == [("48/2 = 25 clips", "text")]
    note = check_arithmetic("Natalia sold 48/2 = <<48/2=25>>24 clips.")
    assert [(e.text, e.source) for e in note.false] == [("48/2 = 25", "annotation")]


def test_evaluate_reads_expressions_only():
    assert evaluate("3 x 4 + 1,200 / 2") == 612
    assert evaluate("50% * 20") == 10
    assert evaluate("(2 + 3) * 4") == 20
    for bad in ("__import__('os')", "2 +", "1 2"):
        with pytest.raises(ValueError, match="not an arithmetic expression"):
            evaluate(bad)


def test_corruptions_change_one_place():
    rng = random.Random(0)
    text = "He has 4 * 6 = 24 rolls and 24 - 5 = 19 left."
    bad = corrupt_result(text, rng)
    assert bad != text and len([a for a, b in zip(text, bad, strict=False) if a != b]) <= 2
    assert not check_arithmetic(bad).passed
    swapped = corrupt_operator(text, random.Random(1))
    assert swapped != text and not check_arithmetic(swapped).passed
    assert corrupt_result("No equation here.", rng) is None


def _gsm8k_solutions() -> list[str]:
    if GSM8K is None:
        pytest.skip("the GSM8K training file gsm8k_train.jsonl.gz is not in a shared/data folder above the tests")
    with gzip.open(GSM8K, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["answer"].split("####")[0] for line in fh if line.strip()]


def test_gsm8k_gold_solutions_are_not_flagged_and_corruptions_are():
    """7,473 correct worked solutions: at most 0.5% flagged (annotations and prose both checked); a
    seeded sample of 1,000 with one stated result changed or one operator swapped is mostly caught."""
    solutions = _gsm8k_solutions()
    assert len(solutions) == 7473
    flagged = sum(not check_arithmetic(t).passed for t in solutions)
    assert flagged / len(solutions) <= 0.005, flagged
    sample = [re.sub(r"<<[^<>]*>>", "", t) for t in random.Random(0).sample(solutions, 1000)]
    report = validate_checker(sample, seed=0)
    assert report.rate("flagged") <= 0.01
    assert report.rate("result") >= 0.85 and report.rate("operator") >= 0.85, report


@pytest.mark.slow
def test_gsm8k_full_validation_both_text_forms():
    solutions = _gsm8k_solutions()
    for texts in (solutions, [re.sub(r"<<[^<>]*>>", "", t) for t in solutions]):
        report = validate_checker(texts, seed=0)
        assert report.rate("flagged") <= 0.005 and report.rate("result") >= 0.88, report
        assert report.rate("operator") >= 0.9, report
