r"""LaTeX and expression answers, read and compared with math-verify in a bounded child process.

When it applies
---------------
An answer statement goes here when, after :func:`reasonscope.text.numbers.normalize_markup`, it still
holds LaTeX (a command such as ``\frac``/``\sqrt``/``\pi``, braces, ``^``, ``_``) or an arithmetic
expression (``5 + 3``, ``2^10``), and always for ``answer_type: math``. Plain numbers never do: the plain
grammar reads them (``The answer is 18.`` is 18, ``-5`` is -5), because math-verify reads some plain forms
differently (``1e3`` as 1·e·3, ``1 1/2`` as 1).

The library
-----------
`math-verify <https://github.com/huggingface/Math-Verify>`_ turns LaTeX into SymPy (through
latex2sympy2-extended) and compares two answers symbolically and numerically (``verify``: about 1 ms per
answer once loaded). Its timeouts use ``signal.alarm``, which only works in the main thread, and a SymPy
comparison can run without end (``2^{10^{10}}`` against 3). So math-verify runs in a child process
(``_math_worker.py``, started with ``python -P`` so that this package's ``numbers`` module cannot shadow
the standard library's) with its own timeouts off; every request has a deadline (:data:`MATH_TIMEOUT_S`,
10 s, counted from when the worker has loaded its grammar) after which the child is killed and
restarted, and the answer is unparseable with the reason. This works from any thread and any process (a
worker thread, a Ray actor). Requests are serialised by a lock; results are cached per input in this
process, so a statement that timed out once is not retried in the same process.

Which part of the statement is read
-----------------------------------
``$...$`` / ``$$...$$`` spans holding math when there are any (then an ``=`` inside the chosen span keeps
what follows the last ``=``), else the statement split at prose words (two or more
letters outside braces and not a ``\command``): ``\frac{3}{4} of the cake`` is read as ``\frac{3}{4}``. An
explicit answer statement takes its first math part, a last-line fallback must hold exactly one. A
trailing ``%`` is dropped (25% is 25, as for plain numbers); ``×``, ``÷``, ``·``, ``**`` are written as
``\times``, ``\div``, ``\cdot``, ``^``.

Representation
--------------
* ``answer_type: number``: a LaTeX statement must denote one real, finite number: ``\frac{3}{4}`` is
  0.75, ``2\sqrt{2}`` is 2.8284271247461903 (SymPy evaluated to 20 digits, then a double); the answer is
  a ``float`` compared as every number (relative tolerance). A set, an interval, an equation, an
  expression with a variable, a complex or an infinite value is unparseable with the reason.
* ``answer_type: math``: a :class:`MathAnswer`, a ``str`` whose text is SymPy's form of the expression
  (``2*sqrt(2)``, ``Interval.Lopen(1, 2)``) with the LaTeX it was read from (``.latex``) and its real value
  when it has one (``.value``). Two math answers with values compare as numbers; otherwise math-verify's
  ``verify(gold, prediction)`` decides (symbolic equality, sets, intervals, matrices). The store keeps the
  raw text and answers are read again from it, so nothing symbolic is stored; ``samples.jsonl`` shows the
  answer as its text.
"""

from __future__ import annotations

import atexit
import itertools
import json
import math
import os
import queue
import re
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

MATH_TIMEOUT_S = 10.0
STARTUP_TIMEOUT_S = 120.0
MAX_MATH_CHARS = 1000
_WORKER = Path(__file__).with_name("_math_worker.py")

_DOLLAR_SPAN_RE = re.compile(r"\$\$([^$]+)\$\$|\$([^$]+)\$")
_MATH_CONTENT_RE = re.compile(r"\\[A-Za-z]|[{}^_=]|^\S+$")
_TOKEN_RE = re.compile(r"\\[A-Za-z]+|\\.|[{}]|[^\W\d_]{2,}|[^\\{}]", re.S)
_PROSE_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_OPERATORS = {"×": "\\times ", "÷": "\\div ", "·": "\\cdot ", "−": "-", "–": "-", "**": "^"}
_OPERATOR_RE = re.compile("|".join(re.escape(k) for k in _OPERATORS))


