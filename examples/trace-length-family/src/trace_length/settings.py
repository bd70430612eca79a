"""The family's settings: the ``families.trace_length`` block of a plan.

Every key is validated like a built-in family's: an unknown key, a wrong type or an impossible value stops
the plan before any model is called, with the file, the line and the key path in the message.
"""

from __future__ import annotations

from pydantic import Field

from reasonscope.shared_settings import Strict


class TraceLengthConfig(Strict):
    """Settings of the trace-length family.

    ``samples``: answers asked per question (each is measured; an item's value is the mean over its
    answers). ``min_steps``: an answer whose reasoning has fewer steps than this counts as unexplained.
    """

    samples: int = Field(1, ge=1, le=50, description="Answers asked per question (K); an item's value is "
                         "the mean over its answers.")
    min_steps: int = Field(2, ge=1, description="An answer whose reasoning has fewer steps than this counts "
                           "as unexplained.")
