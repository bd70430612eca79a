"""reasonscope's behaviour metrics as inspect-ai scorers, for use in any inspect task (``inspect eval``).

Needs the ``[inspect]`` extra. Each scorer reads the sample's output exactly as ``reasonscope score
--from inspect`` reads it from the log (:func:`reasonscope.data.adapters.inspect_logs.output_fields`),
interprets it with reasonscope's own read-time interpretation (:func:`reasonscope.storage.run_data.interpret`:
think blocks set aside, typed answer extraction, trace, steps) and computes the behaviour family's
per-item formulas (:mod:`reasonscope.behavior.metrics`) with the same scoring backends
(:mod:`reasonscope.scorers`). Nothing is re-implemented here.

==========================  ==========================================================================
scorer                      per epoch; metrics over samples
==========================  ==========================================================================
``answer_correctness``      CQ_i = 1[match(ŷ, y)] with typed extraction (1.0 or 0.0; a failed or
                            unparseable answer is 0). Metrics: ``accuracy``, ``stderr`` (over the
                            epoch-reduced scores: inspect's reducer, ``mean`` by default, or
                            :func:`first_epoch` for reasonscope's CQ on the first sample) and
                            :func:`consistency`: CS over epochs.
``logical_coherence``       LS_i = 1 - mean contradiction probability between consecutive steps of the
                            trace (one step: 1.0 by convention; no step: unscored). NLI backend
                            ``hf:<id or path>`` (a cross-encoder) or ``llm:<model spec>``; a backend
                            that cannot load leaves every score unscored with the reason.
                            Metrics: ``mean``, ``stderr``.
``trace_stability``         the epoch's reasoning trace (the score's value is the trace text); the
                            metric :func:`stability` gives SS over epochs.
==========================  ==========================================================================

CS and SS need several epochs of a sample (``epochs=K`` on the task or ``inspect eval --epochs K``):
they are metrics declared ``scores="unreduced"``, so inspect hands them every epoch's score, whatever
reducer the task uses. Per sample: CS_i = mean agreement of the typed answers over the epoch pairs,
SS_i = mean similarity of the traces over the epoch pairs (BERTScore F1 or embedding cosine); the
metric is the mean over samples with two or more epochs, NaN when there is none.

Answer type: the sample metadata ``answer_type``, else the scorer's ``answer_type``, else guessed from
the target and choices as ``reasonscope score`` guesses it. A sample with several targets is unscored:
reasonscope scores one gold answer per item (``reasonscope score --from inspect`` refuses it too).

Departure: reasonscope's CQ, LS and ES are read on the first sample of an item; here correctness and
coherence are scored on every epoch and reduced by the task's reducer (``mean`` unless the task says
otherwise), which equals reasonscope's value when ``epochs=1`` or with ``Epochs(K, first_epoch())``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from functools import lru_cache
from typing import Any

import anyio
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    Value,
    accuracy,
    mean,
    metric,
    score_reducer,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from ..behavior import metrics as M
from ..data.adapters.common import answer_type_of
from ..data.adapters.inspect_logs import input_text, output_fields, single_target
from ..data.loaders import RowError
from ..data.predictions import VALID_TYPES
from ..scorers.nli import make_nli
from ..scorers.settings import NLIConfig, SimilarityConfig
from ..scorers.similarity import make_similarity
from ..stats.bootstrap import mean_or_none
from ..storage.run_data import interpret, is_correct
from ..types import Generation, Item

NAN = float("nan")
_NLI, _SIM = NLIConfig(), SimilarityConfig()  # the scorers' defaults are the plan's (hf cross-encoder, BERTScore)


def _read(state: TaskState, target: Target, answer_type: str | None,
          answer_pattern: str | None) -> tuple[Item, Generation] | str:
    """The sample as a reasonscope item and its output as an interpreted generation, or why not."""
    try:
        gold = single_target(list(target))
    except RowError as err:
        return str(err)
    choices = [c.value for c in state.choices] or None
    kind = (state.metadata or {}).get("answer_type") or answer_type
    if kind is not None and kind not in VALID_TYPES:
        return f"answer_type {kind!r} is not one of {VALID_TYPES}"
    item = Item(id=str(state.sample_id), input=input_text(state.input), target=gold, choices=choices,
                answer_type=answer_type_of(gold, choices, kind),
                metadata={"answer_pattern": answer_pattern} if answer_pattern else {})
    try:
        fields = output_fields(state.output)
    except RowError as err:  # a token count that breaks the rule every provider's reply passes
        return f"{err.field}: {err}"
    row = {"model": str(state.model), "text": fields["prediction"], "finish_reason": fields["finish_reason"],
           "error": fields["error"], "completion_tokens": fields["completion_tokens"], "sample": state.epoch - 1}
    return item, interpret(row, item)


def _per_sample(scores: list[SampleScore]) -> dict[str, list[Score]]:
    """Each sample's epoch scores, in epoch order (as reasonscope orders an item's samples)."""
    out: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        out[str(s.sample_id)].append(s.score)
    return {k: sorted(v, key=lambda s: (s.metadata or {}).get("epoch") or 0) for k, v in out.items()}


def _mean(values: list[float | None]) -> float:
    value = mean_or_none(values)
    return NAN if value is None else value


@metric(scores="unreduced")
def consistency() -> Metric:
    """CS: the consistency of typed answers across epochs.

    CS: per sample, the share of epoch pairs whose typed answers agree (a missing answer agrees with nothing);
    the mean over samples with two or more epochs (NaN if none). Reads the answers that
    :func:`answer_correctness` records in each score's metadata.
    """

    def compute(scores: list[SampleScore]) -> Value:
        values = []
        for epoch_scores in _per_sample(scores).values():
            metas = [s.metadata or {} for s in epoch_scores if (s.metadata or {}).get("answer_type")]
            if metas:
                values.append(M.pairs_agreement([m.get("answer") for m in metas], metas[0]["answer_type"],
                                                metas[0].get("rel_tol", 1e-6)))
        return _mean(values)

    return compute


@lru_cache(maxsize=4)
def _similarity(method: str, model: str, num_layers: int | None):
    return make_similarity(SimilarityConfig(method=method, model=model, num_layers=num_layers))


@metric(scores="unreduced")
def stability() -> Metric:
    """SS: the stability of reasoning traces across epochs.

    SS: per sample, the mean similarity of the reasoning traces over epoch pairs (the backend that
    :func:`trace_stability` records: BERTScore F1 or embedding cosine); the mean over samples with two or more
    epochs (NaN if none, or if the backend cannot load).
    """

    def compute(scores: list[SampleScore]) -> Value:
        a: list[str] = []
        b: list[str] = []
        slices = []
        setting = None
        for epoch_scores in _per_sample(scores).values():
            traces = [str(s.value) for s in epoch_scores if isinstance(s.value, str)]
            setting = setting or next((s.metadata.get("similarity") for s in epoch_scores if s.metadata), None)
            start = len(a)
            for i in range(len(traces)):
                for j in range(i + 1, len(traces)):
                    a.append(traces[i])
                    b.append(traces[j])
            if len(a) > start:
                slices.append(slice(start, len(a)))
        if not a or setting is None:
            return NAN
        sim, _ = _similarity(setting["method"], setting["model"], setting.get("num_layers"))
        if sim is None:
            return NAN
        sims = sim.pairwise(a, b)
        return _mean([_mean(sims[s]) for s in slices])

    return compute


@score_reducer(name="first_epoch")
def first_epoch() -> ScoreReducer:
    """Keep the score of epoch 1 (reasonscope's CQ, LS and ES are read on an item's first sample)."""

    def reduce(scores: list[Score]) -> Score:
        firsts = [s for s in scores if (s.metadata or {}).get("epoch") == 1]
        return (firsts or scores)[0]

    return reduce


@scorer(metrics=[accuracy(), stderr(), consistency()])
def answer_correctness(answer_type: str | None = None, answer_pattern: str | None = None,
                       rel_tol: float = 1e-6) -> Scorer:
    """Typed answer correctness (reasonscope's CQ per epoch) and, over epochs, answer consistency (CS).

    Args:
        answer_type: number, boolean, choice, label or text, for samples whose metadata has no
            ``answer_type`` (default: guessed from the target and choices).
        answer_pattern: a regex whose group 1 is the final answer (else the final-answer statement).
        rel_tol: relative tolerance of numeric answers.
    """

    async def score(state: TaskState, target: Target) -> Score:
        read = _read(state, target, answer_type, answer_pattern)
        if isinstance(read, str):
            return Score.unscored(reason=read, metadata={"epoch": state.epoch})
        item, gen = read
        correct = is_correct(gen, item, rel_tol)
        return Score(value=1.0 if correct else 0.0, answer=None if gen.answer is None else str(gen.answer),
                     explanation=gen.answer_reason or f"answer {gen.answer!r}, gold {item.target!r}",
                     metadata={"answer": gen.answer, "answer_type": item.answer_type, "gold": item.target,
                               "failed": gen.error is not None, "rel_tol": rel_tol, "epoch": state.epoch})

    return score


class _LazyNLI:
    """The NLI backend, loaded on first use in a worker thread; calls are serialised (one model)."""

    def __init__(self, spec: str):
        backend, _, model = spec.partition(":")
        self.config = NLIConfig(backend=backend, **({"model": model} if model else {}))
        self.lock = threading.Lock()
        self.loaded = False
        self.scorer: Any = None
        self.reason: str | None = None

    def contradiction(self, pairs: list[tuple[str, str]]) -> list[float] | str:
        with self.lock:
            if not self.loaded:
                self.scorer, self.reason = make_nli(self.config)
                self.loaded = True
            if self.scorer is None:
                return f"not computed: {self.reason}"
            return self.scorer.contradiction(pairs) if pairs else []


@scorer(metrics=[mean(), stderr()])
def logical_coherence(nli: str = f"{_NLI.backend}:{_NLI.model}", answer_type: str | None = None,
                      answer_pattern: str | None = None) -> Scorer:
    """Logical coherence (reasonscope's LS) of each epoch's reasoning: NLI over consecutive steps.

    Args:
        nli: ``hf:<id or path>`` (a cross-encoder NLI model) or ``llm:<model spec>`` (a reasonscope
            provider judging with label log-probabilities), as ``reasonscope score --nli``.
        answer_type: As for :func:`answer_correctness` (it decides where the trace ends).
        answer_pattern: As for :func:`answer_correctness` (it decides where the trace ends).
    """
    backend = _LazyNLI(nli)

    async def score(state: TaskState, target: Target) -> Score:
        read = _read(state, target, answer_type, answer_pattern)
        if isinstance(read, str):
            return Score.unscored(reason=read, metadata={"epoch": state.epoch})
        _, gen = read
        if not gen.steps:
            return Score.unscored(reason="no reasoning steps (failed or empty generation)",
                                  metadata={"epoch": state.epoch})
        pairs = M.consecutive_pairs(gen.steps)
        probs = await anyio.to_thread.run_sync(backend.contradiction, pairs)
        if isinstance(probs, str):
            return Score.unscored(reason=probs, metadata={"epoch": state.epoch})
        value = M.coherence(probs, len(gen.steps))
        return Score(value=value, explanation=f"{len(gen.steps)} steps, mean contradiction "
                                              f"{sum(probs) / len(probs) if probs else 0.0:.3f}",
                     metadata={"steps": gen.steps, "contradiction": probs, "backend": backend.scorer.description,
                               "convention": "one step -> 1.0" if len(gen.steps) == 1 else None,
                               "epoch": state.epoch})

    return score


@scorer(metrics=[stability()])
def trace_stability(similarity: str = _SIM.method, model: str = _SIM.model, num_layers: int | None = _SIM.num_layers,
                    answer_type: str | None = None, answer_pattern: str | None = None) -> Scorer:
    """The reasoning trace of each epoch, compared across epochs by :func:`stability` (reasonscope's SS).

    Args:
        similarity: ``bertscore`` (BERTScore F1) or ``embedding`` (cosine of sentence embeddings).
        model: HF id or path; ``embedded-minilm`` is all-MiniLM-L6-v2 shipped on PyPI.
        num_layers: BERTScore layer.
        answer_type: As for :func:`answer_correctness` (it decides where the trace ends).
        answer_pattern: As for :func:`answer_correctness` (it decides where the trace ends).
    """
    setting = SimilarityConfig(method=similarity, model=model, num_layers=num_layers).model_dump()

    async def score(state: TaskState, target: Target) -> Score:
        read = _read(state, target, answer_type, answer_pattern)
        if isinstance(read, str):
            return Score.unscored(reason=read, metadata={"epoch": state.epoch})
        _, gen = read
        return Score(value=gen.trace or gen.raw_text, explanation="the reasoning trace of this epoch",
                     metadata={"similarity": setting, "epoch": state.epoch})

    return score


__all__ = ["answer_correctness", "consistency", "first_epoch", "logical_coherence", "stability",
           "trace_stability"]
