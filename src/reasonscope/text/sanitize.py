"""Removing terminal control sequences from model text before it is read.

Models that colour their output (or servers that pass a terminal's output through) emit ANSI / ECMA-48
escape sequences: ``\\x1b[1mAnswer: 1\\x1b[0m`` shows as a bold ``Answer: 1`` in a terminal, and an
answer reader must see exactly that. :func:`strip_terminal_codes` removes

* CSI sequences (``ESC [`` parameters, intermediates, a final byte), e.g. colours and cursor moves;
* OSC sequences (``ESC ]`` ... terminated by BEL or ``ESC \\``), e.g. window titles and hyperlinks;
* other two-byte escapes (``ESC`` + one byte in ``@``-``_``);
* every remaining C0 control character and DEL except tab, line feed and carriage return
  (NUL, BEL, a lone ESC...).

The raw text is never changed in the store: this is applied to the copy that is read.
"""

from __future__ import annotations

import re

_ESCAPES_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"           # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, terminated by BEL or ST
    r"|\x1b[@-Z\\-_]"                     # two-byte escapes
)
_CONTROLS_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def strip_terminal_codes(text: str) -> str:
    """``text`` without terminal escape sequences and C0 control characters (tab, LF and CR are kept).

    >>> strip_terminal_codes("\\x1b[1mAnswer: 1\\x1b[0m")
    'Answer: 1'
    """
    if "\x1b" in text:
        text = _ESCAPES_RE.sub("", text)
    return _CONTROLS_RE.sub("", text)
