"""The attack family: does the reasoning break while the answer stays right?

MATCHA, from *Misaligning Reasoning with Answers*.

Per white-box model (``hf/...`` or ``smollm2``) and item:

1. the clean answer-first chain (greedy); only items answered correctly (typed match with the gold
   answer) and with a non-empty chain are attacked, the others are counted as *not attacked*;
2. each method (``token``, ``embedding``, ``random``; :mod:`reasonscope.attack.attacker`) perturbs the
   question and the answer and reasoning are regenerated from the perturbed input;
3. the reasoning check runs on the clean and on the perturbed chain alike: the arithmetic check
   (:mod:`reasonscope.attack.arithmetic`), with ``reference_check`` the reference check against the
   item's known steps (:mod:`reasonscope.attack.reference`; items whose gold rationale gives them), and,
   when ``judge`` is set, the judge with one reference-free prompt
   (:func:`reasonscope.judge.prompts.reasoning_check_messages`);
4. the outcome (:mod:`reasonscope.attack.outcome_rules`): success, wrong or unattackable, or one of the
   excluded groups: clean reasoning already wrong, not judged, invalid attack.

Rates: success, wrong and unattackable over the decided attacks (attacked - excluded), each the mean
of an indicator with an exact Clopper-Pearson CI over items; the excluded groups are counted. A higher
success rate means more fragile reasoning. The ``random`` method is the baseline with the same
insertion (the same seeded draws). Without a judge only false equations can make an attack a success,
and a kept answer with no false equation is *not judged*; a warning says so.

The white-box work of an item is cached in the store's request cache (provider ``attack``, key = hash
of the model, the item, the methods, the settings, the prompt version and the record version), so a
killed run resumes without attacking an item twice; outcomes are recomputed from the stored chains on
every run. Judge and transfer calls go through the store like every model call.

Transfer: the perturbed questions of successful token and random attacks (embedding perturbations
have no text) are sent to the ``transfer`` models with the same answer-first prompt, after the clean
question; each transfer model's clean and perturbed chains get the same reasoning check (the judge
included) and the same outcomes.

Executors: ``local`` attacks items in this process: the clean chains of ``batch_size`` items as one batch,
each item's searches, then the perturbed chains of consecutive items together; ``ray`` spreads them over Ray
actors (one GPU each when GPUs are present), each loading the model once (:mod:`reasonscope.attack.executor`).
Either way each item's record is committed as soon as it is yielded.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..execution.calls import make_progress
from ..shared_settings import ModelConfig, StatsConfig
from ..storage.store import Store
from ..types import Completion, Item, Score, stable_hash
from .answers import same_answer
from .executor import attack_items
from .item import RECORD_VERSION, finish_items, search_item
from .judging import judge_chains, meaning_checks
from .layout import PROMPT_VERSION
from .outcome_rules import DIRECTION, EXCLUDED, ChainCheck, classify, outcome_rates
from .reference import reference_of
from .settings import AttackConfig, AttackSearch, AttackSettings
from .transfer import run_transfer

FAMILY = "attack"
WHITE_BOX = ("hf", "smollm2")
EXCLUDED_LABELS = {"clean_wrong": "clean reasoning already wrong", "not_judged": "not judged",
                   "invalid": "invalid attack"}


def settings_of(cfg: AttackConfig, seed: int) -> AttackSettings:
    """The attacker's settings: the plan's search parameters (:class:`~.settings.AttackSearch`) and ``seed``."""
    return AttackSettings(**{name: getattr(cfg, name) for name in AttackSearch.model_fields}, seed=seed)


def attack_key(spec: str, revision: str | None, item: Item, methods: list[str], settings: AttackSettings,
               weights: str | None = None) -> str:
    """The cache key of one item's white-box record: a hash of model, item, methods, settings, versions.

    ``weights`` names the model's weights file when the spec alone does not (:func:`model_weights_tag`: the
    embedded model's GGUF digest when it is not the shipped file); None adds nothing, so the keys of the shipped
    model are the ones they always were.
    """
    content = {"model": spec, "revision": revision, "input": item.input, "target": item.target,
               "answer_type": item.answer_type, "methods": sorted(methods), "settings": settings.model_dump(),
               "prompt": PROMPT_VERSION, "record": RECORD_VERSION}
    if weights is not None:
        content["weights"] = weights
    return "attack-" + stable_hash(content, length=48)


def model_weights_tag(spec: str) -> str | None:
    """What identifies a white-box model's weights beyond its spec (part of :func:`attack_key`).

    For ``smollm2``, the GGUF file's digest (:func:`reasonscope.models.smollm2.source_tag`, None for the shipped
    file); None for ``hf/...`` models, whose revision is already in the key.
    """
    from ..models.registry import split_spec

    if split_spec(spec)[0] != "smollm2":
        return None
    from ..models.smollm2 import source_tag

    return source_tag()


def white_box_targets(models: list[ModelConfig], console: Console) -> tuple[list[ModelConfig], dict[str, str]]:
    """Split the run's models into the white-box ones the attacks target and the rest.

    Returns the white-box models and, per skipped model, why (also printed to ``console``).
    """
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
    """Map item key -> white-box record, from the store when cached, else attacked (committed one by one)."""
    weights = model_weights_tag(model_cfg.spec)
    keys = {k: attack_key(model_cfg.spec, model_cfg.revision, it, cfg.methods, settings, weights) for k, it in items}
    done = store.cached_keys(keys.values())
    todo = [(k, it) for k, it in items if keys[k] not in done]
    if todo:
        progress = make_progress(console)
        with progress:
            task = progress.add_task(f"attack {model_cfg.display_name}", total=len(items),
                                     completed=len(items) - len(todo))
            for k, record in attack_items(model_cfg, todo, cfg, settings, search=search_item, finish=finish_items,
                                          executor=executor):
                store.put_completion(keys[k], provider="attack", model_id=model_cfg.spec,
                                     request={"item": k, "methods": cfg.methods, "settings": settings.model_dump(),
                                              "prompt": PROMPT_VERSION, "template": PROMPT_VERSION,
                                              "record": RECORD_VERSION},
                                     completion=Completion(text=json.dumps(record), finish_reason="stop"),
                                     source="attack")
                progress.advance(task)
    out = {}
    for k, _ in items:
        c = store.get_completion(keys[k])
        out[k] = json.loads(c.text) if c is not None and not c.error else {"error": "no record"}
    return out


def _case(model: str, method: str, key: str) -> str:
    return f"{model}|{method}|{key}"


def _verdicts(cfg: AttackConfig, model: str, items: list[tuple[str, Item]], records: dict[str, dict], store: Store,
              *, seed: int, console: Console) -> tuple[dict, dict]:
    """The judge's reasoning verdicts and meaning verdicts of one model's attacks.

    Reasoning verdicts on the clean chains (case ``model|clean|key``) and on the perturbed chains with the
    answer kept; meaning verdicts on the perturbed questions; both empty without a judge.
    """
    if cfg.judge is None:
        return {}, {}
    chains, meanings = [], []
    for key, item in items:
        rec = records[key]
        if not rec.get("methods"):
            continue
        clean = rec["clean"]
        if not ChainCheck.of(clean["reasoning"]).arithmetic.passed:
            continue  # already wrong: no verdict needed
        chains.append((_case(model, "clean", key), item.input, clean["answer"], clean["reasoning"]))
        for method, res in rec["methods"].items():
            cid = _case(model, method, key)
            if same_answer(res["chain"]["answer"], clean["answer"], item):
                chains.append((cid, item.input, clean["answer"], res["chain"]["reasoning"]))
            if cfg.meaning_judge and res.get("perturbed_question") and not res.get("invalid"):
                meanings.append((cid, item.input, res["perturbed_question"]))
    verdicts = judge_chains(cfg.judge, chains, store, seed=seed, console=console)
    meaning = meaning_checks(cfg.judge, meanings, store, seed=seed, console=console) if meanings else {}
    return verdicts, meaning


def _insertion_summary(results: list[dict]) -> dict[str, Any]:
    """How often the random insertion had to be drawn again, and how often no draw passed."""
    ins = [r["insertion"] for r in results if r.get("insertion")]
    return {"attacks": len(ins), "redrawn": sum(i["draws"] > 1 for i in ins),
            "no_valid_draw": sum(not i["passed"] for i in ins),
            "rejected_meaning": sum(i["rejected_meaning"] for i in ins),
            "rejected_retokenisation": sum(i["rejected_retokenisation"] for i in ins),
            "mean_draws": sum(i["draws"] for i in ins) / len(ins) if ins else None}


def score_model(cfg: AttackConfig, mc: ModelConfig, items: list[tuple[str, Item]], records: dict[str, dict],
                store: Store, stats: StatsConfig, *, seed: int, console: Console
                ) -> tuple[dict[str, Any], list[Score], list[tuple[str, str, Item, str, str]]]:
    """(the model's table, its scores, its successful text perturbations for transfer)."""
    name = mc.display_name
    verdicts, meanings = _verdicts(cfg, name, items, records, store, seed=seed, console=console)
    outcomes: dict[str, list[str]] = {m: [] for m in cfg.methods}
    results: dict[str, list[dict]] = {m: [] for m in cfg.methods}
    rows, scores, successes = [], [], []
    n_correct = attacked = clean_unchecked = with_reference = 0
    for key, item in items:
        rec = records[key]
        if rec.get("error"):
            continue
        n_correct += bool(rec["correct"])
        if not rec.get("methods"):
            scores += [Score(family=FAMILY, metric=f"{m}.success", model=name, item_id=key, value=None,
                             reason=f"not attacked: {rec.get('skipped')}", details={"clean": rec["clean"]})
                       for m in cfg.methods]
            continue
        attacked += 1
        ref = reference_of(item) if cfg.reference_check else None
        with_reference += ref is not None
        clean = ChainCheck.of(rec["clean"]["reasoning"], verdicts.get(_case(name, "clean", key)), ref)
        clean_unchecked += not clean.arithmetic.checked
        for method in cfg.methods:
            res = rec["methods"][method]
            cid = _case(name, method, key)
            perturbed = ChainCheck.of(res["chain"]["reasoning"], verdicts.get(cid), ref)
            meaning, meaning_unread = meanings.get(cid, (None, None))
            o = classify(answer_kept=same_answer(res["chain"]["answer"], rec["clean"]["answer"], item), clean=clean,
                         perturbed=perturbed, judge=cfg.judge is not None, invalid=res.get("invalid"),
                         meaning_kept=meaning, meaning_unread=meaning_unread)
            outcomes[method].append(o.outcome)
            results[method].append(res)
            row = {"model": name, "item": key, "method": method, "outcome": o.outcome, "why": o.why,
                   "question": item.input, "perturbed_question": res["perturbed_question"], "clean": rec["clean"],
                   "perturbed": res["chain"], "clean_check": clean.record(), "perturbed_check": perturbed.record(),
                   "meaning_judge": meaning, "objective_before": res["objective_before"],
                   "objective_after": res["objective_after"], "seconds": res["seconds"], "rejected": res["rejected"],
                   "insertion": res.get("insertion", {}), "details": res["details"]}
            rows.append(row)
            excluded = o.outcome in EXCLUDED
            scores.append(Score(family=FAMILY, metric=f"{method}.success", model=name, item_id=key,
                                value=None if excluded else float(o.outcome == "success"),
                                reason=f"excluded ({EXCLUDED_LABELS[o.outcome]}): {o.why}" if excluded else o.why,
                                details={"outcome": o.outcome, **{k: row[k] for k in
                                                                  ("perturbed_question", "clean", "perturbed")}}))
            if o.outcome == "success" and method != "embedding" and res["perturbed_question"]:
                successes.append((cid, key, item, method, res["perturbed_question"]))
    table = {"items": len(items), "answered_correctly": n_correct, "attacked": attacked,
             "clean_chains_without_checked_equation": clean_unchecked, "attacked_with_reference": with_reference,
             "rates": {m: outcome_rates(outcomes[m], stats, seed) for m in cfg.methods},
             "insertion": {m: _insertion_summary(results[m]) for m in cfg.methods if m != "embedding"},
             "seconds_per_item": {m: (sum(r["seconds"] for r in v) / len(v) if v else None)
                                  for m, v in results.items()},
             "rows": rows}
    if "token" in cfg.methods:
        table["token_without_kept_replacement"] = sum(
            r["details"].get("replacements_kept", 0) == 0 for r in results["token"])
    return table, scores, successes


def _warnings(cfg: AttackConfig, name: str, t: dict[str, Any]) -> list[str]:
    out = []
    if t["answered_correctly"] == 0:
        out.append(f"{name} answered no item correctly: nothing was attacked")
    not_judged = sum(r["counts"]["not_judged"] for r in t["rates"].values())
    if cfg.judge is None and t["attacked"] and cfg.reference_check:
        if not_judged:
            out.append(f"{name}: no judge, and {t['attacked'] - t['attacked_with_reference']} of {t['attacked']} "
                       f"attacked items have no known steps for the reference check; {not_judged} attacks that kept "
                       "the answer without a false equation are 'not judged' and outside the rates")
    elif cfg.judge is None and t["attacked"]:
        out.append(f"{name}: no judge, so the reasoning check is arithmetic only and cannot detect non-arithmetic "
                   f"errors; {not_judged} attacks that kept the answer without a false equation are 'not judged' "
                   "and outside the rates (set families.attack.judge to decide them)")
        if t["clean_chains_without_checked_equation"]:
            out.append(f"{name}: {t['clean_chains_without_checked_equation']} of {t['attacked']} clean chains state "
                       "no equation the arithmetic check can read")
    elif not_judged:
        out.append(f"{name}: {not_judged} attacks are 'not judged' (the judge's verdict could not be read)")
    for method, ins in t.get("insertion", {}).items():
        if ins["no_valid_draw"]:
            out.append(f"{name} {method}: for {ins['no_valid_draw']} of {ins['attacks']} items no random insertion "
                       f"passed re-tokenisation and the meaning filter in {cfg.insert_draws} draws (invalid attacks)")
    return out


def score_attack(store: Store, run_id: str, cfg: AttackConfig, stats: StatsConfig, datasets: dict[str, list[Item]],
                 models: list[ModelConfig], *, seed: int = 0, executor: str = "local",
                 console: Console | None = None) -> dict:
    """Score the attack family over a run; returns the family's table.

    Attacks each white-box model on the chosen items (``answer_types``, at most ``limit`` per dataset), scores
    the outcomes, runs the transfer models when set, and stores the scores and ``attack.json``.
    """
    console = console or Console(stderr=True)
    settings = settings_of(cfg, seed)
    targets, skipped = white_box_targets(models, console)
    items: list[tuple[str, Item]] = []
    for ds, lst in datasets.items():
        chosen = [it for it in lst if cfg.answer_types is None or it.answer_type in cfg.answer_types]
        items += [(f"{ds}/{it.id}", it) for it in chosen[: cfg.limit]]
    table: dict[str, Any] = {"settings": settings.model_dump(), "methods": cfg.methods, "prompt": PROMPT_VERSION,
                             "record_version": RECORD_VERSION, "judge": cfg.judge.spec if cfg.judge else None,
                             "reasoning_check": cfg.reasoning_check(),
                             "direction": DIRECTION, "models": {}, "skipped_models": skipped, "warnings": []}
    scores: list[Score] = []
    successes: list[tuple[str, str, Item, str, str]] = []
    for mc in targets:
        records = run_attacks(store, mc, items, cfg, settings, executor=executor, console=console)
        t, s, ok = score_model(cfg, mc, items, records, store, stats, seed=seed, console=console)
        table["models"][mc.display_name] = t
        table["warnings"] += _warnings(cfg, mc.display_name, t)
        scores += s
        successes += ok
    table["transfer"] = run_transfer(cfg, successes, store, stats, seed=seed, console=console) if cfg.transfer else {}
    store.delete_scores(run_id, FAMILY)
    store.put_scores(run_id, scores)
    store.put_artefact(run_id, "attack.json", "json", json.dumps(table, default=str))
    return table
