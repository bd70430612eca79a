"""CQ's answer reading on real data: our reader and the peer package's, on the same GSM8K outputs.

    python benchmarks/behavior_gsm8k_answers.py --data PATH/gsm8k_train.jsonl.gz [--peer-venv DIR]

The behavioural framework's CQ (*Measuring Reasoning Quality in Large Language Models: A Multi-Dimensional
Behavioral Framework*) is the share of outputs whose final answer equals the gold one. The publication states
formulas and strategies, not an empirical result to reproduce, so what is validated here is the answer
reading itself. The GSM8K training solutions (correct worked solutions, 7,473 in the distributed file) are
the "outputs", loaded by the project's ``gsm8k`` reader, each in three forms:

* **as written**: the solution ending ``#### X`` (must be accepted);
* **sentence**: the ``#### X`` line replaced by "The answer is X." (the form a chat model writes; must be
  accepted);
* **wrong, holding the gold digits**: "The answer is Y." with Y = 10 x gold + 1 (721 for 72), a wrong answer
  that must be rejected.

Each output is read by two readers:

* **ours**: :func:`reasonscope.text.answers.extract_answer` then
  :func:`reasonscope.text.answers.answers_match` (CQ's reader in reasonscope);
* **the peer's**: ``AccuracyMetric().compute_per_instance`` of the package ``llm-reasoning-quality`` 1.1.4
  (its ``metrics.accuracy``), given the whole output as the prediction (as its evaluator does) and the gold
  answer its GSM8K loader extracts (``_extract_gsm8k_answer``) from the solution in GSM8K's form (the
  worked solution, then ``#### X``; the project's reader keeps the worked solution without that line). It runs in a side virtual
  environment (``--peer-venv``, created when missing with ``pip install --no-deps
  llm-reasoning-quality==1.1.4``: its reader needs only the standard library, and the wheel installs
  top-level packages named ``models``, ``metrics`` and ``utils`` that do not belong in the project's
  environment).

For each form it prints each reader's acceptances with exact (Clopper-Pearson) 95% intervals from
:func:`reasonscope.stats.bootstrap.bootstrap_mean`, and the 2 x 2 agreement table of the two readers.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from reasonscope.data.loaders import load_dataset
from reasonscope.shared_settings import DatasetConfig
from reasonscope.stats.bootstrap import bootstrap_mean
from reasonscope.text.answers import answers_match, extract_answer

HASH_LINE = re.compile(r"####\s*(.+?)\s*$", re.S)
PEER = "llm-reasoning-quality==1.1.4"
FORMS = {"as written": True, "sentence": True, "wrong (10 x gold + 1)": False}
"""The output forms and whether a correct reader accepts them."""

PEER_READER = textwrap.dedent("""
    import json, sys
    from llm_datasets.gsm8k_dataset import _extract_gsm8k_answer
    from metrics.accuracy import AccuracyMetric
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    flags = AccuracyMetric().compute_per_instance([r["output"] for r in rows],
                                                  [_extract_gsm8k_answer(r["solution"]) for r in rows])
    json.dump([int(f) for f in flags], open(sys.argv[2], "w"))
""")


def gold_value(target) -> int | float:
    """The gold answer as a number: an int when it is whole (72.0 -> 72)."""
    value = float(target)
    return int(value) if value.is_integer() else value


def outputs(solution: str, gold) -> dict[str, str]:
    """The three outputs of one GSM8K solution (:data:`FORMS`), its ``#### X`` line rewritten."""
    body = HASH_LINE.sub("", solution).strip()
    return {"as written": f"{body}\n#### {gold}", "sentence": f"{body}\nThe answer is {gold}.",
            "wrong (10 x gold + 1)": f"{body}\nThe answer is {int(float(gold)) * 10 + 1}."}


def ours(output: str, gold) -> int:
    """1 when our reader accepts ``output`` as answering ``gold``, else 0."""
    return int(answers_match(extract_answer(output, "number").answer, gold, "number"))


def ensure_peer(venv: Path) -> Path:
    """The python of a side venv holding the peer package (created when missing, without its dependencies)."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import metrics.accuracy, llm_datasets.gsm8k_dataset"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
    subprocess.check_call([str(python), "-m", "pip", "install", "-q", "--no-deps", PEER])
    return python


def peer_reads(python: Path, rows: list[dict], work: Path) -> list[int]:
    """The peer's 0/1 verdict for each ``{"output", "solution"}`` row, from its own AccuracyMetric."""
    src, dst, driver = work / "peer_rows.jsonl", work / "peer_flags.json", work / "peer_reader.py"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    driver.write_text(PEER_READER, encoding="utf-8")
    subprocess.check_call([str(python), str(driver), str(src), str(dst)])
    return json.loads(dst.read_text())


def agreement(a: list[int], b: list[int]) -> dict[str, int]:
    """2 x 2 counts of two readers' verdicts: both accept, only ``a``, only ``b``, both reject."""
    pairs = list(zip(a, b, strict=True))
    return {"both accept": sum(x and y for x, y in pairs), "only ours": sum(x and not y for x, y in pairs),
            "only peer": sum(y and not x for x, y in pairs), "both reject": sum(not x and not y for x, y in pairs)}


def share(hits: list[int]) -> str:
    e = bootstrap_mean(hits)
    return f"{sum(hits)}/{len(hits)}, {e.value:.4f} [{e.low:.4f}, {e.high:.4f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="gsm8k_train.jsonl.gz (the GSM8K training split)")
    ap.add_argument("--peer-venv", type=Path, default=Path(tempfile.gettempdir()) / "lrq-reader-venv",
                    help="side virtual environment of the peer package (created when missing)")
    ap.add_argument("--limit", type=int, default=None, help="read only the first N solutions")
    args = ap.parse_args()
    start = time.perf_counter()
    items = load_dataset(DatasetConfig(name="gsm8k", format="gsm8k", path=str(args.data))).items[: args.limit]
    rows: dict[str, list[dict]] = {form: [] for form in FORMS}
    verdicts: dict[str, list[int]] = {form: [] for form in FORMS}
    for item in items:
        solution = str(item.metadata.get("solution") or item.rationale or "")
        gold = gold_value(item.target)
        forms = outputs(solution, gold)
        for form, text in forms.items():
            verdicts[form].append(ours(text, gold))
            rows[form].append({"output": text, "solution": forms["as written"]})  # GSM8K's own answer field
    ours_s = time.perf_counter() - start
    python = ensure_peer(args.peer_venv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="peer-reader-") as tmp:
        peer = {form: peer_reads(python, rows[form], Path(tmp)) for form in FORMS}
    peer_s = time.perf_counter() - start
    print(f"GSM8K training solutions: {len(items)}; ours read in {ours_s:.1f} s, the peer ({PEER}) in {peer_s:.1f} s")
    print("| output form | a correct reader | ours accepts | peer accepts | both accept | only ours | only peer "
          "| both reject |")
    print("|---|---|---|---|---|---|---|---|")
    for form, accept in FORMS.items():
        agree = agreement(verdicts[form], peer[form])
        print(f"| {form} | {'accepts' if accept else 'rejects'} | {share(verdicts[form])} | {share(peer[form])} | "
              + " | ".join(str(agree[k]) for k in ("both accept", "only ours", "only peer", "both reject")) + " |")


if __name__ == "__main__":
    main()
