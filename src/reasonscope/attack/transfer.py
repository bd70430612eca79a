"""Transfer of successful MATCHA perturbations to other models (any provider, black-box included).

Each transfer model gets the clean question and each perturbed question with the same answer-first
prompt. Over the cases whose clean question it answers correctly, the outcome of the perturbed one is
decided exactly as for the white-box target (:func:`reasonscope.attack.outcome_rules.classify`): its clean
chain must pass the reasoning check (arithmetic, and the judge when one is configured), and the same
exclusions apply. Rates per method with their denominators, as for the target.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console

from ..execution.calls import complete_cached, planned_request
from ..shared_settings import StatsConfig
from ..storage.store import Store
from ..types import Item
from .answers import is_correct, same_answer
from .judging import judge_chains
from .layout import FEW_SHOT, PROMPT_VERSION
from .outcome_rules import ChainCheck, classify, outcome_rates
from .reference import reference_of
from .settings import AttackConfig

_ANSWER = re.compile(r"Answer:\s*(.*)")
_REASONING = re.compile(r"Reasoning:\s*(.*)", re.S)


def transfer_chain(text: str) -> tuple[str, str]:
    """(answer, reasoning) from a transfer model's answer-first text."""
    a = _ANSWER.search(text or "")
    r = _REASONING.search(text or "")
    answer = a.group(1).strip().splitlines()[0] if a and a.group(1).strip() else ""
    reasoning = r.group(1).split("\nQuestion:")[0].strip() if r else ""
    return answer, reasoning


def transfer_messages(question: str) -> list[dict[str, str]]:
    """The answer-first prompt sent to a transfer model for a (perturbed) question."""
    return [{"role": "user", "content": FEW_SHOT + " " + question.strip() + "\n\nContinue in the same format: "
             "one line 'Answer: ...', then one line 'Reasoning: ...'."}]


def _request(model, case: str, variant: str, question: str, item: Item, seed: int):
    return planned_request(model, "attack", None, variant, 0, transfer_messages(question), seed, PROMPT_VERSION,
                           {"target": item.target, "answer_type": item.answer_type}, item_id=case)


def run_transfer(cfg: AttackConfig, successes: list[tuple[str, str, Item, str, str]], store: Store,
                 stats: StatsConfig, *, seed: int, console: Console) -> dict[str, dict]:
    """Replay (case id, item key, item, method, perturbed question) against each transfer model."""
    from ..models.registry import create_model

    out: dict[str, dict] = {}
    for mc in cfg.transfer:
        model = create_model(mc)
        why = model.missing_requirements()
        if why:
            out[mc.display_name] = {"skipped": why}
            continue
        clean = {key: _request(model, key, "transfer:clean", item.input, item, seed)
                 for _, key, item, _, _ in successes}
        pert = {cid: _request(model, cid, f"transfer:{method}", q, item, seed) for cid, _, item, method, q in successes}
        completions = complete_cached(model, list(clean.values()) + list(pert.values()), store, console=console,
                                      label=f"transfer {model.name}")
        model.close()
        chains = {key: transfer_chain(completions[p.key].text) for key, p in clean.items()}
        chains |= {cid: transfer_chain(completions[p.key].text) for cid, p in pert.items()}
        failed = failed_cases(successes, {k: completions[p.key] for k, p in (clean | pert).items()},
                              stats.failed_generations)
        out[model.name] = _transfer_outcomes(cfg, model.name, successes, chains, store, stats, seed=seed,
                                             console=console, failed=failed)
    return out


def failed_cases(successes: list[tuple[str, str, Item, str, str]], completions: dict[str, Any],
                 policy: str) -> dict[str, str]:
    """Map case id -> why it is left out, for the cases with a failed generation.

    A failed clean generation is no clean answer: the case is left out. A failed perturbed generation is
    left out under ``stats.failed_generations: exclude`` (the default) and read as a changed answer
    under ``wrong``; a pending request (not sent yet) is always left out.
    """
    out = {}
    for cid, key, _, _, _ in successes:
        c_clean, c_pert = completions[key], completions[cid]
        bad = c_clean if c_clean.error else c_pert if c_pert.error else None
        if bad is not None and (bad is c_clean or bad.pending or policy == "exclude"):
            out[cid] = f"generation failed: {bad.error}"
    return out


def _transfer_outcomes(cfg: AttackConfig, name: str, successes: list[tuple[str, str, Item, str, str]],
                       chains: dict[str, tuple[str, str]], store: Store, stats: StatsConfig, *, seed: int,
                       console: Console, failed: dict[str, str] | None = None) -> dict[str, Any]:
    """Outcomes of one transfer model; its judge cases are ``<transfer model>><case id or item key>``.

    Cases in ``failed`` (case id -> why) are left out (:func:`failed_cases`).
    """
    failed = failed or {}
    answered = {key for _, key, item, _, _ in successes if is_correct(chains[key][0], item)}
    asked = {key: item.input for _, key, item, _, _ in successes if key in answered}
    asked |= {cid: q for cid, key, item, _, q in successes
              if key in answered and cid not in failed and same_answer(chains[cid][0], chains[key][0], item)}
    verdicts = judge_chains(cfg.judge, [(f"{name}>{c}", q, *chains[c]) for c, q in asked.items()], store, seed=seed,
                            console=console)
    verdicts = {c: verdicts[f"{name}>{c}"] for c in asked if f"{name}>{c}" in verdicts}
    rows, by_method = [], {}
    for cid, key, item, method, _ in successes:
        if cid in failed:
            rows.append({"case": cid, "method": method, "outcome": None, "why": failed[cid]})
            continue
        if key not in answered:
            rows.append({"case": cid, "method": method, "outcome": None, "why": "clean question answered wrongly"})
            continue
        (ca, cr), (pa, pr) = chains[key], chains[cid]
        ref = reference_of(item) if cfg.reference_check else None
        outcome = classify(answer_kept=same_answer(pa, ca, item), clean=ChainCheck.of(cr, verdicts.get(key), ref),
                           perturbed=ChainCheck.of(pr, verdicts.get(cid), ref), judge=cfg.judge is not None)
        rows.append({"case": cid, "method": method, "outcome": outcome.outcome, "why": outcome.why, "clean": [ca, cr],
                     "perturbed": [pa, pr]})
        by_method.setdefault(method, []).append(outcome.outcome)
    return {"rates": {m: outcome_rates(v, stats, seed) for m, v in by_method.items()},
            "n_replayed": len(successes), "answered_clean": len({k for _, k, *_ in successes} & answered),
            "rows": rows, "reasoning_check": cfg.reasoning_check()}
