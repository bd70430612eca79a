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
from collections.abc import Sequence
from typing import Any

from ..types import Completion
from .base import GenerationRequest, LanguageModel, ProviderUnavailable, unit_hash
from .loading import model_loading


class HFModel(LanguageModel):
    provider = "hf"

    def __init__(self, model_id, config):
        super().__init__(model_id, config)
        self.model: Any = None
        self.tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def concurrency(self) -> int:
        return 1  # one batch at a time on the local device

    @property
    def batch_size(self) -> int:
        return self.config.batch_size or 8

    def missing_requirements(self) -> str | None:
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
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "\n\n".join(m["content"] for m in messages) + "\n"

    # -- generation -------------------------------------------------------------------------
    async def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        try:
            return await asyncio.to_thread(self._generate_sync, list(requests))
        except ProviderUnavailable:
            raise
        except Exception as exc:  # a broken batch fails its requests, not the run
            return [Completion(error=f"local generation failed: {type(exc).__name__}: {exc}") for _ in requests]

    def _generate_sync(self, requests: list[GenerationRequest]) -> list[Completion]:
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
            torch.manual_seed(seed)
            start = time.perf_counter()
            with torch.no_grad():
                seqs = self.model.generate(**enc, **gen_kwargs)
            elapsed = (time.perf_counter() - start) / len(idx)
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
        return await asyncio.to_thread(self.logprobs_sync, prompt, list(continuations))

    def logprobs_sync(self, prompt: str, continuations: list[str]) -> list[float]:
        """Summed log p(continuation | prompt), the prompt tokenised once and each continuation's tokens
        appended. The prompt is run through the model once: its last position gives every continuation's
        first token, and only the tokens after the first (a continuation of 2+ tokens) are run again, on a
        copy of the prompt's key/value cache. The same sums as one padded batch of prompt + continuation
        rows (:meth:`logprobs_batch`, float32 rounding aside) for about 1/len(continuations) of the compute
        when the prompt is long."""
        self.load()
        tok = self.tokenizer
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        conts = [tok(c, add_special_tokens=False)["input_ids"] for c in continuations]
        if not p_ids or not all(conts):
            return self.logprobs_batch(prompt, continuations)
        return self._run_shared(p_ids, [[]], conts)[0]

    def logprobs_prefixed(self, prefix: str, suffixes: list[str], continuations: list[str]) -> list[list[float]]:
        """For each suffix, summed log p(continuation | prefix + suffix) of every continuation, with
        ``prefix``, each suffix and each continuation tokenised on their own (so prefix + suffix is read
        as those tokens). The prefix is run once and its key/value cache reused for every suffix: many
        questions about one long text (a judge asking each attribute of one rationale) cost one pass over
        the text."""
        self.load()
        tok = self.tokenizer
        p_ids = tok(prefix, add_special_tokens=False)["input_ids"]
        tails = [tok(s, add_special_tokens=False)["input_ids"] for s in suffixes]
        conts = [tok(c, add_special_tokens=False)["input_ids"] for c in continuations]
        if not p_ids or not all(conts):
            return [self.logprobs_batch(prefix + s, continuations) for s in suffixes]
        return self._run_shared(p_ids, tails, conts)

    def _run_shared(self, p_ids: list[int], tails: list[list[int]], conts: list[list[int]]) -> list[list[float]]:
        import copy

        import torch

        def run(ids: list[int], past=None):
            return self.model(input_ids=torch.tensor([ids], device=self.device), past_key_values=past,
                              use_cache=True)

        out = []
        with torch.no_grad():
            head = run(p_ids)
            for tail in tails:
                here = run(tail, copy.deepcopy(head.past_key_values)) if tail else head
                first = torch.log_softmax(here.logits[0, -1].float(), dim=-1)
                sums = []
                for c in conts:
                    total = float(first[c[0]])
                    if len(c) > 1:
                        rest = run(c[:-1], copy.deepcopy(here.past_key_values)).logits
                        lp = torch.log_softmax(rest[0].float(), dim=-1)
                        total += float(lp.gather(-1, torch.tensor(c[1:], device=self.device)[:, None]).sum())
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
        """log p(t_i | t_<i) of every token of ``text`` after the first (BOS prepended when the tokenizer
        has one, so that every token of the text is scored)."""
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
        self.model = self.tokenizer = None
