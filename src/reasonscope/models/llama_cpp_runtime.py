"""The embedded model on llama.cpp (``llama-cpp-python``): batched generation, label and token log-probabilities.

:class:`LlamaCppRuntime` runs a GGUF file (the embedded SmolLM2's float32 copy), one instance per model, its
calls serialised by a lock, ``n_threads`` = the cores this process may use. It does the embedded model's
token work; :class:`reasonscope.models.smollm2.SmolLM2Model` decides when it is used (``runtime``).

* **Prompts**: the chat template stored in the GGUF file (``tokenizer.chat_template``, the one transformers
  applies on the torch path) rendered with jinja2 as transformers renders it (sandboxed, ``trim_blocks``,
  ``lstrip_blocks``, ``add_generation_prompt``), then tokenised by llama.cpp with special tokens parsed and
  no BOS added, as the torch path tokenises it (``add_special_tokens=False``): both runtimes see the same
  token ids (tested on the demo's prompts).
* **Weights**: whatever the GGUF file holds; the embedded model gives it a float32 copy of its Q4_1 file
  (:mod:`reasonscope.models.gguf_float32`), the weights the torch runtime uses.
* **Generation**: continuous batching over ``parallel`` slots (at most llama.cpp's 256 per context), one
  llama.cpp sequence each, each with its own stream of the key/value cache; every step is one ``llama_decode``
  of one token per live sequence. The rows of every :meth:`LlamaCppRuntime.generate` call wait in one queue
  (calls from several threads at once join it: the calls of a model with ``concurrency`` above 1), and a slot
  whose row ends takes the next waiting row at once, its prompt decoded before the next step
  (:meth:`LlamaCppRuntime._prefill`), so a step keeps every slot busy instead of waiting for the slowest row of
  a group; a call returns when its own rows have ended. The live slots are kept numbered 0..n-1 (a row in a
  higher slot is moved down into a freed one, a copy of its cache stream) because llama.cpp decodes a step of
  sequences with a gap in their ids as one micro-batch per run of consecutive ids (measured: 16 sequences with
  gaps 5.5x slower than 16 consecutive). Prompt tokens are decoded once where they can be: a prompt several
  admitted rows share is decoded for the first and its stream copied; a new row copies the stream of the live
  row whose prompt shares the longest prefix with its own (the system prompt, a premise) and decodes only the
  rest; the first rows into an empty cache decode the prefix they all share once. Each slot's cache holds what
  the row would have computed alone, so a row's text does not depend on its slot, its batch mates or the order
  of the calls (tested). Greedy at temperature 0 (the arg-max of the logits, as
  transformers); else the logits divided by the temperature, softmax, the nucleus of mass ``top_p`` when set
  (no top-k, as the torch path) and one draw (:func:`draw`, numpy's ``choice`` without its checks) from a numpy
  generator seeded per request by a hash of its (item, variant, seed + sample), so a request's sample does not
  depend on the other requests of its batch.
  A row stops at an end-of-generation token, at one of its stop strings (the text is cut before it) or at
  ``max_tokens``. The sampled texts are not the torch runtime's (another random stream, float rounding).
* **Failures and interrupts** (:meth:`LlamaCppRuntime._drive`): a failure fails only the calls whose rows it
  concerns. An exception while a row chooses its token (its matcher, its stop strings) or in a call's
  ``on_done`` fails that row's call. A ``llama_decode`` that fails is undone (the cells it wrote removed): with
  the rows of one call in it that call fails; with several, each call's rows are decoded again on their own and
  only a call whose own decode fails again fails. A failed call's other rows leave the queue and their slots;
  the other calls go on with the texts they would have got. A call whose thread is interrupted
  (KeyboardInterrupt, any exception in it) while it waits or drives withdraws its rows the same way and the
  exception goes on; the interrupted step or prompt decode is undone first, so the calls left are decoded from
  the caches they had. An error outside these (a context that cannot be made) fails every call in flight.
* **Structured outputs**: one llguidance matcher per row over llama.cpp's own vocabulary
  (``llguidance.llamacpp``); the tokens that cannot continue a valid answer are masked before the choice,
  and a finished answer allows only the end token, exactly as :mod:`reasonscope.models.constrained` does
  on torch.
* **Label log-probabilities**: the prompt is decoded once into sequence 0 (the longest token prefix shared
  with the previous prompt is kept in the cache and not decoded again); every continuation but its last
  token is decoded as its own sequence on a copy of the prompt's cache, all in one batch; the summed
  log-softmax of each continuation's tokens, computed in float64 from llama.cpp's float32 logits. Several
  prompts with a common start (:meth:`LlamaCppRuntime.logprobs_shared`: a judge's prompts for one rationale,
  which differ in the attribute only) are decoded together: the common start once, each prompt's rest as its
  own sequence on a copy of that cache, all the rests in one batch, then every continuation of every prompt in
  one more; the same sums as one prompt at a time up to float rounding (tested within 0.005 nats; at most
  0.0098 nats apart on the demo's 216 judge prompts).
* **Token log-probabilities** (perplexity): texts packed into groups of at most :data:`TEXT_TOKENS` tokens
  (a longer text alone), each text its own sequence from position 0 in one shared cache, every token of a
  group decoded in one call with the logits of every position but each text's last; log p(t_i | t_<i) from
  their log-softmax in float64. The caller's token ids are taken as they are (the embedded model prepends
  BOS, as the torch path does: :meth:`reasonscope.models.smollm2.SmolLM2Model.token_logprobs_many`).
"""

