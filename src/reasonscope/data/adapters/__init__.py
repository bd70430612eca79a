"""Readers of other frameworks' evaluation logs for ``reasonscope score --from``.

``lm-eval``: the per-sample logs of lm-evaluation-harness (:func:`read_lm_eval`);
``inspect``: inspect-ai eval logs, through inspect-ai's own reader (:func:`read_inspect_log`).
Both return a :class:`ForeignImport`, the same items and generations a predictions file gives.
:func:`sniff_log` tells which framework wrote a file, so a log given to the wrong reader (or as a
predictions file) is refused with the right flag named.
"""

from __future__ import annotations

from pathlib import Path

from .common import KINDS, ForeignImport, sniff_log
from .inspect_logs import read_inspect_log
from .lm_eval_logs import read_lm_eval

READERS = {"lm-eval": read_lm_eval, "inspect": read_inspect_log}


def read_log(source: str, path: str | Path, *, skip_bad_rows: bool = False, answer_type: str | None = None,
             budget: int | None = None, token_counter=None, log_run: str | None = None) -> ForeignImport:
    """Read a log of another evaluation framework.

    Read ``path`` as a log of ``source`` (``lm-eval`` or ``inspect``); ``log_run`` picks one run of a folder
    that holds several (else the latest run of each task is read).
    """
    if source not in READERS:
        raise ValueError(f"unknown log source {source!r}; expected one of {', '.join(READERS)}")
    return READERS[source](path, skip_bad_rows=skip_bad_rows, answer_type=answer_type, budget=budget,
                           token_counter=token_counter, log_run=log_run)


__all__ = ["KINDS", "READERS", "ForeignImport", "read_inspect_log", "read_lm_eval", "read_log", "sniff_log"]
