"""Plan -> generate -> score -> report.

Generation
----------
For every model and item: ``K`` samples of the original question (sample 0..K-1) and one
completion of each of the first ``P`` paraphrases (K, P from the behavior settings; 1 and 0 when
only the attributes family needs answers to judge; none for the attack and information families,
which generate or train on their own). Each request gets its cache key (:func:`reasonscope.store.cache_key`); keys that
the store already holds are not sent again (failed ones neither, unless ``retry_failed``).
Requests go out ``concurrency`` at a time (batches of ``batch_size`` for local models), within the
model's ``rpm`` / ``tpm`` limits; each completion is committed as soon as it arrives, so Ctrl-C or
``kill -9`` loses at most the requests in flight, and running the same command again finishes the run
without repeating a model call. Requests left *pending* (rate limits or server errors outlasted the
retries) are not stored: the run is scored on what it has, reports them, and the next run sends them.

The run ends with an :class:`~reasonscope.outcome.Outcome` (exit code and reason, see
:mod:`reasonscope.outcome`), recorded in the run's notes.

Models that cannot run here (missing API key or SDK) are skipped before anything starts, with one
message each. Keys are read from the environment by the providers and never stored.

Run lifecycle
-------------
The runner holds the run directory's lock (:class:`reasonscope.rundir.RunDirLock`) from the first
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

from .atomic_files import write_text
from .config import Plan
from .models.base import LanguageModel, ProviderUnavailable
from .models.registry import usable_models
from .outcome import FailedLimit, Outcome, decide, tally
from .prompts import TEMPLATE_VERSION, build_messages
from .rundir import RunDirLock
from .store import STORE_FILENAME, Store
from .types import Item
from .up_to_date import finished_run_for, finished_run_from_sources, items_digest, source_digests
from .yaml_io import dump_yaml

if TYPE_CHECKING:
    from .calls import PlannedRequest
    from .data.loaders import BadRow
    from .results import RunData


@dataclass
class RunSummary:
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


def evidence_requests(model: LanguageModel, test: list[Item], ds: str, labels: list[str], seed: int
                      ) -> list[PlannedRequest]:
    """One label-and-rationale request per test item (variant ``evidence``), its answer constrained to
    ``{"label": one of labels, "rationale": text}``."""
    from .calls import planned_request
    from .evidence.family import PROMPT_VERSION
    from .evidence.family import build_messages as evidence_messages
    from .judge.schemas import label_rationale_schema

    schema = {"json_schema": label_rationale_schema(labels)}

    return [planned_request(model, ds, item, "evidence", 0, evidence_messages(item, labels), seed, PROMPT_VERSION,
                            {"task": "evidence", "target": item.target, "answer_type": "label", "choices": labels,
                             "text": item.input}, structured=schema)
            for item in test]


def item_parts(datasets: dict[str, list[Item]], size: int) -> Iterator[dict[str, list[Item]]]:
    """The datasets' items in parts of at most ``size`` items, in order (a part may span datasets); one
    empty part when there is no item."""
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


def request_count(datasets: dict[str, list[Item]], plan: Plan) -> int:
    """How many requests :func:`plan_requests` plans for one model, without building them."""
    behavior = plan.families.behavior
    if behavior is None and plan.families.attributes is None:
        return 0
    k, p = (behavior.samples, behavior.paraphrases) if behavior is not None else (1, 0)
    return sum(k + len(item.variants(p)) - 1 for items in datasets.values() for item in items)


def plan_requests(model: LanguageModel, datasets: dict[str, list[Item]], plan: Plan) -> list[PlannedRequest]:
    """K samples of each original question and one completion per paraphrase (behavior family)."""
    from .calls import planned_request

    cfg = model.config
    behavior = plan.families.behavior
    if behavior is None and plan.families.attributes is None:
        return []
    k, p = (behavior.samples, behavior.paraphrases) if behavior is not None else (1, 0)
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
    ev_sets: dict[str, list[Item]]
    ev_labels: list[str]
    ev_imported: tuple[Path, list[tuple]] | None
    info_sets: dict[str, list[Item]]
    models: list[LanguageModel]
    skipped: dict[str, str]
    sources: dict[str, str] | None = None  # each dataset's source digest, the same before and after reading; else None

    def item_sets(self) -> dict[str, list[Item]]:
        """Every loaded dataset by name: the plan's, the evidence family's and the information family's
        (a name they share names the same dataset: :class:`reasonscope.config.Plan`)."""
        return {**self.datasets, **self.ev_sets, **self.info_sets}

    def put_items(self, store: Store) -> None:
        for name, items in self.item_sets().items():
            store.put_items(name, items)

    def release_items(self) -> None:
        """Drop the loaded items once they are in the store and every request is planned: scoring and
        the report read them back from the store (a large run chunk by chunk), so the run's peak
        memory, reached while scoring with the models loaded, does not hold every item."""
        self.datasets, self.ev_sets, self.info_sets = {}, {}, {}


def write_config(run_dir: Path, plan: Any) -> Path:
    """``RUN_DIR/config.yaml``: the resolved plan, YAML 1.2, read back by ``load_plan`` as the same values."""
    return write_text(Path(run_dir) / "config.yaml", dump_yaml(plan.model_dump(mode="json")))


def finish_run_with_outputs(store: Store, run_id: str, run_dir: Path, notes: dict[str, Any],
                            data: RunData | None = None) -> dict[str, Path]:
    """Write every output of a run that ended well, showing status ``finished``, then record that
    status in the store. A crash before the last write leaves the run ``running`` (then
    ``interrupted``), never ``finished`` without its outputs."""
    from .report.build import write_report  # the report's modules (numpy, jinja2, ...) load only to write

    finished = time.time()
    run = {**store.run(run_id), "status": "finished", "finished": finished, "notes": notes}
    if data is not None:
        data.run = run
    paths = write_report(store, run_id, run_dir, data, run=run)
    store.finish_run(run_id, "finished", notes=notes, finished=finished)
    return paths


class Runner:
    """Runs a plan. ``wait_lock``: seconds to wait when another process holds the run directory
    (0: stop at once with :class:`reasonscope.rundir.RunDirLocked`; ``float('inf')``: wait until it ends)."""

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
        from .data.loaders import load_dataset  # not needed by a run found up to date before reading

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

    def load_evidence(self) -> tuple[dict[str, list[Item]], list[str], tuple[Path, list[tuple]] | None]:
        """Train and test items of the evidence family, its label set, and imported predictions
        (the resolved file and its rows), if any."""
        ev = self.plan.families.evidence
        if ev is None:
            return {}, [], None
        from .data.files import resolve_path
        from .data.loaders import load_dataset
        from .evidence.family import check_text_fields, class_labels, read_prediction_file

        seed = self.plan.experiment.seed
        train = load_dataset(ev.train, base_dir=self.base_dir, seed=seed).items
        test = load_dataset(ev.test, base_dir=self.base_dir, seed=seed).items
        check_text_fields(train + test, ev.text_fields)
        imported = None
        if ev.predictions:
            path = resolve_path(ev.predictions, self.base_dir)
            imported = (path, read_prediction_file(str(path)))
        return {ev.train.name: train, ev.test.name: test}, class_labels(train), imported

    def load_information(self) -> dict[str, list[Item]]:
        info = self.plan.families.information
        if info is None:
            return {}
        from .data.loaders import load_dataset

        seed = self.plan.experiment.seed
        return {cfg.name: load_dataset(cfg, base_dir=self.base_dir, seed=seed).items
                for cfg in (info.train, info.test) if cfg is not None}

    def run(self) -> RunSummary:
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
        They are taken again once the datasets are read and recorded only when both agree: a file that
        changed while it was read was read as neither."""
        plan = self.plan
        configs = [cfg for _, cfg in plan.dataset_places()]
        before = sources or source_digests(configs, self.base_dir)
        datasets, bad = self.load_datasets()
        ev_sets, ev_labels, ev_imported = self.load_evidence()
        info_sets = self.load_information()
        sources = before if before == source_digests(configs, self.base_dir) else None
        models, skipped = usable_models(plan.models)
        for why in skipped.values():
            self.console.print("[yellow]skipped: " + escape(why))
        needs_models = plan.families.behavior is not None or (plan.families.evidence is not None and not ev_imported) \
            or (plan.families.attributes is not None and bool(datasets))
        if plan.models and needs_models and not models:
            raise ValueError("no model of the plan can run here:\n  " + "\n  ".join(skipped.values()))
        return _Prepared(datasets, bad, ev_sets, ev_labels, ev_imported, info_sets, models, skipped, sources)

    def _run_locked(self, p: _Prepared) -> RunSummary:
        plan = self.plan
        run_dir = plan.run_dir
        ev_labels, ev_imported, models, skipped = p.ev_labels, p.ev_imported, p.models, p.skipped
        bad, bad_notes = p.bad, {k: [str(b) for b in v] for k, v in p.bad.items()}
        store = Store(run_dir)
        reused = self._reuse_finished(store, p)
        if reused is not None:
            store.close()
            return reused
        from concurrent.futures import ThreadPoolExecutor

        from .results import load_if_small
        from .scoring import prepare_scorers

        write_config(run_dir, plan)
        p.put_items(store)
        items = items_digest(p.item_sets())
        requests = self._request_total(p)  # recorded for _reuse_unread; the items are released before the end
        run_id = store.start_run(kind="run", config=plan.model_dump(mode="json"), seed=plan.experiment.seed,
                                 notes={"skipped_models": skipped, "bad_rows": bad_notes, "items": items,
                                        "sources": p.sources})
        summary = RunSummary(run_id=run_id, run_dir=run_dir, skipped_models=skipped, bad_rows=bad)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorers")
        scoring_models = prepare_scorers(plan.families, store)  # behind the score cache, nothing loaded yet
        self._warm = lambda: pool.submit(scoring_models.warm)  # loads while the providers answer
        try:
            if ev_imported:
                self._import_evidence(store, run_id, *ev_imported)
            evidence_test = None
            if plan.families.evidence is not None and not ev_imported:
                name = plan.families.evidence.test.name
                evidence_test = (name, p.ev_sets[name], ev_labels)
            phases = summary.phase_seconds
            start = time.perf_counter()
            self._generate(models, p.datasets, store, run_id, summary, evidence_test)
            phases["generation"] = time.perf_counter() - start
            evidence_test = None
            p.release_items()
            data = load_if_small(store, run_id)  # a larger run is read chunk by chunk (reasonscope.results)
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
                "phase_seconds": {k: round(v, 1) for k, v in phases.items()}}, data)
            phases["outputs"] = time.perf_counter() - start
        except BaseException:
            store.finish_run(run_id, "interrupted")
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            store.close()
        return summary

    def _reuse_finished(self, store: Store, p: _Prepared) -> RunSummary | None:
        """The finished run that already answers this plan, as this invocation's summary (no model call,
        no scoring, outputs left as they are); None when anything may have changed (:mod:`.up_to_date`)."""
        if not self._may_reuse() or p.ev_imported or p.skipped:
            return None
        requests = self._request_total(p)
        run = finished_run_for(store, self.plan, p.item_sets(), requests)
        return None if run is None else self._up_to_date(run, requests)

    def _reuse_unread(self) -> tuple[RunSummary | None, dict[str, str] | None]:
        """:meth:`_reuse_finished` before any dataset is read: the finished run's notes hold the same source
        digest of every dataset (:func:`reasonscope.up_to_date.source_digests`: a local file's bytes, or
        generated), so loading and checking the items again would give the same items. None when that
        cannot be told (a Hub dataset, a run recorded without the digests) or anything may have changed: the
        run then goes on as before. Also gives the source digests it took (None: not taken), for
        :meth:`_prepare`."""
        plan = self.plan
        families = plan.families
        if not self._may_reuse() or families.attack is not None or families.information is not None \
                or (families.evidence is not None and families.evidence.predictions):
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
        """Whether this invocation may report a finished run as it is: not ``--rescore`` (``reuse_finished``
        False), ``--retry-failed`` or ``--max-failed``, which ask for work or a judgement the run did not make."""
        return self.reuse_finished and not self.retry_failed and self.max_failed is None

    def _request_total(self, p: _Prepared) -> int:
        """How many requests the plan makes, over all its usable models (the evidence test set's included)."""
        evidence = self.plan.families.evidence
        per_model = request_count(p.datasets, self.plan) + (len(p.ev_sets[evidence.test.name]) if evidence else 0)
        return per_model * len(p.models)

    def _up_to_date(self, run: dict, requests: int) -> RunSummary:
        """The summary of a run found up to date (the run directory's lock held). ``config.yaml`` written
        after the run finished (by a later run, interrupted) is written again as this run's plan."""
        config = Path(self.plan.run_dir) / "config.yaml"
        if not config.is_file() or config.stat().st_mtime > (run["finished"] or 0):
            write_config(self.plan.run_dir, self.plan)
        self.console.print(f"up to date: finished run {run['run_id']} already holds every result of this plan "
                           f"(0 model calls, nothing scored again; --rescore to score and write the outputs again)")
        return RunSummary(run_id=run["run_id"], run_dir=self.plan.run_dir, cached=requests,
                          outcome=Outcome(code=0, message="", tallies={}))

    def _import_evidence(self, store: Store, run_id: str, path: Path, rows: list[tuple]) -> None:
        from .types import Completion

        ev = self.plan.families.evidence
        store.import_completions(run_id, str(path), [
            (line, model, ev.test.name, item_id, "evidence", 0, Completion(text=text, finish_reason="stop"), None)
            for line, model, item_id, text in rows])

    def _generate(self, models, datasets, store: Store, run_id: str, summary: RunSummary,
                  evidence_test: tuple | None = None) -> None:
        import asyncio

        from .calls import generate_pending, make_progress, pending_requests
        from .results import CHUNK_ITEMS

        progress = make_progress(self.console) if self.show_progress else None
        warm = getattr(self, "_warm", None)
        if progress:
            progress.start()
        try:
            for model in models:
                total = request_count(datasets, self.plan) + (len(evidence_test[1]) if evidence_test else 0)
                task = progress.add_task(model.name, total=total) if progress else None
                # a part of the items at a time: planned requests are held for one part only
                for i, part in enumerate(item_parts(datasets, CHUNK_ITEMS)):
                    planned = plan_requests(model, part, self.plan)
                    if evidence_test is not None and i == 0:
                        name, test, labels = evidence_test
                        planned += evidence_requests(model, test, name, labels, self.plan.experiment.seed)
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
        from .scoring import score_run

        plan = self.plan
        score_run(store, run_id, plan.families, plan.stats, seed=plan.experiment.seed, seconds=seconds,
                  temperatures={m.display_name: m.temperature for m in plan.models}, console=self.console,
                  executor=self.executor, data=data, models=scoring_models, base_dir=self.base_dir,
                  run_dir=plan.run_dir, plan_models=plan.models, datasets=[d.name for d in plan.datasets])
