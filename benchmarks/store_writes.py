"""Benchmark: a first run's store writes, with the schema's triggers and without them, side by side.

What a run's generation phase writes, without the model: ``--items`` items of ``--k`` samples and ``--p``
paraphrases linked to a run in one call (:meth:`Store.link`), then their completions stored as the runner
stores them, ``--turn`` completions per transaction (:meth:`Store.put_completion`; the runner commits the
answers of one turn of its event loop together, 8 with the default concurrency and an instant model). Three
variants, each on a fresh store: ``schema`` (the store as opened: the triggers of schemas 5 and 6 keep every
link's outcome and the filter counts true on each row), ``no triggers`` (the same tables and indexes, the
triggers dropped: what the writes cost without per-row upkeep, a bound on what set-based upkeep could save, not
a store reasonscope writes) and ``autocheckpoint`` (the schema with ``PRAGMA wal_autocheckpoint`` at 100,000
pages instead of SQLite's 1,000: fewer checkpoints). The variants alternate over ``--repeats`` rounds; the
script prints each round and the medians.

    python benchmarks/store_writes.py --items 900 --k 3 --p 3 --repeats 3

The texts and requests have the peer benchmark's shapes (``benchmarks/behavior_vs_peer.py``: the mock's
four-line answers, a question of a sentence): 900 items give its 5,400 completions.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from reasonscope.storage.store import Store
from reasonscope.types import Completion

VARIANTS = ("schema", "no triggers", "autocheckpoint")


def requests(items: int, k: int, p: int) -> list[tuple[str, str, int, dict, str]]:
    """(item id, variant, sample, request, text) of every generation, in the runner's order."""
    out = []
    for i in range(items):
        for variant, samples in [("original", k)] + [(f"p{j}", 1) for j in range(p)]:
            for sample in range(samples):
                question = f"Item {i}: how many apples are left when {i % 7 + 2} of {i % 11 + 9} are eaten? ({variant})"
                request = {"messages": [{"role": "user", "content": question}], "max_tokens": 256,
                           "temperature": 0.0, "top_p": 1.0, "seed": 1 + sample, "sample": sample, "base_url": None,
                           "template": "v3"}
                text = (f"Let me think step by step.\nI combine the quantities that matter.\nSo the result follows.\n"
                        f"Answer: {i % 11 + 9 - i % 7 - 2 + (sample % 2)}")
                out.append((f"q{i}", variant, sample, request, text))
    return out


def one(variant: str, rows: list, turn: int, folder: Path) -> tuple[float, float, float]:
    """(link seconds, store seconds, of which commits) of one variant on a fresh store in ``folder``."""
    shutil.rmtree(folder, ignore_errors=True)
    store = Store(folder)
    if variant == "no triggers":
        for (name,) in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            store.conn.execute(f"DROP TRIGGER {name}")  # a name read from the schema, not input
    elif variant == "autocheckpoint":
        store.conn.execute("PRAGMA wal_autocheckpoint = 100000")
    run_id = "bench-run"
    keys = [hashlib.sha256(f"{item}/{v}/{s}".encode()).hexdigest() for item, v, s, _, _ in rows]
    start = time.perf_counter()
    store.link([(run_id, "mock", "items", item, v, s, key, 256) for (item, v, s, _, _), key in zip(rows, keys, strict=True)])
    linked = time.perf_counter()
    commits = 0.0
    for i in range(0, len(rows), turn):
        store.conn.execute("BEGIN")
        for (_, _, _, request, text), key in zip(rows[i:i + turn], keys[i:i + turn], strict=True):
            store.put_completion(key, provider="mock", model_id="reasoner", request=request,
                                 completion=Completion(text=text, finish_reason="stop", prompt_tokens=20,
                                                       completion_tokens=24, latency_s=0.0))
        t = time.perf_counter()
        store.conn.execute("COMMIT")
        commits += time.perf_counter() - t
    stored = time.perf_counter()
    store.close()
    return linked - start, stored - linked, commits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=900)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--p", type=int, default=3)
    ap.add_argument("--turn", type=int, default=8, help="completions per transaction")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = requests(args.items, args.k, args.p)
    root = Path(tempfile.mkdtemp(prefix="rs-store-writes-"))
    got: dict[str, list[tuple[float, float, float]]] = {v: [] for v in VARIANTS}
    for r in range(args.repeats):
        order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            got[variant].append(one(variant, rows, args.turn, root / variant.replace(" ", "-")))
            link, store, commits = got[variant][-1]
            print(f"round {r + 1} {variant:15} link {link:.3f}s  store {store:.3f}s (commits {commits:.3f}s)  "
                  f"total {link + store:.3f}s", flush=True)
    print(f"{len(rows)} completions, {args.turn} per transaction; medians:")
    base = statistics.median(sum(x[:2]) for x in got["schema"])
    for variant in VARIANTS:
        link, store, commits = (statistics.median(x[i] for x in got[variant]) for i in range(3))
        total = statistics.median(sum(x[:2]) for x in got[variant])
        print(f"  {variant:15} link {link:.3f}s  store {store:.3f}s (commits {commits:.3f}s)  total {total:.3f}s  "
              f"schema / this {base / total:.2f}x")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
