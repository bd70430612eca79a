"""Scripted, replay and simulated models for tests, demos and benchmarks. No network, no weights.

Kinds (``mock/<kind>``), every output deterministic per (seed, item, variant, sample):

* ``mock/reasoner``: answers correctly with probability ``options.accuracy`` (default 0.7), drawn
  from a hash of (seed, item, variant, sample); writes a few reasoning steps and ``Answer: X``.
  It reads the gold answer from the request's ``meta`` (it is a simulator, not a model). Its steps come
  from a few fixed sentences, so many outputs repeat; ``options.distinct_texts: true`` adds the item,
  variant and sample to a step, so that every output is a text of its own (scale benchmarks).
* ``mock/scripted``: ``options.responses`` is a list of texts (cycled by request order over
  (item, variant, sample)), or a mapping item id -> text or list of texts (indexed by sample).
* ``mock/replay``: ``options.path`` is a JSONL file of ``{"item_id", "variant", "sample", "text"}``.
* ``mock/judge``: a simulated judge. For attribute requests (``meta.task == "judge"``) it answers a
  JSON object with a score per attribute, ``unit_hash(seed, attribute, text)`` on the request's scale;
  for pairwise requests (``meta.task == "pairwise"``) it prefers the answer with the higher
  ``unit_hash("quality", text)`` (so both orders agree), or always answer 1 with
  ``options.position_bias: true``; for reasoning checks (``meta.task == "reasoning"``) it calls a
  chain correct when it equals ``meta.reference`` (if given), else with probability ``options.ok_rate``
  (0.5, drawn from a hash of the chain); for
  meaning checks (``meta.task == "meaning"``) it says the meaning is kept unless
  ``options.meaning_changed: true``.

Common options: ``latency_s`` (sleep per call), ``fail_rate`` (share of calls raising a retryable
error), ``call_log`` (a file that receives one line per call, used by the resume tests),
``logprobs`` (continuation -> log-probability, for judge tests; else derived from a hash).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..types import Completion
from .base import GenerationRequest, LanguageModel, unit_hash


class MockTransientError(ConnectionError):
    """The simulated transient failure of a mock model (``options.fail_rate``); retried."""

    pass


class MockModel(LanguageModel):
    """A mock model (``mock/<kind>``): reasoner, scripted, replay or judge; see the module docstring."""

    provider = "mock"
    retry_base_s = 0.01
    retry_cap_s = 0.05

    def __init__(self, model_id, config):
        super().__init__(model_id, config)
        if model_id not in ("reasoner", "scripted", "replay", "judge"):
            raise ValueError(f"unknown mock kind {model_id!r}; use mock/reasoner, mock/scripted, mock/replay "
                             "or mock/judge")
        self.options = dict(config.options)
        self._replay: dict[tuple[str, str, int], str] | None = None

    def missing_requirements(self) -> str | None:
        """Why the mock cannot run here, else None.

        mock/replay needs a JSONL file at ``options.path``, mock/scripted needs ``options.responses``.
        """
        if self.model_id == "replay" and not Path(str(self.options.get("path", ""))).is_file():
            return f"{self.name}: mock/replay needs options.path pointing at a JSONL file"
        if self.model_id == "scripted" and not self.options.get("responses"):
            return f"{self.name}: mock/scripted needs options.responses"
        return None

    async def _generate_one(self, request: GenerationRequest) -> Completion:
        log = self.options.get("call_log")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{request.item_id}\t{request.variant}\t{request.sample}\n")
                fh.flush()
                os.fsync(fh.fileno())
        latency = float(self.options.get("latency_s", 0))
        if latency:
            import asyncio  # loaded by the first call (an up-to-date re-run makes the model, calls it never)

            await asyncio.sleep(latency)
        fail_rate = float(self.options.get("fail_rate", 0))
        if fail_rate and unit_hash("fail", request.item_id, request.variant, request.sample, os.urandom(4)) < fail_rate:
            raise MockTransientError("simulated transient failure")
        text = self._text(request)
        words = len(text.split())
        finish = "stop"
        if words > request.max_tokens:
            text = " ".join(text.split()[: request.max_tokens])
            words, finish = request.max_tokens, "length"
        return Completion(text=text, finish_reason=finish, completion_tokens=words,
                          prompt_tokens=sum(len(m["content"].split()) for m in request.messages))

    def _text(self, r: GenerationRequest) -> str:
        if self.model_id == "scripted":
            responses = self.options["responses"]
            if isinstance(responses, dict):
                value = responses.get(r.item_id, responses.get("*", ""))
                if isinstance(value, list):
                    return value[r.sample % len(value)]
                return str(value)
            idx = int(unit_hash(r.item_id, r.variant, r.sample) * len(responses))
            return responses[idx]
        if self.model_id == "replay":
            if self._replay is None:
                self._replay = {}
                with open(self.options["path"], encoding="utf-8") as fh:
                    for line in fh:
                        if line.strip():
                            rec = json.loads(line)
                            self._replay[(rec["item_id"], rec.get("variant", "original"), int(rec.get("sample", 0)))] = \
                                rec["text"]
            return self._replay.get((r.item_id, r.variant, r.sample), "")
        if self.model_id == "judge":
            return self._judge(r)
        return self._reasoner(r)

    def _judge(self, r: GenerationRequest) -> str:
        meta, seed = r.meta, self.options.get("seed", 0)
        if meta.get("task") == "reasoning":
            ok = meta["candidate"] == meta.get("reference") or \
                unit_hash("ok", seed, meta["candidate"]) < float(self.options.get("ok_rate", 0.5))
            return json.dumps({"correct": ok, "explanation": "simulated"})
        if meta.get("task") == "meaning":
            return json.dumps({"same": not self.options.get("meaning_changed", False)})
        if meta.get("task") == "pairwise":
            if self.options.get("position_bias"):
                return '{"winner": "1", "explanation": "the first one"}'
            first, second = (unit_hash("quality", t) for t in meta["texts"])
            return json.dumps({"winner": "1" if first >= second else "2", "explanation": "simulated"})
        top = float(meta.get("scale_max", 1.0))
        scores = {a: {"score": round(unit_hash(seed, a, meta.get("text", "")) * top, 2 if top == 1 else 0),
                      "explanation": "simulated"} for a in meta.get("attributes", [])}
        return json.dumps(scores)

    def _reasoner(self, r: GenerationRequest) -> str:
        seed = self.options.get("seed", r.seed)
        accuracy = float(self.options.get("accuracy", 0.7))
        u = unit_hash(seed, r.item_id, r.variant, r.sample)
        correct = u < accuracy
        meta = r.meta
        answer = meta.get("target")
        kind = meta.get("answer_type", "text")
        if not correct:
            answer = wrong_answer(answer, kind, meta.get("choices"), u)
        if meta.get("task") == "evidence":
            words = [w for w in str(meta.get("text", "")).split() if len(w) > 4][:3]
            rationale = f"The text mentions {', '.join(w.strip('.,') for w in words)}, which points to {answer}."
            return json.dumps({"label": answer, "rationale": rationale})
        if kind == "choice" and isinstance(answer, int | str) and str(answer).isdigit():
            answer = chr(ord("A") + int(answer))
        if kind == "boolean":
            answer = "yes" if answer in (True, "yes", "true", "True") else "no"
        openers = ["Let me think step by step.", "First, I read the question carefully.",
                   "We need to work this out carefully.", "Consider what the question asks."]
        middles = ["The key facts are given in the question.", "I combine the quantities that matter.",
                   "Each part of the question leads to the next.", "Checking the facts one at a time helps."]
        o = openers[int(unit_hash("o", seed, r.item_id, r.sample) * len(openers))]
        m = middles[int(unit_hash("m", seed, r.item_id, r.sample) * len(middles))]
        if self.options.get("distinct_texts"):
            m = f"{m[:-1]} for item {r.item_id}, {r.variant}, sample {r.sample}."
        return f"{o}\n{m}\nSo the result follows.\nAnswer: {answer}"

    async def logprobs(self, prompt: str, continuations) -> list[float]:
        """Log-probability of each continuation: ``options.logprobs[continuation]``, else a hash-based value.

        The fallback is deterministic, in (-5.1, -0.1], from a hash of (prompt, continuation).
        """
        table = self.options.get("logprobs") or {}
        return [float(table[c.strip()]) if c.strip() in table else -5.0 * unit_hash(prompt, c) - 0.1
                for c in continuations]


def wrong_answer(target, kind: str, choices, u: float):
    """A deterministic wrong answer of the same type."""
    if kind == "number":
        try:
            value = float(str(target).replace(",", ""))
        except ValueError:
            return "0"
        delta = 1 + int(u * 10)
        wrong = value + delta
        return str(int(wrong)) if wrong == int(wrong) else str(wrong)
    if kind == "boolean":
        return "no" if target in (True, "yes", "true", "True") else "yes"
    if kind == "choice":
        n = len(choices or "ABCD")
        idx = ord(str(target).upper()[0]) - ord("A") if not str(target).isdigit() else int(target)
        return chr(ord("A") + (idx + 1) % n)
    if kind == "label" and choices:
        others = [c for c in choices if c != target]
        return others[int(u * len(others))] if others else target
    return f"not {target}"
