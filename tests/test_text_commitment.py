"""Final commitment: the option / yes-no a statement settles on, not the first one it mentions."""

from __future__ import annotations

import pytest

from reasonscope.text.answers import extract_answer
from reasonscope.text.commitment import Mention, clauses, committed_value

ABCD = ["Paris", "London", "Berlin", "Madrid"]

CHOICES = [
    # the first option mentioned is rejected, another is picked
    ("Not A; the answer is C", "C"),
    ("A is tempting, but B is correct", "B"),
    ("(A) is wrong. (C)", "C"),
    ("Answer: B, not A", "B"),
    ("Answer: not A but D", "D"),
    ("Answer: A is incorrect, so C", "C"),
    ("Answer: rather than (B), I pick (D)", "D"),
    ("Answer: A and B are both wrong; C", "C"),
    ("Answer: I rule out A and choose B", "B"),
    ("Answer: eliminating A and B leaves C", "C"),
    ("Answer: A, although B is close", "A"),
    ("Answer: Although A looks right, the answer is B", "B"),
    ("Answer: C, because A is wrong", "C"),
    ("Answer: Option A is a trap. Option D", "D"),
    ("Answer: London is wrong; Paris", "A"),
    ("Answer: not London but Madrid", "D"),
    ("Therefore, the answer is (B) because option A ignores friction.", "B"),
    ("Answer: C (not B)", "C"),
    ("Both A and C are correct, but C is the best answer", "C"),
    ("A, B, and C are wrong, so D", "D"),
    ("I think A is right.", "A"),
    # plain forms keep working
    ("Answer: A. Paris", "A"),
    ("Answer: (B) London", "B"),
    ("The answer is (C).", "C"),
    ("Answer: b)", "B"),
    ("A good choice is Berlin", "C"),  # "A" is an article here
    # no single commitment
    ("Answer: B or C", None),
    ("Answer: A is wrong", None),
    ("Answer: maybe B", None),
    ("Answer: Paris or London", None),
]

BOOLEANS = [
    ("No, wait: yes.", True),
    ("Answer: No. Actually, yes.", True),
    ("Answer: Yes? No.", False),
    ("Answer: True is wrong; false.", False),
    ("Answer: not yes but no", False),
    ("Answer: No, yes is wrong.", False),
    ("Answer: Yes, there is no doubt.", True),  # "no" as a determiner is not a value
    ("Answer: Yes, but only in winter.", True),
    ("Answer: No, it is not.", False),
    ("The statement is true.", True),
    ("I would say no to that.", False),
    ("Answer: yes and no", None),
    ("Answer: maybe yes, maybe no", None),
    ("Answer: Not yes", None),
    ("Answer: yes, although some say no", True),
]


@pytest.mark.parametrize("text,expected", CHOICES)
def test_choice_final_commitment(text, expected):
    ext = extract_answer(text, "choice", choices=ABCD)
    assert ext.answer == expected, ext.reason


@pytest.mark.parametrize("text,expected", BOOLEANS)
def test_boolean_final_commitment(text, expected):
    ext = extract_answer(text, "boolean")
    assert ext.answer == expected, ext.reason


def test_reasons_name_what_was_rejected_or_competing():
    assert extract_answer("Answer: A is wrong", "choice", choices=ABCD).reason == \
        "unparseable: the final answer rejects A without committing to a option"
    assert extract_answer("Answer: B or C", "choice", choices=ABCD).reason == \
        "ambiguous: the final answer commits to B, C"
    assert extract_answer("Answer: Not yes", "boolean").reason == \
        "unparseable: the final answer rejects yes without committing to a yes/no"
    assert extract_answer("Answer: E", "choice", choices=ABCD).reason == \
        "unparseable: letter E is not among the options ABCD"


def test_clauses_and_committed_value_by_hand():
    text = "A is tempting, but B is correct"
    assert [(text[a:b].strip(), sub) for a, b, sub in clauses(text)] == \
        [("A is tempting", False), ("", False), ("B is correct", False)]
    mentions = [Mention(0, 1, "A"), Mention(19, 20, "B")]
    assert committed_value(text, mentions, "option") == ("B", None)
    assert committed_value("because A", [Mention(8, 9, "A")], "option")[0] is None  # subordinate only
