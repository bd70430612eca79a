"""Benchmark: RACE's llm run on e-SNLI with the embedded SmolLM2 on each runtime (torch, llama.cpp), side by side.

    python benchmarks/race_runtimes.py --data PATH/esnli_dev.csv.gz --limit 96 --order ABBA
    python benchmarks/race_runtimes.py --data PATH/esnli_dev.csv.gz --limit 1000 --order B --output-dir D  # the whole run
    python benchmarks/race_runtimes.py --data PATH/esnli_dev.csv.gz --limit 96 --order CBBC --former /tmp/former

The split is ``evidence_replication.py``'s (``--test`` e-SNLI validation pairs, whole premises held out, the
TF-IDF logistic regression trained on the rest; the test pairs premise by premise), written to
``--output-dir``; the command is that script's llm run, ``reasonscope evidence --train train.csv --test
test.csv --format esnli --model smollm2``, on the first ``--limit`` test pairs, each run in a new process and a
fresh run folder. The embedded model's runtime is forced as in ``demo_runtimes.py`` (A = torch, B = llama.cpp,
what ``runtime: auto`` is when llama-cpp-python is installed). SmolLM2's conversions must exist (run the demo
once).

Per run: wall seconds of the command, the run's phase seconds, seconds per pair (wall / N) and the projection
to 1,000 pairs: the wall time outside the generation phase (start, classifier, coverage, outputs) plus the
generation phase scaled by 1,000 / N. A projection, not a measurement: generation dominates and grows with
the pairs; the fixed part is the same at any N. Each runtime's median (two runs: the mean) and the ratio.

Agreement, first torch run against first llama.cpp run, pair by pair (the run's evidence instances): the same
predicted label n/N and the same rationale text n/N; plus the same raw generated text, greedy and sampled
counted apart (the command samples at the model's temperature, so draws differ by design), and each run's
accuracy against the gold labels.

``--former PATH`` (a folder holding an earlier copy of ``reasonscope/``, put first on ``PYTHONPATH``) adds the
letter C: llama.cpp on that copy, so that the runtime before a change and after it run side by side; the report
then adds the median of each, their ratio, and the first former run against the first run now: the same label,
rationale and generated text (greedy and sampled apart), pair by pair.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from demo_runtimes import RUNTIMES, agreement, run_order, runtimes_used  # noqa: E402 - the scripts' folder first
from evidence_esnli import premise_split  # noqa: E402
from evidence_replication import by_premise, instances, read_rows, write_split  # noqa: E402

from reasonscope.data.loaders import esnli_row  # noqa: E402


def write_inputs(data: Path, out: Path, n_test: int, limit: int | None, seed: int) -> dict[str, str]:
    """Write ``train.csv`` and the first ``limit`` test pairs to ``test.csv`` in ``out``; gold label by pair id."""
    rows = read_rows(data)
    items = [esnli_row(r) for r in rows]
    by_id = {it.id: r for it, r in zip(items, rows, strict=True)}
    train, test = premise_split(items, n_test, seed=seed)
    test_rows = by_premise([by_id[it.id] for it in test])[:limit]
    write_split([by_id[it.id] for it in train], out / "train.csv")
    write_split(test_rows, out / "test.csv")
    return {r["pairID"]: r["gold_label"] for r in test_rows}


def report(out: Path, gold: dict[str, str]) -> None:
    """The table of every run in ``out`` and the agreement of its first torch and first llama.cpp runs."""
    runs = sorted((json.loads(p.read_text()) for p in out.glob("*/timing.json")), key=lambda r: r["position"])
    runs = [r for r in runs if r["pairs"] == len(gold)]
    if not runs:
        raise SystemExit(f"no finished run of {len(gold)} pairs in {out}")
    n = len(gold)
    for r in runs:
        if r.get("version") == "former":
            r["runtime"] = "former"
    print(f"RACE llm run, SmolLM2 on {n} e-SNLI test pairs")
    print(f"{'run':14} {'wall s':>7} {'generation s':>12} {'s / pair':>9} {'1,000 pairs (projected) min':>28} "
          f"{'accuracy':>9}")
    inst = {}
    for r in runs:
        folder = Path(r["folder"])
        inst[r["position"]] = next(iter(instances(folder / "llm")[1].values()))
        rows = inst[r["position"]]
        acc = sum(x["predicted"] == gold.get(x["item_id"]) for x in rows) / len(rows)
        gen = r["phases"].get("generation", 0.0)
        projected = (r["wall"] - gen + gen * 1000 / n) / 60
        r["projected"] = projected
        print(f"{r['position']:>2} {r['runtime']:11} {r['wall']:>7.1f} {gen:>12.1f} {r['wall'] / n:>9.3f} "
              f"{projected:>28.1f} {acc:>9.3f}")
    former(runs, inst)
    by = {rt: [r for r in runs if r["runtime"] == rt] for rt in RUNTIMES.values()}
    if not all(by.values()):
        return
    wall = {rt: statistics.median(r["wall"] for r in rs) for rt, rs in by.items()}
    proj = {rt: statistics.median(r["projected"] for r in rs) for rt, rs in by.items()}
    print(f"median wall: torch {wall['torch']:.1f} s, llama.cpp {wall['llama-cpp']:.1f} s, torch / llama.cpp = "
          f"{wall['torch'] / wall['llama-cpp']:.2f}; 1,000 pairs projected: torch {proj['torch']:.1f} min, "
          f"llama.cpp {proj['llama-cpp']:.1f} min")
    t, ll = by["torch"][0], by["llama-cpp"][0]
    print(f"runtimes the stored completions record: torch run {runtimes_used(Path(t['folder']) / 'llm' / 'store.sqlite')}"
          f", llama.cpp run {runtimes_used(Path(ll['folder']) / 'llm' / 'store.sqlite')}")
    print(f"first torch run vs first llama.cpp run: {pair_agreement(t, ll, inst)}")


def pair_agreement(a: dict, b: dict, inst: dict) -> str:
    """Runs ``a`` and ``b`` pair by pair: the same label, the same rationale, the same generated text (greedy and
    sampled apart), as one line."""
    ai = {x["item_id"]: x for x in inst[a["position"]]}
    bi = {x["item_id"]: x for x in inst[b["position"]]}
    both = [i for i in ai if i in bi]
    same_label = sum(ai[i]["predicted"] == bi[i]["predicted"] for i in both)
    same_rationale = sum((ai[i]["rationale"] or "") == (bi[i]["rationale"] or "") for i in both)
    ag = agreement(Path(a["folder"]) / "llm" / "store.sqlite", Path(b["folder"]) / "llm" / "store.sqlite")
    return (f"same label {same_label}/{len(both)}, same rationale {same_rationale}/{len(both)}; same generated "
            f"text: greedy {ag['greedy'][0]}/{ag['greedy'][1]}, sampled {ag['sampled'][0]}/{ag['sampled'][1]}")


def former(runs: list[dict], inst: dict) -> None:
    """The former runtime (C) against llama.cpp now (B): medians, ratio, and what the first run of each gave."""
    old = [r for r in runs if r["runtime"] == "former"]
    now = [r for r in runs if r["runtime"] == "llama-cpp"]
    if not old or not now:
        return
    wall = [statistics.median(r["wall"] for r in rs) for rs in (old, now)]
    gen = [statistics.median(r["phases"].get("generation", 0.0) for r in rs) for rs in (old, now)]
    proj = [statistics.median(r["projected"] for r in rs) for rs in (old, now)]
    print(f"median wall: former {wall[0]:.1f} s, now {wall[1]:.1f} s, former / now = {wall[0] / wall[1]:.3f} "
          f"(generation phase {gen[0]:.1f} s and {gen[1]:.1f} s, {gen[0] / gen[1]:.3f}); 1,000 pairs projected: "
          f"former {proj[0]:.2f} min, now {proj[1]:.2f} min")
    print(f"first former run vs first run now: {pair_agreement(old[0], now[0], inst)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the e-SNLI validation file (esnli_dev.csv.gz)")
    ap.add_argument("--test", type=int, default=1000, help="test pairs of the split (whole premises held out)")
    ap.add_argument("--limit", type=int, default=96, help="run on the first N test pairs (whole premises)")
    ap.add_argument("--order", default="ABBA", help="A = torch, B = llama.cpp, C = llama.cpp on --former, in this order")
    ap.add_argument("--former", type=Path, help="a folder holding an earlier copy of reasonscope/ (letter C)")
    ap.add_argument("--output-dir", type=Path, default=Path("/tmp/race-runtimes"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", action="store_true", help="only print the report of the runs in --output-dir")
    args = ap.parse_args()
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    gold = write_inputs(args.data, out, args.test, args.limit, args.seed)
    if "C" in args.order and args.former is None:
        ap.error("--order C needs --former")
    if not args.report:
        run_order(out, args.order, args.former, lambda folder: [
            "evidence", "--train", str(out / "train.csv"), "--test", str(out / "test.csv"), "--format",
            "esnli", "--output-dir", str(folder), "--seed", str(args.seed), "--model", "smollm2", "--name",
            "llm"], "llm", pairs=len(gold))
    report(out, gold)


if __name__ == "__main__":
    main()
