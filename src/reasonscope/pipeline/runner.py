"""Plan -> generate -> score -> report.

Generation
----------
For every model and item: ``K`` samples of the original question (sample 0..K-1) and one
completion of each of the first ``P`` paraphrases, the largest K and P any enabled family asks for
(:meth:`reasonscope.family.Family.answers`; none when no family needs answers), plus the requests
each family plans itself (:meth:`reasonscope.family.Family.prepare`, sent with the first part of the
items). The runner names no family: it reaches them through the registry (:mod:`reasonscope.registry`).
Each request gets its cache key (:func:`reasonscope.storage.store.cache_key`); keys that
the store already holds are not sent again (failed ones neither, unless ``retry_failed``).
Requests go out ``concurrency`` at a time (batches of ``batch_size`` for local models), within the
model's ``rpm`` / ``tpm`` limits; each completion is committed as soon as it arrives, so Ctrl-C or
``kill -9`` loses at most the requests in flight, and running the same command again finishes the run
without repeating a model call. Requests left *pending* (rate limits or server errors outlasted the
retries) are not stored: the run is scored on what it has, reports them, and the next run sends them.

The run ends with an :class:`~reasonscope.pipeline.run_outcome.Outcome` (exit code and reason, see
:mod:`reasonscope.pipeline.run_outcome`), recorded in the run's notes.

Models that cannot run here (missing API key or SDK) are skipped before anything starts, with one
message each. Keys are read from the environment by the providers and never stored.

Run lifecycle
-------------
The runner holds the run directory's lock (:class:`reasonscope.storage.rundir.RunDirLock`) from the first
write to the last, so a second process on the same directory stops with a message naming this one
(or waits, ``wait_lock`` seconds) instead of paying for the same calls again. The run is recorded as
``running``; when scoring ends, every output is written (each file atomically) with the status
``finished`` shown in it, and only then is ``finished`` recorded in the store
(:func:`finish_run_with_outputs`). An exception records ``interrupted``; a process killed outright
leaves ``running``, which the next open of the store turns into ``interrupted``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from ..family import FamilyInputs, GenerationContext
from ..models.base import LanguageModel, ProviderUnavailable
from ..models.registry import usable_models
from ..plan import Plan
from ..prompts import TEMPLATE_VERSION, build_messages
from ..registry import all_families, enabled_families
from ..storage.rundir import RunDirLock
from ..storage.store import STORE_FILENAME, Store
from ..types import Item
from .run_outcome import FailedLimit, Outcome, decide, tally
from .up_to_date import (
    finished_run_for,
    finished_run_from_sources,
    items_digest,
    source_digests,
    up_to_date_message,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..data.loaders import BadRow
    from ..execution.calls import PlannedRequest
    from ..report.plot_worker import PlotWorker
    from ..storage.run_data import RunData


@dataclass
class RunSummary:
    """What one ``reasonscope run`` did: run id and directory, requests sent, cached, failed and pending.

    Also the models skipped (with why), the bad rows of each dataset and the wall time; read by the CLI to
    print the run's summary and decide its exit code.
    """

    run_id: str
    run_dir: Path
    calls_made: int = 0
    cached: int = 0
    failed: int = 0  # requests sent in this run that failed for good
    pending: int = 0  # requests sent in this run left pending (not stored; sent again next run)
    skipped_models: dict[str, str] = field(default_factory=dict)
    bad_rows: dict[str, list[BadRow]] = field(default_factory=dict)
    wall_s: float = 0.0
    pending_errors: dict[str, str] = field(default_factory=dict)  # model -> why its first request stayed pending
    outcome: Outcome | None = None  # exit code, reason and per-model tallies over the whole run (stored requests too)
    # wall seconds by phase: generation, each family's scoring, outputs; the run's notes.phase_seconds holds all
    # but outputs (timed after summary.json is written)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    # the plan's request count over its usable models (the run's notes.requests); None for a summary of another kind
    requests: int | None = None


def item_parts(datasets: dict[str, list[Item]], size: int) -> Iterator[dict[str, list[Item]]]:
    """The datasets' items in parts of at most ``size`` items, in order (a part may span datasets).

    One empty part when there is no item.
    """
    part: dict[str, list[Item]] = {}
    n = 0
    yielded = False
    for ds, items in datasets.items():
        for item in items:
            part.setdefault(ds, []).append(item)
            n += 1
            if n == size:
                yield part
                yielded = True
                part, n = {}, 0
    if part or not yielded:
        yield part


def answer_needs(plan: Plan) -> tuple[int, int] | None:
    """``(K, P)`` the plan's items are answered with.

    The largest samples and paraphrases any enabled family asks for
    (:meth:`reasonscope.family.Family.answers`); None when no family needs answers.
    """
    needs = [n for family, settings in enabled_families(plan.families) if (n := family.answers(settings)) is not None]
    if not needs:
        return None
    return max(k for k, _ in needs), max(p for _, p in needs)


def request_count(datasets: dict[str, list[Item]], plan: Plan) -> int:
    """How many requests :func:`plan_requests` plans for one model, without building them."""
    needs = answer_needs(plan)
    if needs is None:
        return 0
    k, p = needs
    return sum(k + len(item.variants(p)) - 1 for items in datasets.values() for item in items)


def plan_requests(model: LanguageModel, datasets: dict[str, list[Item]], plan: Plan) -> list[PlannedRequest]:
    """K samples of each original question and one completion per paraphrase (:func:`answer_needs`)."""
    from ..execution.calls import planned_request

    cfg = model.config
    needs = answer_needs(plan)
    if needs is None:
        return []
    k, p = needs
    out: list[PlannedRequest] = []
    for ds, items in datasets.items():
        for item in items:
            for variant in item.variants(p):
                for sample in range(k if variant == "original" else 1):
                    messages = build_messages(item, item.variant_text(variant), cfg.system_prompt)
                    out.append(planned_request(model, ds, item, variant, sample, messages, plan.experiment.seed,
                                               TEMPLATE_VERSION, {"target": item.target, "answer_type": item.answer_type,
                                                                  "choices": item.choices}))
    return out


@dataclass
class _Prepared:
    """What :meth:`Runner.run` reads and checks before it takes the run directory."""

    datasets: dict[str, list[Item]]
    bad: dict[str, list[BadRow]]
    inputs: list[FamilyInputs]  # what each enabled family brings (canonical order)
    models: list[LanguageModel]
    skipped: dict[str, str]
    sources: dict[str, str] | None = None  # each dataset's source digest, the same before and after reading; else None

    def item_sets(self) -> dict[str, list[Item]]:
        """Every loaded dataset by name.

        The plan's and those the families read themselves (a name they share names the same dataset:
        :class:`reasonscope.plan.Plan`).
        """
        out = dict(self.datasets)
        for inputs in self.inputs:
            out.update(inputs.items)
        return out

    @property
    def imported(self) -> bool:
        """Whether a family imports outputs instead of generating them."""
        return any(inputs.imported is not None for inputs in self.inputs)

    def family_requests(self) -> int:
        """How many requests of their own the families plan for each model."""
        return sum(inputs.requests_per_model for inputs in self.inputs)

    def put_items(self, store: Store) -> None:
        for name, items in self.item_sets().items():
            store.put_items(name, items)

    def release_items(self) -> None:
        """Drop the loaded items once they are in the store and every request is planned.

        Scoring and the report read them back from the store (a large run chunk by chunk), so the run's peak
        memory, reached while scoring with the models loaded, does not hold every item.
        """
        self.datasets = {}
        for inputs in self.inputs:
            inputs.release()


def finish_run_with_outputs(store: Store, run_id: str, run_dir: Path, notes: dict[str, Any],
                            data: RunData | None = None, plotter: PlotWorker | None = None,
                            warn: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Write every output of a run that ended well, showing status ``finished``, then record that status.

    A crash before the last write leaves the run ``running`` (then ``interrupted``), never ``finished``
    without its outputs. ``plotter``, ``warn``: the run's plot worker (:func:`start_plot_worker`) and where its
    failure is told (:func:`reasonscope.report.build.write_report`).
    """
    from ..report.build import write_report  # the report's modules (numpy, jinja2, ...) load only to write

    finished = time.time()
    run = {**store.run(run_id), "status": "finished", "finished": finished, "notes": notes}
    if data is not None:
        data.run = run
    paths = write_report(store, run_id, run_dir, data, families=all_families("summary"), run=run, plotter=plotter,
                         warn=warn)
    store.finish_run(run_id, "finished", notes=notes, finished=finished)
    return paths


