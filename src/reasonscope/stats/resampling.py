"""The one draw of item-bootstrap resamples, batch by batch.

Every bootstrap of :mod:`reasonscope.stats` and the behaviour family's strategy intervals draw their resamples
with :func:`resample_indices`. It is re-exported by :mod:`reasonscope.stats.bootstrap`; it lives in this module of its own
so that :mod:`reasonscope.stats.intervals`, which :mod:`~reasonscope.stats.bootstrap` imports, can use it too.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def resample_indices(n: int, n_resamples: int, seed: int, rows: int) -> Iterator[np.ndarray]:
    """The item-bootstrap resamples of ``n`` items, ``rows`` resamples at a time.

    Yields index arrays of shape ``(rows, n)`` (the last one with the rows left), ``n_resamples`` rows in all,
    each ``rng.integers(0, n, (rows, n))`` in turn from ``numpy.random.default_rng(seed)``: the stream
    ``scipy.stats.bootstrap`` draws with ``random_state=default_rng(seed)`` and ``batch=rows``. The resamples
    depend on ``rows`` (the stream is cut into other shapes), so each caller keeps its own batch size:
    :func:`~reasonscope.stats.bootstrap.paired_percentile_bootstrap` (its ``batch``),
    :func:`~reasonscope.stats.intervals.studentized_bootstrap` and
    :class:`reasonscope.behavior.strategies.ItemResamples` (:func:`~reasonscope.stats.bootstrap.resample_batch`
    of their cell budgets).
    """
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, rows):
        yield rng.integers(0, n, (min(rows, n_resamples - start), n))
