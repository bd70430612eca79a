"""Untrusted text never raises: property-based tests of every parser of model, judge and dataset text.

Hostile inputs are built from fragments that exercise each reader (braces, LaTeX, numbers, option
letters, yes/no, terminal codes, separators) plus the cases of issue #20: deep nesting, huge numbers,
NUL bytes, lone surrogates and megabyte-long strings. Each property states what comes back instead of
an exception. Megabyte inputs are few (``max_examples``) and every reader is linear, so the run time is
bounded.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonscope.data.loaders import RowError, _as_list, integer_field, parse_json
from reasonscope.judge.parse import (
    NoObject,
    NotALiteral,
    load_object,
    parse_judgement,
    parse_pairwise,
    parse_verdict,
)
from reasonscope.text import mathexpr
from reasonscope.text.answers import answers_match, extract_answer, parse_target
from reasonscope.text.mathexpr import MathAnswer

KINDS = ["number", "math", "boolean", "choice", "label", "text"]
CHOICES = ["Paris", "London", "Berlin", "Madrid"]
FRAGMENTS = [
    "{", "}", "[", "]", "(", ")", '"', "'", ":", ",", ".", "-", "+", "/", "^", "=", "%", "$", "\\", "#### ",
    "\\frac{", "\\boxed{", "\\sqrt{", "{,}", "\\times 10^", "e", "E+", "1", "9", "0", "3/4", "1e3", "x",
    "Answer: ", "The answer is ", "yes", "no", "not ", "true", "A", "(B)", "option C", " is wrong", ", but ",
    "Paris", "<think>", "</think>", "\n", "\r", "\x00", "\x1b[1m", "\x1b]0;t\x07", "\ud800", "\udfff", "\u2028",
    "\x85", "\x0c", "\u200b", "é", "𝟙", "NaN", "Infinity", "9" * 50, " ",
]
hostile_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=40).map("".join)
any_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=200)  # lone surrogates included
# (fragment, repeat) -> up to a megabyte: deep nesting, huge numbers, long strings
long_text = st.tuples(st.sampled_from(["", "answer", "Answer:", "the answer is", "####", "\\boxed{", "{", "A"]),
                      st.sampled_from(["{", "[", '{"a":', "9", "\\frac{", "(", "A ", "yes ", "\x00", "\ud800",
                                       "1,", "-", "$", "\\", '"', "{}", "x", " ", "\t", "*"]),
                      st.integers(1, 1_000_000)).map(lambda t: t[0] + (t[1] * (t[2] // len(t[1]) + 1))[: t[2]])

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LONG = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def short_math_deadline(monkeypatch):
    monkeypatch.setattr(mathexpr, "MATH_TIMEOUT_S", 3.0)


def _check_extraction(text: str) -> None:
    for kind in KINDS:
        ext = extract_answer(text, kind, choices=CHOICES if kind in ("choice", "label") else None,
                             truncated=len(text) % 2 == 1)
        assert (ext.answer is None) == (ext.reason is not None), (kind, ext)
        if ext.answer is None:
            assert ext.reason.startswith(("unparseable: ", "ambiguous: ", "empty output",
                                          "truncated before a final answer")), ext.reason
        elif kind == "number":
            assert isinstance(ext.answer, float) and math.isfinite(ext.answer)
        elif kind == "math":
            assert isinstance(ext.answer, MathAnswer)
        elif kind == "boolean":
            assert ext.answer in (True, False)
        elif kind == "choice":
            assert ext.answer in "ABCD"


@FAST
@given(hostile_text)
def test_answers_from_hostile_text(short_math_deadline, text):
    _check_extraction(text)


@FAST
@given(any_text)
def test_answers_from_any_text(short_math_deadline, text):
    _check_extraction(text)


@LONG
@given(long_text)
def test_answers_from_megabyte_text(short_math_deadline, text):
    _check_extraction(text)
    _check_extraction("Answer: " + text)


@FAST
@given(hostile_text | any_text, st.sampled_from(KINDS))
def test_targets_raise_value_error_only(short_math_deadline, target, kind):
    try:
        gold = parse_target(target, kind, CHOICES if kind in ("choice", "label") else None)
    except ValueError:
        return
    pred = extract_answer(f"Answer: {target}", kind, choices=CHOICES).answer
    assert answers_match(pred, gold, kind) in (True, False)


def _check_judge(text: str) -> None:
    r = parse_judgement(text, ["correctness", "grammar"], scale_max=10)
    assert set(r.scores) | set(r.unscored) == {"correctness", "grammar"} and not set(r.scores) & set(r.unscored)
    assert all(0 <= v <= 1 for v in r.scores.values())
    winner, why = parse_pairwise(text)
    assert (winner in ("1", "2", "tie")) != (why is not None)
    verdict, why = parse_verdict(text)
    assert (verdict in (True, False)) != (why is not None)
    try:
        assert isinstance(load_object(text), dict)
    except (NoObject, NotALiteral):
        pass


@FAST
@given(hostile_text | any_text)
def test_judge_replies_never_raise(text):
    _check_judge(text)
    _check_judge('{"correctness": ' + text + "}")


json_numbers = st.integers(-10**4000, 10**4000).map(str) | st.floats(allow_nan=True).map(repr) \
    | st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0", "1E-400", "9" * 5000, "true", "null"])


@FAST
@given(json_numbers, json_numbers)
def test_judge_numbers_of_any_size(a, b):
    _check_judge('{"correctness": ' + a + ', "grammar": {"score": ' + b + '}, "winner": ' + a
                 + ', "correct": ' + b + "}")
    _check_judge("{'correctness': " + a + "}")


@LONG
@given(long_text)
def test_judge_replies_megabyte(text):
    _check_judge(text)
    _check_judge(text + '{"correctness": 5, "grammar": {"score": 3}}')


@FAST
@given(hostile_text | any_text)
def test_row_values_raise_row_errors_only(text):
    for fn in (lambda t: parse_json(t), lambda t: _as_list(t, "choices"), lambda t: _as_list("[" + t, "choices"),
               lambda t: integer_field(t, "completion_tokens")):
        try:
            fn(text)
        except RowError as err:
            assert str(err)


@LONG
@given(long_text)
def test_row_values_megabyte(text):
    for value in (text, "[" + text + "]"):
        try:
            _as_list(value, "choices")
            parse_json(value)
        except RowError:
            pass


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 1.5, True, "NaN", "Infinity", "-3", "1e400",
                                   "9" * 5000, 10**400, 2**31, [], {}, "twelve"])
def test_integer_fields_reject_every_non_count(value):
    with pytest.raises(RowError) as err:
        integer_field(value, "completion_tokens")
    assert err.value.field == "completion_tokens" and "expected a whole number from 0" in str(err.value)


def test_integer_fields_accept_counts():
    assert [integer_field(v, "f") for v in (0, 12, 12.0, "12", " 12 ", "12.0", None, "")] == \
        [0, 12, 12, 12, 12, 12, None, None]
