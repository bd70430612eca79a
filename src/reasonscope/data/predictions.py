r"""Reading outputs a user already has (JSONL / JSON / CSV) for ``reasonscope score``.

One record = one generation. Fields (renamed with a mapping, ``--map field=column,...``):

==================  ========================================================================
``input``           the question (for a paraphrase row: the paraphrase text)            required
``target``          gold answer                                                          required
``prediction``      the model's raw output text                                         required
``id``              item id; rows with the same id are one item (needed to link paraphrases)
``model``           model name (default ``imported``)
``sample``          sample index (K samples per item -> CS, SS)                          default 0
``variant``         ``original`` (default) or any paraphrase id; non-original rows are RS rows
``answer_type``     number / math / boolean / choice / label / text (else ``--answer-type`` or guessed)
``choices``         options (list, JSON list or ``||``-joined)
``rationale``       a separate rationale; appended to the prediction's trace when given
``completion_tokens`` / ``max_tokens``  for ES (or ``--tokenizer`` / ``--budget``)
``dataset``         dataset name (default: the file's stem)
``error``           non-empty = a failed generation (see ``stats.failed_generations``)
==================  ========================================================================

The defaults read reasonscope's own ``samples.jsonl`` as is (``item_id`` -> id,
``original_input`` -> the item's question), so a run can be exported and scored again.
Bad rows raise :class:`~reasonscope.data.loaders.DatasetError` naming file, line and field, or
are skipped and listed with ``skip_bad_rows``. ``sample`` and ``completion_tokens`` must be whole numbers
from 0, ``max_tokens`` from 1 (all at most 2**31 - 1; NaN, infinity, fractions and booleans are row errors),
and ``target`` must be readable as the row's answer type: the rule every provider's reply passes too
(:mod:`reasonscope.models.reported`), which also reads ``finish_reason`` (known values in their canonical
spelling, ``max_tokens`` as ``length``, any other as ``other:<value>``).

Text the store cannot hold as UTF-8 (a lone surrogate such as ``"\ud800"``, valid JSON): in the
prediction, rationale, error or finish reason it is replaced with U+FFFD when stored, and recorded on the
generation (:mod:`reasonscope.storage.scrub`); in any other field (question, gold, id, model, ...) it is a row
error naming the file, line and field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models.reported import finish_reason
from ..text.sanitize import has_lone_surrogates, replace_lone_surrogates
from ..types import Completion, Item, stable_hash
from .loaders import (
    BadRow,
    DatasetError,
    RowError,
    _as_list,
    _guess_type,
    check_target,
    convert_rows,
    integer_field,
    read_file,
)

FIELDS = ("input", "target", "prediction", "id", "model", "sample", "variant", "answer_type", "choices", "rationale",
          "completion_tokens", "max_tokens", "dataset", "error", "original_input", "finish_reason")
DEFAULT_COLUMNS = {"id": ("id", "item_id"), "prediction": ("prediction", "output", "response", "text"),
                   "target": ("target", "answer", "gold", "label")}
VALID_TYPES = ("number", "math", "boolean", "choice", "label", "text")


@dataclass
class ImportedGeneration:
    """One imported generation: where it came from, whose answer to which item, and its completion."""
    line: int | str  # the record's place in its source: a line number, or a label such as "sample=3,epoch=2"
    model: str
    dataset: str
    item_id: str
    variant: str
    sample: int
    completion: Completion
    max_tokens: int | None


@dataclass
class ImportResult:
    """What a predictions file holds: items per dataset, generations, skipped bad rows and the source."""
    items: dict[str, list[Item]]  # dataset -> items
    generations: list[ImportedGeneration]
    bad_rows: list[BadRow] = field(default_factory=list)
    source: str = ""


# fields that become the stored completion: a lone surrogate there is replaced when stored (reasonscope.storage.scrub)
REPAIRED_FIELDS = ("prediction", "rationale", "error", "finish_reason")


def _refuse_lone_surrogates(values: dict[str, Any]) -> None:
    """Refuse text that holds a lone surrogate.

    Raise :class:`RowError` naming the first field whose text (nested lists and objects included) holds a lone
    surrogate, which no UTF-8 file or store can hold.
    """

    def texts(value: Any):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from texts(k)
                yield from texts(v)
        elif isinstance(value, list | tuple):
            for v in value:
                yield from texts(v)

    for name, value in values.items():
        for text in [*texts(name), *texts(value)]:
            if has_lone_surrogates(text):
                _, [(at, code), *_] = replace_lone_surrogates(text)
                raise RowError(replace_lone_surrogates(str(name))[0], f"holds a lone surrogate (U+{code:04X} at character {at}), which is not "
                                          "text and cannot be stored; fix the file (only prediction, rationale, "
                                          "error and finish_reason are repaired, with U+FFFD)")


def parse_mapping(text: str | None) -> dict[str, str]:
    """``input=question,target=answer`` -> {"input": "question", "target": "answer"}."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"--map: expected field=column, got {part.strip()!r}")
        key, col = (s.strip() for s in part.split("=", 1))
        if key not in FIELDS:
            raise ValueError(f"--map: unknown field {key!r}; expected one of {', '.join(FIELDS)}")
        out[key] = col
    return out


