"""The one shape every family has: what it generates, how it scores, how it prints.

A family (the built-in behavior, evidence, information, attributes, attack, or a plugin's from the
entry-point group ``reasonscope.families``) is registered once, in :mod:`reasonscope.registry`, as an
object satisfying :class:`Family`: its name, its settings model (``<family>/settings.py``; in a
``reasonscope score`` plan ``score_settings``), what a plan needs for it (:meth:`Family.check_plan`,
:meth:`Family.needs_plan_models`, :meth:`Family.own_datasets`), the numbers it reports
(:class:`~reasonscope.metric_specs.MetricSpec`),
what it needs before and during generation (:meth:`Family.answers`, :meth:`Family.prepare`,
:meth:`Family.may_reuse_finished_run`, :meth:`Family.scoring_models`, and for imported outputs
:meth:`Family.prepare_import`), one ``score`` entry point with
the same signature for all five, and its console printer. The runner and ``reasonscope score`` loop
over the enabled families through this protocol and name none of them; the command line mounts each
family's sub-app (``cli/<family>.py``); printers and contract tests read the specs; the report builder
asks each family's :attr:`Family.report` for its part of every output.
:class:`FamilyBase` gives every method its "needs nothing" default.

This module is a shared layer: it imports no family.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel

from .metric_specs import MetricSpec

if TYPE_CHECKING:
    from rich.console import Console

    from .execution.calls import PlannedRequest
    from .models.base import LanguageModel
    from .report.view import FamilyReport
    from .shared_settings import ModelConfig, StatsConfig
    from .storage.run_data import RunData
    from .storage.store import Store
    from .types import Item

__all__ = ["Family", "FamilyBase", "FamilyInputs", "FamilyResult", "GenerationContext", "MetricSpec",
           "ScoringContext", "ScoringModels"]


@dataclass
class ScoringModels:
    """Scoring models loaded ahead of scoring (each None with the reason when unavailable)."""

    nli: Any = None
    nli_reason: str | None = None
    sim: Any = None
    sim_reason: str | None = None
    preload_similarity: bool = True

    def import_libraries(self) -> None:
        """Import the libraries :meth:`warm` will load models with, in the calling thread.

        Each unloaded scorer's own (``libraries``: torch and transformers, or ONNX Runtime and tokenizers on
        ``runtime: onnx``), and scipy.stats beside torch (transformers' imports reach it). A run whose scorers
        are all on ONNX Runtime imports neither torch nor scipy.stats (0.5 s; its behaviour statistics do
        not need it).

        In the calling thread, and only when a model is to be loaded at all; a run whose scorers are all on
        ONNX Runtime never imports torch.

        Two threads importing torch (or scipy, which torch's and transformers' imports reach) at the same
        time can deadlock in Python's per-module import locks; Python breaks the deadlock by handing one
        thread the partially initialised module ("partially initialized module 'torch' has no
        attribute ..."). The runner calls this in the main thread before it starts :meth:`warm` in the
        background, so the background thread only finds these modules already imported.
        """
        import importlib

        unloaded = [s for s in self._preloaded() if not getattr(s, "loaded", False)]
        if not unloaded:
            return
        names = [n for s in unloaded for n in getattr(s, "libraries", ("torch", "transformers"))]
        if "torch" in names:
            names.insert(0, "scipy.stats")
        for name in dict.fromkeys(names):
            try:
                importlib.import_module(name)
            except ImportError:  # an optional backend that is not installed: warm reports it
                pass

    def warm(self) -> None:
        """Load the scoring models now; a failure is left for scoring to report.

        The runner calls this in a background thread once generation has something to send, so loading
        overlaps with waiting for the provider.
        """
        from .scorers.cache import ScorerUnavailable

        for scorer in self._preloaded():
            try:
                scorer.scorer()
            except ScorerUnavailable:
                pass

    def _preloaded(self) -> list[Any]:
        """The cached scorers :meth:`warm` loads ahead of scoring (those with a ``scorer()`` loader)."""
        return [s for s in (self.nli, self.sim if self.preload_similarity else None)
                if s is not None and hasattr(s, "scorer")]


@dataclass
class ScoringContext:
    """Everything a family's ``score`` may read.

    The store and run, the family's own settings, the plan-level settings (statistics, seed, models,
    datasets), the run's generations (loaded on first use), where output goes, and how per-item work runs.

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
        """The run's generations in chunks of whole items (:func:`reasonscope.storage.run_data.run_chunks`).

        The loaded ``data`` when there is one, the whole run as one chunk when it is small (then kept as
        ``data`` for the next family), else chunks read one at a time.
        """
        from .storage.run_data import load_if_small, run_chunks

        if self._data is None:
            self._data = load_if_small(self.store, self.run_id)
        return run_chunks(self.store, self.run_id, self._data)

    @property
    def data(self) -> RunData:
        """The run's items and generations, read from the store once."""
        if self._data is None:
            from .storage.run_data import load_run_data

            self._data = load_run_data(self.store, self.run_id)
        return self._data


@dataclass
class FamilyResult:
    """What a family's ``score`` returns.

    Its scores and its artefact (``<family>.json``) are already in the store, the single source of truth;
    ``tables`` is that artefact's content (the family's section of ``summary.json``) and ``warnings`` its
    notes.
    """

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


@dataclass
class GenerationContext:
    """What a family may read while it prepares a run.

    Where relative paths start, the plan's seed, and the plan's own datasets, already loaded (name -> items).
    """

    base_dir: Path | None = None
    seed: int = 0
    datasets: dict[str, list[Item]] = field(default_factory=dict)


@dataclass
class FamilyInputs:
    """What a family brings to a run before any model is called (:meth:`Family.prepare`).

    ``items``: datasets the family read itself (name -> items), stored with the run's items.
    ``needs_models``: whether the family needs a model of the plan that can run here.
    ``requests_per_model``: how many requests :meth:`requests` plans for each model.
    ``imported``: outputs to store instead of generating them: the file they were read from and the rows
    of :meth:`reasonscope.storage.store.Store.import_completions`.
    ``make_requests``: ``(model, seed) -> requests`` of the family's own (None: it asks nothing).
    """

    items: dict[str, list[Item]] = field(default_factory=dict)
    needs_models: bool = False
    requests_per_model: int = 0
    imported: tuple[Path, list[tuple]] | None = None
    make_requests: Callable[[LanguageModel, int], list[PlannedRequest]] | None = None

    def requests(self, model: LanguageModel, seed: int) -> list[PlannedRequest]:
        """The family's own requests to ``model`` (sent with the first part of the plan's items)."""
        return [] if self.make_requests is None else self.make_requests(model, seed)

    def release(self) -> None:
        """Drop the loaded items once they are stored and every request is planned."""
        self.items = {}
        self.make_requests = None


@runtime_checkable
class Family(Protocol):
    """One family of methods, as the runner, the command line, the report and the tests see it."""

    name: str
    settings: type[BaseModel]
    metrics: tuple[MetricSpec, ...]
    score_settings: type[BaseModel] | None
    """The settings model in a ``reasonscope score`` plan; None: the family cannot score imported outputs."""
    rank: int
    """A plugin family's place after the built-in five in every order (lower first; ties by name)."""
    commands: Any
    """A ``typer.Typer`` the command line mounts (named: a command group; unnamed: top-level commands), or None.

    The built-in families' sub-apps live in ``reasonscope/cli/<name>.py`` instead (a family never imports the
    command line); a plugin family brings its own here.
    """
    report: FamilyReport
    """The family's presentation (:class:`reasonscope.report.view.FamilyReport`): its section of
    ``summary.json`` and its typed model, its tables, plots, summary card and section of report.html. The
    report builder loops over the families it is given and asks each one's ``report``; it names none.
    """

    def check_plan(self, settings: Any, plan: Any) -> None:
        """Raise ``ValueError`` (its message for the user) when ``plan`` cannot run the family as set.

        Called while the plan validates, before any model is called (e.g. "needs `datasets`").
        """
        ...

    def needs_plan_models(self, settings: Any, plan: Any) -> bool:
        """Whether ``plan`` must list at least one model for the family (it asks the models something)."""
        ...

    def own_datasets(self, settings: Any) -> list[tuple[str, Any]]:
        """The datasets the family reads itself: ``(key, DatasetConfig)``, e.g. ``("train", ...)``.

        The plan checks that a name used here and in its ``datasets`` means the same dataset.
        """
        ...

    def answers(self, settings: Any) -> tuple[int, int] | None:
        """``(K, P)``: the samples and paraphrases of each plan item's question the family needs answered.

        Each paraphrase gets one completion. None when the family needs no answer to the plan's items.
        """
        ...

    def prepare(self, settings: Any, ctx: GenerationContext) -> FamilyInputs:
        """Read what the family needs besides the plan's datasets and say what it asks the models.

        Its own data sets and imported outputs are read here; every error here comes before any model is
        called.
        """
        ...

    def prepare_import(self, settings: Any, ctx: GenerationContext, source: str) -> tuple[Any, dict[str, list[Item]]]:
        """For ``reasonscope score``: the settings and own data sets to score imported ``source`` outputs.

        The imported outputs' items are ``ctx.datasets``; the data sets returned are those the family reads
        itself to score them.
        """
        ...

    def may_reuse_finished_run(self, settings: Any) -> bool:
        """Whether a finished run of the same plan may be reported as it is (:mod:`reasonscope.pipeline.up_to_date`).

        False when the family generates or trains in a pass of its own, or imports outputs.
        """
        ...

    def scoring_models(self, settings: Any, store: Store | None) -> ScoringModels | None:
        """The scoring models the family wants loaded while generation runs (not loaded yet), or None."""
        ...

    def score(self, ctx: ScoringContext) -> FamilyResult | None:
        """Score the run with ``ctx.settings``; write scores and the artefact to ``ctx.store``.

        None: nothing to score (e.g. no generations), nothing written.
        """
        ...

    def print_summary(self, tables: dict, out: Console, err: Console) -> None:
        """Print the family's section of ``summary.json``: tables to ``out``, notes to ``err``."""
        ...


class FamilyBase:
    """The defaults of :class:`Family`.

    A family that needs no answer, reads nothing of its own, asks the models nothing, allows an up-to-date
    finished run to be reported as it is, and preloads no model. A family overrides what it needs (and always
    ``score`` and ``print_summary``).
    """

    name: str
    settings: type[BaseModel]
    metrics: tuple[MetricSpec, ...]
    score_settings: type[BaseModel] | None = None
    rank: int = 0
    commands: Any = None

    @property
    def report(self) -> FamilyReport:
        """The family's report part; here the generic one (its artefact as its ``summary.json`` section).

        A family overrides it with its own (``<family>/report_view.py``), imported when first used.
        """
        from .report.view import FamilyReport

        cached = self.__dict__.get("_generic_report")
        if cached is None:
            cached = self.__dict__["_generic_report"] = FamilyReport(self.name, metrics=self.metrics)
        return cached

    def check_plan(self, settings: Any, plan: Any) -> None:
        """Raise ``ValueError`` when the plan cannot run the family; here every plan can."""
        return None

    def needs_plan_models(self, settings: Any, plan: Any) -> bool:
        """Whether the plan must list a model for the family; here False (it asks no model)."""
        return False

    def own_datasets(self, settings: Any) -> list[tuple[str, Any]]:
        """The datasets the family reads itself, ``(key, DatasetConfig)``; here none."""
        return []

    def answers(self, settings: Any) -> tuple[int, int] | None:
        """``(K, P)`` samples and paraphrases the family needs answered; here None (no answer needed)."""
        return None

    def prepare(self, settings: Any, ctx: GenerationContext) -> FamilyInputs:
        """What the family reads and asks besides the plan's datasets; here nothing (no inputs)."""
        return FamilyInputs()

    def prepare_import(self, settings: Any, ctx: GenerationContext, source: str) -> tuple[Any, dict[str, list[Item]]]:
        """Settings and own data sets to score imported ``source`` outputs; here ``settings``, no data set."""
        return settings, {}

    def may_reuse_finished_run(self, settings: Any) -> bool:
        """Whether an up-to-date finished run may be reported as it is; here always True."""
        return True

    def scoring_models(self, settings: Any, store: Store | None) -> ScoringModels | None:
        """The scoring models the family preloads during generation; here None (none)."""
        return None
