"""The built-in synthetic set: arithmetic word problems, yes/no logic, multiple choice.

Generated from a seed (``random.Random(seed)``), so the same seed gives the same items and ids in every
run; no two items share a question. Every item has three hand-written paraphrase templates (for RS) and
a short gold rationale. ``size`` items per kind; ``metadata.type`` holds the kind (used for breakdowns).

A drawn question that is already taken is drawn again. The numbers are drawn from fixed ranges (the
multiple-choice kind has 3,136 distinct questions in them); after ``WIDEN_AFTER`` (40) taken draws in
a row for one item the ranges widen (``spread`` 2, 3, ... times their upper bound), so a large set (the
scale benchmark asks for 20,000 items) still has no two items sharing a question. The logic kind's
"All X are Y" questions have no numbers (12 of them, drawn half the time): once they are taken, half of
that kind's draws are taken whatever the spread, which is why the threshold is 40 and not less. A set
that never needs 40 draws in a row for an item gets the items of the fixed ranges (checked against
the generator without widening: seeds 0 to 99 at 300 items per kind, 0 to 19 at 1,000).
"""

from __future__ import annotations

import random

from ..types import Item

WIDEN_AFTER = 40  # taken draws in a row before the number ranges widen
MAX_DRAWS = 1000

NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Lena"]
THINGS = ["apples", "books", "marbles", "stickers", "pencils", "coins", "cards", "shells"]
CATEGORIES = [("birds", "animals", "robin"), ("roses", "flowers", "damask"), ("oaks", "trees", "bur oak"),
              ("trout", "fish", "brook trout"), ("violins", "instruments", "viola d'amore"),
              ("squares", "rectangles", "unit square")]


def _arithmetic(rng: random.Random, i: int, spread: int = 1) -> Item:
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    a, b = rng.randint(3, 40 * spread), rng.randint(2, 20 * spread)
    op = rng.choice(["add", "sub", "mul"])
    if op == "add":
        target, q = a + b, f"{name} has {a} {thing} and gets {b} more. How many {thing} does {name} have now?"
        paras = [f"Starting with {a} {thing}, {name} receives {b} more. How many {thing} are there in total?",
                 f"How many {thing} does {name} have after adding {b} to the {a} {thing} {name} already had?",
                 f"{name} owned {a} {thing}. Then {name} was given {b} {thing}. What is the total number now?"]
        why = f"{a} + {b} = {target}"
    elif op == "sub":
        a = a + b
        target, q = a - b, f"{name} has {a} {thing} and gives away {b}. How many {thing} are left?"
        paras = [f"After giving {b} of {name}'s {a} {thing} away, how many {thing} remain?",
                 f"{name} started with {a} {thing} and handed out {b}. How many are still there?",
                 f"If {b} {thing} are taken from {name}'s {a} {thing}, how many does {name} keep?"]
        why = f"{a} - {b} = {target}"
    else:
        a, b = rng.randint(2, 12 * spread), rng.randint(2, 9 * spread)
        target, q = a * b, f"{name} buys {a} boxes with {b} {thing} in each box. How many {thing} is that?"
        paras = [f"There are {a} boxes, each holding {b} {thing}. How many {thing} are there altogether?",
                 f"How many {thing} does {name} get from {a} boxes of {b} {thing} each?",
                 f"Each of {a} boxes contains {b} {thing}. What is the total count of {thing}?"]
        why = f"{a} x {b} = {target}"
    return Item(id=f"arith-{i}", input=q, target=target, answer_type="number", rationale=why,
                perturbations=paras, metadata={"type": "arithmetic"})


def _logic(rng: random.Random, i: int, spread: int = 1) -> Item:
    sub, sup, member = rng.choice(CATEGORIES)
    if rng.random() < 0.5:
        a, b = rng.randint(10, 99 * spread), rng.randint(10, 99 * spread)
        while a == b:
            b = rng.randint(10, 99 * spread)
        target = a > b
        q = f"Is {a} greater than {b}?"
        paras = [f"Is the number {a} larger than {b}?", f"Does {a} exceed {b}?", f"Is it true that {a} > {b}?"]
        why = f"{a} {'>' if target else '<'} {b}"
    else:
        target = rng.random() < 0.5
        if target:
            q = f"All {sub} are {sup}. A {member} is one of the {sub}. Is a {member} one of the {sup}?"
            paras = [f"Every one of the {sub} is among the {sup}, and a {member} is one of the {sub}. "
                     f"Is a {member} among the {sup}?",
                     f"Given that all {sub} are {sup} and a {member} belongs to the {sub}, is a {member} one of the {sup}?",
                     f"If each of the {sub} is one of the {sup}, and a {member} is one of the {sub}, "
                     f"does a {member} count among the {sup}?"]
            why = f"A {member} is one of the {sub}, and all {sub} are {sup}."
        else:
            q = f"No {sub} are stones. A {member} is one of the {sub}. Is a {member} a stone?"
            paras = [f"None of the {sub} are stones, and a {member} is one of the {sub}. Is a {member} a stone?",
                     f"Given that no {sub} are stones and a {member} belongs to the {sub}, is a {member} a stone?",
                     f"If there are no stones among the {sub}, and a {member} is one of the {sub}, is a {member} a stone?"]
            why = f"A {member} is one of the {sub}, and no {sub} are stones."
    return Item(id=f"logic-{i}", input=q, target=target, answer_type="boolean", rationale=why,
                perturbations=paras, metadata={"type": "logic"})


def _choice(rng: random.Random, i: int, spread: int = 1) -> Item:
    a, b = rng.randint(5, 60 * spread), rng.randint(5, 60 * spread)
    correct = a + b
    wrong = set()
    while len(wrong) < 3:
        w = correct + rng.choice([-10, -2, -1, 1, 2, 10])
        if w != correct and w > 0:
            wrong.add(w)
    options = [correct, *sorted(wrong)]
    rng.shuffle(options)
    letter = "ABCD"[options.index(correct)]
    q = f"What is {a} plus {b}?"
    paras = [f"What do you get when you add {a} and {b}?", f"Compute the sum of {a} and {b}.",
             f"Which number equals {a} + {b}?"]
    return Item(id=f"mc-{i}", input=q, choices=[str(o) for o in options], target=letter, answer_type="choice",
                rationale=f"{a} + {b} = {correct}", perturbations=paras, metadata={"type": "multiple_choice"})


def synthetic_items(size: int = 4, seed: int = 0) -> list[Item]:
    """``size`` items of each kind (arithmetic, logic, multiple choice), deterministic in ``seed``."""
    rng = random.Random(seed)
    items: list[Item] = []
    seen: set[str] = set()
    for i in range(size):
        for make in (_arithmetic, _logic, _choice):
            for attempt in range(MAX_DRAWS):  # re-draw a taken question, in wider ranges after a while
                item = make(rng, i, 1 + attempt // WIDEN_AFTER)
                if item.input not in seen:
                    break
            else:
                raise RuntimeError(f"synthetic set: no new {make.__name__[1:]} question in {MAX_DRAWS} draws "
                                   f"(item {i} of {size})")
            seen.add(item.input)
            items.append(item)
    return items
