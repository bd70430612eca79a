"""Benchmark: ``reasonscope view`` on a folder of 50 runs, one of them 200,000 items.

The folder: 49 mock runs of 200 items and one of ``--items`` (default 200,000) items, one model, one
generation and three item-level scores per item (:func:`reasonscope.view.mock_runs.write_mock_run`:
stores written directly, no model called). It is built once in ``--workdir`` and reused.

Measured in this process through Starlette's test client (the server's handlers and rendering, no
network): the first request, then the median wall and CPU seconds of ``--repeat`` more (CPU seconds of
this process: what a request costs, whatever else the machine runs):

* the Runs page: the first request of a fresh viewer (every store opened and counted) and a repeated
  one (the rows kept until a store changes);
* Items pages of the large run: the first, a middle and the last page (50 rows each), the same with a
  metric and value filter, and a model filter;
* memory while paging: the resident set size after walking 1, 100 and ``--walk`` pages of the large run
  (its growth should not follow the pages viewed).

Targets (the issue): Runs page < 1 s, an Items page < 0.3 s on 2 cores. The machine's load average is
printed before and after: on a shared machine the figures are upper bounds.

    nice -n 5 python benchmarks/view_scale.py [--items 200000] [--workdir /tmp/view-scale]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path


def rss_mb() -> float:
    """Resident set size of this process, in MB."""
    import psutil

    return psutil.Process().memory_info().rss / 1e6


def build(root: Path, items: int) -> None:
    """The folder of runs (skipped where a run is already there)."""
    from reasonscope.view.mock_runs import write_mock_run

    t0 = 1_790_000_000.0
    for i in range(49):
        folder = root / f"small-{i:02d}"
        if not (folder / "summary.json").exists():
            write_mock_run(folder, items=200, models=(f"model-{i % 5}",), created=t0 + i * 3600,
                           dataset=("gsm8k", "strategyqa", "mmlu")[i % 3])
    big = root / f"large-{items}"
    if not (big / "summary.json").exists():
        started = time.perf_counter()
        write_mock_run(big, items=items, models=("big-model",), created=t0 + 50 * 3600, dataset="gsm8k")
        print(f"built {big.name} in {time.perf_counter() - started:.0f} s", flush=True)


def timed(client, url: str, repeat: int) -> tuple[float, float, float, float]:
    """Wall and CPU seconds of the first request, then the medians of wall and CPU seconds of ``repeat`` more."""
    def one() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code, r.text[-300:])
        return time.perf_counter() - wall, time.process_time() - cpu

    first = one()
    runs = [one() for _ in range(repeat)]
    return (*first, statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=200_000, help="items of the large run")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/view-scale"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--walk", type=int, default=200, help="pages walked for the memory figure")
    args = ap.parse_args()

    from starlette.testclient import TestClient

    from reasonscope.view.app import make_app
    from reasonscope.view.site import Viewer

    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    root = args.workdir / "runs"
    build(root, args.items)
    key = f"large-{args.items}"
    pages = -(-args.items // 50)
    rows = []

    def fresh():
        return TestClient(make_app(Viewer(root)), base_url="http://127.0.0.1")

    cold, cold_cpu = [], []
    for _ in range(args.repeat):
        client = fresh()
        wall, cpu = time.perf_counter(), time.process_time()
        assert client.get("/").status_code == 200
        cold.append(time.perf_counter() - wall)
        cold_cpu.append(time.process_time() - cpu)
    _, _, wall, cpu = timed(client, "/", args.repeat)
    rows.append(("Runs page, 50 runs", statistics.median(cold), statistics.median(cold_cpu), wall, cpu, 1.0))
    print(f"Runs page of a fresh viewer (every store read): median {statistics.median(cold):.3f} s wall, "
          f"{statistics.median(cold_cpu):.3f} s CPU", flush=True)
    base = f"/items?run={key}"
    for label, url in (
            ("Items page 1", base),
            (f"Items page {pages // 2} (middle)", f"{base}&page={pages // 2}"),
            (f"Items page {pages} (last)", f"{base}&page={pages}"),
            ("Items, metric behavior.CQ = 0, page 1", f"{base}&metric=behavior.CQ&value=0"),
            (f"Items, metric behavior.CQ = 0, page {pages // 3}", f"{base}&metric=behavior.CQ&value=0&page={pages // 3}"),
            ("Items, model big-model, page 1", f"{base}&model=big-model"),
            ("Items, outcome answered, page 1", f"{base}&outcome=answered")):
        rows.append((label, *timed(client, url, args.repeat), 0.3))
    print(f"\nlarge run: {args.items:,} items. first: the first request (the Runs page of a fresh viewer; an Items "
          "page's filters counted, and for a page past row 1,000 its rows walked once for the anchors); repeated: "
          "the median of the repeats")
    print("| page | first: wall s | first: CPU s | repeated: wall s | repeated: CPU s | target s |\n"
          "|---|---:|---:|---:|---:|---:|")
    for label, first, first_cpu, wall, cpu, target in rows:
        print(f"| {label} | {first:.3f} | {first_cpu:.3f} | {wall:.3f} | {cpu:.3f} | < {target:g} |")

    memory = []
    step = max(1, pages // args.walk)
    for n, page in enumerate(range(1, pages + 1, step)[:args.walk], start=1):
        assert client.get(f"{base}&page={page}").status_code == 200
        if n in (1, 100, args.walk):
            memory.append((n, rss_mb()))
    print("\nresident memory while paging the large run (pages spread over the whole run)")
    for n, mb in memory:
        print(f"  after {n:>4} pages: {mb:7.1f} MB")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