class MathAnswer(str):
    """A symbolic answer (``answer_type: math``): the string is SymPy's text of the expression.

    ``latex`` is what was read (math-verify compares from it), ``value`` the real value when the answer is
    one real number, else ``None``.
    """

    latex: str
    value: float | None

    def __new__(cls, text: str, latex: str, value: float | None = None) -> MathAnswer:
        """A math answer: SymPy's text ``text``, the LaTeX read, and the real value (None if not one real)."""
        obj = super().__new__(cls, text)
        obj.latex = latex
        obj.value = value
        return obj

    def __reduce__(self):
        return MathAnswer, (str(self), self.latex, self.value)


# ----------------------------------------------------------------------------------------------
# Choosing the math part of a statement


def dollar_math(span: str) -> list[str]:
    r"""The contents of the ``$...$`` / ``$$...$$`` spans that hold math.

    A span holds math when it has markup, ``=``, or one token without spaces: ``$\frac{1}{2}$``, ``$x = 5$``,
    ``$5$``; ``$5 and $6`` are two amounts of money, not math.
    """
    found = [(a or b).strip() for a, b in _DOLLAR_SPAN_RE.findall(span)]
    return [f for f in found if _MATH_CONTENT_RE.search(f)]


def math_parts(span: str) -> list[str]:
    """The math parts of a statement (see the module docstring), each stripped of punctuation at its ends."""
    delimited = dollar_math(span)
    if delimited:
        parts = delimited
    else:
        parts, current, depth, previous = [], [], 0, ""
        for tok in _TOKEN_RE.findall(span):
            depth = max(0, depth + (tok == "{") - (tok == "}"))
            if depth == 0 and _PROSE_WORD_RE.fullmatch(tok) and not previous.startswith("\\"):
                parts.append("".join(current))
                current = []
            else:
                current.append(tok)
            if not tok.isspace():
                previous = tok
        parts.append("".join(current))
    out = []
    for part in parts:
        part = part.strip().strip(".,;:!?").strip().strip("$").strip()
        if re.search(r"[\w\\]", part):
            out.append(part)
    return out


def prepare(part: str) -> str:
    """A math part as math-verify is given it.

    A trailing percent dropped, a leading currency symbol dropped, unicode operators written in LaTeX.
    """
    part = part.strip()
    part = re.sub(r"\\?%$", "", part).strip()
    part = re.sub(r"^[-+]?\s*\\?\$\s*", lambda m: "-" if m.group(0).lstrip().startswith("-") else "", part)
    return _OPERATOR_RE.sub(lambda m: _OPERATORS[m.group(0)], part)


def pick_part(span: str, *, explicit: bool) -> tuple[str | None, str | None]:
    """The math part of a statement, or the reason there is none.

    ``(math part, None)`` or ``(None, reason)``: the first part of an explicit statement, the only part of a
    last-line fallback.
    """
    if len(span) > 10 * MAX_MATH_CHARS:
        return None, f"unparseable: final answer longer than {10 * MAX_MATH_CHARS} characters to read as math"
    parts = math_parts(span)
    if not parts:
        return None, f"unparseable: no math expression in final answer {span.strip()!r:.80}"
    if not explicit and len(parts) > 1:
        return None, f"ambiguous: {len(parts)} math expressions in final answer {span.strip()!r:.80}"
    part = prepare(parts[0])
    if len(part) > MAX_MATH_CHARS:
        return None, f"unparseable: math expression longer than {MAX_MATH_CHARS} characters"
    return part, None


# ----------------------------------------------------------------------------------------------
# The child process


