"""What the family reports, declared once: the console printer, the report and the workbook read these.

Both numbers are per answer, averaged over an item's answers, then over items (one value per item, so an
item asked K times weighs as much as one asked once). The intervals are reasonscope's own
(:func:`reasonscope.stats.estimate`): exact Clopper-Pearson for the share, a bootstrap for the mean.
"""

from __future__ import annotations

from reasonscope.metric_specs import MetricSpec

FAMILY_NAME = "trace_length"

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(key="steps", label="Reasoning steps", family=FAMILY_NAME, range=None, higher_is_better=None,
               unit="steps", description="number of steps in the answer's reasoning (its trace split into "
               "sentences and lines), mean over an item's answers, then over items"),
    MetricSpec(key="unexplained", label="Unexplained answers", family=FAMILY_NAME, higher_is_better=False,
               description="share of answers whose reasoning has fewer than min_steps steps; an answer without "
               "reasons cannot be checked"),
)


def steps(n_steps: int) -> float:
    """The ``steps`` value of one answer: its number of reasoning steps, ``n`` in [0, inf).

    >>> steps(3)
    3.0
    """
    return float(n_steps)


def unexplained(n_steps: int, min_steps: int) -> float:
    """The ``unexplained`` value of one answer: 1 when it shows fewer than ``min_steps`` steps, else 0.

    >>> unexplained(1, 2), unexplained(2, 2)
    (1.0, 0.0)
    """
    return 1.0 if n_steps < min_steps else 0.0
