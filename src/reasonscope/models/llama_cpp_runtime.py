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
* **Generation**: up to ``parallel`` sequences decoded together (at most llama.cpp's 256 per context), one
  llama.cpp sequence each in one key/value cache (llama.cpp's batched decoding: every step is one ``llama_decode`` of one token per live sequence;
  the prompts are decoded together first, a prompt several sequences share and the prefix all prompts share
  decoded once and copied: :meth:`LlamaCppRuntime._prefill`). Greedy at temperature 0 (the arg-max of the logits, as
  transformers); else the logits divided by the temperature, softmax, the nucleus of mass ``top_p`` when set
  (no top-k, as the torch path) and one draw from a numpy generator seeded per request by a hash of its
  (item, variant, seed + sample), so a request's sample does not depend on the other requests of its batch.
  A row stops at an end-of-generation token, at one of its stop strings (the text is cut before it) or at
  ``max_tokens``. The sampled texts are not the torch runtime's (another random stream, float rounding).
* **Structured outputs**: one llguidance matcher per row over llama.cpp's own vocabulary
  (``llguidance.llamacpp``); the tokens that cannot continue a valid answer are masked before the choice,
  and a finished answer allows only the end token, exactly as :mod:`reasonscope.models.constrained` does
  on torch.
* **Label log-probabilities**: the prompt is decoded once into sequence 0 (the longest token prefix shared
  with the previous prompt is kept in the cache and not decoded again); every continuation but its last
  token is decoded as its own sequence on a copy of the prompt's cache, all in one batch; the summed
  log-softmax of each continuation's tokens, computed in float64 from llama.cpp's float32 logits.
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

UBATCH = 512
"""Tokens per llama.cpp micro-batch (``n_batch`` = ``n_ubatch``; at most the context's cells)."""

SHARED_PREFIX_MIN = 8
"""The fewest prompt tokens shared by every prompt of a group that are decoded once and copied (fewer: no copy)."""

TEXT_TOKENS = 512
"""The most tokens of texts scored token by token that are decoded together (llama.cpp's default batch)."""

TEXT_SEQUENCES = 64
"""The most texts scored token by token that are decoded together."""


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
        """Generate every row (in groups of ``parallel`` sequences decoded together); the rows, filled in."""
        with self.lock:
            for start in range(0, len(rows), self.parallel):
                self._generate_group(rows[start:start + self.parallel], on_done)
        return rows

    def _generate_group(self, rows: list[Row], on_done: Callable[[int], None] | None) -> None:
        import llama_cpp

        need = max(len(r.prompt) + r.max_tokens + 1 for r in rows)
        self._ctx, self._ctx_size = self._context(len(rows), need, self._ctx, self._ctx_size, unified=False)
        ctx = self._ctx
        llama_cpp.llama_memory_clear(ctx.memory, True)
        rngs = [np.random.default_rng(r.seed) for r in rows]
        for r in rows:
            r.tokens, r.finish, r.text = [], None, None
            if not r.prompt:
                raise ValueError("llama.cpp generation needs a non-empty prompt")
        current = self._prefill(ctx, [r.prompt for r in rows])
        live = list(range(len(rows)))
        while live:
            step, still = [], []
            for s in live:
                r = rows[s]
                if r.max_tokens <= 0:
                    r.finish = "length"
                    continue
                tok = self._choose(r, current[s], rngs[s])
                if self.is_end(tok):
                    r.finish = "stop"
                    continue
                r.tokens.append(tok)
                if r.stop and self._cut_at_stop(r):
                    r.finish = "stop"
                    continue
                if len(r.tokens) >= r.max_tokens:
                    r.finish = "length"
                    continue
                step.append((tok, len(r.prompt) + len(r.tokens) - 1, s, True))
                still.append(s)
            if on_done is not None and len(still) < len(live):
                on_done(len(live) - len(still))
            live = still
            if step:
                got = self._decode(ctx, step)
                current = {e[2]: got[i] for i, e in enumerate(step)}
        for r in rows:
            if r.text is None:
                r.text = self.detokenize(r.tokens)

    def _prefill(self, ctx: Any, prompts: list[list[int]]) -> dict[int, np.ndarray]:
        """Decode every sequence's prompt into its own stream; the logits after each prompt, by sequence.

        Shared work is done once: a prompt that several sequences have (samples of one request) is decoded for
        the first of them and its stream copied to the others, and the longest token prefix all distinct prompts
        share (the system prompt, an instruction), when it is at least :data:`SHARED_PREFIX_MIN` tokens, is
        decoded once and its stream copied to every distinct prompt's sequence before the rest is decoded. A copy
        is of the key/value cache the prefix's decoding wrote, so each sequence continues from the same cache it
        would have computed itself (up to float rounding of a batch of another shape: the same texts, tested).
        """
        import llama_cpp

        first: dict[tuple[int, ...], int] = {}
        lead = [first.setdefault(tuple(p), s) for s, p in enumerate(prompts)]
        leaders = sorted(set(lead))
        shared = 0
        if len(leaders) > 1:
            shared = len(os.path.commonprefix([prompts[s] for s in leaders]))
            shared = min(shared, min(len(prompts[s]) for s in leaders) - 1)  # each leader decodes its last token
            if shared < SHARED_PREFIX_MIN:
                shared = 0
        if shared:
            self._decode(ctx, [(t, p, leaders[0], False) for p, t in enumerate(prompts[leaders[0]][:shared])])
            for s in leaders[1:]:  # whole-stream copies, done by llama.cpp before the next decode
                llama_cpp.llama_memory_seq_cp(ctx.memory, leaders[0], s, -1, -1)
        entries, last = [], {}
        for s in leaders:
            for p in range(shared, len(prompts[s])):
                entries.append((prompts[s][p], p, s, p == len(prompts[s]) - 1))
            last[s] = len(entries) - 1
        logits = self._decode(ctx, entries)
        for s, leader in enumerate(lead):
            if s != leader:
                llama_cpp.llama_memory_seq_cp(ctx.memory, leader, s, -1, -1)
        return {s: logits[last[leader]] for s, leader in enumerate(lead)}

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
        return int(rng.choice(p.shape[0], p=p))

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
            for s in range(1, len(continuations) + 1):
                llama_cpp.llama_memory_seq_rm(ctx.memory, s, -1, -1)
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
            sums = []
            for ci, c in enumerate(continuations):
                total = float(first[c[0]])
                for j in range(1, len(c)):
                    total += float(_log_softmax(got[where[(ci, j - 1)]])[c[j]])
                sums.append(total)
            return sums

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
