"""A seeded generator of one- and two-step arithmetic word problems (format ``word_problems``).

Made for the attack family (MATCHA), which attacks only items a model answers correctly with a clean
chain of thought that passes the arithmetic check: the problems are small enough that the embedded
SmolLM2-135M-Instruct often solves them with a correct chain (measured in docs/families/attack.md),
and worded like the answer-first prompt's own examples (a count, what changes, ``How many ...?``).

Kinds (``metadata.type``; ``metadata.steps`` is 1 or 2), drawn with the weights of :data:`KINDS`:

==========  ================================================  ========================  ======
kind        question                                          gold rationale            weight
==========  ================================================  ========================  ======
``add``     has a, gets b more                                a + b = c                 3
``mul``     buys a bags with b in each bag                    a * b = c                 3
``sub``     had a, lost b of them                             a - b = c                 1
``add_add`` has a, gets b more and then c more                a + b = d, d + c = e      1
``mul_add`` buys a bags with b in each bag and c more         a * b = d, d + c = e      1
==========  ================================================  ========================  ======

Numbers (:data:`RANGES`): addends in [2, 9], bag counts and sizes in [2, 5], a subtraction's start in
[6, 15] and what is lost in [2, 5]. The kinds, wording, ranges and weights follow a measurement of
SmolLM2's answer-first chains (greedy; 6 to 11 items per wording in a first comparison of 13
wordings and ranges, then the replication benchmark's counts per kind in docs/families/attack.md): it
answers most single additions and multiplications of such numbers correctly, few subtractions (it
often repeats the first number), few additions to a two-digit start, and almost no two-step problem,
so the two-step kinds are kept, at a lower weight, as the harder part of the set. Every intermediate
and final result is a positive whole number, so the gold answer is correct by construction
(``target`` is computed, and ``rationale`` states each step as an equation the arithmetic check
reads).

Deterministic in ``seed`` (``random.Random(seed)``): the same seed gives the same items in the same
order with the same ids ``wp-0``, ``wp-1``, ...; item i does not depend on how many items are asked
for. No two items share a question: a taken question is drawn again (at most :data:`MAX_DRAWS` times).
"""

from __future__ import annotations

import random

from ..types import Item

MAX_DRAWS = 1000
NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Hana", "Ivo", "Jun", "Kofi", "Lena", "Mia", "Omar"]
THINGS = ["apples", "books", "marbles", "stickers", "pencils", "coins", "cards", "shells", "stamps", "eggs"]
RANGES = {"small": (2, 9), "bag": (2, 5), "start": (6, 15), "lost": (2, 5)}
KINDS: dict[str, int] = {"add": 3, "mul": 3, "sub": 1, "add_add": 1, "mul_add": 1}  # kind -> weight of the draw


def _draw(rng: random.Random, key: str) -> int:
    lo, hi = RANGES[key]
    return rng.randint(lo, hi)


def _problem(rng: random.Random, kind: str) -> tuple[str, int, str]:
    """(question, answer, rationale) of one problem of ``kind``."""
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    if kind == "add":
        a, b = _draw(rng, "small"), _draw(rng, "small")
        return (f"{name} has {a} {thing} and gets {b} more. How many {thing} does {name} have now?", a + b,
                f"{name} has {a} {thing} and gets {b} more, so {a} + {b} = {a + b} {thing}.")
    if kind == "mul":
        a, b = _draw(rng, "bag"), _draw(rng, "bag")
        return (f"{name} buys {a} bags with {b} {thing} in each bag. How many {thing} does {name} buy?", a * b,
                f"There are {a} bags with {b} {thing} each, so {a} * {b} = {a * b} {thing}.")
    if kind == "sub":
        a, b = _draw(rng, "start"), _draw(rng, "lost")
        return (f"{name} had {a} {thing} and lost {b} of them. How many {thing} are left?", a - b,
                f"{name} had {a} {thing} and lost {b}, so {a} - {b} = {a - b} {thing} are left.")
    if kind == "add_add":
        a, b, c = _draw(rng, "small"), _draw(rng, "small"), _draw(rng, "small")
        d = a + b
        return (f"{name} has {a} {thing}, gets {b} more and then gets {c} more. How many {thing} does {name} "
                f"have now?", d + c,
                f"{name} has {a} + {b} = {d} {thing}, and with {c} more that is {d} + {c} = {d + c} {thing}.")
    if kind == "mul_add":
        a, b, c = _draw(rng, "bag"), _draw(rng, "bag"), _draw(rng, "small")
        d = a * b
        return (f"{name} buys {a} bags with {b} {thing} in each bag and {c} more {thing}. How many {thing} does "
                f"{name} buy?", d + c,
                f"The bags hold {a} * {b} = {d} {thing}, and with {c} more that is {d} + {c} = {d + c} {thing}.")
    raise ValueError(f"unknown word-problem kind {kind!r}; expected one of {sorted(KINDS)}")


def word_problem_items(size: int = 40, seed: int = 0, kinds: dict[str, int] | None = None) -> list[Item]:
    """``size`` arithmetic word problems, deterministic in ``seed``.

    Args:
        size: Number of items (at least 1).
        seed: Seed of ``random.Random``; the same seed gives the same items and ids.
        kinds: Kind -> weight of the draw (default :data:`KINDS`).

    Returns:
        Items ``wp-0`` ... with a number ``target`` (correct by construction), a ``rationale`` stating each
        step as an equation, ``metadata.type`` (the kind) and ``metadata.steps`` (1 or 2).

    Examples:
        >>> [it.id for it in word_problem_items(3, seed=1)]
        ['wp-0', 'wp-1', 'wp-2']
        >>> word_problem_items(2, seed=1) == word_problem_items(5, seed=1)[:2]
        True
    """
    weights = kinds or KINDS
    names, w = list(weights), list(weights.values())
    rng = random.Random(seed)
    items: list[Item] = []
    seen: set[str] = set()
    for i in range(size):
        for _ in range(MAX_DRAWS):
            kind = rng.choices(names, w)[0]
            question, answer, why = _problem(rng, kind)
            if question not in seen:
                break
        else:
            raise RuntimeError(f"word problems: no new question in {MAX_DRAWS} draws (item {i} of {size})")
        seen.add(question)
        items.append(Item(id=f"wp-{i}", input=question, target=answer, answer_type="number", rationale=why,
                          metadata={"type": kind, "steps": 2 if "_" in kind else 1}))
    return items
