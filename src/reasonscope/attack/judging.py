"""The attack family's judge calls.

The reasoning verdict on a chain (clean, perturbed or transferred, one reference-free prompt) and the
meaning verdict on a perturbed question.

Every call goes through the store (cached, resumable). A verdict is ``(True | False, None)`` or
``(None, why it is missing)``: the judge could not run here, the call failed, or its answer could not
be read (:func:`reasonscope.judge.parse.parse_verdict`). Without a judge no case is asked and the
result is empty.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from ..execution.calls import complete_cached, planned_request
from ..judge.parse import parse_verdict
from ..judge.prompts import REASONING_VERSION, reasoning_check_messages, same_meaning_messages
from ..judge.schemas import REASONING_SCHEMA, SAME_MEANING_SCHEMA
from ..shared_settings import ModelConfig
from ..storage.store import Store

Verdict = tuple[bool | None, str | None]
MEANING_VERSION = "judge-meaning-v1"


def ask_judge(judge_cfg: ModelConfig | None, cases: dict[str, tuple[list[dict[str, str]], dict]], *, template: str,
              key: str, store: Store, seed: int, console: Console, label: str, schema: dict
              ) -> dict[str, Verdict]:
    """Map case id -> the judge's true/false under ``key``, for case id -> (messages, mock meta).

    The answer is constrained to ``schema`` (see :mod:`reasonscope.models.structured`).
    """
    if judge_cfg is None or not cases:
        return {}
    from ..models.registry import create_model

    judge = create_model(judge_cfg)
    why = judge.missing_requirements()
    if why:
        console.print("[yellow]attack: judge skipped: " + escape(why))
        return {cid: (None, f"judge skipped: {why}") for cid in cases}
    planned = {cid: planned_request(judge, "attack", None, f"{template}:{cid}", 0, messages, seed, template, meta,
                                    item_id=cid, structured={"json_schema": schema})
               for cid, (messages, meta) in cases.items()}
    completions = complete_cached(judge, list(planned.values()), store, console=console, label=label)
    out = {}
    for cid, p in planned.items():
        c = completions[p.key]
        out[cid] = (None, f"judge call failed: {c.error}") if c.error else parse_verdict(c.text, key)
    judge.close()
    return out


def judge_chains(judge_cfg: ModelConfig | None, cases: list[tuple[str, str, str, str]], store: Store, *, seed: int,
                 console: Console) -> dict[str, Verdict]:
    """Map case id -> (is the reasoning correct?, why not read) for (case id, question, answer, reasoning)."""
    return ask_judge(judge_cfg, {cid: (reasoning_check_messages(question, answer, reasoning),
                                       {"task": "reasoning", "candidate": reasoning})
                                 for cid, question, answer, reasoning in cases},
                     template=REASONING_VERSION, key="correct", store=store, seed=seed, console=console,
                     label="reasoning judge", schema=REASONING_SCHEMA)


def meaning_checks(judge_cfg: ModelConfig | None, cases: list[tuple[str, str, str]], store: Store, *, seed: int,
                   console: Console) -> dict[str, Verdict]:
    """Map case id -> (does the perturbed question keep the original's meaning?, why not read).

    Read for each (case id, original, perturbed).
    """
    return ask_judge(judge_cfg, {cid: (same_meaning_messages(orig, pert), {"task": "meaning", "texts": [orig, pert]})
                                 for cid, orig, pert in cases},
                     template=MEANING_VERSION, key="same", store=store, seed=seed, console=console,
                     label="meaning judge", schema=SAME_MEANING_SCHEMA)
