"""How deeply a decoded JSON value nests, measured without recursion.

Values decoded from untrusted text (judge replies, dataset rows) can nest up to Python's recursion limit
and still decode; code that later walks them recursively (``json.dumps`` into the store, ``repr``,
pydantic) would then fail far from where the text was read. Readers therefore refuse values that nest
deeper than a small bound at the point of reading, with the reason.
"""

from __future__ import annotations

from typing import Any


def nesting_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` holds containers (dicts, lists, tuples, sets) nested more than ``limit`` deep.

    A scalar has depth 0, ``[]`` depth 1, ``{"a": [1]}`` depth 2. Iterative, so any depth is measured.
    """
    containers = (dict, list, tuple, set, frozenset)
    if not isinstance(value, containers):
        return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for v in item.values() if isinstance(item, dict) else item:
            if isinstance(v, containers):  # scalars never go on the stack
                stack.append((v, depth + 1))
    return False