from __future__ import annotations

import ctypes
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PARALLEL = 32
"""Sequences decoded together when the model's settings name no number (``parallel``, ``batch_size``).

Measured on RACE's requests (``benchmarks/llama_cpp_speed.py``, 64 e-SNLI pairs): 32 together ran 1.19x the speed
of 8 (a decoding step of 32 tokens reaches 37 GFLOP/s, one of 8 30), 64 1.24x with twice the key/value cache.
"""

CALLS = 4
"""Calls of the embedded model in flight at once on llama.cpp (its ``concurrency``): while one call's rows are
decoded, the next calls' rows wait in the runtime's queue, so a slot freed by an ended row is refilled at once
instead of idling until the call's slowest row ends."""

UBATCH = 512
"""Tokens per llama.cpp micro-batch (``n_batch`` = ``n_ubatch``; at most the context's cells)."""

SHARED_PREFIX_MIN = 8
"""The fewest prompt tokens shared by every prompt of a group that are decoded once and copied (fewer: no copy)."""

TEXT_TOKENS = 512
"""The most tokens of texts scored token by token that are decoded together (llama.cpp's default batch)."""

TEXT_SEQUENCES = 64
"""The most texts scored token by token that are decoded together."""

SHARED_CELLS = 4096
"""The most cache cells prompts scored together (:meth:`LlamaCppRuntime.logprobs_shared`) may fill: more (or more
sequences than llama.cpp allows), and they are scored in two halves (each half's start decoded once), so prompts with
little in common do not make a cache of the sum of their lengths."""


