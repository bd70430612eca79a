"""WordNet antonyms from a folder of WordNet database files (WNDB), read with nltk's reader.

The folder is written here: a few adjective synsets with antonym pointers, byte offsets as WNDB has them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("nltk")

from reasonscope.information.leakage import AntonymSource, wordnet_status  # noqa: E402
from reasonscope.information.wordnet import WordNetFolderError, first_antonym, open_wordnet  # noqa: E402
from reasonscope.plan import InformationConfig  # noqa: E402

# (words of the synset, [(pointer symbol, index of the target synset, source word no., target word no.)])
ADJECTIVES = [
    (["true"], [("!", 1, 1, 1)]),
    (["false", "untrue"], [("!", 0, 1, 1)]),
    (["hot"], [("!", 3, 1, 1)]),
    (["cold"], [("!", 2, 1, 1)]),
    (["real", "true"], []),  # "true" again, in a synset without an antonym
]


def write_wndb(folder, adjectives=ADJECTIVES):
    """index.* and data.* files in WNDB format: adjective synsets as given, no noun, verb or adverb."""
    def line(i, offsets):
        words, pointers = adjectives[i]
        ptrs = " ".join(f"{sym} {offsets[j]:08d} a {s:02x}{t:02x}" for sym, j, s, t in pointers)
        return (f"{offsets[i]:08d} 00 a {len(words):02x} " + " ".join(f"{w} 0" for w in words)
                + f" {len(pointers):03d} {ptrs} | gloss {i}  \n").replace("  |", " |")

    offsets = [0] * len(adjectives)
    position = 0
    for i in range(len(adjectives)):  # fixed-width offsets: a line's length does not depend on them
        offsets[i] = position
        position += len(line(i, [0] * len(adjectives)).encode())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.adj").write_text("".join(line(i, offsets) for i in range(len(adjectives))))
    senses: dict[str, list[int]] = {}
    for i, (words, _) in enumerate(adjectives):
        for w in words:
            senses.setdefault(w, []).append(offsets[i])
    (folder / "index.adj").write_text("".join(
        f"{w} a {len(offs)} 1 ! {len(offs)} 0 " + " ".join(f"{o:08d}" for o in offs) + "  \n"
        for w, offs in sorted(senses.items())))
    for pos in ("noun", "verb", "adv"):
        (folder / f"index.{pos}").write_text("")
        (folder / f"data.{pos}").write_text("")
    return folder


def test_antonyms_from_a_wordnet_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    folder = str(write_wndb(tmp_path / "dict"))
    reader, why = open_wordnet(folder)
    assert why is None and wordnet_status(folder) is None
    assert first_antonym(reader, "true") == "false"  # the word's own lemma first (also in a synset without one)
    assert first_antonym(reader, "untrue") == "true"  # the synonym's antonym when the word has none
    assert (first_antonym(reader, "hot"), first_antonym(reader, "cold")) == ("cold", "hot")
    assert first_antonym(reader, "real") is None
    source = AntonymSource(["garden"], seed=0, wordnet=folder)
    assert source("hot", "The soup is hot.", "k") == ("cold", "wordnet")
    assert source("bedroom", "x", "k")[1].startswith("random")  # not in this WordNet: a random word, named


def test_the_wordnet_folder_is_part_of_phi_las_fingerprint_only(tmp_path):
    from reasonscope.information.scoring import model_folders

    folder = str(write_wndb(tmp_path / "dict"))
    plain = InformationConfig(train={"name": "t", "format": "synthetic"}, lambda_irm=1, lambda_probe=1)
    with_wordnet = plain.model_copy(update={"wordnet": folder})
    a, b = (model_folders(tmp_path, c, [], [], {}, 0) for c in (plain, with_wordnet))
    assert [k for k in a if a[k] != b[k]] == ["phi_la"]  # Phi_base, Phi and the probe are reused
    (tmp_path / "dict" / "data.adj").write_text((tmp_path / "dict" / "data.adj").read_text() + "x")
    assert model_folders(tmp_path, with_wordnet, [], [], {}, 0)["phi_la"] != b["phi_la"]  # changed files: retrain


def test_a_folder_that_is_not_a_wordnet_is_refused_when_the_plan_is_read(tmp_path):
    (tmp_path / "dict").mkdir()
    (tmp_path / "dict" / "index.noun").write_text("")
    with pytest.raises(ValueError, match=r"dict: not a WordNet database folder \(missing data.noun, index.verb"):
        InformationConfig(train={"name": "t", "format": "synthetic"}, wordnet=str(tmp_path / "dict"))
    with pytest.raises(WordNetFolderError, match="nowhere: no such folder"):
        open_wordnet(str(tmp_path / "nowhere"))
