"""The seeded arithmetic word problems (format ``word_problems``): determinism, stable ids, answers and
rationales correct by construction, and loading from a plan."""

from __future__ import annotations

import re

import pytest

from reasonscope.attack.arithmetic import check_arithmetic
from reasonscope.data.loaders import load_dataset
from reasonscope.data.word_problems import KINDS, word_problem_items
from reasonscope.shared_settings import DatasetConfig


def test_same_seed_same_items_and_stable_ids():
    a, b = word_problem_items(50, seed=3), word_problem_items(50, seed=3)
    assert [x.model_dump() for x in a] == [x.model_dump() for x in b]
    assert [x.id for x in a] == [f"wp-{i}" for i in range(50)]
    # item i does not depend on the size asked for; another seed gives other questions
    assert [x.input for x in word_problem_items(10, seed=3)] == [x.input for x in a[:10]]
    assert [x.input for x in word_problem_items(50, seed=4)] != [x.input for x in a]
    assert len({x.input for x in a}) == 50


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def test_answers_correct_by_construction():
    items = word_problem_items(300, seed=0)
    assert {it.metadata["type"] for it in items} == set(KINDS)
    for it in items:
        kind, nums = it.metadata["type"], _numbers(it.input)
        expected = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                    "add_add": lambda a, b, c: a + b + c, "mul_add": lambda a, b, c: a * b + c}[kind](*nums)
        assert it.target == expected > 0 and it.answer_type == "number"
        assert it.metadata["steps"] == (2 if kind in ("add_add", "mul_add") else 1)
        check = check_arithmetic(it.rationale)
        # every step is an equation the arithmetic check reads and finds true; the last one states the answer
        assert check.passed and len(check.checked) == it.metadata["steps"] and not check.skipped
        assert _numbers(it.rationale.split("=")[-1])[0] == it.target


def test_hand_checked_first_items():
    first = word_problem_items(6, seed=7)  # the demo's and the replication benchmark's first items
    assert [(it.metadata["type"], it.target) for it in first] == [
        ("add", 5), ("add_add", 9), ("add", 8), ("mul", 6), ("mul", 10), ("mul_add", 20)]
    assert first[0].input == "Chen has 2 cards and gets 3 more. How many cards does Chen have now?"
    assert first[0].rationale == "Chen has 2 cards and gets 3 more, so 2 + 3 = 5 cards."
    assert first[5].input == ("Ana buys 3 bags with 4 stamps in each bag and 8 more stamps. How many stamps does "
                              "Ana buy?")
    assert first[5].rationale == "The bags hold 3 * 4 = 12 stamps, and with 8 more that is 12 + 8 = 20 stamps."


def test_plan_format_word_problems():
    res = load_dataset(DatasetConfig(name="wp", format="word_problems", size=5, seed=9))
    assert [it.id for it in res.items] == [f"wp-{i}" for i in range(5)]
    assert [it.input for it in res.items] == [it.input for it in word_problem_items(5, seed=9)]
    assert all(it.group == "wp" for it in res.items)
    # the plan's seed when the dataset sets none
    assert load_dataset(DatasetConfig(name="wp", format="word_problems", size=3), seed=9).items[0].input == \
        res.items[0].input


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown word-problem kind 'div'"):
        word_problem_items(1, seed=0, kinds={"div": 1})
