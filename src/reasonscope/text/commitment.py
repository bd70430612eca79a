"""Final commitment: which option (or yes/no) an answer statement finally commits to.

An answer statement may mention several options before it settles: "Not A; the answer is C",
"A is tempting, but B is correct", "(A) is wrong. (C)", "No, wait: yes". The value read is the one the
text *finally commits to*, not the first one it mentions:

1. The statement is cut into clauses at sentence ends (``. ; ! ?`` before a space), line breaks, commas,
   dashes between spaces, the words *but, however, so, therefore, thus, hence, instead, actually, wait*,
   and before *because, since, although, though, whereas, while, unless, given*. A clause that opens
   with *although, though, while, whereas, because, since, as, if, unless, even, given, unlike* is
   subordinate: what it mentions is not a commitment ("(B) because option A ignores friction" is B).
2. Each mention of a value (an option letter or text, a yes/no word) in a clause is

   * **rejected** when the few words before it negate it (*not A, isn't A, rather than A, instead of A,
     other than A, except A, eliminate A, rule out A, over A*) or when the words after it, up to the next
     mention, reject it (*A is wrong / incorrect / false / invalid / impossible / unlikely / tempting /
     a distractor / a trap / eliminated / excluded / ruled out / not / cannot...*); mentions joined by
     *and, or, &, /* share a negation before the first ("eliminating A and B") and a rejection after the
     last ("A and B are wrong");
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
    r"|\b(?:but|however|so|therefore|thus|hence|instead|actually|wait)\b"
    r"|(?=\b(?:because|since|although|though|whereas|while|unless|given)\b)",
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
_JOINED_RE = re.compile(r"\s*(?:and|&|or|/|as\s+well\s+as)?\s*$", re.I)
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
    """The status of one mention.

    ``negated`` / ``hedged`` / ``rejected`` / ``committed``; ``tail_end`` is where the next mention (or the
    clause) starts.
    """
    before = text[max(clause_start, mention.start - _LOOK):mention.start]
    if _NEGATED_BEFORE_RE.search(before):
        return "negated"
    if _HEDGED_BEFORE_RE.search(before):
        return "hedged"
    if tail_end - mention.end > _TAIL:
        tail = text[mention.end:mention.end + _TAIL]
    else:
        tail = text[mention.end:tail_end]
        negating_next = _NEGATED_BEFORE_RE.search(tail)  # "C (not B)": the "not" is B's
        if negating_next:
            tail = tail[:negating_next.start()]
    if _REJECTED_AFTER_RE.search(tail):
        return "rejected"
    return "committed"


def _statuses(text: str, start: int, end: int, inside: list[Mention]) -> list[str]:
    """The status of each mention of one clause.

    Joined mentions ("A and B") share a negation before the first and a rejection after the last.
    """
    status = [_status(text, start, m, inside[i + 1].start if i + 1 < len(inside) else end)
              for i, m in enumerate(inside)]
    joined = [bool(_JOINED_RE.match(text[a.end:b.start])) for a, b in zip(inside, inside[1:], strict=False)]
    for i in range(1, len(inside)):  # "not A or B", "eliminating A and B"
        if joined[i - 1] and status[i - 1] == "negated" and status[i] == "committed":
            status[i] = "negated"
    for i in range(len(inside) - 2, -1, -1):  # "A and B are wrong"
        if joined[i] and status[i + 1] == "rejected" and status[i] == "committed":
            status[i] = "rejected"
    return ["rejected" if s == "negated" else s for s in status]


def committed_value(text: str, mentions: list[Mention], what: str,
                    show: Callable[[Any], str] = str) -> tuple[Any, str | None]:
    """The value ``text`` finally commits to among ``mentions``.

    See the module docstring; ``(None, reason)`` when it commits to none. ``what`` names the kind of value in
    reasons ("option", "yes/no"), ``show`` writes a value in them.
    """
    if not mentions:
        return None, f"unparseable: no {what} in final answer {text.strip()!r:.80}"
    mentions = sorted(mentions, key=lambda m: m.start)
    committed_by_clause: list[list[Any]] = []
    rejected: list[Any] = []
    i = 0
    for start, end, subordinate in clauses(text):
        inside = []
        while i < len(mentions) and mentions[i].start < end:
            if mentions[i].start >= start:
                inside.append(mentions[i])
            i += 1
        if not inside or subordinate:
            continue
        status = _statuses(text, start, end, inside)
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
