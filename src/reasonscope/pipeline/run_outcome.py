"""The final status of a run: what each model answered, and the exit code of the command.

Every request a run makes for a model ends *answered* (a successful generation), *failed* (stored
with its reason: a refusal, an empty reply, a rejected request) or *pending* (no answer that says
anything about the model: rate limits or server errors outlasted the retries, or the key or endpoint
was refused; not stored, sent again by the next run). See :mod:`reasonscope.models.base`.

Exit codes of the commands that run a plan (``run``, ``demo``, ``evidence``, ``attack``,
``information``, ``attributes explain``):

====  ==========================================================================================
0     every model has at least one answered request, none is pending, and no model's failed share
      exceeds ``--max-failed``
1     the run finished and wrote its outputs, but measured too little: a model of the plan was
      skipped (missing key or SDK), a model has no answered request and nothing pending (every
      request failed for good), or a model's failed generations exceed ``--max-failed``
2     the plan, a dataset or an option is invalid: nothing was sent to any model
3     the run finished and wrote its outputs, but requests are pending: run the same command
      again to send them (code 1 wins when both apply)
130   interrupted (Ctrl-C); completed generations are kept, the same command finishes the run
====  ==========================================================================================

The reason is printed on the command's last line and recorded in the run's notes (``summary.json``).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

from ..storage.store import Store

OK, NOT_MEASURED, PENDING, INTERRUPTED = 0, 1, 3, 130  # 2 (invalid input) is raised before a run starts


@dataclass
class ModelTally:
    """The requests of one model in one run, by how they ended."""

    requested: int = 0
    answered: int = 0
    failed: int = 0
    pending: int = 0
    failed_example: str | None = None
    pending_example: str | None = None

    @property
    def failed_share(self) -> float | None:
        """Failed generations over the requests that ended (answered + failed); None when none ended."""
        done = self.answered + self.failed
        return self.failed / done if done else None


@dataclass(frozen=True)
class FailedLimit:
    """The most failed generations a model may have before the run exits 1.

    A share of its ended requests (``5%``) or a count (``3``).
    """

    share: float | None = None
    count: int | None = None

    @classmethod
    def parse(cls, text: str) -> FailedLimit:
        """``"5%"`` -> share 0.05; ``"3"`` -> count 3. Raises ValueError otherwise."""
        raw = text.strip()
        if m := re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", raw):
            share = float(m.group(1)) / 100
            if not 0 <= share <= 1:
                raise ValueError(f"--max-failed {text!r}: a percentage must lie in [0%, 100%]")
            return cls(share=share)
        if re.fullmatch(r"\d+", raw):
            return cls(count=int(raw))
        raise ValueError(f"--max-failed {text!r}: expected a percentage such as 5% or a count such as 3")

    def exceeded(self, t: ModelTally) -> bool:
        """Whether the model's failed generations are above the limit.

        Above: strictly more than ``count``, or a failed share strictly above ``share`` (no share, no excess).
        """
        if self.count is not None:
            return t.failed > self.count
        share = t.failed_share
        return share is not None and self.share is not None and share > self.share + 1e-12

    def __str__(self) -> str:
        return f"{self.count}" if self.count is not None else f"{self.share * 100:g}%"


@dataclass
class Outcome:
    """The exit code and the one-line reason (empty when the code is 0)."""

    code: int
    message: str
    tallies: dict[str, ModelTally]
    max_failed: str | None = None

    def as_dict(self) -> dict:
        """The outcome as JSON-ready data: exit code, message, failure limit and each model's tally."""
        return {"code": self.code, "message": self.message, "max_failed": self.max_failed,
                "models": {m: asdict(t) for m, t in self.tallies.items()}}


def tally(store: Store, run_id: str, pending_errors: dict[str, str] | None = None) -> dict[str, ModelTally]:
    """Per model: requests linked to the run, answered, failed, pending (no stored completion).

    Counted in the store (:meth:`Store.run_generation_counts`), no generation is read.
    """
    out: dict[str, ModelTally] = {}
    for model, c in store.run_generation_counts(run_id).items():
        out[model] = ModelTally(requested=c["requested"], answered=c["done"] - c["failed"], failed=c["failed"],
                                pending=c["requested"] - c["done"], failed_example=c["failed_example"],
                                pending_example=(pending_errors or {}).get(model)
                                if c["requested"] > c["done"] else None)
    return out


def _example(text: str | None) -> str:
    return f" (e.g. {text[:200]})" if text else ""


def decide(tallies: dict[str, ModelTally], max_failed: FailedLimit | None = None,
           skipped: dict[str, str] | None = None) -> Outcome:
    """The exit code and reason for these tallies and the models skipped (no key, no SDK).

    See the module docstring. A skipped model measured nothing, so it counts as code 1.
    """
    measured_too_little = [f"skipped {why}" if why.startswith(f"{model}:") else f"skipped {model}: {why}"
                           for model, why in (skipped or {}).items()]
    pending = []
    for model, t in tallies.items():
        if t.requested and not t.answered and not t.pending:
            measured_too_little.append(f"{model}: no successful generation, all {t.failed} requests failed"
                                       f"{_example(t.failed_example)}")
        elif max_failed is not None and max_failed.exceeded(t):
            share = t.failed_share if t.failed_share is not None else math.nan
            measured_too_little.append(f"{model}: {t.failed} of {t.answered + t.failed} generations failed "
                                       f"({share:.1%}), more than --max-failed {max_failed}{_example(t.failed_example)}")
        if t.pending:
            still = "no successful generation yet, " if not t.answered else ""
            pending.append(f"{model}: {still}{t.pending} of {t.requested} requests pending{_example(t.pending_example)}")
    limit = str(max_failed) if max_failed is not None else None
    if measured_too_little:
        return Outcome(NOT_MEASURED, "; ".join(measured_too_little + pending), tallies, limit)
    if pending:
        return Outcome(PENDING, "; ".join(pending) + "; run the same command again to send them", tallies, limit)
    return Outcome(OK, "", tallies, limit)
