"""RACE's finding on real data: an LLM's own predictions and rationales on e-SNLI, with controls.

    python benchmarks/evidence_replication.py --data PATH/esnli_dev.csv.gz [--test 1000] [--limit N] [--model smollm2]

The publication (*Framework for Machine Evaluation of Reasoning Completeness in Large Language Models for
Classification Tasks*, arXiv:2510.21884) finds an asymmetry: rationales of correct predictions cover more
of the classifier's *supporting* features, rationales of incorrect predictions more of its *contradicting*
ones. Its numbers come from DeepSeek-R1 on four topic, sentiment and emotion data sets; this script asks the
question on e-SNLI, the real labelled data with rationales that ships here.

Runs, each through a command a user types (``reasonscope evidence``, or ``reasonscope run`` with a plan for
the likelihood reading), so the family's own code computes every coverage:

* **control**: the first human explanation of each test pair is the rationale, and the label is the gold one
  for a random half of the pairs and a different, randomly drawn label for the other half (seeded). A
  human explanation argues for the gold label, so the flipped half is a known-incorrect group whose
  rationales cite evidence *against* the label under evaluation: the asymmetry must appear there.
* **control-null-rationales**: the control's labels with its human explanations moved to pairs of other
  premises: the known-positive asymmetry must vanish when the rationales carry no information;
* **constant**: no reasoning at all: every pair labelled ``--constant-label`` (entailment), its hypothesis as
  the rationale. Correct then means "gold is entailment", so any asymmetry is a difference between gold
  classes; this is what a model that mostly gives one label can show without reasoning;
* **llm**: the model labels and explains the ``--test`` e-SNLI validation pairs (whole premises held out; the
  TF-IDF logistic regression is trained on the remaining pairs), and coverage is computed against the class
  it predicted (``--target predicted``, the publication's setting);
* **null-rationales**: the model's labels with its rationales moved to pairs of *other* premises
  (:func:`reasonscope.evidence.breakdown.shuffle_rationales`): a rationale then says nothing about the
  pair it is scored on, and the asymmetry must vanish;
* **null-labels**: the model's rationales with its labels permuted across pairs
  (:func:`reasonscope.evidence.breakdown.shuffle_labels`, the label distribution kept);
* **likelihood**: the model's rationales with its labels read by log-likelihood (``label_reading:
  likelihood``, lm-eval's multiple-choice method) instead of the sampled ones.

For each run it prints, per matcher, support and contradiction coverage with 95% intervals for correct and
incorrect predictions, the asymmetry A = cov_S - cov_C of each group, A(correct) - A(incorrect) and its
permutation p-value (Holm-adjusted over the matchers), read from the run's ``summary.json``, and the wall
time; then, from the run's per-instance rows (:mod:`reasonscope.evidence.breakdown`): the predicted-label
distribution next to the accuracy, the asymmetry within each gold class, both halves of the difference and
the difference itself with intervals from a cluster bootstrap over premises (e-SNLI pairs share premises),
and the difference stratified by gold class with its within-class permutation test.

The test pairs are written premise by premise, so ``--limit N`` (the first N test pairs) keeps premises
whole. The run folders stay under ``--output-dir`` (resumable: a second call reuses the stored generations).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_esnli import premise_split  # noqa: E402  (the same premise split as the e-SNLI benchmark)

from reasonscope.data.loaders import esnli_row  # noqa: E402
from reasonscope.evidence import breakdown  # noqa: E402

LABELS = ["entailment", "neutral", "contradiction"]
COLUMNS = ["pairID", "gold_label", "Sentence1", "Sentence2", "Explanation_1"]


def read_rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("gold_label") in LABELS]


def write_split(rows: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def control_predictions(test_rows: list[dict], ids: list[str], seed: int) -> list[dict]:
    """Human explanations as rationales; the gold label for a random half, another label for the rest."""
    rng = random.Random(seed)
    flipped = set(rng.sample(range(len(test_rows)), len(test_rows) // 2))
    out = []
    for k, (row, item_id) in enumerate(zip(test_rows, ids, strict=True)):
        label = row["gold_label"]
        if k in flipped:
            label = rng.choice([x for x in LABELS if x != label])
        out.append({"id": item_id, "label": label, "rationale": row["Explanation_1"], "model": "human-control"})
    return out


def run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def fmt(e: dict | None) -> str:
    if not e or e.get("value") is None:
        return "n/a"
    low, high = e.get("low"), e.get("high")
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{e['value']:.3f}{ci} (n={e.get('n')})"


def table(summary_path: Path, title: str, seconds: float) -> None:
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    for model, block in (summary.get("evidence") or {}).items():
        llm = block.get("llm") or {}
        print(f"\n## {title}: {model}  (wall time {seconds:.0f} s)")
        print(f"classifier test accuracy {block['classifier']['test_accuracy']:.3f}; labels: accuracy "
              f"{llm.get('accuracy')}, n {llm.get('n')}, unparseable {llm.get('unparseable')}, "
              f"no rationale {llm.get('no_rationale')}, failed {llm.get('failed')}")
        print("| matcher | group | n | support coverage | contradiction coverage | A | A(correct) - A(incorrect) | p (Holm) |")
        print("|---|---|---|---|---|---|---|---|")
        for matcher, cov in block["coverage"].items():
            diff = cov.get("asymmetry_difference") or {}
            for group in ("correct", "incorrect"):
                g = cov.get(group) or {}
                a = g.get("asymmetry")
                tail = ""
                if group == "correct" and diff.get("value") is not None:
                    tail = f"{diff['value']:+.3f} | {diff.get('p_value'):.2g} ({diff.get('p_adjusted'):.2g})"
                else:
                    tail = " | "
                print(f"| {matcher} | {group} | {g.get('n', 0)} | {fmt(g.get('support'))} | "
                      f"{fmt(g.get('contradict'))} | {'n/a' if a is None else f'{a:+.3f}'} | {tail} |")


def constant_predictions(test_rows: list[dict], label: str) -> list[dict]:
    """No reasoning at all: every pair gets ``label`` and its own hypothesis as the rationale.

    Correct then means "the gold label is ``label``", and the rationale says nothing about why: an asymmetry
    here is a difference between gold classes, not between correct and incorrect reasoning.
    """
    return [{"id": r["pairID"], "label": label, "rationale": r["Sentence2"], "model": "constant"} for r in test_rows]


def by_premise(test_rows: list[dict]) -> list[dict]:
    """The test rows premise by premise (premises in order of first appearance), so a prefix keeps them whole."""
    order: dict[str, list[dict]] = {}
    for row in test_rows:
        order.setdefault(row["Sentence1"], []).append(row)
    return [row for rows in order.values() for row in rows]


def instances(run_dir: Path) -> tuple[list[str], dict[str, list[dict]]]:
    """The classes and, per model, RACE's per-instance rows of the latest run in ``run_dir`` (its evidence.json)."""
    from reasonscope.storage.store import Store

    store = Store.open_existing(run_dir)
    try:
        tables = json.loads(store.artefact(store.run()["run_id"], "evidence.json") or b"{}")
    finally:
        store.close()
    classes = next(iter(tables.values()))["classifier"]["classes"] if tables else []
    return classes, {model: t["instances"] for model, t in tables.items()}


