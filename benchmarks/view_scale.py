"""Benchmark: ``reasonscope view`` on a folder of 50 runs, one of them 200,000 items.

The folder: 49 mock runs of 200 items and one of ``--items`` (default 200,000) items, one model, one
generation and three item-level scores per item (:func:`reasonscope.view.mock_runs.write_mock_run`:
stores written directly, no model called). It is built once in ``--workdir`` and reused; the large run's
store is brought to the present schema first unless ``--as-is`` (to time the viewer on an older store).

Measured in this process through Starlette's test client (the server's handlers and rendering, no
network): the first request, then the median wall and CPU seconds of ``--repeat`` more (CPU seconds of
this process: what a request costs, whatever else the machine runs):

* the Runs page: the first request of a fresh viewer (every store opened and counted) and a repeated
  one (the rows kept until a store changes);
* Items pages of the large run (50 rows each): the first, a middle and the last page, unfiltered and under
  every kind of filter (model; metric and model, the filter a Run page's number links to; metric and
  value; outcome; metric and outcome). The first request of each is made on a fresh viewer whose only
  earlier request was the Runs page, so that it counts its filter and steps to its page from nothing;
* memory while paging: the resident set size after walking 1, 100 and ``--walk`` pages of the large run
  (its growth should not follow the pages viewed).

``--cold`` drops the large run's store from the operating system's page cache before each first Items
request, so that each reads from disk what it needs (the bytes read are printed). ``--write-cost ITEMS``
times instead what the store's schema costs a run's writes: ITEMS requests linked, their generations and
three scores per item stored, into new stores of schema 5 and of the present schema.

Targets (the issue): Runs page < 1 s, an Items page < 0.3 s on 2 cores. The machine's load average is
printed before and after: on a shared machine the figures are upper bounds.

    nice -n 5 python benchmarks/view_scale.py [--items 200000] [--workdir /tmp/view-scale]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
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


def disk_read() -> int:
    """Bytes this process has caused to be read from disk so far (``read_bytes`` of ``/proc/self/io``; 0 elsewhere)."""
    try:
        with open("/proc/self/io", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("read_bytes:"))
    except OSError:
        return 0


def evict(folder: Path) -> None:
    """Drop the run folder's store files from the operating system's page cache (``POSIX_FADV_DONTNEED``)."""
    for path in folder.glob("store.sqlite*"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


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


# the write statements of schema 5 (before slots and counts), for --write-cost's comparison
_V5_LINK = ("INSERT OR REPLACE INTO run_generations(run_id, model, dataset, item_id, variant, sample, key, max_tokens, "
            "item_key, outcome) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?3 || '/' || ?4, (SELECT CASE WHEN g.error IS NULL "
            "THEN 'answered' ELSE 'failed' END FROM generations g WHERE g.key = ?7))")
_V5_SCORE = ("INSERT OR REPLACE INTO scores(run_id, family, metric, model, item_id, value, reason, details) "
             "VALUES (?,?,?,?,?,?,?,?)")


def write_cost(folder: Path, schema: int, items: int) -> dict[str, float]:
    """CPU microseconds per item of a run's writes into a new store of ``schema`` (5 or the present one).

    As a run writes: every request linked (one transaction), the generations stored 50 to a transaction,
    then three item-level scores per item stored 50 items to a transaction. Schema 5 is written with its own
    statements (those of the release before schema 6).
    """
    import reasonscope.storage.store as store_module
    from reasonscope.types import Completion, Score

    present = store_module.MIGRATIONS
    store_module.MIGRATIONS = present[:schema]
    try:
        store = store_module.Store(folder)
    finally:
        store_module.MIGRATIONS = present
    keys = [f"k{i}" for i in range(items)]
    links = [("r", "m", "gsm8k", f"q{i:06d}", "original", 0, keys[i], 64) for i in range(items)]
    out = {}
    t = time.process_time()
    if schema == 5:
        with store.transaction() as c:
            c.executemany(_V5_LINK, links)
    else:
        store.link(links)
    out["link"] = time.process_time() - t
    t = time.process_time()
    for start in range(0, items, 50):
        with store.transaction():
            for key in keys[start:start + 50]:
                store.put_completion(key, provider="mock", model_id="m", request={},
                                     completion=Completion(text="Answer: 1", finish_reason="stop"))
    out["generations"] = time.process_time() - t
    t = time.process_time()
    for start in range(0, items, 50):
        scores = [Score(family="behavior", metric=m, model="m", item_id=f"gsm8k/q{i:06d}", value=v)
                  for i in range(start, min(items, start + 50)) for m, v in (("CQ", 1.0), ("SS", 0.3), ("LS", None))]
        if schema == 5:
            with store.transaction() as c:
                c.executemany(_V5_SCORE, [(("r", s.family, s.metric, s.model, s.item_id, s.value, s.reason, "{}"))
                                          for s in scores])
        else:
            store.put_scores("r", scores)
    out["scores"] = time.process_time() - t
    store.close()
    return {k: v / items * 1e6 for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=200_000, help="items of the large run")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/view-scale"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--as-is", action="store_true",
                    help="read the large run's store at the schema it has (e.g. 4) instead of bringing it forward")
    ap.add_argument("--walk", type=int, default=200, help="pages walked for the memory figure")
    ap.add_argument("--cold", action="store_true",
                    help="drop the large run's store from the page cache before each first Items request (each then "
                         "reads from disk what it needs: the bytes are printed)")
    ap.add_argument("--write-cost", type=int, default=0, metavar="ITEMS",
                    help="only time a run's store writes of ITEMS items at schema 5 and the present schema "
                         "(alternated, twice each) and print CPU microseconds per item")
    args = ap.parse_args()
    if args.write_cost:
        import tempfile

        from reasonscope.storage.store import MIGRATIONS

        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print("| store schema | link µs/item | generation µs/item | 3 scores µs/item | total µs/item |\n"
              "|---|---:|---:|---:|---:|")
        with tempfile.TemporaryDirectory() as tmp:
            for n, schema in enumerate((5, len(MIGRATIONS)) * 2):
                cost = write_cost(Path(tmp) / str(n), schema, args.write_cost)
                print(f"| {schema} | {cost['link']:.1f} | {cost['generations']:.1f} | {cost['scores']:.1f} | "
                      f"{sum(cost.values()):.1f} |", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return

    from starlette.testclient import TestClient

    from reasonscope.registry import all_families
    from reasonscope.view.app import make_app
    from reasonscope.view.site import Viewer

    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    root = args.workdir / "runs"
    build(root, args.items)
    key = f"large-{args.items}"
    if not args.as_is:  # a store built by an earlier reasonscope is brought to the present schema (once)
        from reasonscope.storage.store import Store

        Store(root / key).close()
    with sqlite3.connect(root / key / "store.sqlite") as conn:
        print(f"store schema of {key}: {conn.execute('PRAGMA user_version').fetchone()[0]}")
    pages = -(-args.items // 50)
    rows = []
    disk: dict[str, int] = {}

    families = all_families("summary")

    def fresh():
        return TestClient(make_app(Viewer(root, families=families)), base_url="http://127.0.0.1")

    def fresh_after_runs_page():
        client = fresh()
        assert client.get("/").status_code == 200
        return client

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
    wrong = -(-(args.items // 3) // 50)  # CQ is 0 on every third item
    number = f"{base}&metric=behavior.CQ&model=big-model"
    for label, url in (
            ("Items page 1", base),
            (f"Items page {pages // 2} (middle)", f"{base}&page={pages // 2}"),
            (f"Items page {pages} (last)", f"{base}&page={pages}"),
            ("Items, model big-model, page 1", f"{base}&model=big-model"),
            ("Items, metric behavior.CQ and model (a number's link), page 1", number),
            (f"Items, metric behavior.CQ and model, page {pages // 2}", f"{number}&page={pages // 2}"),
            ("Items, metric behavior.CQ = 0, page 1", f"{base}&metric=behavior.CQ&value=0"),
            (f"Items, metric behavior.CQ = 0, page {wrong} (last)", f"{base}&metric=behavior.CQ&value=0&page={wrong}"),
            (f"Items, metric behavior.SS = other, page {pages // 3}", f"{base}&metric=behavior.SS&value=other&page={pages // 3}"),
            ("Items, outcome answered, page 1", f"{base}&outcome=answered"),
            (f"Items, outcome answered, page {pages // 2}", f"{base}&outcome=answered&page={pages // 2}"),
            ("Items, outcome failed (none), page 1", f"{base}&outcome=failed"),
            ("Items, outcome pending (none), page 1", f"{base}&outcome=pending"),
            (f"Items, outcome answered, page {pages} (last)", f"{base}&outcome=answered&page={pages}"),
            ("Items, metric behavior.CQ and outcome answered, page 1", f"{base}&metric=behavior.CQ&outcome=answered"),
            (f"Items, metric behavior.CQ and outcome answered, page {pages // 2}",
             f"{base}&metric=behavior.CQ&outcome=answered&page={pages // 2}"),
            ("Items, metric behavior.CQ and outcome failed (none), page 1",
             f"{base}&metric=behavior.CQ&outcome=failed")):
        first = fresh_after_runs_page()
        if args.cold:
            evict(root / key)
        read, wall, cpu = disk_read(), time.perf_counter(), time.process_time()
        assert first.get(url).status_code == 200, url
        first_wall, first_cpu, read = time.perf_counter() - wall, time.process_time() - cpu, disk_read() - read
        rows.append((label, first_wall, first_cpu, *timed(first, url, args.repeat)[2:], 0.3))
        disk[label] = read
        print(f"{label}: first {first_wall:.3f} s, {read / 1e6:.1f} MB read from disk", flush=True)
    print(f"\nlarge run: {args.items:,} items. first: the first request of the filter and page (on a fresh viewer "
          "that has shown the Runs page only: the filter counted, the page stepped to); repeated: the median of the "
          "repeats")
    print("| page | first: wall s | first: CPU s | first: MB read from disk | repeated: wall s | repeated: CPU s | "
          "target s |\n|---|---:|---:|---:|---:|---:|---:|")
    for label, first, first_cpu, wall, cpu, target in rows:
        read = f"{disk[label] / 1e6:.1f}" if label in disk else ""
        print(f"| {label} | {first:.3f} | {first_cpu:.3f} | {read} | {wall:.3f} | {cpu:.3f} | < {target:g} |")

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
