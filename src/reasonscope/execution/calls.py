"""Model calls through the store.

Plan a request with its cache key, send only what the store lacks, commit each completion the moment it
arrives.

A *pending* completion (rate limits, server errors or timeouts outlasted the retries; a refused key or
endpoint: see :mod:`reasonscope.models.base`) is never stored: the store holds nothing for its key, so
the next run sends it again. Answers and failed generations are stored.

Shared by the runner (generation), and by every family that calls a model itself (attribute
judges, attack regeneration, transfer). A family never talks to a provider directly: it builds
:class:`PlannedRequest` objects with :func:`planned_request` and gets the completions back from
:func:`complete_cached`, so its calls are cached, resumable and traceable (the key of every
completion is recorded next to the score that used it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..models.base import GenerationRequest, LanguageModel
from ..models.registry import split_spec
from ..models.structured import validate as validate_structured
from ..storage.store import Store, cache_key
from ..types import Completion, Item


@dataclass
class PlannedRequest:
    """One request a run plans to send: its cache key, dataset, item, variant, sample and the request itself.

    ``item`` is None for a request that belongs to no dataset item. Built by :func:`planned_request`.
    ``template`` is the version of the prompt template that built the messages: part of the key, and stored
    with the completion (the request's ``template``) so that a comparison of two runs can tell their prompts apart.
    """

    key: str
    dataset: str
    item: Item | None
    variant: str
    sample: int
    request: GenerationRequest
    template: str = ""


def planned_request(model: LanguageModel, ds: str, item: Item | None, variant: str, sample: int,
                    messages: list[dict[str, str]], seed: int, template: str, meta: dict[str, Any],
                    *, item_id: str | None = None, structured: dict[str, Any] | None = None) -> PlannedRequest:
    """A request of ``model`` with the model's generation settings and its cache key.

    ``structured`` constrains the answer's form (:mod:`reasonscope.models.structured`) and enters the key; it
    is dropped when the model's ``structured`` setting is false.
    """
    cfg = model.config
    structured = structured if cfg.structured else None
    provider, model_id = split_spec(cfg.spec)
    req = GenerationRequest(messages=messages, max_tokens=cfg.max_tokens, temperature=cfg.temperature, top_p=cfg.top_p,
                            seed=seed + sample, sample=sample,
                            item_id=item_id if item_id is not None else f"{ds}/{item.id if item else ''}",
                            variant=variant, meta=meta, structured=validate_structured(structured))
    key = cache_key(provider=provider, model_id=model_id, revision=cfg.revision, base_url=cfg.base_url,
                    gen_config=req.gen_config(), messages=messages, sample=sample, template_version=template,
                    model_options=cfg.options)
    return PlannedRequest(key, ds, item, variant, sample, req, template)


@dataclass
class Sent:
    """What one pass of :func:`generate_pending` did.

    Requests sent, of which failed for good and still pending (not stored), with the first pending request's
    error as an example of why.
    """

    calls: int = 0
    failed: int = 0
    pending: int = 0
    pending_error: str | None = None
    unstored: dict[str, Completion] = field(default_factory=dict)  # key -> the pending completion


async def generate_pending(model: LanguageModel, pending: list[PlannedRequest], store: Store,
                           progress: Progress | None = None, task_id: Any = None) -> Sent:
    """Send the requests the store lacks.

    Commit each answer or failed generation as it arrives (pending ones are not stored), those arriving in one
    turn of the event loop in one transaction (:class:`_TurnCommitter`).
    """
    sem = asyncio.Semaphore(model.concurrency)
    provider, model_id = split_spec(model.config.spec)
    sent = Sent()
    size = model.batch_size
    commit = _TurnCommitter(store, asyncio.get_running_loop())

    async def worker(chunk: list[PlannedRequest]) -> None:
        advanced = 0

        def on_done(n: int) -> None:  # requests finishing inside the batch move the bar
            nonlocal advanced
            advanced += n
            progress.advance(task_id, n)

        async with sem:
            completions = await model.generate([p.request for p in chunk],
                                               on_done=on_done if progress is not None else None)
        for planned, completion in zip(chunk, completions, strict=True):
            sent.calls += 1
            if completion.pending:
                sent.pending += 1
                sent.pending_error = sent.pending_error or completion.error
                sent.unstored[planned.key] = completion
                continue
            commit.add(planned.key, provider=provider, model_id=model_id,
                       request={"messages": planned.request.messages, **planned.request.gen_config(),
                                "sample": planned.sample, "base_url": model.config.base_url,
                                **({"template": planned.template} if planned.template else {}),
                                **({"constraint": completion.constraint} if completion.constraint else {}),
                                **({"runtime": model.config.runtime} if model.config.runtime == "llama-cpp" else {})},
                       completion=completion)
            sent.failed += completion.failed
        if progress is not None and advanced < len(chunk):
            progress.advance(task_id, len(chunk) - advanced)

    chunks = [pending[i:i + size] for i in range(0, len(pending), size)]
    try:
        await asyncio.gather(*(worker(c) for c in chunks))
    finally:
        try:
            commit.flush()
        finally:
            await model.aclose()
    return sent


class _TurnCommitter:
    """Store completions in one transaction per turn of the event loop.

    Every completion that arrives while the loop runs the ready callbacks of one turn is written by a flush
    scheduled for the end of that turn (``call_soon``), before the loop waits for anything again. Each
    completion is still committed as soon as it arrives (no timer, no batch size): a fast backend (many
    requests finishing together) costs one commit per turn instead of one per completion; a slow one, one per
    completion as before. :func:`generate_pending` flushes again on the way out, errors included.
    """

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop):
        self.store, self.loop = store, loop
        self.rows: list[tuple[str, dict[str, Any]]] = []
        self.error: BaseException | None = None

    def add(self, key: str, **fields: Any) -> None:
        if self.error is not None:  # a failed write stops the pass, as a failed put_completion always did;
            self.rows.append((key, fields))  # the answer is kept for the final flush (a full disk: Store.transaction)
            raise self.error
        if not self.rows:
            self.loop.call_soon(self._flush_turn)
        self.rows.append((key, fields))

    def _flush_turn(self) -> None:
        try:
            self.flush()
        except Exception as err:  # kept (rows included) and raised by the next add or the final flush
            self.error = err

    def flush(self) -> None:
        if self.rows:
            with self.store.transaction():
                for key, fields in self.rows:
                    self.store.put_completion(key, **fields)
            self.rows = []


PROGRESS_BAR_WIDTH = 24
"""Characters of a progress bar: with the counts and times it leaves a model name of about 30 characters
whole on an 80-column terminal (``mockllm/model`` and ``mockllm/other`` stay distinguishable)."""


def make_progress(console: Console, *, transient: bool = False) -> Progress:
    """The progress bars reasonscope shows.

    The task's description is never cut (a long one wraps), the bar is :data:`PROGRESS_BAR_WIDTH` wide.
    ``transient``: the bar disappears when done (scoring passes).
    """
    from rich.table import Column

    return Progress(TextColumn("[bold]{task.description}", table_column=Column(overflow="fold")),
                    BarColumn(bar_width=PROGRESS_BAR_WIDTH), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console,
                    transient=transient)


def pending_requests(planned: list[PlannedRequest], store: Store, *, retry_failed: bool = False
                     ) -> tuple[list[PlannedRequest], list[PlannedRequest]]:
    """(the requests deduplicated by key, those the store does not hold yet).

    Failed completions count as held unless ``retry_failed``.
    """
    unique = list({p.key: p for p in planned}.values())
    done = store.cached_keys([p.key for p in unique], include_failed=not retry_failed)
    return unique, [p for p in unique if p.key not in done]


def complete_cached(model: LanguageModel, planned: list[PlannedRequest], store: Store, *,
                    retry_failed: bool = False, console: Console | None = None,
                    label: str | None = None) -> dict[str, Completion]:
    """Completions of ``planned`` by key.

    From the store when it holds them, else from the model (committed one by one as they arrive, with a
    progress bar). Failed completions stay failed unless ``retry_failed``.
    """
    unique, pending = pending_requests(planned, store, retry_failed=retry_failed)
    sent = Sent()
    if pending:
        console = console or Console(stderr=True)
        progress = make_progress(console)
        with progress:
            task = progress.add_task(label or model.name, total=len(unique), completed=len(unique) - len(pending))
            sent = asyncio.run(generate_pending(model, pending, store, progress, task))
        if sent.pending:
            console.print(f"[yellow]{escape(label or model.name)}: {sent.pending} requests pending, sent again on "
                          f"the next run ({escape(sent.pending_error or '')})")
    out = {}
    for p in unique:
        completion = store.get_completion(p.key)
        out[p.key] = completion if completion is not None else \
            sent.unstored.get(p.key) or Completion(error="pending: no completion stored", pending=True)
    return out
