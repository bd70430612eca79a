"""Local Hugging Face causal LMs (transformers): batched generation, log-probabilities, white-box.

``hf/<id-or-path>`` loads ``AutoModelForCausalLM`` and ``AutoTokenizer`` from a hub id or a local
folder. Generation is batched (``batch_size``, default 8) with left padding and the tokenizer's
chat template when it has one (else the messages joined as plain text). A batch groups requests
with the same generation settings (max tokens, temperature, top_p) and is sampled after
``torch.manual_seed(h)``, h a hash of its requests' (item, variant, seed + sample), so the same
batch gives the same outputs (and every output is cached per request anyway). ``model`` and
``tokenizer`` are exposed for gradient-based families. Requests with a ``structured`` option are decoded
under their grammar (:mod:`reasonscope.models.constrained`, llguidance), row by row inside the batch. Loading holds the process-wide lock of
:mod:`reasonscope.models.loading`.
Work runs in a worker thread so the event loop (progress, store writes) stays responsive.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..types import Completion
from .base import GenerationRequest, LanguageModel, ProviderUnavailable, unit_hash
from .forward_args import cache_argument, cache_for_rows, forward_takes, output_cache
from .loading import model_loading


class HFModel(LanguageModel):
    """A local causal language model run with transformers (``hf/<id-or-path>``).

    Loaded on first use on ``options.device`` (default: CUDA when available, else CPU); generates batches
    of left-padded prompts and scores continuations with log-probabilities.
    """

    provider = "hf"

    def __init__(self, model_id, config):
        super().__init__(model_id, config)
        self.model: Any = None
        self.tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def concurrency(self) -> int:
        """1: one batch at a time on the local device."""
        return 1  # one batch at a time on the local device

    @property
    def batch_size(self) -> int:
        """Prompts per batch (``batch_size`` of the model's settings, default 8)."""
        return self.config.batch_size or 8

    def missing_requirements(self) -> str | None:
        """Why the model cannot run here (torch or transformers not installed), else None."""
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError:
            return (f"{self.name}: local models need torch and transformers "
                    "(pip install torch==2.13.0 'reasonscope[embedded]'); skipped")
        return None

    # -- loading ----------------------------------------------------------------------------
    def _load_pretrained(self) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs = {"revision": self.config.revision} if self.config.revision else {}
        with model_loading():
            tok = AutoTokenizer.from_pretrained(self.model_id, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(self.model_id, **kwargs)
        return model, tok

    def load(self) -> None:
        """Load the weights and tokenizer once (thread-safe).

        The tokenizer pads on the left, with EOS when it has no pad token.

        Raises:
            ProviderUnavailable: When torch is not installed.
        """
        with self._lock:
            if self.model is not None:
                return
            try:
                import torch
            except ImportError as err:
                raise ProviderUnavailable("torch is not installed") from err
            device = self.config.options.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
            with model_loading():  # from_pretrained swaps process-wide state: one load at a time
                model, tok = self._load_pretrained()
                model.to(device).eval()
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            tok.padding_side = "left"
            self.model, self.tokenizer, self.device = model, tok, device

    def prompt_text(self, messages: list[dict[str, str]]) -> str:
        """The prompt of ``messages``: the tokenizer's chat template if it has one, else the texts joined."""
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "\n\n".join(m["content"] for m in messages) + "\n"

    # -- generation -------------------------------------------------------------------------
    async def generate(self, requests: Sequence[GenerationRequest],
                       on_done: Callable[[int], None] | None = None) -> list[Completion]:
        """Generate the completions of ``requests`` in a worker thread.

        A batch that fails with an exception other than :class:`ProviderUnavailable` fails its requests
        (each completion carries the error), not the run.
        """
        try:
            return await asyncio.to_thread(self._generate_sync, list(requests), on_done)
        except ProviderUnavailable:
            raise
        except Exception as exc:  # a broken batch fails its requests, not the run
            return [Completion(error=f"local generation failed: {type(exc).__name__}: {exc}") for _ in requests]

    def _generate_sync(self, requests: list[GenerationRequest],
                       on_done: Callable[[int], None] | None = None) -> list[Completion]:
        import torch

        self.load()
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.max_tokens, r.temperature, r.top_p), []).append(i)
        out: list[Completion | None] = [None] * len(requests)
        for (max_tokens, temperature, top_p), idx in groups.items():
            seed = int(unit_hash(*(f"{requests[i].item_id}|{requests[i].variant}|{requests[i].seed + requests[i].sample}"
                                   for i in idx)) * 2**31)
            prompts = [self.prompt_text(requests[i].messages) for i in idx]
            enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            gen_kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "pad_token_id": self.tokenizer.pad_token_id}
            rows = [requests[i].structured for i in idx]
            if any(r is not None for r in rows):
                from .constrained import make_processor

                gen_kwargs["logits_processor"] = [make_processor(rows, self.tokenizer, self.model.config.vocab_size,
                                                                 self.tokenizer.eos_token_id)]
            if temperature > 0:
                gen_kwargs.update(do_sample=True, temperature=temperature, top_k=0)
                if top_p is not None:
                    gen_kwargs["top_p"] = top_p
            else:
                gen_kwargs.update(do_sample=False)
            watch = None
            if on_done is not None:
                watch = _RowsFinished(enc["input_ids"].shape[1], (self.tokenizer.eos_token_id,
                                                                  self.tokenizer.pad_token_id), on_done)
                gen_kwargs["stopping_criteria"] = [watch]
            torch.manual_seed(seed)
            start = time.perf_counter()
            with torch.no_grad():
                seqs = self.model.generate(**enc, **gen_kwargs)
            elapsed = (time.perf_counter() - start) / len(idx)
            if watch is not None:
                watch.finish(len(idx))  # rows cut at max_tokens never emitted a stop token
            new = seqs[:, enc["input_ids"].shape[1]:]
            eos = self.tokenizer.eos_token_id
            pad = self.tokenizer.pad_token_id
            for row, i in enumerate(idx):
                ids = new[row].tolist()
                stop = next((k for k, t in enumerate(ids) if t in (eos, pad)), None)
                kept = ids if stop is None else ids[:stop]
                finish = "length" if stop is None and len(ids) >= max_tokens else "stop"
                out[i] = Completion(text=self.tokenizer.decode(kept, skip_special_tokens=True),
                                    finish_reason=finish, prompt_tokens=int(enc["attention_mask"][row].sum()),
                                    completion_tokens=len(kept) + (0 if stop is None else 1), latency_s=elapsed,
                                    constraint="grammar:llguidance" if requests[i].structured is not None else None)
        return [c for c in out if c is not None]

    # -- scoring ----------------------------------------------------------------------------
    async def logprobs(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Summed log p(continuation | prompt) per continuation (:meth:`logprobs_sync`, in a thread)."""
        return await asyncio.to_thread(self.logprobs_sync, prompt, list(continuations))

    def logprobs_sync(self, prompt: str, continuations: list[str]) -> list[float]:
        """Summed log p(continuation | prompt): prompt tokenised once, each continuation's tokens appended.

        The prompt is run through the model once: its last position gives every continuation's first token,
        and only the tokens after the first (a continuation of 2+ tokens) are run again, on a copy of the
        prompt's key/value cache. The same sums as one padded batch of prompt + continuation rows
        (:meth:`logprobs_batch`, float32 rounding aside) for about 1/len(continuations) of the compute when
        the prompt is long.
        """
        self.load()
        tok = self.tokenizer
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        conts = [tok(c, add_special_tokens=False)["input_ids"] for c in continuations]
        if not p_ids or not all(conts):
            return self.logprobs_batch(prompt, continuations)
        return self._run_shared(p_ids, [[]], conts)[0]

    def logprobs_shared(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        """For each prompt, :meth:`logprobs_sync` of every continuation, the prompts' common prefix run once.

        The prompts are tokenised whole (so the numbers are those of each prompt alone) and their longest
        common token prefix is run once: many questions about one long text (a judge asking each attribute of
        one rationale) cost one pass over the text, and the prompts' different ends run as one batch on copies
        of its key/value cache.
        """
        self.load()
        tok = self.tokenizer
        ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
        conts = [tok(c, add_special_tokens=False)["input_ids"] for c in continuations]
        n = 0
        while all(len(x) > n for x in ids) and len({x[n] for x in ids}) == 1:
            n += 1
        if not ids or n == 0 or not all(conts):
            return [self.logprobs_sync(p, continuations) for p in prompts]
        return self._run_shared(ids[0][:n], [x[n:] for x in ids], conts)

    def _run_shared(self, p_ids: list[int], tails: list[list[int]], conts: list[list[int]]) -> list[list[float]]:
        """Run the prefix once, then every tail with its continuations as one batch on copies of its cache.

        Each batch row is a tail plus all but the last token of a multi-token continuation, right-padded; each
        continuation's tokens are read off the logits (the tail's last position gives every continuation's
        first token). The output layer (vocabulary-sized, about a fifth of a small model's compute per
        position) is applied only where a log-probability is read: the prefix's last position, and the batch's
        positions from the shortest tail's last one on (``logits_to_keep``); the other positions' logits are
        never used.
        """
        import torch

        multi = [i for i, c in enumerate(conts) if len(c) > 1]
        rows: list[tuple[int, int | None, list[int]]] = []  # (tail index, continuation index, tokens)
        for ti, tail in enumerate(tails):
            rows += [(ti, ci, tail + conts[ci][:-1]) for ci in multi] if multi else [(ti, None, tail)]
        with torch.no_grad():
            keep = _logits_to_keep(self.model)
            head = self.model(input_ids=torch.tensor([p_ids], device=self.device), use_cache=True, **keep(1))
            head_last = torch.log_softmax(head.logits[0, -1].float(), dim=-1)
            batch = [r for r in rows if r[2]]
            logits, skipped = None, 0
            if batch:
                width = max(len(r[2]) for r in batch)
                # positions before any read one (none skipped when the model cannot trim its logits)
                skipped = min(max(len(tails[r[0]]) - 1, 0) for r in batch) if keep(1) else 0
                pad = self.tokenizer.pad_token_id or 0
                ids = torch.tensor([r[2] + [pad] * (width - len(r[2])) for r in batch], device=self.device)
                mask = torch.tensor([[1] * (len(p_ids) + len(r[2])) + [0] * (width - len(r[2])) for r in batch],
                                    device=self.device)
                cache = cache_for_rows(output_cache(head), len(batch))
                logits = self.model(input_ids=ids, attention_mask=mask, use_cache=True,
                                    **{cache_argument(self.model) or "past_key_values": cache},
                                    **keep(width - skipped)).logits.float()
            row_of = {(r[0], r[1]): b for b, r in enumerate(batch)}

            def lp_at(ti: int, ci: int | None, pos: int):
                """log-softmax of the logits at ``pos`` of tail ``ti``'s row (pos -1: the prefix's last)."""
                if pos < 0:
                    return head_last
                return torch.log_softmax(logits[row_of[(ti, ci)], pos - skipped], dim=-1)

            out = []
            some = multi[0] if multi else None  # any row of a tail holds its last position
            for ti, tail in enumerate(tails):
                first = lp_at(ti, some, len(tail) - 1)
                sums = []
                for ci, c in enumerate(conts):
                    total = float(first[c[0]])
                    for j in range(1, len(c)):
                        total += float(lp_at(ti, ci, len(tail) - 1 + j)[c[j]])
                    sums.append(total)
                out.append(sums)
        return out

    def logprobs_batch(self, prompt: str, continuations: list[str]) -> list[float]:
        """:meth:`logprobs_sync` computed as one right-padded batch of prompt + continuation rows."""
        import torch

        self.load()
        tok = self.tokenizer
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        seqs = [p_ids + tok(c, add_special_tokens=False)["input_ids"] for c in continuations]
        width = max(len(s) for s in seqs)
        pad = tok.pad_token_id
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=self.device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
        return [float(logp[row, len(p_ids) - 1:len(s) - 1].sum()) for row, s in enumerate(seqs)]

    def token_logprobs(self, text: str) -> list[float]:
        """Log-probabilities log p(t_i | t_<i) of every token of ``text`` after the first.

        BOS is prepended when the tokenizer has one, so that every token of the text is scored.
        """
        import torch

        self.load()
        tok = self.tokenizer
        ids = tok(text, add_special_tokens=False)["input_ids"]
        if tok.bos_token_id is not None:
            ids = [tok.bos_token_id] + ids
        if len(ids) < 2:
            return []
        x = torch.tensor([ids], device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=x).logits.float()
        return torch.log_softmax(logits[0, :-1], dim=-1).gather(-1, x[0, 1:, None])[:, 0].tolist()

    def close(self) -> None:
        """Drop the weights and tokenizer."""
        self.model = self.tokenizer = None


def _logits_to_keep(model: Any) -> Callable[[int], dict[str, int]]:
    """``n -> {"logits_to_keep": n}`` when the model's forward takes that argument, else ``n -> {}``.

    With the argument the model applies its output layer to the last ``n`` positions only; without it, to
    every position.
    """
    takes = forward_takes(model, "logits_to_keep")
    return (lambda n: {"logits_to_keep": n}) if takes else (lambda n: {})


class _RowsFinished:
    """A stopping criterion that never stops.

    After each decoding step it counts the rows of the batch that have emitted a stop token (eos or pad) and
    reports the new ones through ``report(n)``, so a progress bar follows a long batch row by row instead of
    jumping at its end.
    """

    def __init__(self, prompt_len: int, stop_ids: tuple[int | None, ...], report: Callable[[int], None]):
        self.prompt_len = prompt_len
        self.stop_ids = [t for t in set(stop_ids) if t is not None]
        self.report = report
        self.reported = 0

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        new = input_ids[:, self.prompt_len:]
        done = torch.zeros(new.shape[0], dtype=torch.bool, device=new.device)
        for t in self.stop_ids:
            done |= (new == t).any(dim=1)
        self._advance(int(done.sum()))
        return torch.zeros_like(done)

    def _advance(self, finished: int) -> None:
        if finished > self.reported:
            self.report(finished - self.reported)
            self.reported = finished

    def finish(self, rows: int) -> None:
        """Report the rows not reported yet (those that ran to ``max_tokens``)."""
        self._advance(rows)
