"""RACE's finding on real data: an LLM's own predictions and rationales on e-SNLI, beside a known-positive control.

    python benchmarks/evidence_replication.py --data PATH/esnli_dev.csv.gz [--test 1000] [--model smollm2]

The publication (*Framework for Machine Evaluation of Reasoning Completeness in Large Language Models for
Classification Tasks*, arXiv:2510.21884) finds an asymmetry: rationales of correct predictions cover more
of the classifier's *supporting* features, rationales of incorrect predictions more of its *contradicting*
ones. Its numbers come from DeepSeek-R1 on four topic, sentiment and emotion data sets; this script asks the
question on e-SNLI, the real labelled data with rationales that ships here.

Two runs, each through the command a user types (``reasonscope evidence``), so the family's own code computes
every number:

* **llm**: the model labels and explains ``--test`` e-SNLI validation pairs (whole premises held out; the
  TF-IDF logistic regression is trained on the remaining pairs), and coverage is computed against the class
  it predicted (``--target predicted``, the publication's setting);
* **control**: the first human explanation of each test pair is the rationale, and the label is the gold one
  for a random half of the pairs and a different, randomly drawn label for the other half (seeded). A
  human explanation argues for the gold label, so the flipped half is a known-incorrect group whose
  rationales cite evidence *against* the label under evaluation: the asymmetry must appear there.

For each run it prints, per matcher, support and contradiction coverage with 95% intervals for correct and
incorrect predictions, the asymmetry A = cov_S - cov_C of each group, A(correct) - A(incorrect) and its
permutation p-value (Holm-adjusted over the matchers), read from the run's ``summary.json``, and the wall
time. The run folders stay under ``--output-dir`` (resumable: a second call reuses the stored generations).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_esnli import premise_split  # noqa: E402  (the same premise split as the e-SNLI benchmark)

from reasonscope.data.loaders import esnli_row  # noqa: E402

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the e-SNLI validation file (esnli_dev.csv.gz)")
    ap.add_argument("--test", type=int, default=1000, help="test pairs (whole premises held out)")
    ap.add_argument("--model", default="smollm2", help="the model that labels and explains the test pairs")
    ap.add_argument("--output-dir", type=Path, default=Path("runs/evidence-replication"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-llm", action="store_true", help="run the human control only")
    args = ap.parse_args()

    rows = read_rows(args.data)
    items = [esnli_row(r) for r in rows]
    by_id = {it.id: r for it, r in zip(items, rows, strict=True)}
    train, test = premise_split(items, args.test, seed=args.seed)
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    write_split([by_id[it.id] for it in train], out / "train.csv")
    test_rows = [by_id[it.id] for it in test]
    write_split(test_rows, out / "test.csv")
    print(f"e-SNLI: {len(train)} training pairs, {len(test)} test pairs (premises disjoint)")

    base = [sys.executable, "-m", "reasonscope.cli", "evidence", "--train", str(out / "train.csv"),
            "--test", str(out / "test.csv"), "--format", "esnli", "--output-dir", str(out), "--seed", str(args.seed)]
    control = out / "control_predictions.jsonl"
    with control.open("w", encoding="utf-8") as f:
        for p in control_predictions(test_rows, [it.id for it in test], args.seed):
            f.write(json.dumps(p) + "\n")
    seconds = run(base + ["--predictions", str(control), "--name", "control"])
    table(out / "control" / "summary.json", "control: human explanations, half the labels flipped", seconds)
    if not args.skip_llm:
        seconds = run(base + ["--model", args.model, "--name", "llm"])
        table(out / "llm" / "summary.json", f"the model's own labels and rationales ({args.model})", seconds)


if __name__ == "__main__":
    main()
