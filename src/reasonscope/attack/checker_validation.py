"""Validation of an arithmetic check on worked solutions.

How often it flags correct reasoning, and how often it catches a planted error.

Given correct worked solutions (GSM8K's are correct by construction):

* **false-flag rate** = solutions with at least one false equation / solutions (lower is better; a
  checker that skips everything scores 0, so read it with the next two numbers);
* **detection rate** = corrupted solutions flagged / corrupted solutions (higher is better), for two
  corruptions, each made once per solution with a seeded generator:

  - *result*: one stated result (the first number after an ``=``, or after a calculator annotation's
    ``>>``) is changed by a nonzero whole number d in [-5, 5], keeping its decimals and currency sign;
  - *operator*: one operator between two numbers on the left of an ``=`` is swapped
    (``+`` <-> ``-``, ``*`` -> ``+``, ``/`` -> ``*``, ``x`` -> ``+``);

  a solution without such a place is left out of that rate (counted).

The checker is any function ``text -> (passed, checked links, skipped links)``, so an old and a new
checker can be measured side by side (``benchmarks/arithmetic_gsm8k.py``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .arithmetic import check_arithmetic

Checker = Callable[[str], tuple[bool, int, int]]

_RESULT = re.compile(r"(?:=\s*|>>)(-?[$€£]?)(\d[\d,]*(?:\.\d+)?)")
_OPERATOR = re.compile(r"(?<=\d)(\s*)([-+*/x])(\s*)(?=[$€£]?\d[^=\n<]*=)")
_SWAP = {"+": "-", "-": "+", "*": "+", "/": "*", "x": "+"}


def new_checker(text: str) -> tuple[bool, int, int]:
    """:func:`reasonscope.attack.arithmetic.check_arithmetic` as a :data:`Checker`."""
    c = check_arithmetic(text)
    return c.passed, len(c.checked), len(c.skipped)


def corrupt_result(text: str, rng: random.Random) -> str | None:
    """``text`` with one stated result changed (None when it states none)."""
    spots = list(_RESULT.finditer(text))
    if not spots:
        return None
    m = rng.choice(spots)
    digits = m.group(2).rstrip(",")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    value = float(digits.replace(",", "")) + rng.choice([-5, -4, -3, -2, -1, 1, 2, 3, 4, 5])
    new = f"{value:,.{decimals}f}" if "," in digits else f"{value:.{decimals}f}"
    return text[:m.start(2)] + new + text[m.start(2) + len(digits):]


def corrupt_operator(text: str, rng: random.Random) -> str | None:
    """``text`` with one operator left of an ``=`` swapped (None when there is none)."""
    spots = list(_OPERATOR.finditer(text))
    if not spots:
        return None
    m = rng.choice(spots)
    return text[:m.start(2)] + _SWAP[m.group(2)] + text[m.end(2):]


@dataclass
class CheckerReport:
    """Counts of a checker validation (module docstring); :meth:`rate` turns them into rates."""

    solutions: int
    flagged: int
    checked_links: int
    skipped_links: int
    result_corrupted: int
    result_detected: int
    operator_corrupted: int
    operator_detected: int

    def rate(self, part: str) -> float | None:
        """One rate of the report, in [0, 1]; None when its denominator is 0.

        Args:
            part: ``"flagged"`` (false-flag rate, lower is better), ``"result"`` or ``"operator"`` (detection
                rates of the two corruptions, higher is better).
        """
        num, den = {"flagged": (self.flagged, self.solutions),
                    "result": (self.result_detected, self.result_corrupted),
                    "operator": (self.operator_detected, self.operator_corrupted)}[part]
        return num / den if den else None


def validate_checker(solutions: Iterable[str], checker: Checker = new_checker, *, seed: int = 0) -> CheckerReport:
    """False-flag rate on ``solutions`` and detection rates on their corrupted copies (module docstring)."""
    rng = random.Random(seed)
    r = CheckerReport(0, 0, 0, 0, 0, 0, 0, 0)
    for text in solutions:
        ok, checked, skipped = checker(text)
        r.solutions += 1
        r.flagged += not ok
        r.checked_links += checked
        r.skipped_links += skipped
        bad = corrupt_result(text, rng)
        if bad is not None and bad != text:
            r.result_corrupted += 1
            r.result_detected += not checker(bad)[0]
        bad = corrupt_operator(text, rng)
        if bad is not None and bad != text:
            r.operator_corrupted += 1
            r.operator_detected += not checker(bad)[0]
    return r