def read_predictions(path: str | Path, mapping: dict[str, str] | None = None, *, skip_bad_rows: bool = False,
                     answer_type: str | None = None, budget: int | None = None, token_counter=None) -> ImportResult:
    """Read a predictions file (JSONL, JSON or CSV) into items and generations.

    Fields and their checks are listed in the module docstring.

    Args:
        path: the file.
        mapping: field -> column name (``--map``); unmapped fields are read from their default columns.
        skip_bad_rows: skip and list bad rows instead of raising.
        answer_type: the answer type of rows that do not state one (else it is guessed from the target).
        budget: ``max_tokens`` of rows that do not state one.
        token_counter: counts a prediction's tokens when a row has no ``completion_tokens``.

    Returns:
        The :class:`ImportResult`.

    Raises:
        DatasetError: for a bad row (naming file, line and field) unless ``skip_bad_rows``, or when no row
            is usable.
    """
    path = Path(path)
    mapping = dict(mapping or {})
    source = str(path)
    rows = read_file(path)

    def col(row: dict, name: str) -> tuple[str, Any]:
        if name in mapping:
            c = mapping[name]
            return c, row.get(c)
        for alias in DEFAULT_COLUMNS.get(name, (name,)):
            if alias in row:
                return alias, row[alias]
        return name, None

    def to_record(row: dict) -> dict[str, Any]:
        _refuse_lone_surrogates(dict(col(row, name) for name in FIELDS if name not in REPAIRED_FIELDS))
        for field_name, name in mapping.items():
            if field_name in ("input", "target", "prediction") and name not in row:
                raise RowError(name, f"mapped column {name!r} is not in this row "
                                     f"(row has: {', '.join(map(str, row))})")
        rec: dict[str, Any] = {}
        for name in ("input", "target", "prediction"):
            c, v = col(row, name)
            # an empty prediction is a (wrong) output; an empty question or gold is a bad row
            if v is None or (isinstance(v, str) and not v.strip() and name != "prediction"):
                raise RowError(c, f"missing field {c!r} ({name}); map it with --map {name}=<column>")
            rec[name] = v
        for name in FIELDS[3:]:
            rec[name] = col(row, name)[1]
        kind = rec.get("answer_type") or answer_type
        if kind and kind not in VALID_TYPES:
            raise RowError(col(row, "answer_type")[0], f"expected one of {VALID_TYPES}, got {kind!r}")
        rec["answer_type"] = kind
        rec["sample"] = integer_field(rec.get("sample"), col(row, "sample")[0]) or 0
        rec["completion_tokens"] = integer_field(rec.get("completion_tokens"), col(row, "completion_tokens")[0])
        rec["max_tokens"] = integer_field(rec.get("max_tokens"), col(row, "max_tokens")[0], minimum=1) or budget
        rec["finish_reason"] = finish_reason(rec.get("finish_reason"))
        rec["choices"] = _as_list(rec.get("choices"), col(row, "choices")[0]) or None
        if kind:
            check_target(rec["target"], kind, rec["choices"], col(row, "target")[0])
        rec["variant"] = str(rec.get("variant") or "original")
        if rec["variant"] != "original" and rec.get("id") in (None, ""):
            raise RowError(col(row, "id")[0], "paraphrase rows need an item id to link them to their item")
        return rec

    records, bad = convert_rows(rows, source, to_record, skip_bad_rows=skip_bad_rows)
    if not records:
        raise DatasetError(f"{source}: no usable rows" + (f" ({len(bad)} bad rows skipped)" if bad else ""))
    return _assemble(records, path, bad, token_counter)


