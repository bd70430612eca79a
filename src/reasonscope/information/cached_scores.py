"""A trained evaluator's scores behind the score cache, so a re-run reads them back instead of decoding again.

:class:`CachedEvaluator` wraps an :class:`~reasonscope.information.evaluator.Evaluator` whose weights are
those of a saved folder (``OUT/best`` of :mod:`~reasonscope.information.training`) and serves the three
scoring calls of the information tables from the store's score cache (kind ``evaluator``):

* ``log_likelihood(inputs, targets, reduction)``: one value per ``[input, target]`` pair;
* ``candidate_log_likelihoods(inputs, candidates)``: one list of summed log-probabilities per input;
* ``predict(inputs, None)``: the greedy decoding of each input (with candidates it is the arg-max of the
  candidate log-likelihoods, served by the call above).

The scorer's identity is the folder's fingerprint (name, size and modification time of every file:
retraining writes new files, so a retrained evaluator never reads an old score) with the operation,
its setting (reduction, candidate list) and ``max_input_tokens``; the libraries' versions are part of
it as for every cached scorer. Values are stored as JSON, so a float read back is the float computed.
Everything else (``fit_inputs``, ``tokenizer``, ...) is the wrapped evaluator's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..scorers.cache import CachedScorer, ScoreCache


class CachedEvaluator:
    """``evaluator``'s scoring calls served from ``cache`` (module docstring)."""

    def __init__(self, evaluator: Any, folder: str | Path, cache: ScoreCache | None, *, label: str):
        self._evaluator = evaluator
        self._folder = str(folder)
        self._cache = cache
        self._label = label
        self._scorers: dict[str, CachedScorer] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._evaluator, name)

    def _scorer(self, op: str, setting: Any, compute) -> CachedScorer:
        key = f"{op}:{setting!r}"
        if key not in self._scorers:
            ev = self._evaluator
            self._scorers[key] = CachedScorer(
                kind="evaluator", model=self._folder,
                settings={"op": op, "setting": setting, "max_input_tokens": ev.max_input_tokens},
                load=lambda: ev, compute=compute, description=f"{self._label} ({ev.source}): {op}",
                cache=self._cache, chunk=64, label=f"information {self._label}", progress=False)
        return self._scorers[key]

    def log_likelihood(self, inputs: list[str], targets: list[str], *, reduction: str = "sum",
                       batch_size: int = 16) -> list[float]:
        """Log-likelihood log p(target | input) of each pair, read from the cache or computed and stored.

        Same contract as :meth:`~reasonscope.information.evaluator.Evaluator.log_likelihood`.
        """
        scorer = self._scorer("log_likelihood", reduction, lambda ev, pairs: ev.log_likelihood(
            [x for x, _ in pairs], [t for _, t in pairs], reduction=reduction, batch_size=batch_size))
        return [float(v) for v in scorer.run([[x, t] for x, t in zip(inputs, targets, strict=True)])]

    def candidate_log_likelihoods(self, inputs: list[str], candidates: list[str], *,
                                  batch_size: int = 16) -> list[list[float]]:
        """Summed log p(c | x) of every candidate c for every input x, from the cache or computed."""
        scorer = self._scorer("candidates", list(candidates), lambda ev, xs: ev.candidate_log_likelihoods(
            xs, list(candidates), batch_size=batch_size))
        return [list(map(float, v)) for v in scorer.run(list(inputs))]

    def predict(self, inputs: list[str], candidates: list[str] | None = None, *,
                batch_size: int = 16) -> list[str]:
        """The evaluator's answer to each input.

        With ``candidates``: the candidate of highest log-likelihood (ties to the first); without: the greedy
        decoding, from the cache or computed and stored.
        """
        if candidates:
            scores = self.candidate_log_likelihoods(inputs, candidates, batch_size=batch_size)
            return [candidates[max(range(len(candidates)), key=s.__getitem__)] for s in scores]
        scorer = self._scorer("greedy", None, lambda ev, xs: ev.predict(xs, None, batch_size=batch_size))
        return [str(v) for v in scorer.run(list(inputs))]

    @property
    def stats(self) -> dict[str, int]:
        """Computed and cached inputs over every operation (for tests and the run notes)."""
        return {"computed": sum(s.stats.computed for s in self._scorers.values()),
                "cached": sum(s.stats.cached for s in self._scorers.values())}
