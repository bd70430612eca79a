"""Benchmark: the demo's first run with the embedded SmolLM2 on each runtime (torch, llama.cpp), side by side.

    python benchmarks/demo_runtimes.py --order ABBA --output-dir /tmp/demo-runtimes
    python benchmarks/demo_runtimes.py --order AB --output-dir D; python benchmarks/demo_runtimes.py --order BA --output-dir D

Each run is ``reasonscope demo --output-dir FOLDER`` in a new process and a fresh folder (so a first run: no
stored generation, no trained evaluator), the embedded model's runtime forced for every SmolLM2 the plan makes
(the generator, the NLI judge, the attributes judge, perplexity) by setting
:data:`reasonscope.models.smollm2.AUTO_ORDER` before the command starts, as the test suite does: A = torch
(``("torch",)``), B = llama.cpp (``("llama-cpp", "torch")``, what ``runtime: auto`` is when llama-cpp-python is
installed). Gradient work (the attack, integrated gradients, the information evaluators) runs on torch either
way. SmolLM2's conversions (the safetensors copy and the float32 GGUF file) must exist before timing: run the
demo once first; the script refuses to time otherwise.

Per run: wall seconds of the whole command (process start to exit, as a user waits), the run's own phase
seconds (``notes.phase_seconds`` of ``summary.json``) and the CPU seconds other processes took meanwhile (the
machine's busy CPU time from ``/proc/stat`` less the command's own, :func:`other_cpu`): a run beside other work
is slower in every phase, and on this 2-core machine such a run showed 65-197 s of other CPU with its torch phases
up to 3x slower, so a run with more than a few seconds of it is no figure to report. Runs go in ``--order`` (A B B A: each runtime once early
and once late, so drift in the machine's speed falls on both); the report takes each runtime's median (two
runs: their mean) and the ratio torch / llama.cpp. A second invocation with the same ``--output-dir`` adds its
runs (named by their position) and reports all of them together.

Agreement, first torch run against first llama.cpp run, each generation matched by its stored request (the
messages, temperature, seed, sample, structure; the llama.cpp side's ``runtime`` key left out): the number with the
same text, greedy ones (temperature 0) and sampled ones separately. Sampled draws differ by design: torch
draws from its seeded generator per batch, llama.cpp from a numpy generator seeded per request (the demo
samples all 84 of its generations; the attack's stored per-item records are not completions and are left
out). With two torch runs, the same count between them. Then the headline values side by side and, per
family, how many numeric values of the two ``summary.json`` files are equal.

``--former PATH`` (a folder holding an earlier copy of ``reasonscope/``, put first on ``PYTHONPATH``) adds the letter
C: llama.cpp on that copy, so that the demo before a change and after it run side by side (``--order CBBC``); the
report then adds the median wall and phase seconds of each with their ratios, the generations of the first
former run and the first run now with the same text, and the equal numeric values of their ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNTIMES = {"A": "torch", "B": "llama-cpp"}
RUNTIME_KEYS = ("runtime", "weights")
"""Keys a stored request has on one runtime only (left out when requests are matched)."""
ORDERS = {"torch": ("torch",), "llama-cpp": ("llama-cpp", "torch")}
LAUNCH = ("import sys, reasonscope.models.smollm2 as m; m.AUTO_ORDER = tuple(sys.argv.pop(1).split(',')); "
          "from reasonscope.cli.process import main; main()")


def command(runtime: str, args: list[str]) -> list[str]:
    """The ``reasonscope`` command ``args`` in a new Python process with the embedded model on ``runtime``."""
    return [sys.executable, "-c", LAUNCH, ",".join(ORDERS[runtime]), *args]


def converted() -> bool:
    """Whether both of SmolLM2's one-time conversions exist (the timed runs must not include them)."""
    from reasonscope.models.smollm2 import converted_target, float32_gguf_target

    return float32_gguf_target().is_file() and converted_target().is_dir()


