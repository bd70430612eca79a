"""What inspect-ai loads through the ``inspect_ai`` entry point of the reasonscope package.

inspect-ai looks up a name ``reasonscope/<name>`` (``inspect score LOG --scorer
reasonscope/answer_correctness``, ``inspect eval ... --scorer ...``, or a log whose scorers and metrics
it recomputes) by importing the module named by the package's ``inspect_ai`` entry point; importing
:mod:`reasonscope.integrations.inspect_scorers` registers its scorers (``answer_correctness``,
``logical_coherence``, ``trace_stability``), metrics (``consistency``, ``stability``) and reducer
(``first_epoch``) under the ``reasonscope/`` namespace.
"""

from __future__ import annotations

from . import inspect_scorers  # noqa: F401  (imported for its registrations)
