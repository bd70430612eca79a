"""What the information family trains and scores on.

The baselines b (rule, LLM rewrite or column; every
LLM call through the store), generated rationales, and the train / validation split.
"""

from __future__ import annotations

import random

from rich.console import Console

from ..execution.calls import complete_cached, planned_request
from ..storage.store import Store
from ..types import Item
from .baseline import Baseline, label_text, rewrite_messages, rule_baseline_with_rule
from .settings import InformationConfig

# the form an LLM baseline rewrite is constrained to (models.structured): one non-empty line ending a sentence
BASELINE_FORM = r"""[A-Za-z0-9"'(][^\n]{2,298}[.!?]"""


def make_baselines(items: list[Item], cfg: InformationConfig, store: Store, *, seed: int,
                   console: Console) -> dict[str, Baseline]:
    """Map item id -> baseline and the rule that built it.

    An ``llm`` rewrite that failed or came back empty is
    replaced by the rule baseline and marked ``llm failed -> rule``.
    """
    if cfg.baseline == "rule":
        return {it.id: rule_baseline_with_rule(it, cfg.nli_relation) for it in items}
    if cfg.baseline == "column":
        missing = [it.id for it in items if cfg.baseline_column not in it.metadata]
        if missing:
            raise ValueError(f"baseline column {cfg.baseline_column!r} missing from items {missing[:5]}")
        return {it.id: Baseline(str(it.metadata[cfg.baseline_column]), "column") for it in items}
    from ..models.registry import create_model

    model = create_model(cfg.baseline_model)
    planned = {it.id: planned_request(model, "information", None, "baseline", 0,
                                      rewrite_messages(it.input, label_text(it)), seed, "baseline-rewrite-v1",
                                      {"task": "baseline"}, item_id=it.id, structured={"regex": BASELINE_FORM})
               for it in items}
    completions = complete_cached(model, list(planned.values()), store, console=console, label="baseline rewrite")
    out = {}
    for it in items:
        c = completions[planned[it.id].key]
        text = c.text.strip().splitlines()[0].strip() if c.text and c.text.strip() and not c.error else ""
        out[it.id] = (Baseline(text, "llm") if text else
                      Baseline(rule_baseline_with_rule(it, cfg.nli_relation).text, "llm failed -> rule"))
    return out


def baseline_notes(baselines: dict[str, Baseline]) -> tuple[dict[str, int], list[str]]:
    """(rule -> count, warnings about the baselines that a stand-in rule built)."""
    counts: dict[str, int] = {}
    for b in baselines.values():
        counts[b.rule] = counts.get(b.rule, 0) + 1
    n, out = len(baselines), []
    if counts.get("llm failed -> rule"):
        out.append(f"{counts['llm failed -> rule']} of {n} llm baseline rewrites failed or came back empty: those "
                   "items use the rule baseline instead (rule 'llm failed -> rule' in the baselines table)")
    if counts.get("fallback"):
        out.append(f"{counts['fallback']} of {n} rule baselines use the fallback wording 'Asked \"<question>\", the "
                   "reply is <y>.' because the question rules could not rewrite the question (rule 'fallback')")
    return counts, out


def generated_rationales(items: list[Item], cfg: InformationConfig, store: Store, *, seed: int,
                         console: Console) -> dict[str, dict[str, str]]:
    """Map variant name -> item id -> rationale, from each generator model."""
    from ..models.registry import create_model

    out: dict[str, dict[str, str]] = {}
    for mc in cfg.generators:
        model = create_model(mc)
        if model.missing_requirements():
            console.print(f"[yellow]information: generator {mc.display_name} skipped")
            continue
        msgs = {it.id: [{"role": "user", "content": f"Question: {it.input}\nAnswer: {label_text(it)}\n"
                         "Explain in one or two sentences why this answer is right."}] for it in items}
        planned = {i: planned_request(model, "information", None, "rationale", 0, m, seed, "rationale-v1",
                                      {"task": "rationale"}, item_id=i) for i, m in msgs.items()}
        completions = complete_cached(model, list(planned.values()), store, console=console,
                                         label=f"rationales {model.name}")
        out[f"generated:{model.name}"] = {i: completions[p.key].text.strip() for i, p in planned.items()
                                         if not completions[p.key].error}
        model.close()
    return out


def split_train(items: list[Item], fraction: float, seed: int) -> tuple[list[Item], list[Item]]:
    """Seeded split of the training items into (train, validation).

    The validation set holds ``round(fraction * n)`` items, at least 1 when n >= 2, and none when n < 2.
    """
    order = list(items)
    random.Random(seed).shuffle(order)
    n_val = max(1, round(fraction * len(order))) if len(order) > 1 else 0
    return order[n_val:], order[:n_val]