def busy_cpu_seconds(stat: str | None = None) -> float | None:
    """CPU seconds the machine has been busy since boot, all cores together (``/proc/stat``'s first line: every
    field but idle and iowait); None where there is no ``/proc/stat``."""
    if stat is None:
        try:
            stat = Path("/proc/stat").read_text()
        except OSError:
            return None
    fields = [int(x) for x in stat.splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def other_cpu(busy_before: float | None, busy_after: float | None, own: float) -> float | None:
    """CPU seconds other processes took while a command ran: the machine's busy seconds less the command's ``own``.

    >>> other_cpu(100.0, 290.0, 187.5)
    2.5
    """
    if busy_before is None or busy_after is None:
        return None
    return round(busy_after - busy_before - own, 1)


def children_cpu() -> float:
    """User and system CPU seconds of this process's finished children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], log: Path) -> tuple[float, float | None]:
    """Run ``cmd`` (output to ``log``), fail loudly on a non-zero exit; its wall seconds and the CPU seconds
    other processes took meanwhile (:func:`other_cpu`)."""
    own0, busy0, t0 = children_cpu(), busy_cpu_seconds(), time.perf_counter()
    with log.open("w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False).returncode
    seconds = time.perf_counter() - t0
    others = other_cpu(busy0, busy_cpu_seconds(), children_cpu() - own0)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd[3:])} exited {rc}; see {log}")
    return seconds, others


def generations(store: Path) -> dict[str, tuple[float, str]]:
    """Every model completion of a run folder's store: request JSON (runtime keys left out) -> (temperature, text).

    Rows without messages (records a family stores beside the completions, as the attack's per item) are left out.
    """
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT request, text FROM generations").fetchall()
    finally:
        conn.close()
    out = {}
    for req, text in rows:
        r = {k: v for k, v in json.loads(req).items() if k not in RUNTIME_KEYS}
        if "messages" not in r:  # a family's stored record (the attack's), not a model completion
            continue
        out[json.dumps(r, sort_keys=True)] = (float(r.get("temperature") or 0.0), text or "")
    return out


def runtimes_used(store: Path) -> list[str]:
    """The runtimes a store's completions record (a request without a ``runtime`` key ran on torch)."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        reqs = [json.loads(r[0]) for r in conn.execute("SELECT request FROM generations").fetchall()]
    finally:
        conn.close()
    return sorted({r.get("runtime", "torch") for r in reqs if "messages" in r})


def agreement(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Same text (n, N) of the generations two stores share, greedy and sampled; unmatched requests counted."""
    ga, gb = generations(a), generations(b)
    out = {"greedy": [0, 0], "sampled": [0, 0]}
    for req, (temp, text) in ga.items():
        if req in gb:
            kind = out["greedy" if temp == 0 else "sampled"]
            kind[0] += text == gb[req][1]
            kind[1] += 1
    out["unmatched"] = [len(set(ga) ^ set(gb)), len(set(ga) | set(gb))]
    return {k: (v[0], v[1]) for k, v in out.items()}


def _value(x) -> float | None:
    if isinstance(x, dict):
        for k in ("value", "estimate", "mean", "point"):
            if isinstance(x.get(k), int | float):
                return float(x[k])
        return None
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def headline(summary: dict) -> dict[str, float | None]:
    """Point estimates of each family's headline numbers from a demo ``summary.json`` (missing: None)."""
    out: dict[str, float | None] = {}
    for model, metrics in (summary.get("behavior") or {}).get("metrics", {}).items():
        for name in ("CQ", "CS", "RS", "LS", "SS", "ES"):
            out[f"behavior {name} ({model})"] = _value(metrics.get(name))
    for model, block in (summary.get("evidence") or {}).items():
        if isinstance(block, dict) and "llm" in block:
            out[f"evidence LLM accuracy ({model})"] = _value((block.get("llm") or {}).get("accuracy"))
            token = (block.get("coverage") or {}).get("token") or {}
            for side in ("support", "contradict"):
                out[f"evidence {side} coverage, token ({model})"] = _value((token.get("all") or {}).get(side))
            out[f"evidence A(correct) - A(incorrect), token ({model})"] = _value(token.get("asymmetry_difference"))
    return out


def flat_numbers(x, prefix: str = "") -> dict[str, float]:
    """Every numeric leaf of a JSON value, by its dotted path."""
    if isinstance(x, dict):
        return {k: v for key, val in x.items() for k, v in flat_numbers(val, f"{prefix}.{key}" if prefix else str(key)).items()}
    if isinstance(x, list):
        return {k: v for i, val in enumerate(x) for k, v in flat_numbers(val, f"{prefix}[{i}]").items()}
    v = _value(x)
    return {prefix: v} if v is not None else {}


def fmt_other(seconds: float | None) -> str:
    """Other processes' CPU seconds as the tables print them ('-' where unknown: no ``/proc/stat``, an older run)."""
    return "-" if seconds is None else f"{seconds:.1f}"


def report(out: Path) -> None:
    """Print the table of every run in ``out`` and the agreement of its first torch and llama.cpp runs."""
    runs = sorted((json.loads(p.read_text()) for p in out.glob("*/timing.json")), key=lambda r: r["position"])
    if not runs:
        raise SystemExit(f"no finished run in {out}")
    phases = sorted({p for r in runs for p in r["phases"]}, key=lambda p: -runs[0]["phases"].get(p, 0))
    print(f"{'run':14} {'wall s':>7} {'other CPU s':>11} {'phases s':>11} " + " ".join(f"{p[:11]:>11}" for p in phases))
    for r in runs:
        label = "former" if r.get("version") == "former" else r["runtime"]
        print(f"{r['position']:>2} {label:11} {r['wall']:>7.1f} {fmt_other(r.get('other_cpu')):>11} "
              f"{sum(r['phases'].values()):>11.1f} " + " ".join(f"{r['phases'].get(p, 0):>11.1f}" for p in phases))
    former_report(runs)
    by = {rt: [r for r in runs if r["runtime"] == rt and r.get("version") != "former"] for rt in ORDERS}
    if not all(by.values()):
        return
    med = {rt: statistics.median(r["wall"] for r in rs) for rt, rs in by.items()}
    print(f"median wall: torch {med['torch']:.1f} s, llama.cpp {med['llama-cpp']:.1f} s, "
          f"torch / llama.cpp = {med['torch'] / med['llama-cpp']:.2f}")
    for p in phases:
        t = statistics.median(r["phases"].get(p, 0) for r in by["torch"])
        ll = statistics.median(r["phases"].get(p, 0) for r in by["llama-cpp"])
        print(f"  {p:12} torch {t:7.1f} s  llama.cpp {ll:7.1f} s  ratio {t / ll if ll else float('nan'):.2f}")
    ta, la = (Path(by[rt][0]["folder"]) / "demo" for rt in ("torch", "llama-cpp"))
    ag = agreement(ta / "store.sqlite", la / "store.sqlite")
    print(f"runtimes the stored completions record: A {runtimes_used(ta / 'store.sqlite')}, "
          f"B {runtimes_used(la / 'store.sqlite')}")
    print(f"same text, first torch run vs first llama.cpp run: greedy {ag['greedy'][0]}/{ag['greedy'][1]}, "
          f"sampled {ag['sampled'][0]}/{ag['sampled'][1]} (requests in one store only: {ag['unmatched'][0]})")
    if len(by["torch"]) > 1:
        tt = agreement(ta / "store.sqlite", Path(by["torch"][1]["folder"]) / "demo" / "store.sqlite")
        print(f"same text, torch run 1 vs torch run 2: greedy {tt['greedy'][0]}/{tt['greedy'][1]}, "
              f"sampled {tt['sampled'][0]}/{tt['sampled'][1]}")
    st, sl = (json.loads((d / "summary.json").read_text()) for d in (ta, la))
    ht, hl = headline(st), headline(sl)
    print(f"{'headline value':40} {'torch':>9} {'llama.cpp':>9}")
    for k in ht:
        a, b = ht[k], hl.get(k)
        print(f"{k:40} {'-' if a is None else f'{a:.3f}':>9} {'-' if b is None else f'{b:.3f}':>9}")
    for family in ("behavior", "evidence", "attributes", "attack", "information"):
        ft, fl = flat_numbers(st.get(family)), flat_numbers(sl.get(family))
        common = [k for k in ft if k in fl]
        same = sum(abs(ft[k] - fl[k]) <= 1e-9 for k in common)
        print(f"{family}: {same}/{len(common)} numeric values of summary.json equal")

def run_series(out: Path, order: str, args_of, run_name: str, **extra) -> None:
    """Run the command ``args_of(folder)`` once per letter of ``order`` on its runtime, each in a fresh folder.

    Folders are ``out/NN-RUNTIME``, numbered after the runs already in ``out``; each gets ``log.txt`` and
    ``timing.json`` (position, runtime, wall seconds, the run's ``notes.phase_seconds`` read from
    ``FOLDER/run_name/summary.json``, and ``extra``).
    """
    if set(order) - set(RUNTIMES):
        raise SystemExit(f"--order: letters A (torch) and B (llama.cpp) only, got {order!r}")
    if not converted():
        raise SystemExit("SmolLM2 is not converted yet (both copies): run `reasonscope demo` once first")
    out.mkdir(parents=True, exist_ok=True)
    start = len(list(out.glob("*/timing.json")))
    for i, letter in enumerate(order, start=start + 1):
        runtime = RUNTIMES[letter]
        folder = out / f"{i:02d}-{runtime}"
        if folder.exists():
            raise SystemExit(f"{folder} exists: each run needs a fresh folder")
        folder.mkdir()
        wall, others = timed(command(runtime, args_of(folder)), folder / "log.txt")
        summary = json.loads((folder / run_name / "summary.json").read_text())
        (folder / "timing.json").write_text(json.dumps({
            "position": i, "runtime": runtime, "wall": wall, "other_cpu": others, "folder": str(folder),
            "phases": summary["notes"].get("phase_seconds", {}), **extra}))
        print(f"run {i} ({runtime}): {wall:.1f} s, other processes' CPU {fmt_other(others)}", flush=True)


def run_order(out: Path, order: str, former_copy: Path | None, args_of, run_name: str, **extra) -> None:
    """:func:`run_series` letter by letter, where C is llama.cpp (B) on ``former_copy``.

    A C run differs from a B run by the ``PYTHONPATH`` of its process only: ``former_copy`` (a folder holding an
    earlier copy of ``reasonscope/``) comes first on it, so that copy is imported instead of the installed one.
    Each run's ``timing.json`` records ``version``: ``former`` or ``now``.
    """
    if "C" in order and former_copy is None:
        raise SystemExit("--order C needs --former")
    path = os.environ.get("PYTHONPATH")
    try:
        for letter in order:
            if letter == "C":
                os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(former_copy), path) if p)
            elif path is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = path
            run_series(out, "B" if letter == "C" else letter, args_of, run_name, **extra,
                       version="former" if letter == "C" else "now")
    finally:
        if path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = path


def former_report(runs: list[dict]) -> None:
    """Former code (C) against the code now on llama.cpp (B): median wall and phase seconds, their ratios, the
    generations of the first run of each with the same text, and the numeric values of their ``summary.json``
    files that are equal, per family."""
    old = [r for r in runs if r.get("version") == "former"]
    now = [r for r in runs if r.get("version") != "former" and r["runtime"] == "llama-cpp"]
    if not old or not now:
        return
    wall = [statistics.median(r["wall"] for r in rs) for rs in (old, now)]
    print(f"median wall: former {wall[0]:.1f} s, now {wall[1]:.1f} s, former / now = {wall[0] / wall[1]:.3f}")
    for p in sorted({p for r in old + now for p in r["phases"]}, key=lambda p: -old[0]["phases"].get(p, 0)):
        a, b = (statistics.median(r["phases"].get(p, 0) for r in rs) for rs in (old, now))
        print(f"  {p:12} former {a:7.1f} s  now {b:7.1f} s  ratio {a / b if b else float('nan'):.3f}")
    fa, fb = (Path(rs[0]["folder"]) / "demo" for rs in (old, now))
    ag = agreement(fa / "store.sqlite", fb / "store.sqlite")
    print(f"same text, first former run vs first run now: greedy {ag['greedy'][0]}/{ag['greedy'][1]}, "
          f"sampled {ag['sampled'][0]}/{ag['sampled'][1]} (requests in one store only: {ag['unmatched'][0]})")
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (fa, fb))
    for family in ("behavior", "evidence", "attributes", "attack", "information"):
        xa, xb = flat_numbers(sa.get(family)), flat_numbers(sb.get(family))
        common = [k for k in xa if k in xb]
        same = sum(abs(xa[k] - xb[k]) <= 1e-9 for k in common)
        print(f"former vs now, {family}: {same}/{len(common)} numeric values of summary.json equal")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--order", default="ABBA", help="A = torch, B = llama.cpp, C = llama.cpp on --former, in this order")
    ap.add_argument("--former", type=Path, help="a folder holding an earlier copy of reasonscope/ (letter C)")
    ap.add_argument("--output-dir", type=Path, default=Path("/tmp/demo-runtimes"))
    ap.add_argument("--report", action="store_true", help="only print the report of the runs in --output-dir")
    args = ap.parse_args()
    out = args.output_dir
    if "C" in args.order and args.former is None:
        ap.error("--order C needs --former")
    if not args.report:
        run_order(out, args.order, args.former, lambda folder: ["demo", "--output-dir", str(folder)], "demo")
    report(out)


if __name__ == "__main__":
    main()
