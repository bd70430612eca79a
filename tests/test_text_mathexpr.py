"""LaTeX and expression answers through math-verify in its bounded child process."""

from __future__ import annotations

import json
import math
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from reasonscope.behavior.metrics import pairs_agreement
from reasonscope.text.answers import answers_match, extract_answer, parse_target
from reasonscope.text.mathexpr import MathAnswer, math_parts, read_math, read_math_number

LATEX_NUMBERS = [
    ("\\boxed{\\frac{3}{4}}", 0.75),
    ("Answer: \\dfrac{1}{2}", 0.5),
    ("Answer: \\tfrac{2}{3}", 2 / 3),
    ("Answer: -\\frac{1}{2}", -0.5),
    ("The answer is $-\\frac{1}{2}$.", -0.5),
    ("\\boxed{\\$1{,}000}", 1000.0),
    ("\\boxed{2\\sqrt{2}}", 2 * math.sqrt(2)),
    ("\\boxed{\\frac{\\sqrt{3}}{2}}", math.sqrt(3) / 2),
    ("\\boxed{\\pi}", math.pi),
    ("\\boxed{\\frac{3}{4}\\text{ cups}}", 0.75),
    ("The answer is \\frac{3}{4} of the cake.", 0.75),
    ("Answer: $x = \\frac{5}{2}$", 2.5),
    ("\\boxed{90^\\circ}", 90.0),
    ("\\boxed{\\frac{1}{4}\\%}", 0.25),
    ("Answer: 2^10", 1024.0),
    ("Answer: 5 + 3", 8.0),
    ("Answer: (1 + 2) * 4", 12.0),
]
NOT_A_NUMBER = [
    ("\\boxed{\\frac{x}{2}}", "contains x"),
    ("Answer: x + 1", "contains x"),
    ("\\boxed{(1, 2]}", "2 numbers"),  # no words, two numbers: ambiguous
    ("\\boxed{\\frac{1}{2}, \\frac{1}{3}}", "not a single number"),
    ("\\boxed{\\frac{3}{0}}", "not a finite number"),
    ("\\boxed{\\sqrt{-1}}", "not a real number"),
    ("\\boxed{10^{400}}", "double-precision range"),
]


@pytest.mark.parametrize("text,expected", LATEX_NUMBERS)
def test_latex_numbers(text, expected):
    ext = extract_answer(text, "number")
    assert ext.answer == pytest.approx(expected, rel=1e-12), ext.reason


@pytest.mark.parametrize("text,why", NOT_A_NUMBER)
def test_latex_that_is_not_one_real_number_is_unparseable(text, why):
    ext = extract_answer(text, "number")
    assert ext.answer is None and ext.reason.startswith(("unparseable", "ambiguous")) and why in ext.reason, ext.reason


def test_issue_cases_are_no_longer_read_as_leading_numbers():
    gold = parse_target("\\frac{3}{4}", "number")
    assert answers_match(extract_answer("\\boxed{\\frac{3}{4}}", "number").answer, gold, "number")
    assert not answers_match(extract_answer("\\boxed{\\frac{3}{5}}", "number").answer, gold, "number")
    assert not answers_match(extract_answer("\\boxed{\\frac{3}{4}}", "number").answer, 3.0, "number")
    answers = [extract_answer(t, "number").answer for t in ("\\boxed{\\frac{3}{4}}", "\\boxed{\\frac{3}{5}}")]
    assert pairs_agreement(answers, "number") == 0.0  # CS: 3/4 and 3/5 do not agree


def test_last_line_with_two_math_parts_is_ambiguous():
    ext = extract_answer("so $a = \\frac{1}{2}$ and $b = \\frac{1}{3}$ hmm $c$", "number")
    assert ext.answer is None and ext.reason.startswith("ambiguous")
    assert math_parts("$\\frac{1}{2}$ and $\\sqrt{2}$") == ["\\frac{1}{2}", "\\sqrt{2}"]
    assert math_parts("\\frac{3}{4} of the cake") == ["\\frac{3}{4}"]


def test_math_answers_compare_symbolically_and_round_trip():
    two_root_two = extract_answer("\\boxed{2\\sqrt{2}}", "math").answer
    assert isinstance(two_root_two, MathAnswer) and two_root_two == "2*sqrt(2)"
    assert two_root_two.value == pytest.approx(2 * math.sqrt(2))
    assert answers_match(extract_answer("\\boxed{\\sqrt{8}}", "math").answer, two_root_two, "math")
    assert answers_match(extract_answer("Answer: 2.8284271", "math").answer, two_root_two, "math")
    assert not answers_match(extract_answer("Answer: 2.83", "math").answer, two_root_two, "math")
    interval = parse_target("(1, 2]", "math")
    assert interval == "Interval.Lopen(1, 2)" and interval.value is None
    assert answers_match(extract_answer("\\boxed{(1,2]}", "math").answer, interval, "math")
    assert not answers_match(extract_answer("\\boxed{(1,2)}", "math").answer, interval, "math")
    expr = parse_target("x + 1", "math")
    assert answers_match(extract_answer("\\boxed{1 + x}", "math").answer, expr, "math")
    assert answers_match(extract_answer("Answer: 18", "math").answer, parse_target(18, "math"), "math")
    # stored and exported as its text; a pickled copy (Ray, process pools) keeps the LaTeX and the value
    assert json.dumps({"answer": two_root_two}) == '{"answer": "2*sqrt(2)"}'
    copy = pickle.loads(pickle.dumps(two_root_two))
    assert (copy, copy.latex, copy.value) == (two_root_two, two_root_two.latex, two_root_two.value)


def test_math_answers_agree_in_cs():
    answers = [extract_answer(t, "math").answer for t in ("\\boxed{2\\sqrt{2}}", "\\boxed{\\sqrt{8}}", "\\boxed{3}")]
    assert pairs_agreement(answers, "math") == pytest.approx(1 / 3)


def test_works_from_worker_threads():
    texts = [f"\\boxed{{\\frac{{{i}}}{{8}}}}" for i in range(1, 25)]
    with ThreadPoolExecutor(4) as pool:
        values = list(pool.map(lambda t: extract_answer(t, "number").answer, texts))
    assert values == [i / 8 for i in range(1, 25)]
    assert threading.current_thread() is threading.main_thread()


def test_a_computation_without_end_is_cut_at_the_deadline():
    # SymPy compares 2^(10^10) with 3 for minutes; the worker is killed at the deadline and restarted.
    def run():
        return read_math("2^{10^{10}}", timeout=30)[0], read_math("3", timeout=30)[0]

    with ThreadPoolExecutor(1) as pool:
        big, three = pool.submit(run).result()
    from reasonscope.text.mathexpr import math_equal

    assert math_equal(big, three, timeout=1.0) is False
    value, why = read_math_number("2^{10^{10}} - 2^{10^{10}} + \\frac{1}{2}", timeout=1.0)
    assert value == 0.5 or "did not finish within 1 s" in why
    assert read_math_number("\\frac{1}{2}")[0] == 0.5  # the restarted worker answers
