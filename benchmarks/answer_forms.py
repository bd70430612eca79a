"""Benchmark: which written answer forms are read correctly, here and (optionally) by another source tree.

Each case is a model output, its answer type and what a careful reader takes from it: a value, or
``None`` when the text does not state one readable answer (it must then be unparseable or ambiguous,
never a number). A case is *read correctly* when the extracted answer equals the expected value
(numbers within the default relative tolerance 1e-6) or is ``None`` when ``None`` is expected. The
agreement cases check ``answers_match`` between two outputs (the CS metric's pairwise agreement).

    python benchmarks/answer_forms.py                        # this tree
    python benchmarks/answer_forms.py --baseline-src OTHER/src  # side by side with another checkout

The baseline runs in a subprocess with ``PYTHONPATH=OTHER/src``, so both use the same interpreter.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

ABCD = ["Paris", "London", "Berlin", "Madrid"]
# (group, output, answer type, choices, expected)
CASES: list[tuple[str, str, str, list[str] | None, object]] = [
    # issue forms: scientific notation and LaTeX
    ("scientific", "Answer: 1e3", "number", None, 1000.0),
    ("scientific", "Answer: 2.5e-1", "number", None, 0.25),
    ("scientific", "The answer is 1.5E+2.", "number", None, 150.0),
    ("scientific", "Answer: 2 \\times 10^3", "number", None, 2000.0),
    ("scientific", "Answer: $2.5 \\cdot 10^{-1}$", "number", None, 0.25),
    ("scientific", "Answer: 3×10^-2", "number", None, 0.03),
    ("latex", "\\boxed{\\frac{3}{4}}", "number", None, 0.75),
    ("latex", "Answer: \\dfrac{1}{2}", "number", None, 0.5),
    ("latex", "Answer: -\\frac{1}{2}", "number", None, -0.5),
    ("latex", "\\boxed{\\$1{,}000}", "number", None, 1000.0),
    ("latex", "\\boxed{2\\sqrt{2}}", "number", None, 2 * math.sqrt(2)),
    ("latex", "The answer is $\\frac{3}{4}$ of the cake.", "number", None, 0.75),
    ("latex", "\\boxed{5\\text{ km}}", "number", None, 5.0),
    ("latex", "\\boxed{\\frac{\\sqrt{3}}{2}}", "number", None, math.sqrt(3) / 2),
    ("latex", "\\boxed{12.5\\%}", "number", None, 12.5),
    ("latex", "\\boxed{\\frac{x}{2}}", "number", None, None),
    ("terminal codes", "\x1b[1mAnswer: 1\x1b[0m", "number", None, 1.0),
    ("terminal codes", "\x1b[32mThe answer is 42.\x1b[0m", "number", None, 42.0),
    # the plain grammar
    ("signs", "Answer: -5", "number", None, -5.0),
    ("signs", "Answer: +3", "number", None, 3.0),
    ("signs", "Answer: −5", "number", None, -5.0),
    ("signs", "Answer: -$5", "number", None, -5.0),
    ("decimals", "Answer: 3.50", "number", None, 3.5),
    ("decimals", "Answer: .5", "number", None, 0.5),
    ("decimals", "Answer: 1.2.3", "number", None, None),
    ("thousands", "Answer: 1,234,567", "number", None, 1234567.0),
    ("thousands", "Answer: 1{,}000", "number", None, 1000.0),
    ("thousands", "Answer: 1\\,000", "number", None, 1000.0),
    ("thousands", "Answer: 1,5", "number", None, None),
    ("fractions", "Answer: 3/4", "number", None, 0.75),
    ("fractions", "Answer: 1 1/2", "number", None, 1.5),
    ("fractions", "Answer: -3/4", "number", None, -0.75),
    ("fractions", "Answer: 8/0", "number", None, None),
    ("percent", "Answer: 25%", "number", None, 25.0),
    ("percent", "Answer: 25\\%", "number", None, 25.0),
    ("currency", "The answer is $1,200.", "number", None, 1200.0),
    ("currency", "Answer: €40", "number", None, 40.0),
    ("units", "Answer: 5 km", "number", None, 5.0),
    ("units", "Answer: 18 apples", "number", None, 18.0),
    ("expressions", "Answer: 2^10", "number", None, 1024.0),
    ("expressions", "Answer: 5 + 3", "number", None, 8.0),
    ("expressions", "Answer: x + 1", "number", None, None),
    ("ranges", "Answer: 10-12 apples", "number", None, None),
    ("huge", "Answer: " + "9" * 5000, "number", None, None),
    ("huge", "Answer: 1e400", "number", None, None),
    ("strict plain text", "The answer is 18.", "number", None, 18.0),
    ("strict plain text", "-5", "number", None, -5.0),
    # final commitment
    ("choice commitment", "Not A; the answer is C", "choice", ABCD, "C"),
    ("choice commitment", "A is tempting, but B is correct", "choice", ABCD, "B"),
    ("choice commitment", "(A) is wrong. (C)", "choice", ABCD, "C"),
    ("choice commitment", "Answer: B, not A", "choice", ABCD, "B"),
    ("choice commitment", "Answer: London is wrong; Paris", "choice", ABCD, "A"),
    ("choice commitment", "Answer: B or C", "choice", ABCD, None),
    ("boolean commitment", "No, wait: yes.", "boolean", None, True),
    ("boolean commitment", "Answer: True is wrong; false.", "boolean", None, False),
    ("boolean commitment", "Answer: yes and no", "boolean", None, None),
    ("boolean commitment", "Answer: maybe yes, maybe no", "boolean", None, None),
]
# (output a, output b, answer type, must agree)
AGREEMENT = [
    ("\\boxed{\\frac{3}{4}}", "\\boxed{\\frac{3}{5}}", "number", False),
    ("\\boxed{\\frac{3}{4}}", "Answer: 0.75", "number", True),
    ("\\boxed{2\\sqrt{2}}", "\\boxed{\\sqrt{8}}", "number", True),
    ("\\boxed{2\\sqrt{2}}", "Answer: 2", "number", False),
]


def _run_here() -> dict:
    from reasonscope.text.answers import answers_match, extract_answer

    answers, timings = [], []
    for _, text, kind, choices, _ in CASES:
        start = time.perf_counter()
        ext = extract_answer(text, kind, choices=choices)
        timings.append(time.perf_counter() - start)
        answers.append(ext.answer if isinstance(ext.answer, bool | float | int | str | type(None)) else str(ext.answer))
    agree = []
    for a, b, kind, _ in AGREEMENT:
        pa, pb = extract_answer(a, kind).answer, extract_answer(b, kind).answer
        agree.append(bool(pa is not None and pb is not None and answers_match(pa, pb, kind)))
    return {"answers": answers, "agree": agree, "seconds": sorted(timings)}


def _correct(answer, expected) -> bool:
    if expected is None or answer is None:
        return answer is None and expected is None
    if isinstance(expected, float) and isinstance(answer, int | float) and not isinstance(answer, bool):
        return math.isclose(answer, expected, rel_tol=1e-6, abs_tol=1e-9)
    return answer == expected


def _summary(result: dict) -> tuple[list[bool], list[bool]]:
    read = [_correct(a, c[4]) for a, c in zip(result["answers"], CASES, strict=True)]
    agree = [got == case[3] for got, case in zip(result["agree"], AGREEMENT, strict=True)]
    return read, agree


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-src", help="a src/ folder of another checkout to compare with")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    here = _run_here()
    if args.json:
        print(json.dumps(here))
        return
    base = None
    if args.baseline_src:
        env = {**os.environ, "PYTHONPATH": args.baseline_src}
        out = subprocess.run([sys.executable, __file__, "--json"], env=env, capture_output=True, text=True, check=True)
        base = json.loads(out.stdout.strip().splitlines()[-1])
    read, agree = _summary(here)
    base_read, base_agree = _summary(base) if base else (None, None)
    print(f"{'group':20} {'output':46} {'expected':>12} {'baseline':>20} {'this tree':>20}")
    for i, (group, text, _, _, expected) in enumerate(CASES):
        shown = (text[:43] + "...") if len(text) > 46 else text
        b = f"{base['answers'][i]!r:.14}{' ok' if base_read[i] else ' WRONG'}" if base else ""
        h = f"{here['answers'][i]!r:.14}{' ok' if read[i] else ' WRONG'}"
        print(f"{group:20} {shown!r:46} {expected!r:>12.12} {b:>20} {h:>20}")
    print()
    for i, (a, b_, kind, must) in enumerate(AGREEMENT):
        b = ("ok" if base_agree[i] else "WRONG") if base else ""
        print(f"agree {a!r} vs {b_!r} ({kind}) must be {must}: baseline {b} / this tree {'ok' if agree[i] else 'WRONG'}")
    print()
    groups = dict.fromkeys(c[0] for c in CASES)
    for g in groups:
        idx = [i for i, c in enumerate(CASES) if c[0] == g]
        b = f"{sum(base_read[i] for i in idx)}/{len(idx)}" if base else "-"
        print(f"{g:20} baseline {b:>6}   this tree {sum(read[i] for i in idx)}/{len(idx)}")
    total_b = f"{sum(base_read)}/{len(CASES)}" if base else "-"
    print(f"{'all forms':20} baseline {total_b:>6}   this tree {sum(read)}/{len(CASES)}")
    agree_b = f"{sum(base_agree)}/{len(AGREEMENT)}" if base else "-"
    print(f"{'agreement (CS)':20} baseline {agree_b:>6}   this tree {sum(agree)}/{len(AGREEMENT)}")
    t = here["seconds"]
    print(f"time per case here: median {t[len(t) // 2] * 1e3:.2f} ms, max {t[-1] * 1e3:.0f} ms "
          "(the max includes starting the math-verify worker)")
    plain, latex = _cost()
    print(f"warm cost per answer: plain text {plain * 1e3:.3f} ms, LaTeX {latex * 1e3:.2f} ms "
          f"({latex / plain:.0f}x plain)")


def _cost(n: int = 200) -> tuple[float, float]:
    """Seconds per answer, plain vs LaTeX (distinct answers, so no cache hit; worker already started)."""
    from reasonscope.text.answers import extract_answer

    extract_answer("\\boxed{\\frac{1}{2}}", "number")
    start = time.perf_counter()
    for i in range(n):
        extract_answer(f"Step one.\nThe answer is {i * 13 + 0.5}.", "number")
    plain = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for i in range(n):
        extract_answer(f"Step one.\nSo \\boxed{{\\frac{{{i + 1}}}{{{i + 997}}}}}", "number")
    return plain, (time.perf_counter() - start) / n


if __name__ == "__main__":
    main()
