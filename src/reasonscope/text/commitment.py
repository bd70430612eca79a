"""Final commitment: which option (or yes/no) an answer statement finally commits to.

An answer statement may mention several options before it settles: "Not A; the answer is C",
"A is tempting, but B is correct", "(A) is wrong. (C)", "No, wait: yes". The value read is the one the
text *finally commits to*, not the first one it mentions:

1. The statement is cut into clauses at sentence ends (``. ; ! ?`` before a space), line breaks, commas,
   dashes between spaces, and the words *but, however, so, therefore, thus, hence, instead, actually,
   wait*. A clause that opens with *although, though, while, whereas, because, since, as, if, unless,
   even, given, unlike* is subordinate: what it mentions is not a commitment.
2. Each mention of a value (an option letter or text, a yes/no word) in a clause is

   * **rejected** when the few words before it negate it (*not A, isn't A, rather than A, instead of A,
     other than A, except A, eliminate A, rule out A, over A*) or when the words after it, up to the next
     mention, reject it (*A is wrong / incorrect / false / invalid / impossible / unlikely / tempting /
     a distractor / a trap / eliminated / excluded / ruled out / not / cannot...*); mentions joined by
     *and, or, a comma* share the rejection that follows the last of them ("A and B are wrong");
   * **hedged** when *maybe, perhaps, possibly, might be, could be* comes just before it;
   * **committed** otherwise.
3. The answer is the value committed in the last clause that commits to any; two different values
   committed in that clause ("B or C", "yes and no") are ambiguous; a statement that only rejects or
   hedges is unparseable, with the reason.

The readers of :mod:`reasonscope.text.answers` build the mentions (letters and option texts for
``choice``, yes/no/true/false for ``boolean``) and call :func:`committed_value`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_BOUNDARY_RE = re.compile(
    r"[.;!?]+(?=\s|$)|\n|,|\s[-–—]+\s|—"
    r"|\b(?:but|however|so|therefore|thus|hence|instead|actually|wait)\b",
    re.I,
)
_SUBORDINATE_RE = re.compile(r"\W*(?:although|though|while|whereas|because|since|as|if|unless|even|given|"
                             r"unlike)\b", re.I)
_NEGATED_BEFORE_RE = re.compile(
    r"(?:\bnot|n't|\bnever|\bnor|\brather\s+than|\binstead\s+of|\bother\s+than|\bexcept(?:\s+for)?|"
    r"\bexclud(?:e|es|ing)|\beliminat(?:e|es|ed|ing)|\brul(?:e|es|ed|ing)\s+out|\bover|\bagainst)"
    r"\s*(?:(?:the\s+)?(?:option|choice|answer|letter)\s*)?[(\[]?\s*$", re.I)
_HEDGED_BEFORE_RE = re.compile(r"\b(?:maybe|perhaps|possibly|might\s+be|could\s+be)\s*[(\[]?\s*$", re.I)
_REJECTED_AFTER_RE = re.compile(
    r"\b(?:wrong|incorrect|false|invalid|impossible|unlikely|tempting|distractor|trap|eliminated|excluded|"
    r"ruled\s+out|not|cannot|can't|isn't|aren't|wasn't|doesn't|don't|fails?)\b|n't\b", re.I)
_JOINED_RE = re.compile(r"^\s*(?:,|and|&|or|/|as\s+well\s+as)?\s*$", re.I)
_LOOK = 40  # characters looked at before a mention
_TAIL = 80  # characters looked at after a mention


@dataclass(frozen=True)
class Mention:
    """A value named in the statement at ``[start, end)``."""

    start: int
    end: int
    value: Any


def clauses(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, subordinate)`` of each clause of ``text``."""
    out, start = [], 0
    for m in _BOUNDARY_RE.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return [(a, b, bool(_SUBORDINATE_RE.match(text, a, b))) for a, b in out]


def _status(text: str, clause_start: int, mention: Mention, tail_end: int) -> str:
    before = text[max(clause_start, mention.start - _LOOK):mention.start]
    if _NEGATED_BEFORE_RE.search(before):
        return "rejected"
    if _HEDGED_BEFORE_RE.search(before):
        return "hedged"
    if _REJECTED_AFTER_RE.search(text, mention.end, min(tail_end, mention.end + _TAIL)):
        return "rejected"
    return "committed"


def committed_value(text: str, mentions: list[Mention], what: str,
                    show: Callable[[Any], str] = str) -> tuple[Any, str | None]:
    """The value ``text`` finally commits to among ``mentions`` (see the module docstring), or ``(None, reason)``.
    ``what`` names the kind of value in reasons ("option", "yes/no"), ``show`` writes a value in them."""
    if not mentions:
        return None, f"unparseable: no {what} in final answer {text.strip()!r:.80}"
    mentions = sorted(mentions, key=lambda m: m.start)
    committed_by_clause: list[list[Any]] = []
    rejected: list[Any] = []
    for start, end, subordinate in clauses(text):
        inside = [m for m in mentions if start <= m.start < end]
        if not inside or subordinate:
            continue
        status = [""] * len(inside)
        for i in range(len(inside) - 1, -1, -1):
            nxt = inside[i + 1].start if i + 1 < len(inside) else end
            status[i] = _status(text, start, inside[i], nxt)
            if status[i] == "committed" and i + 1 < len(inside) and status[i + 1] == "rejected" \
                    and _JOINED_RE.match(text[inside[i].end:inside[i + 1].start]):
                status[i] = "rejected"
        rejected += [m.value for m, s in zip(inside, status, strict=True) if s == "rejected"]
        values = list(dict.fromkeys(m.value for m, s in zip(inside, status, strict=True) if s == "committed"))
        if values:
            committed_by_clause.append(values)
    if not committed_by_clause:
        if rejected:
            shown = ", ".join(show(v) for v in dict.fromkeys(rejected))
            return None, f"unparseable: the final answer rejects {shown} without committing to a {what}"
        return None, f"unparseable: no committed {what} in final answer {text.strip()!r:.80}"
    final = committed_by_clause[-1]
    if len(final) > 1:
        return None, f"ambiguous: the final answer commits to {', '.join(map(show, final))}"
    return final[0], None
