"""Splitting a reasoning trace into steps.

1. The trace is split on line breaks (a step per line, as chain-of-thought is usually written);
2. list markers are removed (``1.``, ``2)``, ``Step 3:``, ``-``, ``*``, ``•``);
3. each line is split into sentences by pySBD (a rule-based sentence boundary detector that keeps
   decimals such as ``3.50``, abbreviations such as ``Dr.`` or ``e.g.``, and equations whole);
4. empty pieces and pieces without a letter or digit are dropped.
"""

from __future__ import annotations

import re
from functools import lru_cache

_BOUNDARY_RE = re.compile(r"[.!?…][\"')\]]*\s+\S")
_MARKER_RE = re.compile(r"^\s*(?:(?:step|Step|STEP)\s*\d+\s*[:.)-]|\d{1,3}[.)](?=\s)|[-*•]\s|#+\s)\s*")


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_steps(trace: str) -> list[str]:
    """The steps of a reasoning trace (module docstring for the rules).

    Args:
        trace: the reasoning text; None or empty gives no steps.

    Returns:
        The steps in order, stripped.
    """
    steps: list[str] = []
    for line in (trace or "").splitlines():
        line = _MARKER_RE.sub("", line).strip()
        if not line:
            continue
        if not _BOUNDARY_RE.search(line):  # no possible internal sentence boundary: one step (fast path)
            if re.search(r"[A-Za-z0-9]", line):
                steps.append(line)
            continue
        for sent in _segmenter().segment(line):
            sent = sent.strip()
            if re.search(r"[A-Za-z0-9]", sent):
                steps.append(sent)
    return steps
