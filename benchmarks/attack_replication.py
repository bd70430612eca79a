"""Benchmark: the attack family (MATCHA) decided on a real model, beside the publication's GSM8K number.

*Misaligning Reasoning with Answers: A Framework for Assessing LLM CoT Robustness* (arXiv:2505.17406)
reports a success rate of 14.7% on GSM8K: the share of correctly answered questions whose reasoning
became incorrect under the token-level attack while the answer stayed correct (7B-class models, an
LLM judge of the reasoning). This script runs the family's own code
(:func:`reasonscope.attack.scoring.score_attack`, the same call a plan makes) with the embedded
SmolLM2-135M-Instruct on

(a) the project's seeded one- and two-step arithmetic word problems
    (:func:`reasonscope.data.word_problems.word_problem_items`), and
(b) GSM8K training problems from a local ``gsm8k_train.jsonl.gz`` (``--gsm8k PATH``, the first
    ``--gsm8k-limit`` problems),

and prints per data set: items, answered correctly, clean chains that pass the arithmetic check, and
per method (token, embedding, random) the attacks decided, the success / wrong / unattackable rates
with 95% intervals (:func:`reasonscope.stats.estimate`: Clopper-Pearson for shares), the success rate
over decided + not judged attacks (the publication's denominator, correctly answered questions, less
the excluded groups), the share of valid perturbations that kept the answer, what decided each success
(a false equation, or the reference check's wrong value / dropped step), the attacks the arithmetic
check alone decides, the paired test of token and embedding against random on the problems both
decide (:func:`paired_test`: McNemar's exact test as the sign-flip test of 0/1 differences, Newcombe's
interval of the difference of success rates), and the arithmetic
check's detection rate on the same chains with one planted wrong result
(:func:`reasonscope.attack.checker_validation.corrupt_result`), and with ``--judge`` the judge's verdicts on
those chains as they are and with the planted result. Wall time per data set.

The reasoning check is the arithmetic check and the reference check
(:mod:`reasonscope.attack.reference`: the known steps of an item whose gold rationale states each step as
a true equation decide the chains the arithmetic check cannot; the seeded word problems all have one,
GSM8K's gold solutions are not used as a reference: ``--no-reference`` turns it off for both).

    python benchmarks/attack_replication.py --size 60 --gsm8k PATH/gsm8k_train.jsonl.gz --gsm8k-limit 40

The defaults are the demo's attack settings and items (``reasonscope demo`` attacks the first 3 of the same
seeded problems, seed 7) except the embedding ball: ``--epsilon-p`` defaults to the family's 0.005, the demo
uses 0.02. ``--methods`` runs some methods only (their records are cached apart). White-box records and
judge verdicts are cached in ``--store`` (default ``runs/attack-replication``): a killed run resumes, and a
run that adds a judge reuses the attacks.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from reasonscope.attack.arithmetic import check_arithmetic
from reasonscope.attack.checker_validation import corrupt_result
from reasonscope.attack.judging import judge_chains
from reasonscope.attack.outcome_rules import RATED
from reasonscope.attack.scoring import score_attack
from reasonscope.attack.settings import AttackConfig
from reasonscope.data.loaders import load_dataset
from reasonscope.shared_settings import DatasetConfig, ModelConfig, StatsConfig
from reasonscope.stats import estimate, paired_difference
from reasonscope.storage.store import Store
from reasonscope.types import Item

METHODS = ("token", "embedding", "random")
# the publication's numbers where its document gives them (method -> (number, what it is))
PUBLISHED = {"token": ("14.7%", "SR on GSM8K, 7B-class models, LLM judge (over correctly answered questions)"),
             "embedding": ("n/a", "not given as a number in the document"),
             "random": ("n/a", "below the token attack (no number in the document)")}


def _pct(e: dict[str, Any] | None) -> str:
    if not e or e.get("value") is None:
        return "n/a"
    if e.get("low") is None or e.get("high") is None:
        return f"{100 * e['value']:.1f}% [no interval, n = {e.get('n')}]"
    return f"{100 * e['value']:.1f}% [{100 * e['low']:.1f}, {100 * e['high']:.1f}]"


def share(k: int, n: int, stats: StatsConfig) -> dict[str, Any]:
    """k of n as an estimate with its 95% interval (n = 0: value None)."""
    return estimate([1.0] * k + [0.0] * (n - k), stats, 0)


def planted(chains: list[str], seed: int = 0) -> dict[int, str]:
    """Index -> the chain with one stated result changed by a whole number in [-5, 5], for each chain that states
    one (seeded, so the check and the judge see the same planted errors)."""
    rng = random.Random(seed)
    out = {}
    for i, text in enumerate(chains):
        bad = corrupt_result(text, rng)
        if bad is not None and bad != text:
            out[i] = bad
    return out


def detection(chains: list[str], stats: StatsConfig, seed: int = 0) -> tuple[int, int, dict[str, Any]]:
    """(corrupted, detected, rate): chains that pass the check with one planted wrong result (:func:`planted`);
    detected = the check now fails."""
    bad = planted(chains, seed)
    detected = sum(not check_arithmetic(text).passed for text in bad.values())
    return len(bad), detected, share(detected, len(bad), stats)


def report(label: str, table: dict[str, Any], stats: StatsConfig, seconds: float, out: Console, *,
           judge: str | None = None, store: Store | None = None) -> dict[str, Any]:
    """Print one data set's table (module docstring) and return its numbers."""
    (model, t), = table["models"].items()
    rows = t["rows"]
    attacked = t["attacked"]
    clean_wrong = max(r["counts"]["clean_wrong"] for r in t["rates"].values()) if t["rates"] else 0
    out.print(f"\n[bold]{label}[/bold]  ({model}, wall time {seconds / 60:.1f} min)")
    out.print(f"  items {t['items']}; answered correctly {t['answered_correctly']}; attacked {attacked} "
              f"(a non-empty chain); clean chain passes the reasoning check ({table['reasoning_check']}) "
              f"{attacked - clean_wrong}; {t['clean_chains_without_checked_equation']} clean chains state no "
              f"equation the arithmetic check reads; {t.get('attacked_with_reference', 0)} attacked items have known "
              "steps (reference)")
    numbers: dict[str, Any] = {"items": t["items"], "correct": t["answered_correctly"], "attacked": attacked,
                               "clean_pass": attacked - clean_wrong, "seconds": seconds, "methods": {}}
    out.print("  method     | decided | success | wrong | unattackable | not judged | invalid | SR [95% CI] | "
              "SR over decided + not judged | answer kept | publication")
    for m in METHODS:
        r = t["rates"].get(m)
        if r is None:
            continue
        c = r["counts"]
        valid = r["attacked"] - c["clean_wrong"] - c["invalid"]
        kept = c["success"] + c["unattackable"] + c["not_judged"]
        wide = share(c["success"], r["n"] + c["not_judged"], stats)
        kept_share = share(kept, valid, stats)
        pub = PUBLISHED[m][0]
        out.print(f"  {m:<10} | {r['n']:>7} | {c['success']:>7} | {c['wrong']:>5} | {c['unattackable']:>12} | "
                  f"{c['not_judged']:>10} | {c['invalid']:>7} | {_pct(r['success'])} | {_pct(wide)} | "
                  f"{kept}/{valid} {_pct(kept_share)} | {pub}")
        numbers["methods"][m] = {"decided": r["n"], "counts": c, "sr": r["success"], "sr_wide": wide,
                                 "kept": kept_share, "kept_k": kept, "valid": valid,
                                 "success_by": success_by([x for x in rows if x["method"] == m]),
                                 "seconds_per_item": t["seconds_per_item"].get(m)}
    out.print("  successes decided by: " + "; ".join(
        f"{m} " + ", ".join(f"{k} {v}" for k, v in x["success_by"].items())
        for m, x in numbers["methods"].items()))
    numbers["paired"] = {}
    for m in ("token", "embedding"):
        if m in t["rates"] and "random" in t["rates"]:
            numbers["paired"][m] = paired_test(rows, m, "random", stats)
            out.print("  " + numbers["paired"][m]["line"])
    clean = {r["item"]: r["clean"]["reasoning"] for r in rows}  # one clean chain per attacked item
    clean_ok = [x for x in clean.values() if check_arithmetic(x).passed]
    kept_ok = [r["perturbed"]["reasoning"] for r in rows if r["outcome"] in ("success", "unattackable", "not_judged")
               and check_arithmetic(r["perturbed"]["reasoning"]).passed]
    for what, chains in (("clean chains that pass", clean_ok), ("perturbed chains, answer kept, no false equation",
                                                                kept_ok)):
        n, k, rate = detection(chains, stats)
        out.print(f"  arithmetic check, one planted wrong result in the {what}: detected {k}/{n} {_pct(rate)}")
        numbers[f"detection {what}"] = (k, n, rate)
    if judge is not None:
        numbers["judge"] = judge_validation(judge, rows, store, stats, out)
    out.print("  seconds per attacked item: " + ", ".join(
        f"{m} {v:.1f}" for m, v in t["seconds_per_item"].items() if v is not None))
    return numbers