def assemble_records(records: list[tuple[int | str, dict[str, Any]]], path: str | Path,
                     bad_rows: list[BadRow] | None = None, token_counter=None) -> ImportResult:
    """Items and generations from records already mapped to :data:`FIELDS`.

    Every key is present in a record (``None`` when absent), each record with its place in the source (a line
    number or a label). The readers of other frameworks' logs (:mod:`reasonscope.data.adapters`) build records
    and call this, so an adapted log and the same rows given to ``--map`` become the same items and
    generations.
    """
    return _assemble(records, Path(path), list(bad_rows or []), token_counter)


def _assemble(records, path: Path, bad: list[BadRow], token_counter) -> ImportResult:
    source = str(path)
    items: dict[tuple[str, str], dict[str, Any]] = {}
    gens: list[ImportedGeneration] = []
    for line, rec in records:
        try:
            _refuse_lone_surrogates({k: v for k, v in rec.items() if k not in REPAIRED_FIELDS})
        except RowError as err:
            raise DatasetError(f"{source}:{line}: field {err.field!r}: {err}") from None
        dataset = str(rec.get("dataset") or path.stem)
        original = rec["variant"] == "original"
        question = str(rec.get("original_input") or rec["input"]) if original or rec.get("original_input") else None
        item_id = str(rec["id"]) if rec.get("id") not in (None, "") else \
            "h-" + stable_hash({"input": question, "choices": rec["choices"], "target": rec["target"]})
        entry = items.setdefault((dataset, item_id), {"lines": [], "paraphrases": {}, "input": None})
        entry["lines"].append(line)
        if question is not None:
            if entry["input"] is not None and entry["input"] != question:
                raise DatasetError(f"{source}:{line}: field 'input': item {item_id!r} has a different question "
                                   f"than on line {entry['lines'][0]}")
            entry["input"] = question
        if not original:
            entry["paraphrases"].setdefault(rec["variant"], str(rec["input"]))
        for k in ("target", "choices", "answer_type"):
            if entry.get(k) is None and rec.get(k) is not None:
                entry[k] = rec[k]
        text = str(rec["prediction"])
        if rec.get("rationale"):
            text = f"{rec['rationale']}\n{text}"
        tokens = rec["completion_tokens"]
        if tokens is None and token_counter is not None:
            tokens = token_counter(str(rec["prediction"]))
        try:  # every path in: the rule every provider's reply passes (reasonscope.models.reported)
            tokens = integer_field(tokens, "completion_tokens")
        except RowError as err:
            raise DatasetError(f"{source}:{line}: field 'completion_tokens': {err}") from None
        comp = Completion(text=text, completion_tokens=tokens, finish_reason=rec.get("finish_reason") or "stop",
                          error=str(rec["error"]) if rec.get("error") else None)
        gens.append(ImportedGeneration(line, str(rec.get("model") or "imported"), dataset, item_id, rec["variant"],
                                       rec["sample"], comp, rec["max_tokens"]))
    out: dict[str, list[Item]] = {}
    variant_index: dict[tuple[str, str, str], str] = {}
    for (dataset, item_id), e in items.items():
        if e["input"] is None:
            raise DatasetError(f"{source}:{e['lines'][0]}: item {item_id!r} has paraphrase rows but no original row")
        paras = sorted(e["paraphrases"], key=lambda v: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", v)])
        for i, v in enumerate(paras):
            variant_index[(dataset, item_id, v)] = f"p{i}"
        kind = e.get("answer_type") or _guess_type(e.get("target"), e.get("choices"))
        try:
            check_target(e.get("target"), kind, e.get("choices"), "target")
        except RowError as err:
            raise DatasetError(f"{source}:{e['lines'][0]}: field 'target': {err}") from None
        try:
            item = Item(id=item_id, input=e["input"], target=e.get("target"), choices=e.get("choices"),
                        answer_type=kind, perturbations=[e["paraphrases"][v] for v in paras], group=dataset,
                        metadata={"source": source, "lines": e["lines"]})
        except ValueError as err:
            raise DatasetError(f"{source}:{e['lines'][0]}: item {item_id!r}: {err}") from None
        out.setdefault(dataset, []).append(item)
    for g in gens:
        if g.variant != "original":
            g.variant = variant_index[(g.dataset, g.item_id, g.variant)]
    keys = {}
    for g in gens:
        k = (g.model, g.dataset, g.item_id, g.variant, g.sample)
        if k in keys:
            raise DatasetError(f"{source}:{g.line}: duplicate record for model {g.model!r}, item {g.item_id!r}, "
                               f"variant {g.variant!r}, sample {g.sample} (first on line {keys[k]})")
        keys[k] = g.line
    return ImportResult(out, gens, bad, source)
