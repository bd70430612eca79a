"""The attack family (seed 004, MATCHA): does the reasoning break while the answer stays right?

Per white-box model (``hf/...`` or ``smollm2``) and item:

1. the clean answer-first chain (greedy); only items answered correctly (typed match with the gold
   answer) are attacked, the others are counted as *not attacked*;
2. each method (``token``, ``embedding``, ``random``; :mod:`reasonscope.attack.attacker`) perturbs the
   question and the answer and reasoning are regenerated from the perturbed input;
3. outcome (:func:`classify`): **wrong** when the answer changed (typed match with the original
   answer); **success** when the answer is kept and the reasoning fails, i.e. the judge (any
   provider, comparing it with the original chain) says it is incorrect, or one of its stated
   equations is false (:mod:`reasonscope.attack.arithmetic`); **unattackable** otherwise (also when
   the meaning judge says the perturbed question changed meaning).

Rates: success, wrong and unattackable over the correctly answered items, each the mean of an
indicator with a 95% bootstrap CI (items resampled). The ``random`` method is the baseline with the
same insertion budget. The white-box work of an item is cached in the store's request cache (provider
``attack``, key = hash of the model, the item, the methods, the settings and the prompt version),
so a killed run resumes without attacking an item twice; judge and transfer calls go through the
store like every model call.

Transfer: the perturbed questions of successful token and random attacks (embedding perturbations
have no text) are sent to the ``transfer`` models with the same answer-first prompt, after the clean
question; over the items that model answers correctly when clean, the same three outcomes are
counted.

Executors: ``local`` attacks items one by one in this process; ``ray`` spreads them over Ray actors
(one GPU each when GPUs are present), each loading the model once (:mod:`reasonscope.attack.executor`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..calls import complete_cached, make_progress, planned_request
from ..config import AttackConfig, ModelConfig, StatsConfig
from ..judge.parse import parse_verdict
from ..judge.prompts import REASONING_VERSION, reasoning_check_messages
from ..stats.bootstrap import estimate
from ..store import Store
from ..text.answers import answers_match, extract_answer, parse_target
from ..types import Completion, Item, Score, stable_hash
from .arithmetic import arithmetic_holds
from .attacker import AttackSettings
from .layout import FEW_SHOT, PROMPT_VERSION

FAMILY = "attack"
OUTCOMES = ("success", "wrong", "unattackable")
WHITE_BOX = ("hf", "smollm2")


def settings_of(cfg: AttackConfig, seed: int) -> AttackSettings:
    return AttackSettings(ratio=cfg.ratio, steps=cfg.steps, top_k=cfg.top_k, candidates=cfg.candidates, lam=cfg.lam,
                          epsilon_p=cfg.epsilon_p, embedding_steps=cfg.embedding_steps,
                          min_similarity=cfg.min_similarity, answer_tokens=cfg.answer_tokens,
                          cot_tokens=cfg.cot_tokens, seed=seed)


def read_answer(text: str, item: Item) -> Any:
    """The typed answer of an ``Answer:`` line (None when it cannot be read)."""
    return extract_answer(f"Answer: {text}", item.answer_type, choices=item.choices).answer


def same_answer(a: Any, b: Any, item: Item) -> bool:
    return a is not None and b is not None and answers_match(a, b, item.answer_type)


def is_correct(answer_text: str, item: Item) -> bool:
    return same_answer(read_answer(answer_text, item), parse_target(item.target, item.answer_type, item.choices), item)


def classify(item: Item, original_answer: str, new_answer: str, new_reasoning: str, *,
             judge_correct: bool | None = None, meaning_kept: bool | None = None) -> tuple[str, str]:
    """(outcome, why) of one attack, see the module docstring."""
    if meaning_kept is False:
        return "unattackable", "the judge says the perturbed question changed meaning"
    if not same_answer(read_answer(new_answer, item), read_answer(original_answer, item), item):
        return "wrong", f"answer changed: {original_answer!r} -> {new_answer!r}"
    ok, eqs = arithmetic_holds(new_reasoning)
    if not ok:
        bad = next(e.text for e in eqs if not e.holds)
        return "success", f"answer kept; false equation {bad!r}"
    if judge_correct is False:
        return "success", "answer kept; the judge says the reasoning is incorrect"
    return "unattackable", "answer kept; equations hold; reasoning " + (
        "judged correct" if judge_correct else "not judged")


def attack_key(spec: str, revision: str | None, item: Item, methods: list[str], settings: AttackSettings) -> str:
    return "attack-" + stable_hash({"model": spec, "revision": revision, "input": item.input, "target": item.target,
                                    "answer_type": item.answer_type, "methods": sorted(methods),
                                    "settings": asdict(settings), "prompt": PROMPT_VERSION}, length=48)


def attack_item(attacker, item: Item, item_key: str, methods: list[str]) -> dict:
    """The white-box part for one item: clean chain, correctness, and each method's perturbed chain."""
    layout = attacker.layout_for(item.input)
    clean = attacker.answer_first(layout)
    record: dict[str, Any] = {"clean": asdict(clean), "correct": is_correct(clean.answer, item), "methods": {}}
    if not record["correct"] or not clean.reasoning:
        record["skipped"] = "answered incorrectly" if not record["correct"] else "empty reasoning"
        return record
    full = attacker.layout_for(item.input, clean)
    record["tokens"] = {"question": len(full.question), "answer": len(full.answer), "cot": len(full.cot),
                        "lambda": attacker.lam(full)}
    for method in methods:
        if method == "token":
            res = attacker.token_attack(full, item_key, item.input)
        elif method == "embedding":
            res = attacker.embedding_attack(full, item_key)
        else:
            res = attacker.random_attack(full, item_key)
        record["methods"][method] = asdict(res)
    return record


