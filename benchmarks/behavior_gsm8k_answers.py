"""CQ's answer reading on real data: every GSM8K gold solution, read as a model output, gives its gold answer.

    python benchmarks/behavior_gsm8k_answers.py --data PATH/gsm8k_train.jsonl.gz

The behavioural framework's CQ (*Measuring Reasoning Quality in Large Language Models: A Multi-Dimensional
Behavioral Framework*, arXiv:2605.24661) rests on reading the final answer of a model's output and comparing
it with the gold one; its package matches by substring, so a wrong answer that contains the gold digits
passes. Here the GSM8K training solutions (correct worked solutions, 7,473 in the distributed file) are the
"outputs", loaded by the project's ``gsm8k`` reader, and each is read by
:func:`reasonscope.text.answers.extract_answer` in two forms:

* as written (``... #### 72``);
* with the ``#### X`` line replaced by "The answer is X." (the form a chat model writes).

Every one must match its gold answer with :func:`reasonscope.text.answers.answers_match` (CQ = 1); a wrong
answer must not: each solution's answer is also replaced by a wrong one that contains the gold digits
(gold x 10 + 1, e.g. 721 for 72), which a substring matcher accepts and which must score 0. The shares come
with exact (Clopper-Pearson) 95% intervals from :func:`reasonscope.stats.bootstrap.bootstrap_mean`.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from reasonscope.data.loaders import load_dataset
from reasonscope.settings import DatasetConfig
from reasonscope.stats.bootstrap import bootstrap_mean
from reasonscope.text.answers import answers_match, extract_answer

HASH_LINE = re.compile(r"####\s*(.+?)\s*$", re.S)


def share(hits: list[int], label: str) -> None:
    e = bootstrap_mean(hits)
    print(f"| {label} | {sum(hits)}/{len(hits)} | {e.value:.5f} [{e.low:.5f}, {e.high:.5f}] | {e.method} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="gsm8k_train.jsonl.gz (the GSM8K training split)")
    args = ap.parse_args()
    start = time.perf_counter()
    items = load_dataset(DatasetConfig(name="gsm8k", format="gsm8k", path=str(args.data))).items
    as_written, as_sentence, wrong_rejected = [], [], []
    for item in items:
        solution = str(item.metadata.get("solution") or item.rationale or "")
        body = HASH_LINE.sub("", solution).strip()
        gold = int(item.target) if float(item.target).is_integer() else item.target
        written = extract_answer(f"{body}\n#### {gold}", "number").answer
        sentence = extract_answer(f"{body}\nThe answer is {gold}.", "number").answer
        as_written.append(int(answers_match(written, gold, "number")))
        as_sentence.append(int(answers_match(sentence, gold, "number")))
        wrong = extract_answer(f"{body}\nThe answer is {int(float(gold)) * 10 + 1}.", "number").answer
        wrong_rejected.append(int(not answers_match(wrong, gold, "number")))
    print(f"GSM8K training solutions: {len(items)}, read in {time.perf_counter() - start:.1f} s")
    print("| reading | matches | share [95% CI] | interval |")
    print("|---|---|---|---|")
    share(as_written, "gold solution as written (#### X)")
    share(as_sentence, "gold solution ending 'The answer is X.'")
    share(wrong_rejected, "wrong answer holding the gold digits (10 x gold + 1) rejected")


if __name__ == "__main__":
    main()
