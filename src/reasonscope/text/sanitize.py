r"""Removing terminal control sequences from model text before it is read.

Models that colour their output (or servers that pass a terminal's output through) emit ANSI / ECMA-48
escape sequences: ``\x1b[1mAnswer: 1\x1b[0m`` shows as a bold ``Answer: 1`` in a terminal, and an
answer reader must see exactly that. :func:`strip_terminal_codes` removes

* CSI sequences (``ESC [`` parameters, intermediates, a final byte), e.g. colours and cursor moves;
* OSC sequences (``ESC ]`` ... terminated by BEL or ``ESC \``), e.g. window titles and hyperlinks;
* other two-byte escapes (``ESC`` + one byte in ``@``-``_``);
* every remaining C0 control character and DEL except tab, line feed and carriage return
  (NUL, BEL, a lone ESC...).

The raw text is never changed in the store: this is applied to the copy that is read.

:func:`replace_lone_surrogates` is the one change the store makes to a raw text: a lone UTF-16
surrogate (a code point in U+D800-U+DFFF that is not half of a pair, e.g. a JSON reply holding
``"\ud800"``) cannot be encoded as UTF-8, so neither SQLite nor any output file can hold it. It is
replaced with U+FFFD (the replacement character) and its position and code point are returned, so the
original can be rebuilt exactly. NUL and other control characters are valid UTF-8 and are kept.
"""

from __future__ import annotations

import re

_ESCAPES_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"           # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, terminated by BEL or ST
    r"|\x1b[@-Z\\-_]"                     # two-byte escapes
)
_CONTROLS_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def strip_terminal_codes(text: str) -> str:
    r"""``text`` without terminal escape sequences and C0 control characters (tab, LF and CR are kept).

    >>> strip_terminal_codes("\x1b[1mAnswer: 1\x1b[0m")
    'Answer: 1'
    """
    if "\x1b" in text:
        text = _ESCAPES_RE.sub("", text)
    return _CONTROLS_RE.sub("", text)


def has_lone_surrogates(text: str) -> bool:
    """Whether ``text`` holds a code point in U+D800-U+DFFF (which UTF-8 cannot encode)."""
    if text.isascii():  # the common case, checked in C without a copy
        return False
    try:
        text.encode("utf-8")  # in C, far faster than a regular expression over every character
    except UnicodeEncodeError:
        return True
    return False


def replace_lone_surrogates(text: str) -> tuple[str, list[tuple[int, int]]]:
    r"""Replace every lone surrogate in ``text`` by U+FFFD.

    ``text`` with every lone surrogate replaced by U+FFFD, and the replacements as (position in the returned
    text, original code point), in order. Two surrogates that form a pair (high then low, as separate code
    points) are first joined into the character they encode; only what remains is replaced. Text without
    surrogates is returned as is, with an empty list.

    >>> replace_lone_surrogates("a\x00b \ud800")
    ('a\x00b \ufffd', [(4, 55296)])
    """
    if not has_lone_surrogates(text):
        return text, []
    # utf-16 with surrogatepass joins the pairs and keeps the lone ones as they are
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    replaced: list[tuple[int, int]] = []

    def one(m: re.Match[str]) -> str:
        replaced.append((m.start(), ord(m.group())))
        return REPLACEMENT

    return _SURROGATE_RE.sub(one, text), replaced
