"""One converter per dataset format.

A raw row (a mapping) -> an :class:`~reasonscope.types.Item`, or a :class:`~reasonscope.data.files.RowError`
naming the field and what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..models.reported import NumberOutOfRule, whole_number
from ..text.answers import parse_target
from ..types import Item
from .files import MAX_COUNT, RowError, parse_json

GOEMOTIONS_LABELS = (
    "admiration amusement anger annoyance approval caring confusion curiosity desire disappointment disapproval "
    "disgust embarrassment excitement fear gratitude grief joy love nervousness optimism pride realization relief "
    "remorse sadness surprise neutral").split()
AGNEWS_LABELS = ["World", "Sports", "Business", "Sci/Tech"]
NLI_LABELS = ["entailment", "neutral", "contradiction"]


# ----------------------------------------------------------------------------------------------
# Row converters


def _get(row: dict, key: str, required: bool = True) -> Any:
    if key not in row or row[key] is None or (isinstance(row[key], str) and not row[key].strip() and required):
        if required:
            raise RowError(key, f"missing field {key!r} (row has: {', '.join(map(str, row)) or 'nothing'})")
        return None
    return row[key]


def _as_list(value: Any, field_name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("["):
            try:
                parsed = parse_json(s)
            except RowError as err:
                raise RowError(field_name, f"expected a JSON list, got {s[:60]!r}: {err}") from None
            if not isinstance(parsed, list):
                raise RowError(field_name, f"expected a JSON list, got {s[:60]!r}")
            return [str(v) for v in parsed]
        if "||" in s:
            return [p.strip() for p in s.split("||")]
        return [s] if s else []
    raise RowError(field_name, f"expected a list or a string, got {type(value).__name__}")


def integer_field(value: Any, field_name: str, *, minimum: int = 0, maximum: int = MAX_COUNT) -> int | None:
    """A whole number in ``[minimum, maximum]`` from a row.

    Accepts an int, a float with no fraction, or such a number written as text; ``None`` when empty. NaN,
    infinity, booleans, fractions and numbers outside the range raise :class:`RowError` naming the field.
    The rule is the one every provider's reply passes (:func:`reasonscope.models.reported.whole_number`).
    """
    try:
        return whole_number(value, field_name, minimum=minimum, maximum=maximum)
    except NumberOutOfRule as err:
        raise RowError(field_name, str(err)) from None


def check_target(target: Any, answer_type: str, choices: list[str] | None, field_name: str) -> None:
    """Raise :class:`RowError` (naming ``field_name``) when ``target`` cannot be read as ``answer_type``."""
    try:
        parse_target(target, answer_type, choices)
    except ValueError as err:
        raise RowError(field_name, str(err)) from None


GENERIC_FIELDS = ("id", "input", "target", "choices", "answer_type", "rationale", "perturbations", "group")
GENERIC_ALIASES = {"input": ("input", "question", "text", "prompt"), "target": ("target", "answer", "label"),
                   "choices": ("choices", "options"), "perturbations": ("perturbations", "paraphrases")}


def generic_row(row: dict, mapping: dict[str, str], answer_type: str | None) -> Item:
    """An item from a row of the generic format.

    Each item field is read from its mapped column, else from its first alias present in the row
    (``question``/``text``/``prompt`` for ``input``, ``answer``/``label`` for ``target``, ``options`` for
    ``choices``, ``paraphrases`` for ``perturbations``); the other columns go to ``metadata``. The answer
    type is ``answer_type`` when given, else the row's own, else guessed from the target (yes/no ->
    boolean, choices -> choice, a finite number -> number, else text).

    Args:
        row: the raw row.
        mapping: item field -> column name.
        answer_type: the answer type of every row, or None.

    Raises:
        RowError: for an unknown mapped field, a missing ``input``, an invalid item or a target that
            does not fit its answer type.
    """
    def col(name: str) -> str | None:
        if name in mapping:
            return mapping[name]
        for alias in GENERIC_ALIASES.get(name, (name,)):
            if alias in row:
                return alias
        return None

    unknown = set(mapping) - set(GENERIC_FIELDS) - {"metadata"}
    if unknown:
        raise RowError(sorted(unknown)[0], f"unknown item field in mapping; expected one of {GENERIC_FIELDS}")
    cols = {name: col(name) for name in GENERIC_FIELDS}
    data: dict[str, Any] = {}
    for name, c in cols.items():
        if c is None:
            if name == "input":
                raise RowError(mapping.get("input", "input"), "missing field 'input' (map it with input=<column>)")
            continue
        if name == "input":
            data["input"] = str(_get(row, c))
        elif c in row and row[c] not in (None, ""):
            data[name] = row[c]
    for name in ("choices", "perturbations"):
        if name in data:
            data[name] = _as_list(data[name], cols[name] or name)
    if "id" in data:
        data["id"] = str(data["id"])
    if answer_type:
        data["answer_type"] = answer_type
    elif "answer_type" not in data:
        data["answer_type"] = _guess_type(data.get("target"), data.get("choices"))
    used = set(cols.values())
    data["metadata"] = {k: v for k, v in row.items() if k not in used}
    try:
        item = Item.model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        raise RowError(str(e["loc"][0]) if e["loc"] else None, e["msg"]) from None
    check_target(item.target, item.answer_type, item.choices, cols["target"] or "target")
    return item


def _guess_type(target: Any, choices: Any) -> str:
    if isinstance(target, bool) or str(target).strip().lower() in ("yes", "no", "true", "false"):
        return "boolean"
    if choices:
        return "choice"
    text = str(target).replace(",", "")
    try:
        return "number" if len(text) <= 400 and math.isfinite(float(text)) else "text"
    except ValueError:
        return "text"


def gsm8k_row(row: dict) -> Item:
    """A number item from a GSM8K row.

    ``question``, and ``answer`` holding the worked solution, then ``####`` and the gold number (the
    solution becomes the rationale).

    Raises:
        RowError: when ``answer`` has no ``####`` or no number after it.
    """
    answer = str(_get(row, "answer"))
    if "####" not in answer:
        raise RowError("answer", "expected the gold answer after '####'")
    rationale, _, gold = answer.rpartition("####")
    try:
        target = parse_target(gold.strip(), "number")
    except ValueError as err:
        raise RowError("answer", f"expected a number after '####', got {gold.strip()[:60]!r} ({err})") from None
    target = int(target) if target.is_integer() else target
    return Item(id=str(row.get("id", "")), input=str(_get(row, "question")), target=target, answer_type="number",
                rationale=rationale.strip() or None)


def strategyqa_row(row: dict) -> Item:
    """A boolean item from a StrategyQA row (``qid``, ``question``, ``answer``; ``facts`` as the rationale).

    Raises:
        RowError: when ``answer`` is neither a boolean nor ``true``/``false``.
    """
    answer = _get(row, "answer")
    if not isinstance(answer, bool):
        if str(answer).lower() in ("true", "false"):
            answer = str(answer).lower() == "true"
        else:
            raise RowError("answer", f"expected a boolean, got {answer!r}")
    facts = row.get("facts") or []
    return Item(id=str(row.get("qid", "")), input=str(_get(row, "question")), target=answer, answer_type="boolean",
                rationale=" ".join(facts) if isinstance(facts, list) else str(facts) or None,
                metadata={k: row[k] for k in ("term", "description", "decomposition") if k in row})


def mmlu_row(row: dict) -> Item:
    """A four-option choice item from an MMLU row (``question``, ``A``-``D``, ``answer`` as a letter or 0-3).

    Raises:
        RowError: when ``answer`` is not A, B, C or D (or 0-3).
    """
    choices = [str(_get(row, k)) for k in "ABCD"]
    answer = _get(row, "answer")
    if isinstance(answer, int) and not isinstance(answer, bool) or str(answer).strip() in ("0", "1", "2", "3"):
        answer = "ABCD"[int(answer)] if 0 <= int(answer) < 4 else str(answer)
    answer = str(answer).strip().upper()
    if answer not in ("A", "B", "C", "D"):
        raise RowError("answer", f"expected A, B, C or D, got {answer!r}")
    return Item(input=str(_get(row, "question")), choices=choices, target=answer, answer_type="choice",
                metadata={"subject": row["subject"]} if "subject" in row else {})


def esnli_row(row: dict) -> Item:
    """An NLI label item from an e-SNLI row (``Sentence1`` premise, ``Sentence2`` hypothesis, ``gold_label``).

    The first non-empty ``Explanation_1``-``Explanation_3`` is the rationale.

    Raises:
        RowError: when ``gold_label`` is not one of :data:`NLI_LABELS`.
    """
    label = str(_get(row, "gold_label")).strip().lower()
    if label not in NLI_LABELS:
        raise RowError("gold_label", f"expected one of {NLI_LABELS}, got {label!r}")
    premise, hypothesis = str(_get(row, "Sentence1")), str(_get(row, "Sentence2"))
    expl = [row[k] for k in ("Explanation_1", "Explanation_2", "Explanation_3") if row.get(k)]
    return Item(id=str(row.get("pairID", "")), input=f"Premise: {premise}\nHypothesis: {hypothesis}",
                choices=list(NLI_LABELS), target=label, answer_type="label", rationale=expl[0] if expl else None,
                metadata={"premise": premise, "hypothesis": hypothesis, "explanations": expl,
                          "text_fields": ["premise", "hypothesis"]})


def ecqa_row(row: dict) -> Item:
    """A choice item from an ECQA row.

    Columns: ``question``/``q_text``, ``options`` or ``q_op*``, ``answer``/``q_ans``. The target is the
    answer's option letter; ``explanation`` (or ``taskB``) is the rationale.

    Raises:
        RowError: for fewer than two options or an answer that is not one of them.
    """
    options = _as_list(row.get("options") if "options" in row else
                       [row[k] for k in sorted(row) if k.startswith("q_op")], "options")
    if len(options) < 2:
        raise RowError("options", "expected at least two options")
    question = str(_get(row, "question") if "question" in row else _get(row, "q_text"))
    answer = str(_get(row, "answer") if "answer" in row else _get(row, "q_ans")).strip()
    if answer not in options:
        raise RowError("answer", f"expected one of the options {options}, got {answer!r}")
    expl = row.get("explanation") or row.get("taskB")
    return Item(id=str(row.get("id", row.get("q_no", ""))), input=question, choices=options,
                target="ABCDEFGHIJ"[options.index(answer)], answer_type="choice", rationale=expl or None,
                metadata={"text_fields": ["input", "choices"]})


def goemotions_row(row: dict) -> Item:
    """A label item from a GoEmotions row: ``text`` and ``labels`` as comma-separated ids 0-27.

    The target is the first label; all labels are kept in ``metadata["labels"]``.

    Raises:
        RowError: for ids that are not whole numbers in 0-27, or no label.
    """
    raw = str(_get(row, "labels"))
    try:
        ids = [integer_field(x, "labels", maximum=len(GOEMOTIONS_LABELS) - 1) for x in raw.split(",") if x.strip()]
    except RowError:
        raise RowError("labels", f"expected comma-separated label ids 0-27, got {raw[:60]!r}") from None
    labels = [GOEMOTIONS_LABELS[i] for i in ids]
    if not labels:
        raise RowError("labels", "no label")
    return Item(id=str(row.get("id", "")), input=str(_get(row, "text")), choices=list(GOEMOTIONS_LABELS),
                target=labels[0], answer_type="label", metadata={"labels": labels})


def agnews_row(row: dict) -> Item:
    """A label item from an AG News row.

    Two layouts: ``Class Index`` (1-4), ``Title`` and ``Description`` (the text is ``"Title. Description"``),
    or ``label`` (0-3) and ``text``.

    Raises:
        RowError: for a class index outside the layout's range.
    """
    metadata: dict[str, Any] = {}
    if "Class Index" in row:
        title, description = str(_get(row, "Title")), str(_get(row, "Description"))
        idx, text, offset = row["Class Index"], f"{title}. {description}", 1
        metadata = {"title": title, "description": description, "text_fields": ["title", "description"]}
    else:
        idx, text, offset = _get(row, "label"), str(_get(row, "text")), 0
    name = "Class Index" if offset else "label"
    try:
        label = AGNEWS_LABELS[integer_field(idx, name, minimum=offset, maximum=len(AGNEWS_LABELS) - 1 + offset) - offset]
    except (RowError, TypeError):
        raise RowError(name, f"expected a class index {offset}-{len(AGNEWS_LABELS) - 1 + offset}, "
                             f"got {str(idx)[:40]!r}") from None
    return Item(input=text, choices=list(AGNEWS_LABELS), target=label, answer_type="label", metadata=metadata)


def imdb_row(row: dict) -> Item:
    """A sentiment label item from an IMDB row: ``review`` and ``sentiment``, or ``text`` and ``label`` (0/1).

    Raises:
        RowError: when the label is not positive or negative.
    """
    if "review" in row:
        text, label = str(_get(row, "review")), str(_get(row, "sentiment")).strip().lower()
    else:
        text, raw = str(_get(row, "text")), _get(row, "label")
        label = {"0": "negative", "1": "positive"}.get(str(raw).strip(), str(raw).strip().lower())
    if label not in ("positive", "negative"):
        raise RowError("sentiment", f"expected positive or negative, got {label!r}")
    return Item(input=text, choices=["negative", "positive"], target=label, answer_type="label")


CONVERTERS: dict[str, Callable[[dict], Item]] = {
    "gsm8k": gsm8k_row, "strategyqa": strategyqa_row, "mmlu": mmlu_row, "esnli": esnli_row, "ecqa": ecqa_row,
    "goemotions": goemotions_row, "agnews": agnews_row, "imdb": imdb_row,
}
