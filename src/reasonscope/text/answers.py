r"""Typed answer extraction and comparison (the full rules: ``docs/answers.md``).

The answer is read from the *final-answer statement*, never from a substring anywhere in the text:

1. terminal escape sequences and control characters are removed from the copy that is read
   (:mod:`reasonscope.text.sanitize`; ``\x1b[1mAnswer: 1\x1b[0m`` reads as ``Answer: 1``);
2. reasoning blocks (``<think>...</think>``, ``<reasoning>``, ``<thought>``) are set aside as trace;
3. the statement is, by priority: a prompt-specified regex (``answer_pattern``, group 1), the last
   GSM8K ``#### X``, the last ``\boxed{X}``, the last ``Answer: X`` / ``Final answer: X``, the last
   "the (final) answer is X" (cut at the end of its sentence), else the last non-empty line
   with a letter or digit (not used when the generation was truncated: a cut-off text has no
   final answer);
4. the statement is parsed by answer type:

``number``  an ``=`` in the statement keeps only what follows the last ``=``. Plain text is read by the
            number grammar of :mod:`reasonscope.text.numbers` (signs, decimals, thousands separators
            including LaTeX ``{,}``, scientific notation, fractions, mixed numbers, percent, currency,
            units; a value outside the double range is unparseable). LaTeX (``\frac{3}{4}``,
            ``2\sqrt{2}``) and arithmetic expressions (``5 + 3``, ``2^10``) are read by math-verify in a
            bounded child process (:mod:`reasonscope.text.mathexpr`) and must denote one real number.
            An explicit statement with words takes its first number (or math part); a last-line
            fallback, or a statement made only of numbers ("3, 4"), must hold exactly one (otherwise:
            ambiguous). Small number words (``eight``) when there is no digit. Compared with
            ``math.isclose(rel_tol, abs_tol=1e-9)``.
``math``    a symbolic answer (:class:`~reasonscope.text.mathexpr.MathAnswer`): a plain numeral as a
            number, anything else through math-verify (expressions, intervals, sets, matrices); compared
            as numbers when both are real numbers, else with math-verify's ``verify``.
``boolean`` yes/no/true/false as whole words, the value the statement finally commits to
            (:mod:`reasonscope.text.commitment`): "No, wait: yes" is yes, "yes and no" is ambiguous,
            "not yes" only rejects and is unparseable.
``choice``  an option letter (``B``, ``(B)``, ``B)``, ``option B``, a capital letter standing alone) or,
            when no letter is named, an option's text; the option the statement finally commits to:
            "Not A; the answer is C" and "(A) is wrong. (C)" are C.
``label``   exactly one of the known labels as a whole phrase; else the normalised statement.
``text``    lower-cased, punctuation and articles removed, whitespace collapsed, compared exactly.

Every extraction returns the answer or ``None`` with the reason (``empty output``, ``truncated before a
final answer``, ``ambiguous: ...``, ``unparseable: ...``); no input raises, and reading is linear in the
text's length (a statement longer than :data:`MAX_STATEMENT_CHARS`, 5,000 characters, is not an answer
statement: unparseable). An unparseable answer is wrong and counted as unparseable (the behaviour
table's ``unparseable`` column per model; ``samples.jsonl`` has the reason in ``answer_reason``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from .mathexpr import (
    MathAnswer,
    math_equal,
    math_number_answer,
)
from .numbers import find_numbers
from .sanitize import strip_terminal_codes
from .typed import (
    _ALNUM_RE,
    _letters,
    normalize_text,
    parse_boolean,
    parse_choice,
    parse_label,
    parse_math,
    parse_number,
)

__all__ = ["Extraction", "answers_match", "extract_answer", "final_statement", "find_numbers", "normalize_text",
           "parse_boolean", "parse_choice", "parse_label", "parse_number", "parse_target", "split_think"]

MAX_STATEMENT_CHARS = 5000
THINK_RE = re.compile(r"<(think|thinking|reasoning|thought)>(.*?)(?:</\1>|$)", re.S | re.I)
HASH_RE = re.compile(r"####\s*([^\n]*)")
# (no two adjacent \s* before the colon: "answer" followed by a long run of spaces stays linear)
ANSWER_LINE_RE = re.compile(r"(?:final\s+answer|\banswer)\s*(?:\*\*\s*)?[:：]\s*(?:\*\*)?\s*([^\n]*)", re.I)
ANSWER_IS_RE = re.compile(r"\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s+(?:is|would\s+be|=)\s*:?\s*([^\n]*)", re.I)
SENTENCE_END_RE = re.compile(r"(?<!\d)\.(?=\s|$)|(?<=\d)\.(?=\s|$)|[;!?](?=\s|$)")
# a variable next to an operator and a number ("x + 1", "2*n"): an expression, not a number


@dataclass
class Extraction:
    """Result of reading an answer: ``answer`` (typed) or ``None`` with ``reason``."""

    answer: Any
    reason: str | None
    statement: str | None
    source: str | None
    trace: str
    think: str | None

    @property
    def ok(self) -> bool:
        """Whether an answer was read."""
        return self.answer is not None


# ----------------------------------------------------------------------------------------------
# Separating reasoning from the final statement


def split_think(text: str) -> tuple[str | None, str]:
    """Return (think content or None, text without think blocks). Nothing is thrown away."""
    blocks = [m.group(2).strip() for m in THINK_RE.finditer(text)]
    rest = THINK_RE.sub("", text)
    # A closing tag without an opening one (some servers strip the opening tag).
    if not blocks and "</think>" in rest:
        head, _, rest = rest.partition("</think>")
        blocks = [head.strip()]
    return ("\n\n".join(blocks) if blocks else None), rest.strip()


def _cut_sentence(span: str) -> str:
    m = SENTENCE_END_RE.search(span)
    return span[: m.start()] if m else span


def _clean(span: str) -> str:
    span = span.strip().strip("*").strip()
    span = re.sub(r"^\$+|\$+$", lambda m: m.group(0) if re.search(r"\d", span) else "", span)
    return span.strip().rstrip(".").strip()


def _boxed(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 1, start + len("\\boxed{")
    begin = i
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[begin:i - 1] if depth == 0 else None


def final_statement(body: str, *, truncated: bool = False,
                    answer_pattern: str | None = None) -> tuple[str | None, str | None, str]:
    """Find the final-answer statement: (statement, source, reason-if-none)."""
    if answer_pattern:
        found = list(re.finditer(answer_pattern, body, re.I | re.M))
        if found:
            return _clean(found[-1].group(1)), "pattern", ""
    found = list(HASH_RE.finditer(body))
    if found:
        return _clean(found[-1].group(1)), "####", ""
    boxed = _boxed(body)
    if boxed is not None:
        return _clean(boxed), "boxed", ""
    found = list(ANSWER_LINE_RE.finditer(body))
    if found:
        return _clean(found[-1].group(1)), "answer-line", ""
    found = list(ANSWER_IS_RE.finditer(body))
    if found:
        return _clean(_cut_sentence(found[-1].group(1))), "answer-is", ""
    if truncated:
        return None, None, "truncated before a final answer"
    last = next((ln.strip() for ln in reversed(body.splitlines()) if _ALNUM_RE.search(ln)), None)
    if last is None:
        return None, None, "empty output"
    return _clean(last), "last-line", ""


# ----------------------------------------------------------------------------------------------
# Public API


def extract_answer(text: str, answer_type: str, *, choices: list[str] | None = None, truncated: bool = False,
                   answer_pattern: str | None = None) -> Extraction:
    """Read the typed answer of a model output (see the module docstring); never raises on any text."""
    think, body = split_think(strip_terminal_codes(text or ""))
    statement, source, why = final_statement(body, truncated=truncated, answer_pattern=answer_pattern)
    trace = body
    if source in ("answer-line", "####", "pattern"):
        cut = {"answer-line": ANSWER_LINE_RE, "####": HASH_RE}.get(source)
        found = list(cut.finditer(body)) if cut else []
        if found:
            trace = body[: found[-1].start()].strip()
    if statement is None:
        return Extraction(None, why, None, None, trace, think)
    if not statement:
        return Extraction(None, "unparseable: empty final answer", statement, source, trace, think)
    if len(statement) > MAX_STATEMENT_CHARS:
        return Extraction(None, f"unparseable: final answer statement longer than {MAX_STATEMENT_CHARS} characters",
                          statement, source, trace, think)
    value, reason = read_statement(statement, answer_type, choices, explicit=source != "last-line")
    return Extraction(value, reason, statement, source, trace, think)


def read_statement(statement: str, answer_type: str, choices: list[str] | None = None, *,
                   explicit: bool = True) -> tuple[Any, str | None]:
    """The typed value of an answer statement, or ``(None, reason)``."""
    if answer_type == "number":
        return parse_number(statement, explicit=explicit)
    if answer_type == "math":
        return parse_math(statement, explicit=explicit)
    if answer_type == "boolean":
        return parse_boolean(statement)
    if answer_type == "choice":
        return parse_choice(statement, choices)
    if answer_type == "label":
        return parse_label(statement, choices)
    value = normalize_text(statement) or None
    return value, None if value else "unparseable: empty final answer"


def parse_target(target: Any, answer_type: str, choices: list[str] | None = None) -> Any:
    """The gold answer in the same typed form as :func:`extract_answer` returns.

    Raises ``ValueError`` (with what was expected) when the target cannot be read as its type.
    """
    if target is None:
        return None
    if isinstance(target, str):
        target = strip_terminal_codes(target)  # read as the predictions are
    if answer_type in ("number", "math"):
        if isinstance(target, bool):
            raise ValueError(f"numeric target expected, got {target!r}")
        if isinstance(target, int | float):
            try:
                value = float(target)
            except OverflowError:
                value = math.inf
            if not math.isfinite(value):
                raise ValueError(f"numeric target must be a finite number, got {str(target)[:40]}")
            return value if answer_type == "number" else math_number_answer(value, str(target))
        text = str(target)
        if "####" in text:
            text = text.split("####")[-1]
        value, why = (parse_number if answer_type == "number" else parse_math)(text, explicit=False)
        if value is None:
            kind = "numeric" if answer_type == "number" else "math"
            raise ValueError(f"{kind} target expected, got {str(target)[:80]!r} ({why})")
        return value
    if answer_type == "boolean":
        if isinstance(target, bool):
            return target
        value, _ = parse_boolean(str(target))
        if value is None:
            raise ValueError(f"boolean target expected (yes/no/true/false), got {str(target)[:80]!r}")
        return value
    if answer_type == "choice":
        if isinstance(target, int) and not isinstance(target, bool):
            letters = _letters(choices)
            if not 0 <= target < len(letters):
                raise ValueError(f"choice index {target} outside the {len(letters)} options")
            return letters[target]
        text = str(target).strip()
        if len(text) == 1 and text.upper() in _letters(choices):
            return text.upper()
        letter, _ = parse_choice(text, choices)
        if letter is None:
            raise ValueError(f"choice target expected (a letter, an index or an option text), got {text[:80]!r}")
        return letter
    if answer_type == "label":
        if choices:
            for lab in choices:
                if normalize_text(lab) == normalize_text(str(target)):
                    return lab
        return normalize_text(str(target)) if not choices else str(target)
    return normalize_text(str(target))


def answers_match(pred: Any, gold: Any, answer_type: str, rel_tol: float = 1e-6) -> bool:
    """Typed equality of two answers.

    Typed equality: numbers within ``rel_tol`` (absolute 1e-9), math answers by value or math-verify, labels
    after normalisation, everything else exactly. ``None`` never matches.
    """
    if pred is None or gold is None:
        return False
    if answer_type == "number":
        return math.isclose(float(pred), float(gold), rel_tol=rel_tol, abs_tol=1e-9)
    if answer_type == "math":
        if not isinstance(pred, MathAnswer) or not isinstance(gold, MathAnswer):
            return False
        return math_equal(gold, pred, rel_tol)
    if answer_type == "label":
        return normalize_text(str(pred)) == normalize_text(str(gold))
    return pred == gold