def prediction_rows(rows: list[dict], model: str) -> list[dict]:
    """The model's parsed predictions as a predictions file's rows; an unparseable one stays unparseable."""
    return [{"id": r["item_id"], "label": r["predicted"], "rationale": r["rationale"], "model": model}
            if r["predicted"] is not None else {"id": r["item_id"], "output": "", "model": model} for r in rows]


def write_jsonl(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _ci(e: dict, n_resamples: int = 2000) -> str:
    if e.get("value") is None:
        return "n/a"
    ci = f" [{e['low']:+.3f}, {e['high']:+.3f}]" if e.get("low") is not None else ""
    p = e.get("p_value")
    p = "" if p is None else f", p < {1 / n_resamples:.2g}" if p == 0 else f", p {p:.2g}"  # no resample crossed 0
    return f"{e['value']:+.3f}{ci}{p}"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def print_breakdown(title: str, classes: list[str], rows: list[dict], clusters: dict[str, str], matchers,
                    seed: int, n_resamples: int = 2000) -> None:
    """Label distribution, per-gold-class asymmetry, clustered intervals and the stratified test of one run."""
    dist = breakdown.label_distribution(rows, classes)
    print(f"\n### {title}: where the asymmetry comes from (n {dist['n']})")
    print(f"accuracy {_num(dist['accuracy'])} (always '{dist['majority_label']}': {_num(dist['majority_accuracy'])}); "
          "predicted labels: " + ", ".join(f"{k} {v} ({dist['predicted_share'][k]:.1%})"
                                           for k, v in dist["predicted"].items())
          + "; gold: " + ", ".join(f"{k} {v}" for k, v in dist["gold"].items()))
    print("| matcher | gold class | n (correct / incorrect) | A(correct) | A(incorrect) | D_k | A(all of the class) |")
    print("|---|---|---|---|---|---|---|")
    for m in matchers:
        for g in breakdown.by_gold_class(rows, m):
            d = "n/a" if g["difference"] is None else f"{g['difference']:+.3f}"
            a_c = "n/a" if g["asymmetry_correct"] is None else f"{g['asymmetry_correct']:+.3f}"
            a_i = "n/a" if g["asymmetry_incorrect"] is None else f"{g['asymmetry_incorrect']:+.3f}"
            a_all = "n/a" if g["asymmetry_all"] is None else f"{g['asymmetry_all']:+.3f}"
            print(f"| {m} | {g['gold']} | {g['n']} ({g['n_correct']} / {g['n_incorrect']}) | {a_c} | {a_i} | {d} | "
                  f"{a_all} |")
    print("| matcher | clusters | cov_S(correct) - cov_S(incorrect) | cov_C(correct) - cov_C(incorrect) | "
          "D = A(correct) - A(incorrect) | D stratified by gold class | its within-class permutation p |")
    print("|---|---|---|---|---|---|---|")
    for m in matchers:
        ci = breakdown.cluster_intervals(rows, m, clusters, n_resamples=n_resamples, seed=seed)
        st = breakdown.stratified_permutation_test(rows, m, seed=seed)
        p = "n/a" if st["p_value"] is None else f"{st['p_value']:.2g} ({', '.join(st['classes_used'])})"
        print(f"| {m} | {ci['n']} pairs, {ci['n_clusters']} premises | {_ci(ci['support_difference'])} | "
              f"{_ci(ci['contradict_difference'])} | {_ci(ci['difference'])} | {_ci(ci['stratified_difference'])} | "
              f"{p} |")
    exact = breakdown.cluster_intervals(rows, matchers[0], clusters, n_resamples=n_resamples, seed=seed)
    print(f"{matchers[0]}, by group (cluster bootstrap): " + "; ".join(
        f"{name} {_num(exact[name]['value'])} [{_num(exact[name]['low'])}, {_num(exact[name]['high'])}]"
        for name in breakdown.GROUP_STATS))


def stored_labels(run_dir: Path, test_rows: list[dict]) -> None:
    """The labels of the model's generations stored so far (read while a run goes on), against the gold ones.

    Each stored output is parsed by the family's own parser; prints how many pairs (and whole premises) are
    stored, the accuracy, the predicted-label counts and the gold-by-predicted counts.
    """
    from collections import Counter

    from reasonscope.evidence.scoring import parse_prediction
    from reasonscope.storage.store import Store

    store = Store.open_existing(run_dir)
    try:
        done = [g for g in store.run_generations(store.run()["run_id"]) if g["done"] and g["variant"] == "evidence"]
    finally:
        store.close()
    gold = {r["pairID"]: r["gold_label"] for r in test_rows}
    premise = {r["pairID"]: r["Sentence1"] for r in test_rows}
    read = {g["item_id"]: parse_prediction(g["text"] or "", LABELS).label for g in done if g["item_id"] in gold}
    per_premise = Counter(premise.values())
    whole = sum(1 for p, n in Counter(premise[i] for i in read).items() if n == per_premise[p])
    cells = Counter((gold[i], lab or "(unparseable)") for i, lab in read.items())
    n = len(read)
    print(f"\nstored so far in {run_dir}: {n} of {len(test_rows)} pairs ({whole} whole premises); accuracy "
          f"{sum(lab == gold[i] for i, lab in read.items()) / n if n else float('nan'):.3f}; predicted: "
          + ", ".join(f"{lab} {sum(v for (g, p), v in cells.items() if p == lab)}"
                      for lab in [*LABELS, "(unparseable)"]))
    print("| gold \\ predicted | " + " | ".join([*LABELS, "(unparseable)"]) + " |")
    print("|---|" + "---|" * (len(LABELS) + 1))
    for g in LABELS:
        print(f"| {g} | " + " | ".join(str(cells[(g, p)]) for p in [*LABELS, "(unparseable)"]) + " |")


def likelihood_plan(path: Path, out: Path, train: Path, test: Path, predictions: Path, model: str, seed: int,
                    limit: int | None) -> Path:
    """The plan of the likelihood run: the model's predictions, relabelled by the model's label likelihoods."""
    def split(file: Path, name: str) -> dict:
        return {"name": f"{file.stem}-{name}", "format": "esnli", "path": str(file),
                **({"limit": limit} if limit and name == "test" else {})}

    plan = {"experiment": {"name": "likelihood", "seed": seed, "output_dir": str(out)},
            "models": [{"spec": model}],
            "families": {"behavior": None, "evidence": {
                "train": split(train, "train"), "test": split(test, "test"), "predictions": str(predictions),
                "label_reading": "likelihood"}}}
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the e-SNLI validation file (esnli_dev.csv.gz)")
    ap.add_argument("--test", type=int, default=1000, help="test pairs (whole premises held out)")
    ap.add_argument("--limit", type=int, default=None, help="evaluate only the first N test pairs (whole premises)")
    ap.add_argument("--model", default="smollm2", help="the model that labels and explains the test pairs")
    ap.add_argument("--output-dir", type=Path, default=Path("runs/evidence-replication"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-llm", action="store_true", help="run the human control only")
    ap.add_argument("--skip-likelihood", action="store_true", help="leave out the likelihood run")
    ap.add_argument("--skip-nulls", action="store_true", help="leave out the model's two null controls")
    ap.add_argument("--stored-labels", action="store_true", help="only print the labels of the model's "
                    "generations stored so far (read while its run goes on) and stop")
    ap.add_argument("--skip-control", action="store_true", help="leave out the human control")
    ap.add_argument("--skip-constant", action="store_true", help="leave out the constant-label run")
    ap.add_argument("--skip-control-null", action="store_true", help="leave out the control with shuffled rationales")
    ap.add_argument("--constant-label", default="entailment", help="the label of the constant-label run")
    args = ap.parse_args()

    rows = read_rows(args.data)
    items = [esnli_row(r) for r in rows]
    by_id = {it.id: r for it, r in zip(items, rows, strict=True)}
    train, test = premise_split(items, args.test, seed=args.seed)
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    test_rows = by_premise([by_id[it.id] for it in test])[: args.limit]
    if not args.stored_labels:  # a look at a run that goes on leaves its inputs alone
        write_split([by_id[it.id] for it in train], out / "train.csv")
        write_split(test_rows, out / "test.csv")
    clusters = {r["pairID"]: r["Sentence1"] for r in test_rows}
    print(f"e-SNLI: {len(train)} training pairs, {len(test_rows)} test pairs from {len(set(clusters.values()))} "
          "premises (premises disjoint)")

    base = [sys.executable, "-m", "reasonscope.cli", "evidence", "--train", str(out / "train.csv"),
            "--test", str(out / "test.csv"), "--format", "esnli", "--output-dir", str(out), "--seed", str(args.seed)]
    matchers = ("exact", "token", "edit", "edit_chars")
    if args.stored_labels:
        stored_labels(out / "llm", test_rows)
        return
    if not args.skip_control:
        control = out / "control_predictions.jsonl"
        write_jsonl(control_predictions(test_rows, [r["pairID"] for r in test_rows], args.seed), control)
        seconds = run(base + ["--predictions", str(control), "--name", "control"])
        table(out / "control" / "summary.json", "control: human explanations, half the labels flipped", seconds)
        classes, got = instances(out / "control")
        for model, inst in got.items():
            print_breakdown(f"control ({model})", classes, inst, clusters, matchers, args.seed)
    if not args.skip_control_null:
        preds = control_predictions(test_rows, [r["pairID"] for r in test_rows], args.seed)
        path = write_jsonl(breakdown.shuffle_rationales(preds, clusters, seed=args.seed),
                           out / "control-null-rationales.jsonl")
        seconds = run(base + ["--predictions", str(path), "--name", "control-null-rationales"])
        what = "the control's human explanations moved to pairs of other premises"
        table(out / "control-null-rationales" / "summary.json", f"null control: {what}", seconds)
        classes, got = instances(out / "control-null-rationales")
        print_breakdown(f"null control: {what}", classes, next(iter(got.values())), clusters, matchers, args.seed)
    if not args.skip_constant:
        rows_c = constant_predictions(test_rows, args.constant_label)
        path = write_jsonl(rows_c, out / "constant_predictions.jsonl")
        seconds = run(base + ["--predictions", str(path), "--name", "constant"])
        what = f"always '{args.constant_label}', the hypothesis as rationale"
        table(out / "constant" / "summary.json", f"no reasoning: {what}", seconds)
        classes, got = instances(out / "constant")
        print_breakdown(f"no reasoning: {what}", classes, next(iter(got.values())), clusters, matchers, args.seed)
    if args.skip_llm:
        return
    seconds = run(base + ["--model", args.model, "--name", "llm"])
    table(out / "llm" / "summary.json", f"the model's own labels and rationales ({args.model})", seconds)
    classes, got = instances(out / "llm")
    model, inst = next(iter(got.items()))
    print_breakdown(f"{model}, sampled labels", classes, inst, clusters, matchers, args.seed)
    own = prediction_rows(inst, model)
    write_jsonl(own, out / "llm_predictions.jsonl")
    nulls = {"null-rationales": (breakdown.shuffle_rationales(own, clusters, seed=args.seed),
                                 "rationales moved to pairs of other premises"),
             "null-labels": (breakdown.shuffle_labels(own, seed=args.seed), "labels permuted across pairs")}
    for name, (preds, what) in ({} if args.skip_nulls else nulls).items():
        seconds = run(base + ["--predictions", str(write_jsonl(preds, out / f"{name}.jsonl")), "--name", name])
        table(out / name / "summary.json", f"null control: {model}'s {what}", seconds)
        classes, got = instances(out / name)
        print_breakdown(f"null control: {what}", classes, next(iter(got.values())), clusters, matchers, args.seed)
    if args.skip_likelihood:
        return
    plan = likelihood_plan(out / "likelihood.yaml", out, out / "train.csv", out / "test.csv",
                           out / "llm_predictions.jsonl", args.model, args.seed, None)
    seconds = run([sys.executable, "-m", "reasonscope.cli", "run", str(plan)])
    table(out / "likelihood" / "summary.json", f"{model}'s rationales, labels by log-likelihood", seconds)
    classes, got = instances(out / "likelihood")
    print_breakdown(f"{model}, labels by log-likelihood", classes, next(iter(got.values())), clusters, matchers,
                    args.seed)


if __name__ == "__main__":
    main()
