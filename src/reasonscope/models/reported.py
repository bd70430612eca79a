"""The one rule for the numbers a model's reply reports: token counts, log-probabilities, finish reasons.

Every provider's completion passes :func:`check_completion` where it enters (the base class runs it on every
reply before the rate limiter or the store sees it), the OpenAI log-probability reader passes each value
through :func:`logprob`, and the importer (``score --input``, ``--from inspect``, ``--from lm-eval``) reads
counts with :func:`whole_number` and finish reasons with :func:`finish_reason`. So a count that one path
refuses, every path refuses, with the same words.

Rules
-----
* **Token counts** (``prompt_tokens``, ``completion_tokens``): whole numbers from 0 to :data:`MAX_COUNT`
  (2**31 - 1). An int, a float with no fraction (``3.0``) or such a number written as text is read; NaN,
  infinity, fractions, booleans, negatives and larger numbers are refused. ``None`` (not reported) stays
  ``None``.
* **Log-probabilities**: finite and at most 0 (a probability is at most 1). A value above 0 by no more than
  :data:`LOGPROB_SLACK` (float rounding in a server's softmax) is read as 0.0; anything else is refused.
* **Finish reasons**: a text. A known value (:data:`FINISH_REASONS`, compared without case or surrounding
  spaces) is kept in its canonical spelling, ``max_tokens`` / ``model_length`` read as ``length``
  (truncated). An unknown value is not guessed at: it is kept as text, ``other:<value>`` with the value cut
  to :data:`MAX_FINISH_REASON_CHARS` characters, so it is never mistaken for a known reason and never
  floods an output.

What a break of the rule does
-----------------------------
A provider's reply that breaks it is a **failed request** with the reason (:class:`ImplausibleReply`:
not retried, stored as a failed generation, counted and shown next to every number, re-sent only with
``--retry-failed``): the reply came, but its numbers cannot be trusted, so neither its text nor its
counts reach a metric or the rate limiter. An imported row that breaks it is a bad row naming the file,
line and field.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..types import Completion

MAX_COUNT = 2**31 - 1
"""Largest token count (or other count) read from a reply or an imported row."""
LOGPROB_SLACK = 1e-6
"""A log-probability above 0 by at most this much is float rounding, read as 0.0."""
MAX_FINISH_REASON_CHARS = 64
"""An unknown finish reason is kept as ``other:<value>`` with the value cut to this many characters."""

# known finish reasons: OpenAI chat completions, Anthropic messages, inspect-ai, local backends
FINISH_REASONS = ("stop", "length", "content_filter", "tool_calls", "function_call", "end_turn", "stop_sequence",
                  "tool_use", "refusal", "pause_turn", "model_context_window_exceeded", "unknown")
TRUNCATION_ALIASES = ("max_tokens", "model_length")


class NumberOutOfRule(ValueError):
    """A reported number that breaks the rule; ``field`` names it, the message says what was expected."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class ImplausibleReply(RuntimeError):
    """A provider's reply whose numbers break the rule: a failed request, not retried, never scored.

    Not a ``ValueError``: providers retry ``ValueError`` as a malformed reply, and this one is not retried.
    """


def whole_number(value: Any, field: str, *, minimum: int = 0, maximum: int = MAX_COUNT) -> int | None:
    """A whole number in ``[minimum, maximum]``, or ``None`` for a value that is absent or blank text.

    Accepts an int, a float with no fraction, or such a number written as text. NaN, infinity, booleans,
    fractions and numbers outside the range raise :class:`NumberOutOfRule` naming ``field``.

    >>> whole_number("12", "completion_tokens"), whole_number(3.0, "n"), whole_number(None, "n")
    (12, 3, None)
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    expected = f"expected a whole number from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise NumberOutOfRule(field, f"{expected}, got {type(value).__name__} {str(value)[:40]!r}")
    number: int | float = value
    if isinstance(value, str):
        try:
            number = float(value.strip()) if len(value) <= 100 else math.inf
        except ValueError:
            raise NumberOutOfRule(field, f"{expected}, got {value[:40]!r}") from None
    if isinstance(number, float):
        if not math.isfinite(number) or not number.is_integer():
            raise NumberOutOfRule(field, f"{expected}, got {str(value)[:40]!r}")
        number = int(number)
    if not minimum <= number <= maximum:
        shown = str(number) if abs(number) < 10**20 else f"a number of about {int(number.bit_length() * 0.30103)} digits"
        raise NumberOutOfRule(field, f"{expected}, got {shown}")
    return number


def logprob(value: Any, field: str = "logprob") -> float:
    """A log-probability: finite and at most 0 (up to :data:`LOGPROB_SLACK`, read as 0.0).

    >>> logprob(-0.25), logprob(5e-7)
    (-0.25, 0.0)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NumberOutOfRule(field, f"expected a log-probability (a number <= 0), got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number > LOGPROB_SLACK:
        raise NumberOutOfRule(field, f"expected a finite log-probability <= 0, got {number!r}")
    return min(number, 0.0)


def finish_reason(value: Any) -> str | None:
    """The finish reason in its canonical spelling, ``other:<value>`` when unknown, ``None`` when absent.

    >>> finish_reason(" STOP "), finish_reason("max_tokens"), finish_reason("cosmic_ray")
    ('stop', 'length', 'other:cosmic_ray')
    """
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    key = text.lower()
    if key in TRUNCATION_ALIASES:
        return "length"
    if key in FINISH_REASONS:
        return key
    if key.startswith("other:"):  # already normalised (a stored row read again)
        text = text[len("other:"):]
    return "other:" + text[:MAX_FINISH_REASON_CHARS]


def check_completion(completion: Completion, where: str) -> Completion:
    """``completion`` with its counts checked and its finish reason normalised, in place.

    ``where`` names the request in the error (e.g. ``"gpt-4o (item q1, sample 0)"``). Raises
    :class:`ImplausibleReply` naming the field, the value and the rule when a count breaks it.
    """
    for name in ("prompt_tokens", "completion_tokens"):
        try:
            setattr(completion, name, whole_number(getattr(completion, name), name))
        except NumberOutOfRule as err:
            raise ImplausibleReply(f"the reply to {where} reports usage {name} that breaks the rule for token counts: "
                                   f"{err}; its text and counts are not used") from None
    completion.finish_reason = finish_reason(completion.finish_reason)
    return completion
