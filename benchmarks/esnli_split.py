"""Split the e-SNLI validation file into a training file and a held-out test file (no premise shared).

The first ``--train`` rows with a gold label and an explanation go to ``train.csv``; of the rows after
them, those whose premise (``Sentence1``) is not in the training rows go to ``test.csv``, the first
``--test`` of them. With ``--confirm N``, the next N rows whose premise is in neither file go to
``confirm.csv``: a second held-out set, to confirm on pairs that no choice was made on what was chosen
by looking at ``test.csv``. With ``--validation N``, about N pairs are carved from the training rows into
``validation.csv``: whole premises (every pair of a premise goes to the same file), the last premises of
the training rows first, so no premise is in two files; ``train.csv`` keeps the rest. Settings (e.g.
lambda_IRM) are chosen on ``validation.csv``, never on ``test.csv``. Every file keeps the distributed
columns, so ``--format esnli`` reads it::

    python benchmarks/esnli_split.py --data esnli_dev.csv.gz --train 2000 --test 300 --out runs/esnli-split
    reasonscope information train --train runs/esnli-split/train.csv --test runs/esnli-split/test.csv \
        --format esnli --evaluator embedded-minilm-ed --epochs 2 --probe-epochs 2 --larev-epochs 1

Prints the number of rows written and the number of premises of each file.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from pathlib import Path


def split_rows(rows: list[dict], n_train: int, n_test: int, n_confirm: int = 0
               ) -> tuple[list[dict], list[dict], list[dict]]:
    """(training rows, test rows, confirmation rows).

    The first usable rows train; the test rows are later rows whose premise is not in training; the
    confirmation rows come after the last test row, with a premise in neither.
    """
    usable = [r for r in rows if r.get("gold_label") in {"entailment", "neutral", "contradiction"}
              and (r.get("Explanation_1") or "").strip()]
    train = usable[:n_train]
    seen = {r["Sentence1"] for r in train}
    later = [(i, r) for i, r in enumerate(usable[n_train:]) if r["Sentence1"] not in seen]
    test = later[:n_test]
    seen |= {r["Sentence1"] for _, r in test}
    after = test[-1][0] if test else -1
    confirm = [r for i, r in later if i > after and r["Sentence1"] not in seen][:n_confirm]
    return train, [r for _, r in test], confirm


def carve_validation(train: list[dict], n_validation: int) -> tuple[list[dict], list[dict]]:
    """(training rows, validation rows): whole premises from the end of ``train`` until N pairs or more.

    Premises are taken from the last training row backwards; every row of a taken premise moves to the
    validation rows (in file order), so the two share no premise. ``n_validation`` 0 keeps every row.
    """
    taken: set[str] = set()
    count = 0
    per_premise: dict[str, int] = {}
    for r in train:
        per_premise[r["Sentence1"]] = per_premise.get(r["Sentence1"], 0) + 1
    for r in reversed(train):
        if count >= n_validation:
            break
        if r["Sentence1"] not in taken:
            taken.add(r["Sentence1"])
            count += per_premise[r["Sentence1"]]
    return [r for r in train if r["Sentence1"] not in taken], [r for r in train if r["Sentence1"] in taken]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="esnli_dev.csv.gz (or .csv)")
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--confirm", type=int, default=0, help="rows of a second held-out file, confirm.csv")
    parser.add_argument("--validation", type=int, default=0,
                        help="pairs (whole premises) carved from the training rows into validation.csv")
    parser.add_argument("--out", type=Path, default=Path("runs/esnli-split"))
    args = parser.parse_args()
    opener = gzip.open if args.data.endswith(".gz") else open
    with opener(args.data, "rt", encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    train, test, confirm = split_rows(rows, args.train, args.test, args.confirm)
    train, validation = carve_validation(train, args.validation)
    args.out.mkdir(parents=True, exist_ok=True)
    parts = ([("train.csv", train)] + ([("validation.csv", validation)] if args.validation else [])
             + [("test.csv", test)] + ([("confirm.csv", confirm)] if args.confirm else []))
    for name, part in parts:
        with open(args.out / name, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(part)
        print(f"{args.out / name}: {len(part)} rows, {len({r['Sentence1'] for r in part})} premises")


if __name__ == "__main__":
    main()