def white_box_targets(models: list[ModelConfig], console: Console) -> tuple[list[ModelConfig], dict[str, str]]:
    from ..models.registry import split_spec

    out, skipped = [], {}
    for m in models:
        provider, _ = split_spec(m.spec)
        if provider in WHITE_BOX:
            out.append(m)
        else:
            skipped[m.display_name] = f"{m.display_name}: attacks need a white-box model (hf/... or smollm2)"
            console.print("[yellow]attack: " + escape(skipped[m.display_name]))
    return out, skipped


def run_attacks(store: Store, model_cfg: ModelConfig, items: list[tuple[str, Item]], cfg: AttackConfig,
                settings: AttackSettings, *, executor: str, console: Console) -> dict[str, dict]:
    """item key -> white-box record, from the store when cached, else attacked (committed one by one)."""
    keys = {k: attack_key(model_cfg.spec, model_cfg.revision, it, cfg.methods, settings) for k, it in items}
    done = store.cached_keys(keys.values())
    todo = [(k, it) for k, it in items if keys[k] not in done]
    if todo:
        from .executor import attack_items

        progress = make_progress(console)
        with progress:
            task = progress.add_task(f"attack {model_cfg.display_name}", total=len(items),
                                     completed=len(items) - len(todo))
            for k, record in attack_items(model_cfg, todo, cfg, settings, executor=executor):
                store.put_completion(keys[k], provider="attack", model_id=model_cfg.spec,
                                     request={"item": k, "methods": cfg.methods, "settings": asdict(settings),
                                              "prompt": PROMPT_VERSION},
                                     completion=Completion(text=json.dumps(record), finish_reason="stop"),
                                     source="attack")
                progress.advance(task)
    out = {}
    for k, _ in items:
        c = store.get_completion(keys[k])
        out[k] = json.loads(c.text) if c is not None and not c.error else {"error": "no record"}
    return out


def ask_judge(judge_cfg: ModelConfig | None, cases: dict[str, tuple[list[dict[str, str]], dict]], *, template: str,
              key: str, store: Store, seed: int, console: Console, label: str
              ) -> dict[str, tuple[bool | None, str | None]]:
    """case id -> (the judge's true/false under ``key``, why it could not be read), for case id -> (messages,
    mock meta). Empty without a judge; every case unread when the judge cannot run here."""
    if judge_cfg is None or not cases:
        return {}
    from ..models.registry import create_model

    judge = create_model(judge_cfg)
    why = judge.missing_requirements()
    if why:
        console.print("[yellow]attack: judge skipped: " + escape(why))
        return {cid: (None, f"judge skipped: {why}") for cid in cases}
    planned = {cid: planned_request(judge, "attack", None, f"{template}:{cid}", 0, messages, seed, template, meta,
                                    item_id=cid) for cid, (messages, meta) in cases.items()}
    completions = complete_cached(judge, list(planned.values()), store, console=console, label=label)
    out = {}
    for cid, p in planned.items():
        c = completions[p.key]
        out[cid] = (None, f"judge call failed: {c.error}") if c.error else parse_verdict(c.text, key)
    judge.close()
    return out


