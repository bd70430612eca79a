"""The Compare page: runs side by side, and for two runs the paired comparison of ``reasonscope compare``.

Side by side: each run's date, models, datasets, outcome and headline numbers (the report's summary
cards), a row per (card, line) found in any of the runs.

Paired comparison: the numbers and verdicts come from :func:`reasonscope.compare.compare_runs` itself
(imported when the page is asked for; the viewer computes none of them), on the two runs' read-only
stores, and are shown as its :class:`~reasonscope.compare.RunComparison` holds them: one row per metric
(base and new means, paired difference with its interval, p, Holm-adjusted p, verdict, shared items),
and its exit code. Where that command is not installed, or it cannot compare the two
runs, the page says why instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .runs import RunRow

__all__ = ["ComparisonUnavailable", "headline_table", "paired_comparison"]


class ComparisonUnavailable(RuntimeError):
    """The paired comparison cannot be shown (the message says why)."""


def headline_table(rows: list[RunRow]) -> tuple[list[tuple[str, str]], dict[str, dict[tuple[str, str], str]]]:
    """The headline rows, ``(card title, line name)`` in first-seen order, and per run key each row's value."""
    keys: dict[tuple[str, str], None] = {}
    values: dict[str, dict[tuple[str, str], str]] = {}
    for r in rows:
        values[r.key] = {}
        for card in r.cards:
            for line in card.lines:
                k = (f"{card.title} ({card.headline})", line.name)
                keys.setdefault(k, None)
                values[r.key][k] = f"{line.value} {line.n}".strip()
    return list(keys), values


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float | None) for v in value):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value)


def paired_comparison(base_dir: Path, new_dir: Path, families: Iterable[Any] = ()) -> dict[str, Any]:
    """``reasonscope compare``'s answer for the two run folders, as ``{"headers", "rows", "note"}``.

    ``families``: the families whose metric catalogues give each metric's direction and whose settings models
    give the defaults of settings a run did not store (the viewer's).

    Raises:
        ComparisonUnavailable: The command is not installed, or cannot compare these runs.
    """
    try:
        from ..compare import compare_runs
    except ImportError:
        raise ComparisonUnavailable("the paired comparison needs `reasonscope compare`, which this installation "
                                    "does not have; the headline numbers above are side by side") from None
    try:
        families = list(families)
        specs = {f.name: tuple(f.metrics) for f in families}
        models = {f.name: f.settings for f in families if getattr(f, "settings", None) is not None}
        result = compare_runs(base_dir, new_dir, catalogue=specs.__getitem__ if specs else None,
                              settings_models=models.__getitem__ if models else None)
    except Exception as err:  # noqa: BLE001 (any refusal of the command is shown on the page, as its message)
        raise ComparisonUnavailable(f"reasonscope compare cannot compare these runs: {err}") from None
    rows = []
    for m in result.metrics:
        models = m.base_model if m.base_model == m.new_model else f"{m.base_model} -> {m.new_model}"
        ci = f"[{_cell(m.ci_low)}, {_cell(m.ci_high)}]" if m.ci_low is not None else ""
        rows.append([f"{m.family}.{m.metric}", m.label, models, str(m.n_shared), _cell(m.base_mean),
                     _cell(m.new_mean), f"{_cell(m.difference)} {ci}".strip(), _cell(m.p_value), _cell(m.p_holm),
                     str(getattr(m.verdict, "value", m.verdict))])
    note = (f"exit code {result.exit_code}: {result.worse} metrics worse and {result.better} better after Holm "
            f"({result.holm}); {result.confidence:.0%} intervals; {len(result.mismatches)} mismatches"
            + "".join(f"; {x.message}" for x in result.mismatches[:3]))
    return {"headers": ["Metric", "Label", "Models", "n shared", "Base mean", "New mean",
                        "Difference (CI)", "p", "Holm p", "Verdict"], "rows": rows, "note": note}
