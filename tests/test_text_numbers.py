"""The number grammar: one known-answer case (or more) per form of docs/answers.md's table."""

from __future__ import annotations

import math

import pytest

from reasonscope.text.answers import extract_answer, parse_target
from reasonscope.text.numbers import is_expression, needs_math, normalize_markup, read_numerals

# (statement as a model writes it, value read; None = unparseable or ambiguous, never a number)
FORMS = [
    # signs
    ("Answer: -5", -5.0), ("Answer: +3", 3.0), ("Answer: −5", -5.0), ("Answer: –7", -7.0),
    ("Answer: -$5", -5.0), ("Answer: $-5", -5.0),
    # decimals
    ("Answer: 3.50", 3.5), ("Answer: .5", 0.5), ("Answer: 0.25", 0.25), ("Answer: 1.2.3", None),
    # thousands separators
    ("Answer: 1,234,567", 1234567.0), ("Answer: 1,000.5", 1000.5), ("Answer: 1{,}000", 1000.0),
    ("Answer: 1{,}000{,}000", 1_000_000.0), ("Answer: 1\\,000", 1000.0), ("Answer: 1,5", None),
    ("Answer: 1,0000", None), ("Answer: 12,34", None),
    # scientific notation
    ("Answer: 1e3", 1000.0), ("Answer: 2.5e-1", 0.25), ("The answer is 1.5E+2.", 150.0), ("Answer: 2.0e3", 2000.0),
    ("Answer: 2 \\times 10^3", 2000.0), ("Answer: 2 \\times 10^{3}", 2000.0), ("Answer: 2.5 \\cdot 10^{-1}", 0.25),
    ("Answer: 3×10^-2", 0.03), ("Answer: 3 x 10^2", 300.0), ("Answer: 3*10**2", 300.0), ("Answer: −4e2", -400.0),
    # fractions and mixed numbers
    ("Answer: 3/4", 0.75), ("Answer: -3/4", -0.75), ("Answer: 1 1/2", 1.5), ("Answer: 8/0", None),
    ("Answer: 1/2/2024", None),
    # percent (the sign is dropped, the number is not divided)
    ("Answer: 25%", 25.0), ("Answer: 25 %", 25.0), ("Answer: 25\\%", 25.0), ("Answer: 12.5%", 12.5),
    # currency
    ("The answer is $1,200.", 1200.0), ("Answer: €40", 40.0), ("Answer: £40", 40.0), ("Answer: ¥300", 300.0),
    ("Answer: \\$1{,}000", 1000.0), ("Answer: 12 dollars and 50 cents", 12.0),
    # units
    ("Answer: 5 km", 5.0), ("Answer: 5kg", 5.0), ("Answer: 18 apples", 18.0), ("Answer: 5\\text{ km}", 5.0),
    ("Answer: 5 \\mathrm{cm}", 5.0),
    # ranges, dates, ratios, versions: one number is not stated
    ("Answer: 10-12 apples", None), ("Answer: 2024-01-01", None), ("Answer: 3:4", None),
    # out of the double range
    ("Answer: " + "9" * 5000, None), ("Answer: 1e400", None), ("Answer: -1e400", None),
    ("Answer: " + "1" + "0" * 400, None), ("Answer: 1e-400", 0.0),
    # number words only when there is no digit
    ("Answer: eight", 8.0), ("Answer: eight or nine", None),
]


@pytest.mark.parametrize("text,expected", FORMS)
def test_number_forms(text, expected):
    ext = extract_answer(text, "number")
    if expected is None:
        assert ext.answer is None and ext.reason.startswith(("unparseable", "ambiguous")), (ext.answer, ext.reason)
    else:
        assert ext.answer == pytest.approx(expected, rel=1e-12, abs=1e-300), ext.reason


def test_a_5000_digit_number_is_unparseable_with_its_size_and_never_matches():
    huge = "9" * 5000
    ext = extract_answer(f"Answer: {huge}", "number")
    assert ext.answer is None and "5000 digits" in ext.reason and "double-precision range" in ext.reason
    with pytest.raises(ValueError, match="numeric target"):
        parse_target(huge, "number")
    with pytest.raises(ValueError, match="finite"):
        parse_target(10**400, "number")
    with pytest.raises(ValueError, match="finite"):
        parse_target(float("nan"), "number")


def test_glued_numbers_say_why():
    ext = extract_answer("Answer: 10-12 apples", "number")
    assert ext.reason == "unparseable: '10-12' is not one number (a range, date, ratio, version or decimal comma?)"


def test_a_long_run_of_spaces_after_answer_is_read_in_linear_time():
    # the answer-line pattern had two adjacent \s* before the colon: quadratic in the run (minutes for 1 MB)
    assert extract_answer("answer" + " " * 1_000_000 + "x\nThe answer is 7.", "number").answer == 7.0


def test_plain_strictness_is_kept():
    assert extract_answer("The answer is 18.", "number").answer == 18.0
    assert extract_answer("-5", "number").answer == -5.0
    assert extract_answer("I think it is 8 or 9", "number").reason.startswith("ambiguous: 2 numbers")
    assert extract_answer("The answer is 8, not 18.", "number").answer == 8.0


def test_normalize_markup_and_routes():
    assert normalize_markup("1{,}000") == "1,000"
    assert normalize_markup("\\$12") == "$12"
    assert normalize_markup("2 \\times 10^{-3}") == "2e-3"
    assert normalize_markup("5\\text{ km}").split() == ["5", "km"]
    assert not needs_math("1,000") and not needs_math("2e-3") and not needs_math("3/4") and not needs_math("10-12")
    assert needs_math("\\frac{3}{4}") and needs_math("2^10") and needs_math("5 + 3 apples")
    assert is_expression("(1 + 2) / 3") and not is_expression("3/4") and not is_expression("5 - 3")


def test_numerals_keep_positions_and_reasons():
    found = read_numerals("from 3 to 1,5 and 8/0")
    assert [(n.text, n.value) for n in found] == [("3", 3.0), ("1,5", None), ("8/0", None)]
    assert found[2].reason.startswith("unparseable: division by zero")


def test_number_targets_use_the_same_grammar():
    assert parse_target("1e3", "number") == 1000.0
    assert parse_target("\\frac{3}{4}", "number") == 0.75
    assert parse_target("Natalia sold 48 clips.\n#### 1{,}250", "number") == 1250.0
    assert math.isclose(parse_target("2\\sqrt{2}", "number"), 2 * math.sqrt(2))