def judge_chains(judge_cfg: ModelConfig | None, cases: list[tuple[str, Item, str, str, str]], store: Store, *,
                 seed: int, console: Console) -> dict[str, tuple[bool | None, str | None]]:
    """case id -> (reasoning correct?, why not read) for (id, item, answer, reference chain, chain)."""
    return ask_judge(judge_cfg, {cid: (reasoning_check_messages(item.input, answer, ref, cand),
                                       {"task": "reasoning", "reference": ref, "candidate": cand})
                                 for cid, item, answer, ref, cand in cases},
                     template=REASONING_VERSION, key="correct", store=store, seed=seed, console=console,
                     label="reasoning judge")


def meaning_checks(judge_cfg: ModelConfig | None, cases: list[tuple[str, str, str]], store: Store, *, seed: int,
                   console: Console) -> dict[str, bool | None]:
    """case id -> does the perturbed question keep the original's meaning (the judge's ``same``)."""
    from ..judge.prompts import same_meaning_messages

    verdicts = ask_judge(judge_cfg, {cid: (same_meaning_messages(orig, pert), {"task": "meaning", "texts": [orig, pert]})
                                     for cid, orig, pert in cases},
                         template="judge-meaning-v1", key="same", store=store, seed=seed, console=console,
                         label="meaning judge")
    return {cid: v for cid, (v, _) in verdicts.items()}


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
    return [{"role": "user", "content": FEW_SHOT + " " + question.strip() + "\n\nContinue in the same format: "
             "one line 'Answer: ...', then one line 'Reasoning: ...'."}]


def _rates(outcomes: list[str], stats: StatsConfig, seed: int) -> dict[str, dict]:
    return {o: estimate([1.0 if x == o else 0.0 for x in outcomes], stats, seed) for o in OUTCOMES}


def run_transfer(cfg: AttackConfig, successes: list[tuple[str, Item, str, str]], store: Store, stats: StatsConfig,
                 *, seed: int, console: Console) -> dict[str, dict]:
    """Replay (case id, item, method, perturbed question) against each transfer model."""
    from ..models.registry import create_model

    out: dict[str, dict] = {}
    for mc in cfg.transfer:
        model = create_model(mc)
        why = model.missing_requirements()
        if why:
            out[mc.display_name] = {"skipped": why}
            continue
        clean = {key: planned_request(model, "attack", None, "transfer:clean", 0, transfer_messages(item.input), seed,
                                      PROMPT_VERSION, {"target": item.target, "answer_type": item.answer_type},
                                      item_id=key) for key, item, _, _ in successes}
        pert = {cid: planned_request(model, "attack", None, f"transfer:{method}", 0, transfer_messages(q), seed,
                                     PROMPT_VERSION, {"target": item.target, "answer_type": item.answer_type},
                                     item_id=cid) for cid, item, method, q in successes}
        completions = complete_cached(model, list(clean.values()) + list(pert.values()), store, console=console,
                                         label=f"transfer {model.name}")
        rows, by_method = [], {}
        for cid, item, method, _ in successes:
            c_clean, c_pert = completions[clean[cid].key], completions[pert[cid].key]
            # a failed generation is no answer: left out (stats.failed_generations: exclude), or, for the
            # perturbed question only, a changed answer (wrong); a pending one is always left out
            bad = c_clean if c_clean.error else c_pert if c_pert.error else None
            if bad is not None and (bad is c_clean or bad.pending or stats.failed_generations == "exclude"):
                rows.append({"case": cid, "method": method, "outcome": None, "why": f"generation failed: {bad.error}"})
                continue
            ca, cr = transfer_chain(c_clean.text)
            pa, pr = transfer_chain(c_pert.text)
            if not is_correct(ca, item):
                rows.append({"case": cid, "method": method, "outcome": None, "why": "clean question answered wrongly"})
                continue
            outcome, why = classify(item, ca, pa, pr)
            rows.append({"case": cid, "method": method, "outcome": outcome, "why": why, "clean": [ca, cr],
                         "perturbed": [pa, pr]})
            by_method.setdefault(method, []).append(outcome)
        out[model.name] = {"rates": {m: {"n": len(v), **_rates(v, stats, seed)} for m, v in by_method.items()},
                           "n_replayed": len(successes), "rows": rows,
                           "reasoning_check": "arithmetic only (transfer chains are not judged)"}
        model.close()
    return out


