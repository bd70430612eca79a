"""Table-driven tests of typed answer extraction and matching (hand-written cases).

Each row: (model output, answer type, choices, gold, expected verdict). ``True`` = must be judged
correct, ``False`` = must be judged wrong (including unparseable). Zero false positives is the bar.
"""

from __future__ import annotations

import pytest

from reasonscope.text.answers import answers_match, extract_answer, parse_target

ABCD = ["Paris", "London", "Berlin", "Madrid"]
NUMS = ["12", "15", "18", "21"]
NLI = ["entailment", "neutral", "contradiction"]

CASES = [
    # --- the peer package's false positives: every one must be rejected -----------------------------
    ("The answer is 18.", "number", None, 8, False),
    ("I got 0.8", "number", None, 8, False),
    ("The answer is B.", "choice", ABCD, "A", False),
    ("No, not yesterday.", "boolean", None, "yes", False),
    ("-5", "number", None, 5, False),
    # --- numbers: correct forms ----------------------------------------------------------------------
    ("8", "number", None, 8, True),
    ("The answer is 8.", "number", None, 8, True),
    ("Answer: 8", "number", None, 8, True),
    ("Final answer: 8", "number", None, "8", True),
    ("**Answer:** 8", "number", None, 8, True),
    ("#### 72", "number", None, 72, True),
    ("She sold 48 + 24 = 72 clips.\n#### 72", "number", None, "72", True),
    ("Natalia sold 48/2 = 24 clips in May.\n#### 72", "number", None, 72, True),
    ("The answer is $1,200.", "number", None, 1200, True),
    ("Answer: 1,234,567", "number", None, 1234567, True),
    ("Answer: 3.50", "number", None, 3.5, True),
    ("Answer: $3.50", "number", None, "3.5", True),
    ("Answer: -5", "number", None, -5, True),
    ("Answer: −5", "number", None, -5, True),
    ("Answer: 3/4", "number", None, 0.75, True),
    ("Answer: 1 1/2", "number", None, 1.5, True),
    ("Answer: 25%", "number", None, 25, True),
    ("Answer: 18 apples", "number", None, 18, True),
    ("Answer: 5 km", "number", None, 5, True),
    ("Answer: 5kg", "number", None, 5, True),
    ("Answer: 0.5", "number", None, 0.5, True),
    ("Answer: .5", "number", None, 0.5, True),
    ("Answer: 100.0", "number", None, 100, True),
    ("Answer: eight", "number", None, 8, True),
    ("The final answer is \\boxed{42}.", "number", None, 42, True),
    ("So \\boxed{\\frac{1}{2}} hmm\nAnswer: 7", "number", None, 7, False),  # boxed wins over the answer line
    ("Step 1: 3 + 4 = 7\nStep 2: 7 * 2 = 14\nAnswer: 14", "number", None, 14, True),
    ("Step 1: 3 + 4 = 7\nStep 2: 7 * 2 = 14\nAnswer: 14", "number", None, 7, False),
    ("3 + 5 = 8", "number", None, 8, True),
    ("So she has 5 + 3 = 8 apples left.", "number", None, 8, True),
    ("Therefore she has 8 apples.", "number", None, 8, True),
    ("The answer is 8, not 18.", "number", None, 8, True),
    ("<think>maybe 9? no, 8</think>\nAnswer: 8", "number", None, 8, True),
    ("<think>The answer is 8</think>\nAnswer: 9", "number", None, 8, False),
    ("Answer: 2.0e3", "number", None, 2000, True),  # scientific notation is read (issue #21: it was not)
    ("Answer: 1,000.5", "number", None, 1000.5, True),
    ("answer: 64", "number", None, 64, True),
    ("The correct answer is 64", "number", None, 64, True),
    ("Answer: 7.0001", "number", None, 7, False),
    ("Answer: 7.0000000001", "number", None, 7, True),  # within the relative tolerance 1e-6
    ("Answer: +3", "number", None, 3, True),
    ("Answer: -0.25", "number", None, -0.25, True),
    ("Answer: 12 dollars and 50 cents", "number", None, 12, True),
    ("Answer: €40", "number", None, 40, True),
    ("Answer: £40", "number", None, 40, True),
    ("x = 12", "number", None, 12, True),
    ("So she has 8 marbles.\n```", "number", None, 8, True),  # a closing code fence is not the last line
    ("So she has 8 marbles.\n---\n", "number", None, 8, True),
    # --- numbers: wrong or unparseable ---------------------------------------------------------------
    ("The answer is 80.", "number", None, 8, False),
    ("Answer: 88", "number", None, 8, False),
    ("Answer: 0.08", "number", None, 8, False),
    ("Answer: 8.5", "number", None, 8, False),
    ("Answer: -8", "number", None, 8, False),
    ("Answer: 81", "number", None, 8, False),
    ("Answer: 18", "number", None, 8, False),
    ("Answer: 1/8", "number", None, 8, False),
    ("Answer: 80%", "number", None, 8, False),
    ("I think it is 8 or 9", "number", None, 8, False),  # ambiguous last line
    ("There were 8 apples and 3 pears", "number", None, 8, False),  # ambiguous last line
    ("8 apples.\nThen 3 are eaten, so 5 remain.", "number", None, 8, False),  # last line is about 5
    ("She had 8 apples at first.\nAnswer: 5", "number", None, 8, False),
    ("The value 8 appears in the question.\nAnswer: unknown", "number", None, 8, False),
    ("Answer:", "number", None, 8, False),
    ("", "number", None, 8, False),
    ("I cannot determine this.", "number", None, 8, False),
    ("Answer: 8/0", "number", None, 8, False),
    ("Answer: 2018", "number", None, 8, False),
    ("Answer: 8000", "number", None, 8, False),
    ("Answer: x8", "number", None, 8, False),
    ("The answer is 1,800", "number", None, 18, False),
    ("#### 18", "number", None, 8, False),
    ("The answer is 8.\n#### 9", "number", None, 8, False),  # #### wins
    ("Answer: 7.5", "number", None, 75, False),
    ("Answer: 3 1/2", "number", None, 3, False),
    ("Answer: -3/4", "number", None, 0.75, False),
    ("Answer: -3/4", "number", None, -0.75, True),
    # --- booleans --------------------------------------------------------------------------------------
    ("Yes", "boolean", None, "yes", True),
    ("yes.", "boolean", None, True, True),
    ("Answer: yes", "boolean", None, "yes", True),
    ("Answer: Yes, because birds fly.", "boolean", None, "yes", True),
    ("Answer: No", "boolean", None, "no", True),
    ("Answer: no", "boolean", None, False, True),
    ("Answer: True", "boolean", None, "yes", True),
    ("Answer: false", "boolean", None, "no", True),
    ("The answer is yes.", "boolean", None, "yes", True),
    ("The answer is no.", "boolean", None, "yes", False),
    ("No, not yesterday.", "boolean", None, "no", True),
    ("Answer: No, it is not.", "boolean", None, "yes", False),
    ("Answer: Not yes", "boolean", None, "yes", False),  # negated: ambiguous
    ("Answer: yesterday", "boolean", None, "yes", False),
    ("Answer: nobody knows", "boolean", None, "no", False),
    ("Answer: yes and no", "boolean", None, "yes", False),  # commits to both: ambiguous (was: first word)
    ("Answer: maybe yes, maybe no", "boolean", None, "yes", False),
    ("Answer: maybe", "boolean", None, "yes", False),
    ("Answer: maybe", "boolean", None, "no", False),
    ("Yes it does.\nAnswer: no", "boolean", None, "yes", False),
    ("No.\nWait, actually yes.\nAnswer: yes", "boolean", None, "yes", True),
    ("<think>no</think>Answer: yes", "boolean", None, "yes", True),
    ("<think>yes</think>Answer: no", "boolean", None, "yes", False),
    ("The statement is true.", "boolean", None, "yes", True),
    ("Everyone says yes, but the answer is no.", "boolean", None, "yes", False),
    ("", "boolean", None, "yes", False),
    ("Answer: YES", "boolean", None, True, True),
    ("Answer: N/A", "boolean", None, "no", False),
    ("Answer: nope", "boolean", None, "no", False),
    ("Answer: yeah", "boolean", None, "yes", False),
    # --- multiple choice -------------------------------------------------------------------------------
    ("A", "choice", ABCD, "A", True),
    ("Answer: A", "choice", ABCD, "A", True),
    ("Answer: (A)", "choice", ABCD, "A", True),
    ("Answer: A)", "choice", ABCD, "A", True),
    ("Answer: A. Paris", "choice", ABCD, "A", True),
    ("Answer: A: Paris", "choice", ABCD, "A", True),
    ("Answer: (a)", "choice", ABCD, "A", True),
    ("Answer: a", "choice", ABCD, "A", True),
    ("The answer is (C).", "choice", ABCD, "C", True),
    ("The answer is C", "choice", ABCD, "C", True),
    ("Answer: option B", "choice", ABCD, "B", True),
    ("Answer: Option D", "choice", ABCD, "D", True),
    ("Answer: Paris", "choice", ABCD, "A", True),
    ("Answer: paris", "choice", ABCD, "A", True),
    ("Answer: Berlin", "choice", ABCD, "C", True),
    ("The answer is B.", "choice", ABCD, "A", False),
    ("Answer: B", "choice", ABCD, "A", False),
    ("Answer: London", "choice", ABCD, "A", False),
    ("Answer: E", "choice", ABCD, "A", False),  # not an option
    ("Answer: a city in France", "choice", ABCD, "A", False),  # lowercase article is not a letter
    ("Answer: Paris or London", "choice", ABCD, "A", False),  # ambiguous option text
    ("Paris is nice. A is wrong.\nAnswer: B", "choice", ABCD, "A", False),
    ("A is tempting, but\nAnswer: D", "choice", ABCD, "A", False),
    ("Answer: 18", "choice", NUMS, "C", True),  # option text that is a number
    ("Answer: 180", "choice", NUMS, "C", False),
    ("Answer: 1", "choice", NUMS, "A", False),
    ("I am not sure.", "choice", ABCD, "A", False),
    ("", "choice", ABCD, "A", False),
    ("Answer: (B) London", "choice", ABCD, "B", True),
    ("Answer: B", "choice", ABCD, 1, True),  # index target
    ("Answer: B", "choice", ABCD, "London", True),  # option text target
    ("Answer: C", "choice", ABCD, "London", False),
    ("Answer: AB", "choice", ABCD, "A", False),
    ("**Answer:** **C**", "choice", ABCD, "C", True),
    # --- labels ------------------------------------------------------------------------------------------
    ("Answer: entailment", "label", NLI, "entailment", True),
    ("Answer: Entailment.", "label", NLI, "entailment", True),
    ("Answer: contradiction", "label", NLI, "entailment", False),
    ("Answer: neutral", "label", NLI, "neutral", True),
    ("The answer is contradiction", "label", NLI, "contradiction", True),
    ("Answer: entailment or neutral", "label", NLI, "entailment", False),
    ("Answer: none of these", "label", NLI, "neutral", False),
    ("Answer: Sports", "label", ["World", "Sports", "Business", "Sci/Tech"], "Sports", True),
    ("Answer: Sci/Tech", "label", ["World", "Sports", "Business", "Sci/Tech"], "Sci/Tech", True),
    ("Answer: business news", "label", ["World", "Sports", "Business", "Sci/Tech"], "Business", True),
    ("Answer: World", "label", ["World", "Sports", "Business", "Sci/Tech"], "Sports", False),
    ("Answer: positive", "label", ["negative", "positive"], "positive", True),
    ("Answer: negative", "label", ["negative", "positive"], "positive", False),
    ("Answer: not positive", "label", ["negative", "positive"], "positive", True),  # label words only
    ("Answer: mostly positive with some negative", "label", ["negative", "positive"], "positive", False),
    # --- free text -----------------------------------------------------------------------------------------
    ("Answer: Paris", "text", None, "Paris", True),
    ("Answer: paris.", "text", None, "Paris", True),
    ("The answer is the Eiffel Tower.", "text", None, "Eiffel Tower", True),
    ("Answer: Paris, France", "text", None, "Paris", False),
    ("Answer: London", "text", None, "Paris", False),
    ("Answer: Parisian", "text", None, "Paris", False),
    ("Answer:", "text", None, "Paris", False),
    ("Paris", "text", None, "Paris", True),
    ("It is Paris", "text", None, "Paris", False),
    # --- truncation --------------------------------------------------------------------------------------
]

