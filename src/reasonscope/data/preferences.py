"""Pairwise human-preference records for the attributes family.

Three layouts, each read into :class:`PreferenceRecord`:

* **MT-Bench human judgments** and **Chatbot Arena battles** (their published JSON/JSONL layouts):
  ``question_id``, ``model_a``, ``model_b``, ``winner`` (``model_a`` / ``model_b`` / ``tie`` /
  ``tie (bothbad)``), ``conversation_a`` and ``conversation_b`` as lists of ``{"role", "content"}``
  messages, optional ``turn`` and ``judge``. The question is the first user message of the turn; the
  responses are the assistant messages of that turn.
* **plain JSONL**: ``question``, ``response_a``, ``response_b``, ``model_a``, ``model_b``,
  ``winner`` (``a`` / ``b`` / ``tie`` or ``model_a`` / ``model_b`` / ``tie``).

Bad records raise :class:`~reasonscope.data.loaders.DatasetError` naming file, line and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..types import stable_hash
from .loaders import RowError, convert_rows, read_file

WINNERS = {"model_a": "a", "a": "a", "model_b": "b", "b": "b", "tie": "tie", "tie (bothbad)": "tie"}


@dataclass
class PreferenceRecord:
    """One human preference between two responses to the same question.

    ``winner`` is ``a``, ``b`` or ``tie``; ``judge`` the labeller when the layout names one; ``turn`` the
    conversation turn the question and responses come from.
    """
    id: str
    question: str
    response_a: str
    response_b: str
    model_a: str
    model_b: str
    winner: str  # "a", "b" or "tie"
    judge: str | None = None
    turn: int = 1


def _turn_messages(conversation, field: str, turn: int) -> tuple[str, str]:
    if not isinstance(conversation, list) or not conversation:
        raise RowError(field, "expected a list of {role, content} messages")
    users = [i for i, m in enumerate(conversation) if isinstance(m, dict) and m.get("role") == "user"]
    if len(users) < turn:
        raise RowError(field, f"no user message for turn {turn}")
    start = users[turn - 1]
    end = users[turn] if turn < len(users) else len(conversation)
    answer = "\n".join(str(m.get("content", "")) for m in conversation[start + 1:end] if m.get("role") == "assistant")
    if not answer.strip():
        raise RowError(field, f"no assistant answer in turn {turn}")
    return str(conversation[start].get("content", "")), answer


def _record(row: dict) -> PreferenceRecord:
    winner = WINNERS.get(str(row.get("winner", "")).strip().lower())
    if winner is None:
        raise RowError("winner", f"expected model_a, model_b, tie or tie (bothbad) (or a/b), got {row.get('winner')!r}")
    for f in ("model_a", "model_b"):
        if not row.get(f):
            raise RowError(f, f"missing field {f!r}")
    if "conversation_a" in row:
        turn = int(row.get("turn") or 1)
        qa, ra = _turn_messages(row.get("conversation_a"), "conversation_a", turn)
        _, rb = _turn_messages(row.get("conversation_b"), "conversation_b", turn)
        rid = f"{row.get('question_id', '')}-{row['model_a']}-{row['model_b']}-{row.get('judge', '')}-{turn}"
        return PreferenceRecord(rid, qa, ra, rb, str(row["model_a"]), str(row["model_b"]), winner,
                                row.get("judge"), turn)
    for f in ("question", "response_a", "response_b"):
        if not isinstance(row.get(f), str) or not row[f].strip():
            raise RowError(f, f"missing field {f!r}")
    rid = str(row.get("id") or "h-" + stable_hash([row["question"], row["model_a"], row["model_b"], row["response_a"],
                                                   row["response_b"]]))
    return PreferenceRecord(rid, row["question"], row["response_a"], row["response_b"], str(row["model_a"]),
                            str(row["model_b"]), winner, row.get("judge"))


def load_preferences(path: str | Path, *, skip_bad_rows: bool = False) -> list[PreferenceRecord]:
    """The preference records of a file, in any of the layouts of the module docstring.

    Args:
        path: the file (JSONL, JSON or CSV).
        skip_bad_rows: skip bad records instead of raising.

    Raises:
        DatasetError: for a bad record (naming file, line and field) unless ``skip_bad_rows``.
    """
    path = Path(path)
    rows, _ = convert_rows(read_file(path), str(path), _record, skip_bad_rows=skip_bad_rows)
    return [r for _, r in rows]
