"""On-disk cache of integrated-gradients attributions (LAREV's leakage-term search).

One SQLite file (``RUN_DIR/information/ig-cache.sqlite``), one row per attributed text: the key hashes
the evaluator's fingerprint (the folder name of the trained Phi_base, which hashes everything that
determines its weights), the text, the target label, the number of IG steps and a format version; the
value is the token offsets and attributions as JSON. Rows are committed per batch, so a run killed
during the attribution phase keeps every finished batch, and a rerun (or ``information score`` after
it) reads them instead of attributing again.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ..types import stable_hash

FORMAT = "ig-v1"


class AttributionCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path)
        self.conn.execute("CREATE TABLE IF NOT EXISTS attributions (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.conn.commit()

    @staticmethod
    def key(fingerprint: str, text: str, target: str, n_steps: int) -> str:
        return stable_hash([FORMAT, fingerprint, text, target, n_steps], 32)

    def get_many(self, keys: list[str]) -> dict[str, tuple[list[tuple[int, int]], list[float]]]:
        out: dict[str, tuple[list[tuple[int, int]], list[float]]] = {}
        unique = sorted(set(keys))
        for i in range(0, len(unique), 500):
            chunk = unique[i:i + 500]
            rows = self.conn.execute(f"SELECT key, value FROM attributions WHERE key IN ({','.join('?' * len(chunk))})",
                                     chunk).fetchall()
            for key, value in rows:
                offsets, attributions = json.loads(value)
                out[key] = ([tuple(o) for o in offsets], attributions)
        return out

    def put_many(self, rows: dict[str, tuple[list[tuple[int, int]], list[float]]]) -> None:
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO attributions (key, value) VALUES (?, ?)",
                                  [(k, json.dumps([list(map(list, o)), a])) for k, (o, a) in rows.items()])

    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM attributions").fetchone()[0]

    def close(self) -> None:
        self.conn.close()