TRUNCATED = [
    ("Step 1: 3 + 5 = 8", "number", None, 8),
    ("Yes, because", "boolean", None, "yes"),
    ("A is the", "choice", ABCD, "A"),
]


def verdict(text, kind, choices, gold, truncated=False):
    ext = extract_answer(text, kind, choices=choices, truncated=truncated)
    return answers_match(ext.answer, parse_target(gold, kind, choices), kind), ext


@pytest.mark.parametrize("text,kind,choices,gold,expected", CASES)
def test_answer_table(text, kind, choices, gold, expected):
    ok, ext = verdict(text, kind, choices, gold)
    assert ok is expected, f"{text!r} -> {ext.answer!r} ({ext.reason}; statement {ext.statement!r})"


def test_table_size_and_balance():
    assert len(CASES) >= 150
    assert sum(1 for c in CASES if c[-1] is False) >= 60


@pytest.mark.parametrize("text,kind,choices,gold", TRUNCATED)
def test_truncated_output_without_statement_is_unparseable(text, kind, choices, gold):
    ok, ext = verdict(text, kind, choices, gold, truncated=True)
    assert not ok and ext.reason == "truncated before a final answer"


def test_reasons_are_given():
    assert extract_answer("", "number").reason == "empty output"
    assert extract_answer("I think it is 8 or 9", "number").reason.startswith("ambiguous")
    assert extract_answer("Answer: maybe", "boolean").reason.startswith("unparseable")
    assert extract_answer("Answer: E", "choice", choices=ABCD).reason.startswith("unparseable: letter E")


def test_think_block_kept_as_trace():
    ext = extract_answer("<think>Let me add 3 and 5.</think>\nStep: 3 + 5 = 8\nAnswer: 8", "number")
    assert ext.think == "Let me add 3 and 5."
    assert ext.trace == "Step: 3 + 5 = 8"
    assert ext.answer == 8.0 and ext.source == "answer-line"


def test_prompt_specified_pattern_has_priority():
    ext = extract_answer("RESULT=<<12>>\nAnswer: 9", "number", answer_pattern=r"RESULT=<<(.+?)>>")
    assert ext.answer == 12.0 and ext.source == "pattern"


def test_targets_parse_by_type():
    assert parse_target("Natalia sold 48 clips.\n#### 72", "number") == 72.0
    assert parse_target("1,234", "number") == 1234.0
    assert parse_target("Yes", "boolean") is True
    assert parse_target(2, "choice", ABCD) == "C"
    assert parse_target("Madrid", "choice", ABCD) == "D"
    with pytest.raises(ValueError, match="numeric target"):
        parse_target("many", "number")
    with pytest.raises(ValueError, match="boolean target"):
        parse_target("perhaps", "boolean")