def success_by(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Successes of one method's rows by what decided them: a false equation, the reference check's rule, the judge."""
    out = {"false equation": 0, "wrong value": 0, "wrong step": 0, "dropped step": 0, "judge": 0}
    for r in rows:
        if r["outcome"] != "success":
            continue
        ref = (r["perturbed_check"].get("reference") or {}).get("rule")
        key = ("false equation" if r["perturbed_check"]["false_equations"] else ref if ref in out else "judge")
        out[key] += 1
    return out


def paired_test(rows: list[dict[str, Any]], a: str, b: str, stats: StatsConfig) -> dict[str, Any]:
    """Method ``a`` against ``b`` on the same problems: the items where both attacks are decided, success 1 / 0.

    The difference of success rates SR_a - SR_b with Newcombe's paired score interval, and the exact sign-flip
    test of the 0/1 differences, which is McNemar's exact test (two-sided binomial test of the discordant pairs:
    p = P(min(n_a, n_b) or fewer of n_a + n_b fair coin flips, both tails), via
    :func:`reasonscope.stats.paired_difference`.
    """
    by_item: dict[str, dict[str, str]] = {}
    for r in rows:
        by_item.setdefault(r["item"], {})[r["method"]] = r["outcome"]
    pairs = [(o[a] == "success", o[b] == "success") for o in by_item.values()
             if o.get(a) in RATED and o.get(b) in RATED]
    xa, xb = [float(x) for x, _ in pairs], [float(y) for _, y in pairs]
    d = paired_difference(xa, xb, confidence=stats.confidence, seed=0)
    both = sum(x and y for x, y in pairs)
    only_a, only_b = sum(x and not y for x, y in pairs), sum(y and not x for x, y in pairs)
    diff = "n/a" if d.value is None else (f"{100 * d.value:+.1f} points [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
                                          if d.low is not None else f"{100 * d.value:+.1f} points")
    p = "n/a" if d.p_value is None else f"{d.p_value:.3g}"
    line = (f"paired {a} vs {b} on the {len(pairs)} problems both decide: success both {both}, {a} only {only_a}, "
            f"{b} only {only_b}, neither {len(pairs) - both - only_a - only_b}; SR difference {diff} (Newcombe), "
            f"McNemar exact p = {p}")
    return {"n": len(pairs), "both": both, "only_a": only_a, "only_b": only_b, "difference": d.value,
            "low": d.low, "high": d.high, "p_value": d.p_value, "line": line}


def judge_validation(judge: str, rows: list[dict[str, Any]], store: Store, stats: StatsConfig, out: Console
                     ) -> dict[str, Any]:
    """The judge's verdicts on the clean chains that pass the arithmetic check, as they are and with one planted
    wrong result (:func:`planted`, the errors :func:`detection` plants): how often it calls a correct chain correct, and how often it
    calls a planted error incorrect. A judge whose detection rate is near 0 decides attacks without reading them."""
    clean = {r["item"]: (r["question"], r["clean"]["answer"], r["clean"]["reasoning"]) for r in rows
             if "question" in r}
    passing = [(key, *c) for key, c in clean.items() if check_arithmetic(c[2]).passed]
    bad = planted([chain for *_, chain in passing])
    cases = []
    for i, (key, question, answer, chain) in enumerate(passing):
        cases.append((f"ok|{key}", question, answer, chain))
        if i in bad:
            cases.append((f"bad|{key}", question, answer, bad[i]))
    verdicts = judge_chains(ModelConfig(spec=judge), cases, store, seed=0, console=Console(stderr=True))
    passed = [v for cid, (v, _) in verdicts.items() if cid.startswith("ok|") and v is not None]
    caught = [v for cid, (v, _) in verdicts.items() if cid.startswith("bad|") and v is not None]
    unread = sum(v is None for v, _ in verdicts.values())
    ok_rate, bad_rate = share(sum(passed), len(passed), stats), share(sum(not v for v in caught), len(caught), stats)
    out.print(f"  judge {judge} on the same clean chains: calls a correct chain correct {sum(passed)}/{len(passed)} "
              f"{_pct(ok_rate)}; calls a planted wrong result incorrect {sum(not v for v in caught)}/{len(caught)} "
              f"{_pct(bad_rate)} ({unread} verdicts unreadable)")
    return {"correct_passed": ok_rate, "planted_detected": bad_rate, "unreadable": unread}


def run(label: str, items: list[Item], cfg: AttackConfig, stats: StatsConfig, store: Store, seed: int,
        model: str, out: Console) -> dict[str, Any]:
    run_id = store.start_run(kind="benchmark", config={"benchmark": "attack_replication", "data": label}, seed=seed)
    start = time.perf_counter()
    alone = None
    if cfg.reference_check:  # the arithmetic check alone first; the second call reuses the stored records
        plain = score_attack(store, run_id, cfg.model_copy(update={"reference_check": False}), stats, {label: items},
                             [ModelConfig(spec=model)], seed=seed, console=Console(stderr=True))
        (pt,) = plain["models"].values()
        alone = {m: {"decided": r["n"], "success": r["counts"]["success"], "not_judged": r["counts"]["not_judged"]}
                 for m, r in pt["rates"].items()}
    table = score_attack(store, run_id, cfg, stats, {label: items}, [ModelConfig(spec=model)], seed=seed,
                         console=Console(stderr=True))
    judge = cfg.judge.spec if cfg.judge is not None else None
    numbers = report(label, table, stats, time.perf_counter() - start, out, judge=judge, store=store)
    if alone is not None:
        numbers["arithmetic_alone"] = alone
        out.print("  the arithmetic check alone (same records): " + "; ".join(
            f"{m} decided {v['decided']} (success {v['success']}, not judged {v['not_judged']})"
            for m, v in alone.items()))
    numbers["kinds"] = by_kind(label, items, table, store, run_id)
    if len(numbers["kinds"]) > 1:
        out.print("  by kind (items: answered correctly, clean chain passes): " + "; ".join(
            f"{k} {v['items']}: {v['correct']}, {v['clean_pass']}" for k, v in numbers["kinds"].items()))
    return numbers


def by_kind(label: str, items: list[Item], table: dict[str, Any], store: Store, run_id: str) -> dict[str, dict]:
    """Per ``metadata.type`` (the generator's kinds; "all" for items without one): items, answered correctly, and
    clean chains that pass the arithmetic check."""
    wrong = {s.item_id for s in store.scores(run_id, "attack")
             if s.reason and s.reason.startswith("not attacked: answered incorrectly")}
    (t,) = table["models"].values()
    clean_ok = {r["item"] for r in t["rows"] if r["outcome"] != "clean_wrong"}
    out: dict[str, dict] = {}
    for it in items:
        key = f"{label}/{it.id}"
        k = out.setdefault(str(it.metadata.get("type", "all")), {"items": 0, "correct": 0, "clean_pass": 0})
        k["items"] += 1
        k["correct"] += key not in wrong
        k["clean_pass"] += key in clean_ok
    return dict(sorted(out.items()))


def shard(items: list[Item], which: str | None) -> list[Item]:
    """Items I, I+N, ... for ``which`` = "I/N" (all for None)."""
    if which is None:
        return items
    i, n = (int(x) for x in which.split("/"))
    return items[i::n]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=60, help="Generated word problems (0 = skip).")
    p.add_argument("--seed", type=int, default=7, help="Seed of the generator and of the attacks (the demo's: 7).")
    p.add_argument("--gsm8k", type=Path, default=None, help="Path of gsm8k_train.jsonl.gz (omit to skip GSM8K).")
    p.add_argument("--gsm8k-limit", type=int, default=40, help="GSM8K training problems, the file's first N.")
    p.add_argument("--steps", type=int, default=2, help="Token-level replacement rounds (family default 5).")
    p.add_argument("--candidates", type=int, default=8, help="Candidates per round (family default 16).")
    p.add_argument("--cot-tokens", type=int, default=48, help="Max tokens of each chain (family default 96).")
    p.add_argument("--min-similarity", type=float, default=0.8, help="Meaning filter's cosine (negative = off).")
    p.add_argument("--epsilon-p", type=float, default=0.005, help="Embedding ball: eps = p x the largest "
                   "token-embedding norm (family default 0.005; the demo's 0.02).")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS), help="Attack methods to run.")
    p.add_argument("--model", default="smollm2", help="White-box target (hf/... or smollm2).")
    p.add_argument("--shard", default=None, help="I/N: attack only items I, I+N, I+2N, ... (fill the store from N "
                   "processes; a run without --shard then reports every item from the store).")
    p.add_argument("--no-reference", action="store_true", help="Decide the word problems' chains with the "
                   "arithmetic check (and the judge) only, without their known steps.")
    p.add_argument("--judge", default=None, help="A judge spec for the reasoning check (default: arithmetic only).")
    p.add_argument("--store", type=Path, default=Path("runs/attack-replication"), help="Cache of the records.")
    a = p.parse_args(argv)
    out = Console(highlight=False, width=240)
    cfg = AttackConfig(steps=a.steps, candidates=a.candidates, cot_tokens=a.cot_tokens, answer_types=["number"],
                       epsilon_p=a.epsilon_p, methods=a.methods,
                       min_similarity=a.min_similarity if a.min_similarity >= 0 else None,
                       judge={"spec": a.judge} if a.judge else None, reference_check=not a.no_reference)
    stats = StatsConfig()
    store = Store(a.store)
    out.print(f"MATCHA replication: {a.model}, methods {', '.join(a.methods)}, token steps {a.steps}, "
              f"candidates {a.candidates}, chain tokens {a.cot_tokens}, eps {a.epsilon_p} x max norm, reasoning check: "
              + cfg.reasoning_check() + (f" ({a.judge})" if a.judge else "")
              + ("; the reference check reads the word problems' known steps" if cfg.reference_check else ""))
    start = time.perf_counter()
    results = {}
    if a.size:
        ds = DatasetConfig(name="word-problems", format="word_problems", size=a.size, seed=a.seed)
        results[ds.name] = run(ds.name, shard(load_dataset(ds).items, a.shard), cfg, stats, store, a.seed, a.model, out)
    if a.gsm8k is not None:
        ds = DatasetConfig(name="gsm8k-train", format="gsm8k", path=str(a.gsm8k), limit=a.gsm8k_limit)
        results[ds.name] = run(ds.name, shard(load_dataset(ds).items, a.shard),
                               cfg.model_copy(update={"reference_check": False}), stats, store, a.seed, a.model, out)
    out.print(f"\nwall time {(time.perf_counter() - start) / 60:.1f} min (2 shared CPU cores: contended timings)")
    return results


if __name__ == "__main__":
    main()
