"""Benchmark: the attack family's arithmetic check on 7,473 GSM8K worked solutions, before and after.

GSM8K's gold solutions are correct, so every solution the check flags is a false alarm. For the
checker before this change (re-implemented below as the baseline) and the current one
(:func:`reasonscope.attack.arithmetic.check_arithmetic`), on the solutions as written (with their
``<<a*b=c>>`` calculator annotations) and with the annotations removed, it prints: solutions flagged,
links checked and skipped, and the detection rates on copies with one stated result changed and with
one operator swapped (:mod:`reasonscope.attack.checker_validation`).

    python benchmarks/arithmetic_gsm8k.py --data PATH/gsm8k_train.jsonl.gz [--limit N]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import operator
import re
import time
from pathlib import Path

# -- the baseline: the checker as it was before (regex equations, exact comparison) ---------------------
_NUM = r"[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
_OP = r"[-+*/x×÷]"
_EQ = re.compile(rf"(?<![\w.])(\(?\s*{_NUM}\s*\)?(?:\s*{_OP}\s*\(?\s*{_NUM}\s*\)?)+)\s*=\s*(-?{_NUM})")
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _old_number(token: str) -> float:
    return float(token.strip().lstrip("$€£").rstrip("%").replace(",", ""))


def _old_eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _old_eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return _BIN[type(node.op)](_old_eval(node.left), _old_eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_old_eval(node.operand)
    raise ValueError("not arithmetic")


def old_checker(text: str) -> tuple[bool, int, int]:
    """(passed, equations checked, 0): the baseline has no notion of a skipped equation."""
    ok, n = True, 0
    for m in _EQ.finditer(text):
        n += 1
        rhs = _old_number(m.group(2).lstrip("-")) * (-1 if m.group(2).startswith("-") else 1)
        expr = re.sub(_NUM, lambda x: repr(_old_number(x.group(0))), m.group(1).strip())
        try:
            lhs = _old_eval(ast.parse(expr.replace("×", "*").replace("÷", "/").replace("x", "*"), mode="eval"))
        except (ValueError, SyntaxError, ZeroDivisionError):
            ok = False
            continue
        ok &= abs(lhs - rhs) <= 1e-6 * max(1.0, abs(rhs))
    return ok, n, 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="GSM8K JSONL(.gz) with an `answer` field")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"no GSM8K file at {args.data}; pass --data")

    from reasonscope.attack.checker_validation import new_checker, validate_checker

    opener = gzip.open if args.data.suffix == ".gz" else open
    with opener(args.data, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()][: args.limit]
    raw = [r["answer"].split("####")[0] for r in rows]
    texts = {"annotated": raw, "annotations removed": [re.sub(r"<<[^<>]*>>", "", t) for t in raw]}
    print(f"{len(rows)} GSM8K solutions from {args.data.name}; false flags: lower is better; detection: higher")
    head = (f"{'checker':9}{'text':21}{'flagged':>15}{'checked':>9}{'skipped':>9}{'result changed':>22}"
            f"{'operator swapped':>22}{'s':>6}")
    print(head)
    for name, checker in (("before", old_checker), ("after", new_checker)):
        for mode, solutions in texts.items():
            t = time.perf_counter()
            r = validate_checker(solutions, checker, seed=args.seed)
            secs = time.perf_counter() - t

            def cell(num, den):
                return f"{num}/{den} {num / den:.2%}" if den else "n/a"

            skipped = "n/a" if name == "before" else str(r.skipped_links)
            print(f"{name:9}{mode:21}{cell(r.flagged, r.solutions):>15}{r.checked_links:>9}{skipped:>9}"
                  f"{cell(r.result_detected, r.result_corrupted):>22}"
                  f"{cell(r.operator_detected, r.operator_corrupted):>22}{secs:>6.1f}")


if __name__ == "__main__":
    main()