def start_plot_worker(plan: Plan, console: Console) -> PlotWorker | None:
    """A :class:`~reasonscope.report.plot_worker.PlotWorker` for the plan's families that draw plots; else None.

    Started before the run generates, so that it imports matplotlib on the core the run leaves idle. None (the
    plots then drawn in this process) when no enabled family draws one, when this process has imported
    matplotlib already (a notebook, a test session: nothing left to gain), or when the worker cannot be started
    (said on ``console``).
    """
    import sys

    from ..report.view import FamilyReport

    if "matplotlib.figure" in sys.modules:
        return None

    reports = [family.report for family, _ in enabled_families(plan.families, canonical=True)
               if type(family.report).plots is not FamilyReport.plots]
    if not reports:
        return None
    from ..report.plot_worker import PlotWorker

    try:
        return PlotWorker(reports)
    except OSError as err:
        console.print("[yellow]" + escape(f"the plot worker could not be started ({err}); the plots are drawn "
                                          "in this process"))
        return None


class Runner:
    """Runs a plan.

    ``wait_lock``: seconds to wait when another process holds the run directory (0: stop at once with
    :class:`reasonscope.storage.rundir.RunDirLocked`; ``float('inf')``: wait until it ends).
    """

    def __init__(self, plan: Plan, *, console: Console | None = None, retry_failed: bool = False,
                 base_dir: Path | None = None, executor: str = "local", show_progress: bool = True,
                 max_failed: FailedLimit | None = None, wait_lock: float = 0.0, reuse_finished: bool = True):
        self.plan = plan
        self.reuse_finished = reuse_finished  # report a finished run that already answers the plan (up_to_date)
        self.max_failed = max_failed
        self.console = console or Console(stderr=True)
        self.retry_failed = retry_failed
        self.base_dir = base_dir
        self.executor = executor
        self.show_progress = show_progress
        self.wait_lock = wait_lock

    def load_datasets(self) -> tuple[dict[str, list[Item]], dict[str, list[BadRow]]]:
        """Load the plan's datasets.

        Returns:
            ``(items by dataset name, bad rows by dataset name)``; a dataset without bad rows is not in the
            second.
        """
        from ..data.loaders import load_dataset  # not needed by a run found up to date before reading

        datasets, bad = {}, {}
        for cfg in self.plan.datasets:
            res = load_dataset(cfg, base_dir=self.base_dir, seed=self.plan.experiment.seed)
            datasets[cfg.name] = res.items
            if res.bad_rows:
                bad[cfg.name] = res.bad_rows
                self.console.print(f"[yellow]{cfg.name}: skipped {len(res.bad_rows)} bad rows "
                                   f"(lines {', '.join(str(b.line) for b in res.bad_rows[:10])}"
                                   f"{'...' if len(res.bad_rows) > 10 else ''})")
        return datasets, bad

    def prepare_families(self, datasets: dict[str, list[Item]]) -> list[FamilyInputs]:
        """What each enabled family brings (:meth:`reasonscope.family.Family.prepare`), in canonical order.

        The data sets it reads itself, the outputs it imports, the requests it plans.
        """
        ctx = GenerationContext(base_dir=self.base_dir, seed=self.plan.experiment.seed, datasets=datasets)
        return [family.prepare(settings, ctx) for family, settings in enabled_families(self.plan.families, canonical=True)]

    def run(self) -> RunSummary:
        """Run the plan: report an up-to-date finished run as it is, else generate, score and report.

        Holds the run directory's lock while it runs.

        Returns:
            The run's summary.
        """
        start = time.perf_counter()
        reused, sources = self._reuse_unread()
        if reused is not None:
            reused.wall_s = time.perf_counter() - start
            return reused
        p = self._prepare(sources)
        try:
            with RunDirLock(self.plan.run_dir, wait=self.wait_lock):
                summary = self._run_locked(p)
        finally:
            for m in p.models:
                m.close()
        summary.wall_s = time.perf_counter() - start
        return summary

    def _prepare(self, sources: dict[str, str] | None = None) -> _Prepared:
        """Read the data and make the models; every error here comes before any model is called.

        ``sources``: the datasets' source digests taken before (by :meth:`_reuse_unread`), else taken here.
        They are taken again once the datasets are read and recorded only when both agree: a file that changed
        while it was read was read as neither.
        """
        plan = self.plan
        configs = [cfg for _, cfg in plan.dataset_places()]
        before = sources or source_digests(configs, self.base_dir)
        datasets, bad = self.load_datasets()
        inputs = self.prepare_families(datasets)
        sources = before if before == source_digests(configs, self.base_dir) else None
        models, skipped = usable_models(plan.models)
        for why in skipped.values():
            self.console.print("[yellow]skipped: " + escape(why))
        needs_models = any(i.needs_models for i in inputs)
        if plan.models and needs_models and not models:
            raise ValueError("no model of the plan can run here:\n  " + "\n  ".join(skipped.values()))
        return _Prepared(datasets, bad, inputs, models, skipped, sources)

    def _run_locked(self, p: _Prepared) -> RunSummary:
        plan = self.plan
        run_dir = plan.run_dir
        models, skipped = p.models, p.skipped
        bad, bad_notes = p.bad, {k: [str(b) for b in v] for k, v in p.bad.items()}
        store = Store(run_dir)
        reused = self._reuse_finished(store, p)
        if reused is not None:
            store.close()
            return reused
        from concurrent.futures import ThreadPoolExecutor

        from ..storage.run_data import load_if_small
        from .family_scoring import prepare_scorers

        p.put_items(store)  # config.yaml is written with the outputs (reasonscope.report.build), not here
        items = items_digest(p.item_sets())
        requests = self._request_total(p)  # recorded for _reuse_unread; the items are released before the end
        run_id = store.start_run(kind="run", config=plan.model_dump(mode="json"), seed=plan.experiment.seed,
                                 notes={"skipped_models": skipped, "bad_rows": bad_notes, "items": items,
                                        "sources": p.sources})
        summary = RunSummary(run_id=run_id, run_dir=run_dir, skipped_models=skipped, bad_rows=bad, requests=requests)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorers")
        scoring_models = prepare_scorers(plan.families, store)  # behind the score cache, nothing loaded yet

        def warm() -> None:  # loads the scoring models while the providers answer
            scoring_models.import_libraries()  # in this thread first: two threads never import torch at once
            pool.submit(scoring_models.warm)

        self._warm = warm
        plotter = start_plot_worker(plan, self.console)  # imports matplotlib in its own process meanwhile
        try:
            for inputs in p.inputs:
                if inputs.imported is not None:
                    path, rows = inputs.imported
                    store.import_completions(run_id, str(path), rows)
            phases = summary.phase_seconds
            start = time.perf_counter()
            self._generate(models, p.datasets, store, run_id, summary, p.inputs)
            phases["generation"] = time.perf_counter() - start
            p.release_items()
            pool.shutdown(wait=True)  # the models are loaded before scoring imports anything beside them
            data = load_if_small(store, run_id)  # a larger run is read chunk by chunk (reasonscope.storage.run_data)
            self._score(store, run_id, data, scoring_models, phases)
            summary.outcome = decide(tally(store, run_id, summary.pending_errors), self.max_failed,
                                     summary.skipped_models)
            start = time.perf_counter()
            finish_run_with_outputs(store, run_id, run_dir, {
                "skipped_models": skipped, "bad_rows": bad_notes, "calls_made": summary.calls_made,
                "cached": summary.cached, "failed": summary.failed, "pending": summary.pending,
                "outcome": summary.outcome.as_dict(), "items": items, "sources": p.sources,
                "requests": requests,
                "generations_written": store.run_link_state(run_id)[2],
                "phase_seconds": {k: round(v, 1) for k, v in phases.items()}}, data, plotter,
                lambda text: self.console.print("[yellow]" + escape(text)))
            phases["outputs"] = time.perf_counter() - start
        except BaseException:
            store.finish_run(run_id, "interrupted")
            raise
        finally:
            if plotter is not None:
                plotter.close()
            pool.shutdown(wait=True, cancel_futures=True)
            store.close()
        return summary

    def _reuse_finished(self, store: Store, p: _Prepared) -> RunSummary | None:
        """The finished run that already answers this plan, as this invocation's summary; else None.

        No model call, no scoring, outputs left as they are. None when anything may have changed
        (:mod:`.up_to_date`).
        """
        if not self._may_reuse() or not self._families_allow_reuse() or p.skipped:
            return None
        requests = self._request_total(p)
        run = finished_run_for(store, self.plan, p.item_sets(), requests)
        return None if run is None else self._up_to_date(run, requests)

    def _reuse_unread(self) -> tuple[RunSummary | None, dict[str, str] | None]:
        """:meth:`_reuse_finished` before any dataset is read.

        The finished run's notes hold the same source digest of every dataset
        (:func:`reasonscope.pipeline.up_to_date.source_digests`: a local file's bytes, or generated), so loading and
        checking the items again would give the same items. None when that cannot be told (a Hub dataset, a
        run recorded without the digests) or anything may have changed: the run then goes on as before. Also
        gives the source digests it took (None: not taken), for :meth:`_prepare`.
        """
        plan = self.plan
        if not self._may_reuse() or not self._families_allow_reuse():
            return None, None
        sources = source_digests([cfg for _, cfg in plan.dataset_places()], self.base_dir)
        if sources is None or not (Path(plan.run_dir) / STORE_FILENAME).is_file():
            return None, sources
        models, skipped = usable_models(plan.models)  # a model that cannot run here: as in _reuse_finished
        try:
            if skipped:
                return None, sources
            with RunDirLock(plan.run_dir, wait=self.wait_lock):
                store = Store(plan.run_dir)
                try:
                    run = finished_run_from_sources(store, plan, sources)
                finally:
                    store.close()
                if run is None:
                    return None, sources
                for name, rows in (run["notes"].get("bad_rows") or {}).items():  # as loading them says
                    self.console.print("[yellow]" + escape(f"{name}: skipped {len(rows)} bad rows when the run was "
                                                           f"made ({'; '.join(rows[:3])}{'; ...' if len(rows) > 3 else ''})"))
                return self._up_to_date(run, run["notes"]["requests"]), sources
        finally:
            for m in models:
                m.close()

    def _may_reuse(self) -> bool:
        """Whether this invocation may report a finished run as it is.

        Not ``--rescore`` (``reuse_finished`` False), ``--retry-failed`` or ``--max-failed``, which ask for
        work or a judgement the run did not make.
        """
        return self.reuse_finished and not self.retry_failed and self.max_failed is None

    def _families_allow_reuse(self) -> bool:
        """Whether every enabled family allows a finished run to be reported as it is.

        See :meth:`reasonscope.family.Family.may_reuse_finished_run`.
        """
        return all(family.may_reuse_finished_run(settings) for family, settings in enabled_families(self.plan.families))

    def _request_total(self, p: _Prepared) -> int:
        """How many requests the plan makes, over all its usable models (the families' own included)."""
        return (request_count(p.datasets, self.plan) + p.family_requests()) * len(p.models)

    def _up_to_date(self, run: dict, requests: int) -> RunSummary:
        """The summary of a run found up to date (the run directory's lock held).

        ``config.yaml`` that does not hold this run's plan (a later run, interrupted, wrote its own) is written
        again as this run's plan; one that holds it is left as it is (its bytes compared, not its time: the
        run's report writes it after the run is marked finished).
        """
        from ..report.config_file import config_text, write_config

        config = Path(self.plan.run_dir) / "config.yaml"
        if not config.is_file() or config.read_text(encoding="utf-8") != config_text(run["config"]):
            write_config(self.plan.run_dir, run["config"])
        self.console.print(up_to_date_message(run["run_id"]))
        return RunSummary(run_id=run["run_id"], run_dir=self.plan.run_dir, cached=requests,
                          outcome=Outcome(code=0, message="", tallies={}), requests=requests)

    def _generate(self, models, datasets, store: Store, run_id: str, summary: RunSummary,
                  inputs: list[FamilyInputs] = ()) -> None:
        import asyncio

        from ..execution.calls import generate_pending, make_progress, pending_requests
        from ..storage.run_data import CHUNK_ITEMS

        progress = make_progress(self.console) if self.show_progress else None
        warm = getattr(self, "_warm", None)
        if progress:
            progress.start()
        try:
            for model in models:
                total = request_count(datasets, self.plan) + sum(i.requests_per_model for i in inputs)
                task = progress.add_task(model.name, total=total) if progress else None
                # a part of the items at a time: planned requests are held for one part only
                for i, part in enumerate(item_parts(datasets, CHUNK_ITEMS)):
                    planned = plan_requests(model, part, self.plan)
                    if i == 0:  # the families' own requests go with the first part
                        for family_inputs in inputs:
                            planned += family_inputs.requests(model, self.plan.experiment.seed)
                    store.link([(run_id, model.name, p.dataset, p.item.id, p.variant, p.sample, p.key,
                                 p.request.max_tokens) for p in planned])
                    _, pending = pending_requests(planned, store, retry_failed=self.retry_failed)
                    summary.cached += len(planned) - len(pending)
                    if progress:
                        progress.advance(task, len(planned) - len(pending))
                    if not pending:
                        continue
                    if warm is not None:
                        warm()
                        warm = None
                    try:
                        sent = asyncio.run(generate_pending(model, pending, store, progress, task))
                    except ProviderUnavailable as err:
                        summary.skipped_models[model.name] = str(err)
                        self.console.print("[yellow]skipped " + escape(f"{model.name}: {err}"))
                        break
                    summary.calls_made += sent.calls
                    summary.failed += sent.failed
                    summary.pending += sent.pending
                    if sent.pending_error:
                        summary.pending_errors.setdefault(model.name, sent.pending_error)
        finally:
            if progress:
                progress.stop()

    def _score(self, store: Store, run_id: str, data, scoring_models, seconds: dict[str, float] | None = None) -> None:
        from .family_scoring import score_run

        plan = self.plan
        score_run(store, run_id, plan.families, plan.stats, seed=plan.experiment.seed, seconds=seconds,
                  temperatures={m.display_name: m.temperature for m in plan.models}, console=self.console,
                  executor=self.executor, data=data, models=scoring_models, base_dir=self.base_dir,
                  run_dir=plan.run_dir, plan_models=plan.models, datasets=[d.name for d in plan.datasets])
