"""Child process that reads and compares LaTeX answers with math-verify (run by :mod:`.mathexpr`).

It is started as a script (``python _math_worker.py``), imports only the standard library, SymPy and
math-verify, and answers one JSON request per line on stdin with one JSON line on stdout:

* ``{"id", "op": "read", "latex", "want": "number" | "math"}`` -> ``{"id", "ok": true, "value", "text"}``
  or ``{"id", "ok": false, "reason"}``;
* ``{"id", "op": "equal", "gold", "pred"}`` -> ``{"id", "ok": true, "equal": bool}``.

math-verify's own signal-based timeouts are off (``parsing_timeout=None``, ``timeout_seconds=None``): the
parent process bounds every request by a deadline and kills this process when it is passed, which
also bounds what SymPy may compute (``2^{10^{10}}`` compared with 3 never finishes otherwise).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from functools import lru_cache


def _serve() -> None:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout = sys.stderr  # nothing a library prints can mix with the answers
    try:
        import sympy
        from math_verify import LatexExtractionConfig, parse, verify
    except Exception as err:  # missing package: the parent reports it once per answer
        out.write(json.dumps({"ready": False, "reason": f"{type(err).__name__}: {err}"}) + "\n")
        out.flush()
        return
    logging.disable(logging.WARNING)  # math-verify warns on every call that its own timeout is off
    config = [LatexExtractionConfig(boxed_match_priority=0)]

    @lru_cache(maxsize=4096)
    def read(latex: str):
        found = parse(f"${latex}$", extraction_config=config, parsing_timeout=None)
        return next((x for x in found if not isinstance(x, str)), None)

    def real_value(expr) -> tuple[float | None, str | None]:
        if isinstance(expr, sympy.MatrixBase) or isinstance(expr, sympy.Set | sympy.Tuple) \
                or not isinstance(expr, sympy.Expr):
            return None, f"not a single number ({type(expr).__name__})"
        if expr.free_symbols:
            names = ", ".join(sorted(str(s) for s in expr.free_symbols)[:5])
            return None, f"not a number: the expression contains {names}"
        value = sympy.N(expr, 20)
        if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            return None, "not a finite number"
        real, imag = value.as_real_imag()
        if imag != 0:
            return None, "not a real number"
        try:
            number = float(real)
        except (OverflowError, TypeError, ValueError):
            return None, "not a finite number"
        if number in (float("inf"), float("-inf")) or number != number:
            return None, "outside the double-precision range (about 1.8e308)"
        return number, None

    def handle(req: dict) -> dict:
        if req["op"] == "read":
            expr = read(req["latex"])
            if expr is None:
                return {"ok": False, "reason": "LaTeX that math-verify cannot read"}
            value, why = real_value(expr)
            if req["want"] == "number":
                return {"ok": True, "value": value, "text": str(expr)} if why is None else {"ok": False, "reason": why}
            return {"ok": True, "value": value, "text": str(expr)}
        gold, pred = read(req["gold"]), read(req["pred"])
        if gold is None or pred is None:
            return {"ok": True, "equal": False}
        return {"ok": True, "equal": bool(verify(gold, pred, timeout_seconds=None))}

    handle({"op": "equal", "gold": "\\frac{1}{2}", "pred": "0.5"})  # load the grammar before the first deadline
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = None
        try:
            req = json.loads(line)
            reply = handle(req)
        except Exception as err:  # any failure is one unreadable answer, never the worker's end
            reply = {"ok": False, "reason": f"math-verify failed ({type(err).__name__})"}
        reply["id"] = req.get("id") if isinstance(req, dict) else None
        out.write(json.dumps(reply, ensure_ascii=True) + "\n")
        out.flush()


if __name__ == "__main__":
    _serve()