def score_attack(store: Store, run_id: str, cfg: AttackConfig, stats: StatsConfig, datasets: dict[str, list[Item]],
                 models: list[ModelConfig], *, seed: int = 0, executor: str = "local",
                 console: Console | None = None) -> dict:
    console = console or Console(stderr=True)
    settings = settings_of(cfg, seed)
    targets, skipped = white_box_targets(models, console)
    items: list[tuple[str, Item]] = []
    for ds, lst in datasets.items():
        chosen = [it for it in lst if cfg.answer_types is None or it.answer_type in cfg.answer_types]
        items += [(f"{ds}/{it.id}", it) for it in chosen[: cfg.limit]]
    table: dict[str, Any] = {"settings": asdict(settings), "methods": cfg.methods, "prompt": PROMPT_VERSION,
                             "judge": cfg.judge.spec if cfg.judge else None,
                             "reasoning_check": "judge + arithmetic" if cfg.judge else "arithmetic only (no judge)",
                             "models": {}, "skipped_models": skipped, "warnings": []}
    scores: list[Score] = []
    successes_all: list[tuple[str, Item, str, str]] = []
    for mc in targets:
        records = run_attacks(store, mc, items, cfg, settings, executor=executor, console=console)
        cases, meaning_cases = [], []
        for key, item in items:
            rec = records[key]
            for method, res in rec.get("methods", {}).items():
                cid = f"{mc.display_name}|{method}|{key}"
                if same_answer(read_answer(res["chain"]["answer"], item), read_answer(rec["clean"]["answer"], item),
                               item):
                    cases.append((cid, item, rec["clean"]["answer"], rec["clean"]["reasoning"],
                                  res["chain"]["reasoning"]))
                if cfg.meaning_judge and res.get("perturbed_question"):
                    meaning_cases.append((cid, item.input, res["perturbed_question"]))
        verdicts = judge_chains(cfg.judge, cases, store, seed=seed, console=console)
        meanings = meaning_checks(cfg.judge, meaning_cases, store, seed=seed, console=console) \
            if cfg.meaning_judge else {}
        per_method: dict[str, list[str]] = {m: [] for m in cfg.methods}
        seconds: dict[str, list[float]] = {m: [] for m in cfg.methods}
        rows = []
        n_correct = 0
        for key, item in items:
            rec = records[key]
            if rec.get("error"):
                continue
            n_correct += bool(rec["correct"])
            for method in cfg.methods:
                res = rec.get("methods", {}).get(method)
                if res is None:
                    scores.append(Score(family=FAMILY, metric=f"{method}.success", model=mc.display_name,
                                        item_id=key, value=None, reason=f"not attacked: {rec.get('skipped')}",
                                        details={"clean": rec["clean"]}))
                    continue
                cid = f"{mc.display_name}|{method}|{key}"
                judged, judge_why = verdicts.get(cid, (None, None))
                outcome, why = classify(item, rec["clean"]["answer"], res["chain"]["answer"],
                                        res["chain"]["reasoning"], judge_correct=judged,
                                        meaning_kept=meanings.get(cid))
                per_method[method].append(outcome)
                seconds[method].append(res["seconds"])
                row = {"model": mc.display_name, "item": key, "method": method, "outcome": outcome, "why": why,
                       "question": item.input, "perturbed_question": res["perturbed_question"],
                       "clean": rec["clean"], "perturbed": res["chain"], "objective_before": res["objective_before"],
                       "objective_after": res["objective_after"], "judge": judged, "judge_unread": judge_why,
                       "seconds": res["seconds"], "rejected": res["rejected"], "details": res["details"]}
                rows.append(row)
                scores.append(Score(family=FAMILY, metric=f"{method}.success", model=mc.display_name, item_id=key,
                                    value=1.0 if outcome == "success" else 0.0, reason=why,
                                    details={"outcome": outcome, **{k: row[k] for k in
                                                                    ("perturbed_question", "clean", "perturbed")}}))
                if outcome == "success" and method != "embedding" and res["perturbed_question"]:
                    successes_all.append((cid, item, method, res["perturbed_question"]))
        table["models"][mc.display_name] = {
            "items": len(items), "answered_correctly": n_correct,
            "rates": {m: {"n": len(per_method[m]), **_rates(per_method[m], stats, seed)} for m in cfg.methods},
            "seconds_per_item": {m: (sum(v) / len(v) if v else None) for m, v in seconds.items()},
            "rows": rows}
        if n_correct == 0:
            table["warnings"].append(f"{mc.display_name} answered no item correctly: nothing was attacked")
    table["transfer"] = run_transfer(cfg, successes_all, store, stats, seed=seed, console=console) \
        if cfg.transfer else {}
    store.delete_scores(run_id, FAMILY)
    store.put_scores(run_id, scores)
    store.put_artefact(run_id, "attack.json", "json", json.dumps(table, default=str))
    return table
