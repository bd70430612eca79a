"""Reading judge objects: the first complete object, typed validation, hostile replies as reasons."""

from __future__ import annotations

import json

import pytest

from reasonscope.judge.parse import (
    MAX_DEPTH,
    NoObject,
    NotALiteral,
    load_object,
    parse_judgement,
    parse_pairwise,
    parse_verdict,
)


def test_braces_outside_the_object_change_nothing():
    before = 'I will score {faithfulness, grammar}. {"correctness": 0.5, "grammar": 1}'
    after = '```json\n{"correctness": 0.5, "grammar": 1}\n```\nNote: scores are in {0, ..., 1}.'
    both = 'Scale {0-1}.\n{"correctness": 0.5, "grammar": 1}\nThat is all }'
    for text in (before, after, both):
        assert parse_judgement(text, ["correctness", "grammar"]).scores == {"correctness": 0.5, "grammar": 1.0}


def test_the_first_complete_object_wins_and_nothing_is_repaired():
    assert load_object('{"a": 1} {"a": 2}') == {"a": 1}
    assert load_object('{"a": } then {"a": 2}') == {"a": 2}  # a missing value is not invented
    assert load_object("{'a': True, 'b': None}") == {"a": True, "b": None}  # a Python literal
    assert load_object('{"explanation": "line one\nline two", "a": 1}')["a"] == 1  # raw newline in a string
    with pytest.raises(NoObject):
        load_object('{"a": 1')
    with pytest.raises(NotALiteral, match="neither JSON nor a Python literal"):
        load_object("{a: 1}")


def test_deep_nesting_is_a_reason_not_a_recursion_error():
    deep = '{"a":' * 50_000 + "1" + "}" * 50_000
    r = parse_judgement(deep, ["correctness"])
    assert r.error == f"the judge's object is nested deeper than {MAX_DEPTH} levels"
    assert parse_judgement('{"correctness": ' + "[" * 50_000 + "]" * 50_000 + "}", ["correctness"]).error
    assert parse_verdict('{"correct": ' + "[" * 5000 + "]" * 5000 + "}")[0] is None
    just_deep_enough = '{"correctness": 0.5, "x": ' + "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2) + "}"
    assert parse_judgement(just_deep_enough, ["correctness"]).scores == {"correctness": 0.5}


def test_huge_numbers_are_out_of_range_not_a_crash():
    digits = "9" * 5000
    r = parse_judgement('{"correctness": ' + digits + ', "grammar": 0.5}', ["correctness", "grammar"])
    assert r.scores == {"grammar": 0.5} and r.unscored == {"correctness": "score inf outside [0, 1]"}
    assert parse_pairwise('{"winner": ' + digits + "}") == (None, "winner is not 1, 2 or tie: inf")
    assert parse_judgement("{'correctness': " + digits + "}", ["correctness"]).unscored["correctness"]
    r = parse_judgement('{"correctness": ' + "9" * 400 + "}", ["correctness"])  # an int no float can hold
    assert r.unscored == {"correctness": "score <400 digits> outside [0, 1]"}


@pytest.mark.parametrize("value,reason", [
    (True, "score is not a number: True"),
    ("0.5", "score is not a number: '0.5'"),
    ({"explanation": "x"}, "score is not a number: None"),
    ({"score": "high"}, "score is not a number: 'high'"),
    (float("nan"), "score nan outside [0, 1]"),
    (-0.1, "score -0.1 outside [0, 1]"),
])
def test_typed_validation_gives_each_attribute_its_reason(value, reason):
    text = json.dumps({"correctness": value, "grammar": {"score": 1, "explanation": 7}})
    r = parse_judgement(text, ["correctness", "grammar"])
    assert r.unscored == {"correctness": reason} and r.scores == {"grammar": 1.0} and r.explanations == {}


def test_verdicts_and_winners_are_typed():
    assert parse_verdict('{"correct": "yes"}') == (True, None)
    assert parse_verdict('{"correct": 1}') == (None, "correct is not true or false: 1")
    assert parse_pairwise('{"winner": 2}') == ("2", None)
    assert parse_pairwise('{"winner": [1]}') == (None, "winner is not 1, 2 or tie: [1]")


@pytest.mark.parametrize("text", [
    "\x00{\"correctness\": 0.5}\x00",
    '{"correctness": 0.5, "note": "\ud800"}',
    '{"correctness": 0.5, "explanation": "' + "x" * 2_000_000 + '"}',
    "{" * 1_000_000 + '{"correctness": 0.5}',
])
def test_hostile_but_readable_replies(text):
    assert parse_judgement(text, ["correctness"]).scores == {"correctness": 0.5}