def cores() -> int:
    """The CPU cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class Row:
    """One sequence to generate: its prompt tokens, sampling settings, stop strings and optional matcher."""

    prompt: list[int]
    max_tokens: int
    temperature: float = 0.0
    top_p: float | None = None
    seed: int = 0
    stop: Sequence[str] = ()
    matcher: Any = None
    tokens: list[int] = field(default_factory=list)
    finish: str | None = None
    text: str | None = None


@dataclass(eq=False)
class _Job:
    """One :meth:`LlamaCppRuntime.generate` call: its progress callback, its rows not yet ended, its error.

    ``withdrawn``: the call has left (interrupted, or failed): its rows still in slots are dropped by the thread
    that drives the decoding, at its next turn.
    """

    on_done: Callable[[int], None] | None
    left: int
    error: BaseException | None = None
    withdrawn: bool = False


@dataclass(eq=False)
class _Slot:
    """A live sequence: its row, its call, its generator, the token to decode next, the logits of its next choice."""

    job: _Job
    row: Row
    rng: np.random.Generator
    next: int  # the token the next step decodes (a new row: its prompt's last token)
    logits: np.ndarray | None = None


class LlamaCppRuntime:
    """A GGUF model on llama.cpp: tokenise, apply the chat template, generate in batches, score continuations."""

    def __init__(self, gguf_path: str | Path, n_threads: int | None = None, parallel: int = PARALLEL):
        import llama_cpp
        from llama_cpp import Llama

        self.path = Path(gguf_path)
        self.n_threads = n_threads or cores()
        self.n_threads_batch = self.n_threads  # llama.cpp's threads for a decode of more than one token
        self.n_ubatch = UBATCH
        # llama.cpp refuses a context of more sequences (256): a larger batch_size would fail every request
        self.parallel = min(max(1, parallel), int(llama_cpp.llama_max_parallel_sequences()))
        self.llm = Llama(str(self.path), n_ctx=256, n_threads=self.n_threads, n_threads_batch=self.n_threads,
                         verbose=False)
        self.n_vocab = self.llm.n_vocab()
        self._vocab = self.llm._model.vocab
        self.lock = threading.Lock()
        self._ctx: Any = None
        self._ctx_size = (0, 0)
        self._cv = threading.Condition()  # guards the queue, the jobs' counts and who drives the decoding
        self._queue: deque[tuple[_Job, Row]] = deque()  # rows waiting for a slot, in the order they came
        self._slots: list[_Slot | None] = []  # the generation context's sequences: the row each one decodes
        self._driving = False
        self._scored: list[int] = []  # the prompt tokens in sequence 0 of the scoring context
        self._score_ctx: Any = None
        self._score_size = (0, 0)
        self._text_ctx: Any = None
        self._text_size = (0, 0)
        self._template: Any = None
        self._lltok: Any = None
        self.eos = self.llm.token_eos()
        bos = int(llama_cpp.llama_vocab_bos(self._vocab))
        self.bos: int | None = bos if bos >= 0 else None  # the vocabulary's BOS token, None when it has none

    # -- text <-> tokens ----------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        """The token ids of ``text``: special tokens parsed, no BOS added (as ``add_special_tokens=False``)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def detokenize(self, ids: Sequence[int]) -> str:
        """The text of ``ids``, special tokens left out (as ``skip_special_tokens=True``); bad UTF-8 replaced."""
        return self.llm.detokenize(list(ids), special=False).decode("utf-8", errors="replace")

    def chat_template(self) -> str | None:
        """The GGUF file's chat template (``tokenizer.chat_template``), or None when it has none."""
        return self.llm.metadata.get("tokenizer.chat_template")

    def prompt_text(self, messages: list[dict[str, str]]) -> str:
        """The prompt of ``messages``: the chat template rendered as transformers renders it, else the texts joined."""
        source = self.chat_template()
        if not source:
            return "\n\n".join(m["content"] for m in messages) + "\n"
        if self._template is None:
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            self._template = env.from_string(source)
        meta = self.llm.metadata

        def token(key: str) -> str:
            tid = meta.get(key)
            return self.llm._model.token_get_text(int(tid)) if tid is not None else ""

        return self._template.render(messages=messages, add_generation_prompt=True,
                                     bos_token=token("tokenizer.ggml.bos_token_id"),
                                     eos_token=token("tokenizer.ggml.eos_token_id"))

    def is_end(self, token: int) -> bool:
        """Whether ``token`` ends generation (an end-of-generation token of the vocabulary)."""
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def ll_tokenizer(self) -> Any:
        """The llguidance description of llama.cpp's vocabulary (built once, ~1 s)."""
        if self._lltok is None:
            from .constrained import require_llguidance

            require_llguidance()
            import llguidance.llamacpp

            with warnings.catch_warnings():  # it reads each token's attributes through a deprecated name
                warnings.simplefilter("ignore", DeprecationWarning)
                self._lltok = llguidance.llamacpp.lltokenizer_from_vocab(self._vocab)
        return self._lltok

    # -- contexts ----------------------------------------------------------------------------
    def _context(self, n_seq: int, cells: int, current: Any, size: tuple[int, int],
                 unified: bool) -> tuple[Any, tuple[int, int]]:
        """A context of at least ``n_seq`` sequences and ``cells`` cache cells: ``current`` when it is big enough.

        ``unified``: one cache of ``cells`` cells shared by the sequences (copying a prefix is free, but each step
        attends over every cell: for scoring); else one stream of ``cells`` cells per sequence (each sequence
        attends over its own only: for generation). ``size`` is ``current``'s (sequences, cells).
        """
        if current is not None and size[0] >= n_seq and size[1] >= cells:
            return current, size
        import llama_cpp
        from llama_cpp import _internals

        if current is not None:
            current.close()
        n_seq = max(n_seq, size[0])
        cells = -(-max(cells, size[1], 256) // 256) * 256
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = cells if unified else cells * n_seq
        params.n_batch = params.n_ubatch = min(params.n_ctx, self.n_ubatch)
        params.n_seq_max = n_seq
        params.kv_unified = unified
        params.n_threads, params.n_threads_batch = self.n_threads, self.n_threads_batch
        params.no_perf = True
        # flash attention off, as the Llama class has it: on, label log-probabilities moved 0.06 nats (measured)
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        ctx = _internals.LlamaContext(model=self.llm._model, params=params, verbose=False)
        return ctx, (n_seq, cells)

    def _decode(self, ctx: Any, entries: list[tuple[int, int, int, bool]]) -> dict[int, np.ndarray]:
        """Decode ``(token, position, sequence, want_logits)`` entries; the logits of the wanted ones by entry index.

        Split into llama.cpp batches of the context's ``n_batch`` tokens.
        """
        import llama_cpp

        n_batch = int(ctx.params.n_batch)
        out: dict[int, np.ndarray] = {}
        batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        try:
            for start in range(0, len(entries), n_batch):
                chunk = entries[start:start + n_batch]
                batch.n_tokens = len(chunk)
                for i, (tok, pos, seq, want) in enumerate(chunk):
                    batch.token[i] = tok
                    batch.pos[i] = pos
                    batch.n_seq_id[i] = 1
                    batch.seq_id[i][0] = seq
                    batch.logits[i] = want
                rc = llama_cpp.llama_decode(ctx.ctx, batch)
                if rc != 0:
                    raise RuntimeError(f"llama_decode failed with code {rc} ({len(chunk)} tokens)")
                for i, (_, _, _, want) in enumerate(chunk):
                    if want:
                        ptr = llama_cpp.llama_get_logits_ith(ctx.ctx, i)
                        out[start + i] = np.ctypeslib.as_array(
                            ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(self.n_vocab,)).copy()
        finally:
            llama_cpp.llama_batch_free(batch)
        return out

    # -- generation --------------------------------------------------------------------------
    def generate(self, rows: list[Row], on_done: Callable[[int], None] | None = None) -> list[Row]:
        """Generate every row (continuous batching over ``parallel`` slots: module docstring); the rows, filled in.

        Thread-safe: rows of calls made at the same time share the slots; the thread whose call is waiting and
        finds no other driving the decoding drives it until its own rows have ended. ``on_done(n)``: ``n`` more of
        this call's rows ended (called from the thread driving the decoding).

        A call whose thread is interrupted while it waits or drives (KeyboardInterrupt, or any exception raised in
        it) withdraws its rows: the waiting ones leave the queue at once, the ones in slots are dropped before the
        next step, so the other calls do not decode them; the exception goes on. A failure fails only the calls it
        concerns (:meth:`_drive`); such a call raises RuntimeError from the cause.
        """
        for r in rows:
            if not r.prompt:
                raise ValueError("llama.cpp generation needs a non-empty prompt")
        for r in rows:
            r.tokens, r.finish, r.text = [], None, None
        job = _Job(on_done, len(rows))
        with self._cv:
            self._queue.extend((job, r) for r in rows)
        try:
            while True:
                with self._cv:
                    while job.left and job.error is None and self._driving:
                        self._cv.wait()
                    if job.error is not None:
                        raise RuntimeError(f"llama.cpp generation failed: {job.error}") from job.error
                    if not job.left:
                        return rows
                    self._driving = True
                try:
                    with self.lock:
                        self._drive(job)
                except Exception as err:  # outside what _drive assigns to calls: the slots' state is not known
                    self._abandon(err)
                    raise
                finally:
                    with self._cv:
                        self._driving = False
                        self._cv.notify_all()
        except BaseException:
            self._withdraw(job)
            raise

    def _drive(self, job: _Job) -> None:
        """Decode until ``job``'s rows have ended (or it failed).

        Each turn: the rows of withdrawn calls are dropped; every live row chooses its next token from its logits
        (and may end); waiting rows take the free slots (:meth:`_admit`: their prompts but the last token
        decoded); the gaps are closed when no row waits (:meth:`_compact`); one step decodes each live slot's next
        token, a new row's last prompt token among them (:meth:`_step`).

        Failures: an exception while a row chooses its token (its matcher, its stop strings) or in a call's
        ``on_done`` fails that call only. A decode that fails (``llama_decode``'s error) is undone (the cells it
        wrote removed); when it held the rows of one call that call fails, else each call's rows are decoded again
        on their own and only the calls whose own decode fails again fail. A failed call's other rows are dropped
        and the calls whose rows were not in the failing decode go on, their texts unchanged. An interrupt of the
        driving thread (KeyboardInterrupt) leaves every slot as it was before the step or prefill it stopped (a
        row caught halfway through choosing its token starts again from its prompt, with the same result).
        """
        while job.left and job.error is None:
            self._drop_withdrawn()
            ended: dict[int, list] = {}
            try:
                self._choose_all(ended)
                for j in self._admit():  # rows of no new token (max_tokens 0) end as they come
                    ended.setdefault(id(j), [j, 0])[1] += 1
                if not self._queue:  # nothing to refill the freed slots with: close the gaps
                    self._compact()
            finally:
                self._count(ended)
            self._step()

    def _choose_all(self, ended: dict[int, list]) -> None:
        """Every live row with logits chooses its next token; an ended row frees its slot (counted in ``ended``)."""
        import llama_cpp

        slots = self._slots
        for s, slot in enumerate(slots):
            if slot is None or slot.logits is None:
                continue
            r, counted = slot.row, False
            try:
                tok = self._choose(r, slot.logits, slot.rng)
                slot.logits = None
                if self.is_end(tok):
                    r.finish = "stop"
                else:
                    r.tokens.append(tok)
                    if r.stop and self._cut_at_stop(r):
                        r.finish = "stop"
                    elif len(r.tokens) >= r.max_tokens:
                        r.finish = "length"
                if r.finish is None:
                    slot.next = tok
                    continue
                if r.text is None:
                    r.text = self.detokenize(r.tokens)
                ended.setdefault(id(slot.job), [slot.job, 0])[1] += 1
                counted = True
                slots[s] = None
                llama_cpp.llama_memory_seq_rm(self._ctx.memory, s, -1, -1)
            except Exception as err:  # this row's failure: its call fails
                self._fail(slot.job, err)
            except BaseException:
                if not counted and slots[s] is slot:  # caught halfway: the row starts again from its prompt
                    self._restart(s)
                raise

    def _restart(self, s: int) -> None:
        """Put slot ``s``'s row back at the head of the queue as it came (its tokens, matcher and draws reset)."""
        import llama_cpp

        slot = self._slots[s]
        self._slots[s] = None
        llama_cpp.llama_memory_seq_rm(self._ctx.memory, s, -1, -1)
        r = slot.row
        r.tokens, r.finish, r.text = [], None, None
        if r.matcher is not None:
            r.matcher.reset()
        with self._cv:
            self._queue.appendleft((slot.job, r))

    def _count(self, ended: dict[int, list]) -> None:
        """Report ``{id: [call, rows ended]}``: each call's ``on_done`` (one that raises fails its call), its count."""
        if not ended:
            return
        for j, n in ended.values():
            if j.on_done is not None and not j.withdrawn:
                try:
                    j.on_done(n)
                except Exception as err:
                    self._fail(j, err)
        with self._cv:
            for j, n in ended.values():
                j.left -= n
            self._cv.notify_all()

    def _step(self) -> None:
        """Decode each live slot's next token (one token per sequence); each slot's logits of its next choice."""
        slots = self._slots
        step = [(slot.next, len(slot.row.prompt) + len(slot.row.tokens) - 1, s, True)
                for s, slot in enumerate(slots) if slot is not None]
        if not step:
            return
        self._per_call(step, lambda e: slots[e[2]].job if slots[e[2]] is not None else None,
                       lambda part: self._decode_into(slots, part), self._undo)

    def _per_call(self, items: list, job_of: Callable[[Any], _Job | None], run: Callable[[list], None],
                  undo: Callable[[list], None], interrupted: Callable[[list], None] | None = None) -> list:
        """``run(items)``, failing only the calls whose own items fail; the items that ran.

        A run that raises is undone (``undo`` of its items). An interrupt (a BaseException that is no Exception)
        calls ``interrupted`` on them, if given, and goes on. After an exception, with the items of one call
        (``job_of``) that call fails; with several, each call's items run on their own and only a call whose own
        run fails again fails.
        """
        def attempt(part: list) -> Exception | None:
            try:
                run(part)
            except BaseException as err:
                undo(part)
                if not isinstance(err, Exception):
                    if interrupted is not None:
                        interrupted(part)
                    raise
                return err
            return None

        err = attempt(items)
        if err is None:
            return items
        jobs = list(dict.fromkeys(job_of(i) for i in items))
        if len(jobs) == 1:
            self._fail(jobs[0], err)
            return []
        kept = []
        for j in jobs:  # each call's items on their own
            part = [i for i in items if job_of(i) is j]
            again = attempt(part)
            if again is None:
                kept += part
            else:
                self._fail(j, again)
        return kept

    def _decode_into(self, slots: list, step: list[tuple[int, int, int, bool]]) -> None:
        """Decode one step's entries and give each slot the logits of its row."""
        got = self._decode(self._ctx, step)
        for i, (_, _, s, _) in enumerate(step):
            slots[s].logits = got[i]

    def _undo(self, step: list[tuple[int, int, int, bool]]) -> None:
        """Remove what a step's decode wrote: each entry's cell (its sequence from its position on) and logits."""
        import llama_cpp

        for _, pos, s, _ in step:
            llama_cpp.llama_memory_seq_rm(self._ctx.memory, s, pos, -1)
            if self._slots[s] is not None:
                self._slots[s].logits = None

    def _admit(self) -> list[_Job]:
        """Fill the free slots with waiting rows, first come first; the calls of rows that ended at once.

        A new row's prompt is decoded but its last token, which becomes the slot's next token; a row of
        ``max_tokens`` 0 ends as it comes (its call is returned, once per such row). The context is made (or
        made larger) only when no row is live; a row whose prompt and ``max_tokens`` do not fit the context's
        cells waits until every live row has ended. A prompt decode that fails is handled as a failed step
        (:meth:`_per_call`); an interrupted one puts its rows back at the head of the queue.
        """
        import llama_cpp

        live = [s for s, slot in enumerate(self._slots) if slot is not None]
        with self._cv:
            if not self._queue or (live and len(live) >= len(self._slots)):
                return []
            if not live:
                waiting = list(self._queue)
                need = max(len(r.prompt) + r.max_tokens + 1 for _, r in waiting)
                self._ctx, self._ctx_size = self._context(self.parallel, need, self._ctx, self._ctx_size,
                                                          unified=False)
                llama_cpp.llama_memory_clear(self._ctx.memory, True)
                self._slots = [None] * min(self._ctx_size[0], self.parallel)
            cells = self._ctx_size[1]
            free = [s for s, slot in enumerate(self._slots) if slot is None]
            taken: list[tuple[int, _Job, Row]] = []
            done: list[_Job] = []
            while self._queue and len(taken) < len(free):
                job, r = self._queue[0]
                if len(r.prompt) + r.max_tokens + 1 > cells:
                    break  # waits for a context of more cells (made when no row is live)
                self._queue.popleft()
                if r.max_tokens <= 0:
                    r.finish, r.text = "length", ""
                    done.append(job)
                else:
                    taken.append((free[len(taken)], job, r))
        if taken:
            memory = self._ctx.memory
            for s, _, _ in taken:  # a free slot's stream may hold the cells of an interrupted move
                llama_cpp.llama_memory_seq_rm(memory, s, -1, -1)
            sources = {s: self._slots[s].row.prompt for s in live}

            def emptied(part: list[tuple[int, _Job, Row]]) -> None:
                for s, _, _ in part:
                    llama_cpp.llama_memory_seq_rm(memory, s, -1, -1)

            def requeued(part: list[tuple[int, _Job, Row]]) -> None:
                with self._cv:
                    self._queue.extendleft((j, r) for _, j, r in reversed(part))

            taken = self._per_call(taken, lambda t: t[1],
                                   lambda part: self._prefill(self._ctx, {s: r.prompt for s, _, r in part}, sources),
                                   emptied, requeued)
            for s, job, r in taken:
                self._slots[s] = _Slot(job, r, np.random.default_rng(r.seed), next=r.prompt[-1])
        return done

    def _compact(self) -> dict[int, int]:
        """Move the rows of the highest slots into free lower ones until the live slots are 0..n-1; {old: new}.

        A move is a copy of the row's cache stream (done by llama.cpp before the next decode) and the old slot
        cleared.
        """
        import llama_cpp

        slots = self._slots
        moved: dict[int, int] = {}
        while True:
            live = [s for s, slot in enumerate(slots) if slot is not None]
            free = [s for s, slot in enumerate(slots) if slot is None]
            if not live or not free or free[0] > live[-1]:
                return moved
            memory = self._ctx.memory
            src, dst = live[-1], free[0]
            llama_cpp.llama_memory_seq_cp(memory, src, dst, -1, -1)
            slots[dst], slots[src] = slots[src], None
            llama_cpp.llama_memory_seq_rm(memory, src, -1, -1)
            moved[src] = dst

    def _withdraw(self, job: _Job) -> None:
        """``job``'s call has left: its waiting rows leave the queue, its rows in slots are dropped later.

        The driving thread drops them before its next step (:meth:`_drop_withdrawn`).
        """
        with self._cv:
            job.withdrawn = True
            if any(j is job for j, _ in self._queue):
                self._queue = deque((j, r) for j, r in self._queue if j is not job)
            self._cv.notify_all()

    def _fail(self, job: _Job, err: BaseException) -> None:
        """(The driving thread) ``job`` fails with ``err``: its waiting rows and its rows in slots are dropped."""
        with self._cv:
            if job.error is None:
                job.error = err
        self._withdraw(job)
        self._drop_withdrawn()

    def _drop_withdrawn(self) -> None:
        """(The driving thread) free the slots of the rows of withdrawn calls."""
        import llama_cpp

        for s, slot in enumerate(self._slots):
            if slot is not None and slot.job.withdrawn:
                self._slots[s] = None
                llama_cpp.llama_memory_seq_rm(self._ctx.memory, s, -1, -1)

    def _abandon(self, err: BaseException) -> None:
        """After an unexpected error in the driving thread: every live or waiting row's call fails with ``err``."""
        with self._cv:
            for slot in self._slots:
                if slot is not None:
                    slot.job.error = err
            for job, _ in self._queue:
                job.error = err
            self._queue.clear()
            self._slots = [None] * len(self._slots)
            self._cv.notify_all()

    def _prefill(self, ctx: Any, prompts: dict[int, list[int]], sources: dict[int, list[int]]) -> None:
        """Decode each new slot's prompt (``{slot: prompt}``) but its last token into the slot's stream.

        ``sources`` are the live slots (``{slot: prompt}``), whose streams hold their prompts. Shared work is done
        once: a prompt that several new slots have (samples of one request) is decoded for the first of them and
        its stream copied to the others. With live slots, each other new prompt starts from a copy of the live
        stream whose prompt shares the longest prefix with it, when that prefix is at least
        :data:`SHARED_PREFIX_MIN` tokens (the copy's later cells dropped), and only the rest is decoded; without,
        the longest prefix all new prompts share, when at least :data:`SHARED_PREFIX_MIN` tokens, is decoded once
        and copied to every new prompt's slot before the rest is decoded. A copy is of the key/value cache the
        prefix's decoding wrote, so each sequence continues from the same cache it would have computed itself
        (the same texts, tested). The new slots' own tokens are decoded in one call, in slot order; the last
        token of each prompt is decoded with the next step (its logits are the row's first choice).
        """
        import llama_cpp

        memory = ctx.memory
        order = sorted(prompts)
        first: dict[tuple[int, ...], int] = {}
        lead = {s: first.setdefault(tuple(prompts[s]), s) for s in order}
        leaders = sorted(set(lead.values()))
        start = dict.fromkeys(leaders, 0)
        if sources:
            for s in leaders:
                p = prompts[s]
                best, src = 0, -1
                for o, q in sources.items():
                    n = _common(p, q)
                    if n > best:
                        best, src = n, o
                best = min(best, len(p) - 1)
                if best >= SHARED_PREFIX_MIN:
                    llama_cpp.llama_memory_seq_cp(memory, src, s, -1, -1)
                    llama_cpp.llama_memory_seq_rm(memory, s, best, -1)
                    start[s] = best
        elif len(leaders) > 1:
            shared = len(os.path.commonprefix([prompts[s] for s in leaders]))
            shared = min(shared, min(len(prompts[s]) for s in leaders) - 1)
            if shared >= SHARED_PREFIX_MIN:
                self._decode(ctx, [(t, p, leaders[0], False) for p, t in enumerate(prompts[leaders[0]][:shared])])
                for s in leaders[1:]:  # whole-stream copies, done by llama.cpp before the next decode
                    llama_cpp.llama_memory_seq_cp(memory, leaders[0], s, -1, -1)
                start = dict.fromkeys(leaders, shared)
        entries = [(prompts[s][i], i, s, False) for s in leaders for i in range(start[s], len(prompts[s]) - 1)]
        if entries:
            self._decode(ctx, entries)
        for s in order:
            if lead[s] != s:
                llama_cpp.llama_memory_seq_cp(memory, lead[s], s, -1, -1)

    def _choose(self, row: Row, logits: np.ndarray, rng: np.random.Generator) -> int:
        """The next token of ``row``: masked by its matcher, then arg-max or a draw (module docstring)."""
        if row.matcher is not None:
            m = row.matcher
            if row.tokens and not m.is_stopped():
                m.consume_token(row.tokens[-1])
            bits = np.unpackbits(np.frombuffer(m.compute_bitmask(), dtype=np.uint8), bitorder="little")
            allowed = np.zeros(logits.shape[0], dtype=bool)
            n = min(bits.shape[0], logits.shape[0])
            allowed[:n] = bits[:n].astype(bool)
            if not allowed.any():  # the matcher is in an error state: end the row
                return self.eos
            logits = np.where(allowed, logits, -np.inf)
        if row.temperature <= 0:
            return int(np.argmax(logits))
        z = logits.astype(np.float64) / row.temperature
        z -= z.max()
        p = np.exp(z)
        p /= p.sum()
        if row.top_p is not None and row.top_p < 1.0:
            order = np.argsort(-p, kind="stable")
            keep = np.cumsum(p[order]) - p[order] < row.top_p  # the smallest set whose mass reaches top_p
            q = np.zeros_like(p)
            q[order[keep]] = p[order[keep]]
            p = q / q.sum()
        return draw(p, rng)

    def _cut_at_stop(self, row: Row) -> bool:
        """Whether ``row``'s text now holds a stop string; if so its text is set, cut before the first one."""
        text = self.detokenize(row.tokens)
        hits = [text.find(s) for s in row.stop if s and s in text]
        if not hits:
            return False
        row.text = text[:min(hits)]
        return True

    # -- scoring -----------------------------------------------------------------------------
    def logprobs(self, prompt: list[int], continuations: list[list[int]]) -> list[float]:
        """Summed log p(continuation tokens | prompt) for each continuation (module docstring)."""
        if not prompt or not all(continuations):
            raise ValueError("llama.cpp log-probabilities need a non-empty prompt and non-empty continuations")
        import llama_cpp

        with self.lock:
            tails = [c[:-1] for c in continuations]
            need = len(prompt) + sum(len(t) for t in tails) + 1
            ctx, size = self._context(len(continuations) + 1, need, self._score_ctx, self._score_size,
                                      unified=True)
            if ctx is not self._score_ctx:
                self._score_ctx, self._score_size, self._scored = ctx, size, []
            self._clear_copies(ctx)
            keep = 0
            while keep < min(len(self._scored), len(prompt) - 1) and self._scored[keep] == prompt[keep]:
                keep += 1  # the last prompt token is always decoded again: its logits are needed
            llama_cpp.llama_memory_seq_rm(ctx.memory, 0, keep, -1)
            self._scored = []
            head = self._decode(ctx, [(t, keep + i, 0, keep + i == len(prompt) - 1)
                                      for i, t in enumerate(prompt[keep:])])
            self._scored = list(prompt)
            first = _log_softmax(head[len(prompt) - keep - 1])
            entries, where = [], {}
            for ci, tail in enumerate(tails):
                if tail:
                    llama_cpp.llama_memory_seq_cp(ctx.memory, 0, ci + 1, -1, -1)
                for j, t in enumerate(tail):
                    where[(ci, j)] = len(entries)
                    entries.append((t, len(prompt) + j, ci + 1, True))
            got = self._decode(ctx, entries) if entries else {}
            return _continuation_sums(first, continuations, lambda ci, j: got[where[(ci, j)]])

    def logprobs_shared(self, prompts: Sequence[Sequence[int]],
                        continuations: list[list[int]]) -> list[list[float]]:
        """:meth:`logprobs` of every continuation after each prompt, the prompts decoded together (module docstring).

        The prompts' longest common token prefix (all but at least each prompt's last token) is decoded once into
        sequence 0; each prompt's rest is its own sequence on a copy of that cache, all of them in one batch; each
        continuation's tokens but its last are decoded on a copy of each prompt's sequence, again in one batch. The
        same sums as :meth:`logprobs` per prompt up to float rounding (other batch shapes).
        """
        if not prompts:
            return []
        if not all(prompts) or not continuations or not all(continuations):
            raise ValueError("llama.cpp log-probabilities need non-empty prompts and non-empty continuations")
        if len(prompts) == 1:
            return [self.logprobs(list(prompts[0]), continuations)]
        import llama_cpp

        shared = min(min(_common(prompts[0], p) for p in prompts[1:]), min(len(p) for p in prompts) - 1)
        head = list(prompts[0][:shared])
        tails = [c[:-1] for c in continuations]
        longer = [ci for ci, t in enumerate(tails) if t]
        n_seq = 1 + len(prompts) * (1 + len(longer))
        need = shared + sum(len(p) - shared for p in prompts) + len(prompts) * sum(len(tails[ci]) for ci in longer) + 1
        if need > SHARED_CELLS or n_seq > llama_cpp.llama_max_parallel_sequences():
            half = len(prompts) // 2
            return (self.logprobs_shared(prompts[:half], continuations)
                    + self.logprobs_shared(prompts[half:], continuations))
        with self.lock:
            ctx, size = self._context(n_seq, need, self._score_ctx, self._score_size, unified=True)
            if ctx is not self._score_ctx:
                self._score_ctx, self._score_size, self._scored = ctx, size, []
            self._clear_copies(ctx)
            keep = _common(self._scored, head)
            llama_cpp.llama_memory_seq_rm(ctx.memory, 0, keep, -1)
            self._scored = []
            if keep < shared:
                self._decode(ctx, [(t, keep + i, 0, False) for i, t in enumerate(head[keep:])])
            self._scored = head
            entries, last = [], []
            for pi, p in enumerate(prompts):
                llama_cpp.llama_memory_seq_cp(ctx.memory, 0, 1 + pi, -1, -1)
                for pos in range(shared, len(p)):
                    if pos == len(p) - 1:
                        last.append(len(entries))
                    entries.append((p[pos], pos, 1 + pi, pos == len(p) - 1))
            got = self._decode(ctx, entries)
            firsts = [_log_softmax(got[k]) for k in last]
            entries, where = [], {}
            seq = 1 + len(prompts)
            for pi, p in enumerate(prompts):
                for ci in longer:
                    llama_cpp.llama_memory_seq_cp(ctx.memory, 1 + pi, seq, -1, -1)
                    for j, t in enumerate(tails[ci]):
                        where[(pi, ci, j)] = len(entries)
                        entries.append((t, len(p) + j, seq, True))
                    seq += 1
            got = self._decode(ctx, entries) if entries else {}
            return [_continuation_sums(firsts[pi], continuations, lambda ci, j, pi=pi: got[where[(pi, ci, j)]])
                    for pi in range(len(prompts))]

    def _clear_copies(self, ctx: Any) -> None:
        """Remove every sequence but 0 (the kept prompt) from the scoring context's cache."""
        import llama_cpp

        for s in range(1, self._score_size[0]):
            llama_cpp.llama_memory_seq_rm(ctx.memory, s, -1, -1)

    def token_logprobs(self, texts: Sequence[Sequence[int]]) -> list[list[float]]:
        """log p(t_i | t_<i) of every token but the first of each token list (module docstring).

        A list of fewer than two tokens gives ``[]``. The lists are decoded in groups of at most
        :data:`TEXT_TOKENS` tokens and :data:`TEXT_SEQUENCES` lists, in the order given.
        """
        import llama_cpp

        out: list[list[float]] = [[] for _ in texts]
        todo = [i for i, ids in enumerate(texts) if len(ids) >= 2]
        groups: list[list[int]] = []
        size = 0
        for i in todo:
            if not groups or size + len(texts[i]) > TEXT_TOKENS or len(groups[-1]) >= TEXT_SEQUENCES:
                groups.append([])
                size = 0
            groups[-1].append(i)
            size += len(texts[i])
        with self.lock:
            for group in groups:
                need = sum(len(texts[i]) for i in group)
                self._text_ctx, self._text_size = self._context(len(group), need, self._text_ctx, self._text_size,
                                                                unified=True)
                ctx = self._text_ctx
                llama_cpp.llama_memory_clear(ctx.memory, True)
                entries = [(int(t), p, s, p < len(texts[i]) - 1)
                           for s, i in enumerate(group) for p, t in enumerate(texts[i])]
                got = self._decode(ctx, entries)
                wanted = [k for k, e in enumerate(entries) if e[3]]
                targets = np.array([entries[k + 1][0] for k in wanted])  # the next token of the same text
                values = _chosen_log_softmax([got[k] for k in wanted], targets)
                start = 0
                for i in group:
                    n = len(texts[i]) - 1
                    out[i] = values[start:start + n].tolist()
                    start += n
        return out

    def close(self) -> None:
        """Free the contexts and the model."""
        for ctx in (self._ctx, self._score_ctx, self._text_ctx):
            if ctx is not None:
                ctx.close()
        self._ctx = self._score_ctx = self._text_ctx = None
        self.llm.close()


def whole_sequence_logprobs(llm: Any, prompt: list[int], continuations: list[list[int]]) -> list[float]:
    """The reference for :meth:`LlamaCppRuntime.logprobs`: each prompt + continuation evaluated whole, alone.

    ``llm`` is a ``llama_cpp.Llama`` made with ``logits_all=True``; for each continuation its cache is reset, the
    prompt and the continuation are evaluated as one sequence and the continuation's tokens' log-softmax (in
    float64) summed. Slow (the prompt evaluated once per continuation): for tests and benchmarks.
    """
    sums = []
    for cont in continuations:
        llm.reset()
        llm.eval(prompt + cont)
        rows = np.asarray(llm.scores[len(prompt) - 1:len(prompt) + len(cont) - 1], dtype=np.float64)
        sums.append(float(sum(_log_softmax(row)[t] for row, t in zip(rows, cont, strict=True))))
    return sums


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _continuation_sums(first: np.ndarray, continuations: list[list[int]],
                       logits: Callable[[int, int], np.ndarray]) -> list[float]:
    """Summed log p of each continuation's tokens, in float64.

    Its first token from ``first`` (the log-softmax after the prompt), its token ``j + 1`` from
    ``logits(continuation index, j)`` (the logits after its token ``j``).
    """
    sums = []
    for ci, c in enumerate(continuations):
        total = float(first[c[0]])
        for j in range(1, len(c)):
            total += float(_log_softmax(logits(ci, j - 1))[c[j]])
        sums.append(total)
    return sums


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def _chosen_log_softmax(rows: list[np.ndarray], targets: np.ndarray, block: int = 64) -> np.ndarray:
    """``log_softmax(rows[k])[targets[k]]`` for each k, in float64, ``block`` rows at a time (bounded memory)."""
    out = np.empty(len(rows), dtype=np.float64)
    for start in range(0, len(rows), block):
        z = np.stack(rows[start:start + block]).astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        picked = z[np.arange(z.shape[0]), targets[start:start + block]]
        out[start:start + block] = picked - np.log(np.exp(z).sum(axis=1))
    return out


def draw(p: np.ndarray, rng: np.random.Generator) -> int:
    """One index drawn with probabilities ``p`` (float64, summing to 1): the draw of ``rng.choice(len(p), p=p)``.

    numpy's own steps for one draw with replacement (the cumulative sums divided by the last, one ``rng.random()``,
    the first index whose cumulative sum exceeds it), so the same index from the same generator state (tested), without
    ``choice``'s checks of ``p``, which cost more than the draw itself on a 49,152-token vocabulary (272 against 150
    microseconds a token on 2 cores).
    """
    cdf = p.cumsum()
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))