class _Worker:
    """One math-verify child process, started on first use, restarted after a timeout or a crash."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._pid = 0
        self._replies: queue.Queue = queue.Queue()
        self._ids = itertools.count()
        self.unavailable: str | None = None

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-u", "-P", str(_WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, encoding="utf-8", bufsize=1)
        self._pid = os.getpid()
        self._replies = queue.Queue()
        threading.Thread(target=self._read, args=(self._proc, self._replies), daemon=True).start()
        ready = self._wait(STARTUP_TIMEOUT_S)
        if ready is None or not ready.get("ready"):
            self._stop()
            why = (ready or {}).get("reason", "it did not start")
            self.unavailable = ("LaTeX answers need the math-verify package (pip install math-verify); "
                                f"its worker failed: {why}")

    @staticmethod
    def _read(proc: subprocess.Popen, replies: queue.Queue) -> None:
        for line in proc.stdout:
            try:
                replies.put(json.loads(line))
            except ValueError:
                continue
        replies.put(None)  # the process ended

    def _wait(self, timeout: float) -> dict | None:
        try:
            return self._replies.get(timeout=timeout)
        except queue.Empty:
            return None

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        with self._lock:
            if self._proc is not None and self._pid != os.getpid():
                self._proc = None  # a forked copy of the parent: leave the parent's worker alone
            if self._proc is None or self._proc.poll() is not None:
                if self.unavailable:
                    return {"ok": False, "reason": self.unavailable}
                self._start()
                if self._proc is None:
                    return {"ok": False, "reason": self.unavailable}
            request = {**request, "id": next(self._ids)}
            try:
                self._proc.stdin.write(json.dumps(request, ensure_ascii=True) + "\n")
                self._proc.stdin.flush()
            except OSError:
                self._stop()
                return {"ok": False, "reason": "the math-verify worker ended"}
            while True:
                reply = self._wait(timeout)
                if reply is None:
                    self._stop()
                    return {"ok": False, "reason": f"math-verify did not finish within {timeout:g} s",
                            "timeout": True}
                if reply.get("id") == request["id"]:
                    return reply

    def close(self) -> None:
        with self._lock:
            self._stop()


_worker = _Worker()
atexit.register(_worker.close)


@lru_cache(maxsize=8192)
def _cached(request_json: str, timeout: float) -> dict[str, Any]:
    return _worker.call(json.loads(request_json), timeout)


def _request(request: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    return _cached(json.dumps(request, sort_keys=True), MATH_TIMEOUT_S if timeout is None else timeout)


# ----------------------------------------------------------------------------------------------
# Public API


def read_math_number(part: str, *, timeout: float | None = None) -> tuple[float | None, str | None]:
    """The real number a math part denotes, or ``(None, "unparseable: ...")``."""
    reply = _request({"op": "read", "latex": part, "want": "number"}, timeout)
    if not reply.get("ok"):
        return None, f"unparseable: {reply.get('reason')} in {part!r:.60}"
    return float(reply["value"]), None


def read_math(part: str, *, timeout: float | None = None) -> tuple[MathAnswer | None, str | None]:
    """A :class:`MathAnswer` for a math part, or ``(None, "unparseable: ...")``."""
    reply = _request({"op": "read", "latex": part, "want": "math"}, timeout)
    if not reply.get("ok"):
        return None, f"unparseable: {reply.get('reason')} in {part!r:.60}"
    value = reply.get("value")
    return MathAnswer(reply["text"], part, None if value is None else float(value)), None


def math_number_answer(value: float, text: str) -> MathAnswer:
    """A plain number as a :class:`MathAnswer` (read by the plain grammar, not by math-verify)."""
    shown = str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return MathAnswer(shown, shown if "e" not in shown else f"{value:.17g}".replace("e", "\\times 10^{") + "}",
                      value)


def math_equal(gold: MathAnswer, pred: MathAnswer, rel_tol: float = 1e-6, *,
               timeout: float | None = None) -> bool:
    """Whether two math answers are equal.

    Two math answers are equal: as numbers (relative tolerance) when both are real numbers, else by
    math-verify's ``verify(gold, prediction)``. A comparison that times out is not equal.
    """
    if gold.value is not None and pred.value is not None:
        return math.isclose(gold.value, pred.value, rel_tol=rel_tol, abs_tol=1e-9)
    reply = _request({"op": "equal", "gold": gold.latex, "pred": pred.latex}, timeout)
    return bool(reply.get("ok") and reply.get("equal"))
