"""The one shape every family has, and what it is given to score a run.

A family (behavior, evidence, information, attributes, attack) is registered once, in
:mod:`reasonscope.families`, as an object satisfying :class:`Family`: its name, its settings model
(``<family>/settings.py``), the numbers it reports (:class:`~reasonscope.metric_specs.MetricSpec`),
one ``score`` entry point with the same signature for all five, its command-line sub-app and its
console printer. The runner and ``reasonscope score`` loop over the enabled families through this
protocol; the CLI mounts each sub-app; printers and contract tests read the specs.

This module is a shared layer: it imports no family.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel

from .metric_specs import MetricSpec

if TYPE_CHECKING:
    import typer
    from rich.console import Console

    from .results import RunData
    from .settings import ModelConfig, StatsConfig
    from .store import Store

__all__ = ["Family", "FamilyResult", "MetricSpec", "ScoringContext", "ScoringModels"]


@dataclass
class ScoringModels:
    """Scoring models loaded ahead of scoring (each None with the reason when unavailable)."""

    nli: Any = None
    nli_reason: str | None = None
    sim: Any = None
    sim_reason: str | None = None
    preload_similarity: bool = True

    def warm(self) -> None:
        """Load the scoring models now (the runner calls this in a background thread once generation has
        something to send, so loading overlaps with waiting for the provider); a failure is left for
        scoring to report."""
        from .scorers.cache import ScorerUnavailable

        for scorer in (self.nli, self.sim if self.preload_similarity else None):
            if scorer is not None and hasattr(scorer, "scorer"):
                try:
                    scorer.scorer()
                except ScorerUnavailable:
                    pass


@dataclass
class ScoringContext:
    """Everything a family's ``score`` may read: the store and run, the family's own settings, the
    plan-level settings (statistics, seed, models, datasets), the run's generations (loaded on first
    use), where output goes, and how per-item work runs.

    ``scoring_models``: models loaded ahead of time (the runner loads them while generation runs);
    None lets the family load what it needs. ``models`` and ``datasets``: the plan's model settings
    and dataset names (empty for ``reasonscope score``). ``temperatures``: model name -> sampling
    temperature, when known.
    """

    store: Store
    run_id: str
    settings: Any
    stats: StatsConfig
    console: Console
    seed: int = 0
    executor: str = "local"
    base_dir: Path | None = None
    run_dir: Path | None = None
    models: list[ModelConfig] = field(default_factory=list)
    datasets: tuple[str, ...] = ()
    temperatures: dict[str, float] | None = None
    scoring_models: ScoringModels | None = None
    _data: RunData | None = None

    def chunks(self) -> Iterable[RunData]:
        """The run's generations in chunks of whole items (:func:`reasonscope.results.run_chunks`): the
        loaded ``data`` when there is one, the whole run as one chunk when it is small (then kept as
        ``data`` for the next family), else chunks read one at a time."""
        from .results import load_if_small, run_chunks

        if self._data is None:
            self._data = load_if_small(self.store, self.run_id)
        return run_chunks(self.store, self.run_id, self._data)

    @property
    def data(self) -> RunData:
        """The run's items and generations, read from the store once."""
        if self._data is None:
            from .results import load_run_data

            self._data = load_run_data(self.store, self.run_id)
        return self._data


@dataclass
class FamilyResult:
    """What a family's ``score`` returns. Its scores and its artefact (``<family>.json``) are already
    in the store, the single source of truth; ``tables`` is that artefact's content (the family's
    section of ``summary.json``) and ``warnings`` its notes."""

    tables: dict
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_tables(cls, tables: dict) -> FamilyResult:
        """Wrap an artefact, taking its notes from its ``warnings`` key (top level or per model)."""
        notes = list(tables.get("warnings") or ())
        for value in tables.values():
            if isinstance(value, dict):
                notes += value.get("warnings") or ()
        return cls(tables, tuple(str(w) for w in notes))


@runtime_checkable
class Family(Protocol):
    """One family of methods, as the runner, the CLI, the report and the tests see it."""

    name: str
    settings: type[BaseModel]
    metrics: tuple[MetricSpec, ...]

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Score the run with ``ctx.settings``; write scores and the artefact to ``ctx.store``.
        None: nothing to score (e.g. no generations), nothing written."""
        ...

    def cli(self) -> typer.Typer | None:
        """The family's command-line sub-app (named: a command group; unnamed: top-level commands), or None."""
        ...

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the family's section of ``summary.json``: tables to ``out``, notes to ``err``."""
        ...
