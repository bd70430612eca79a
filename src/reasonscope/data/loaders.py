"""Dataset loaders: generic JSONL / JSON / CSV with a field mapping, and the real formats.

Every loader reads a local path (a ``.gz`` file is decompressed first: ``esnli_dev.csv.gz`` reads as
a csv file), or a Hugging Face dataset id through ``datasets.load_dataset``
(online only). Rows become :class:`~reasonscope.types.Item` objects. A malformed row raises
:class:`DatasetError` naming the file, the line (1-based; for JSON arrays the element index) and
the field; with ``skip_bad_rows`` the row is skipped and listed in ``LoadResult.bad_rows``.

Reading files: JSONL lines are split on ``\n`` only (a trailing ``\r`` is dropped): ``str.splitlines``
would also split inside JSON strings at U+2028, U+2029, U+0085, form feeds and other separators that JSON
allows there. A JSON value nested deeper than :data:`MAX_JSON_DEPTH` levels is a bad row with its reason;
an integer of more than :data:`MAX_INT_DIGITS` digits (Python refuses to convert them) is kept as its
digits, so the field that holds it reports it by name; a CSV field may be as long as a line
(:data:`MAX_LINE_BYTES`). Numeric fields (token counts, sample index, token budget) are checked by
:func:`integer_field` (no NaN, infinity, fraction, negative or number above :data:`MAX_COUNT`), and a
target must be readable as its answer type (:func:`~reasonscope.text.answers.parse_target`): both are
row errors naming the field.

Formats and their fields
------------------------
``synthetic``   the built-in reasoning set; ``topics`` the built-in topic-classification set
                (``split: train`` and ``split: test`` draw different texts from the same seed).
``jsonl``/``json``/``csv`` fields ``id, input, target, choices, answer_type, rationale,
                          perturbations, group``; ``mapping`` renames (item field -> column).
``gsm8k``       jsonl ``question``, ``answer`` (gold after ``####``, rationale before) -> number.
``strategyqa``  json ``qid``, ``question``, boolean ``answer``, ``facts`` (rationale) -> boolean.
``mmlu``        csv ``question, A, B, C, D, answer`` (header optional, as in the original files) -> choice.
``esnli``       csv ``Sentence1, Sentence2, gold_label, Explanation_1..3`` -> label; ``input`` is the
                ``Premise: ... Hypothesis: ...`` prompt text, ``metadata`` holds ``premise``,
                ``hypothesis``, ``explanations`` and ``text_fields: [premise, hypothesis]``.
``ecqa``        jsonl/csv ``question, options`` (list or ``||``-joined), ``answer`` (option text),
                ``explanation`` -> choice; ``text_fields: [input, choices]``.
``goemotions``  tsv ``text, labels`` (comma-separated ids), ``id``, no header -> label (multi-label:
                ``target`` is the first label, ``metadata.labels`` all of them).
``agnews``      csv ``Class Index, Title, Description`` (1-4; ``text_fields: [title, description]``) or
                ``text, label`` (0-3) -> label.
``imdb``        csv ``review, sentiment`` or ``text, label`` (0/1) -> label.

``metadata.text_fields`` names the fields that hold an item's own text, as opposed to a prompt
template around it; the evidence family fits its classifier on them, one segment per field.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ..settings import DatasetConfig
from ..text.answers import parse_target
from ..text.nesting import nesting_exceeds
from ..types import Item
from .synthetic import synthetic_items
from .synthetic_topics import topic_items

T = TypeVar("T")
GOEMOTIONS_LABELS = (
    "admiration amusement anger annoyance approval caring confusion curiosity desire disappointment disapproval "
    "disgust embarrassment excitement fear gratitude grief joy love nervousness optimism pride realization relief "
    "remorse sadness surprise neutral").split()
AGNEWS_LABELS = ["World", "Sports", "Business", "Sci/Tech"]
NLI_LABELS = ["entailment", "neutral", "contradiction"]
MAX_LINE_BYTES = 20 * 1024 * 1024
MAX_INT_DIGITS = 4000
MAX_JSON_DEPTH = 100
MAX_COUNT = 2**31 - 1


class DatasetError(ValueError):
    """A dataset file that cannot be read; the message names file, line and field."""


@dataclass
class BadRow:
    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}{f', field {self.field!r}' if self.field else ''}: {self.message}"


@dataclass
class LoadResult:
    items: list[Item]
    bad_rows: list[BadRow] = field(default_factory=list)
    source: str = ""


class RowError(ValueError):
    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field


# ----------------------------------------------------------------------------------------------
# Readers: yield (line number, row dict)


def _open_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    if path.suffix.lower() == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise DatasetError(f"{path}: not a readable gzip file ({err})") from None
    if not raw.strip():
        raise DatasetError(f"{path}: the file is empty")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DatasetError(f"{path}:{line}: not valid UTF-8 (byte {err.start}); re-encode the file as UTF-8") from None


def row_error_message(source: str, line: int, err: RowError) -> str:
    return f"{source}:{line}: {f'field {err.field!r}: ' if err.field else ''}{err}"


def convert_rows(rows: Iterator[tuple[int, Any]], source: str, convert: Callable[[dict], T], *,
                 skip_bad_rows: bool = False, limit: int | None = None) -> tuple[list[tuple[int, T]], list[BadRow]]:
    """Apply ``convert`` to every record; a bad one raises :class:`DatasetError` (file, line, field)
    or, with ``skip_bad_rows``, is listed in the returned bad rows. Stops after ``limit`` records."""
    out: list[tuple[int, T]] = []
    bad: list[BadRow] = []
    for line, row in rows:
        try:
            if isinstance(row, RowError):
                raise row
            if not isinstance(row, dict):
                raise RowError(None, f"expected an object, got {type(row).__name__}")
            out.append((line, convert(row)))
        except RowError as err:
            if not skip_bad_rows:
                raise DatasetError(row_error_message(source, line, err)) from None
            bad.append(BadRow(line, err.field, str(err)))
        if limit and len(out) >= limit:
            break
    return out, bad


def _json_int(digits: str) -> int | str:
    # Python refuses to convert integers of more than 4,300 digits (a ValueError inside the decoder): such a
    # number is kept as its digits, so a numeric field reports it with its name and nothing is lost elsewhere.
    return int(digits) if len(digits) <= MAX_INT_DIGITS else digits


_JSON = json.JSONDecoder(parse_int=_json_int)


def parse_json(text: str) -> Any:
    """One JSON document (integers longer than :data:`MAX_INT_DIGITS` digits kept as strings); anything it
    cannot read, or a value nested deeper than :data:`MAX_JSON_DEPTH`, raises :class:`RowError` with the
    reason, never a ``RecursionError``."""
    too_deep = f"invalid JSON value: nested deeper than {MAX_JSON_DEPTH} levels"
    try:
        value = _JSON.decode(text)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}" if err.lineno > 1 else f"column {err.colno}"
        raise RowError(None, f"invalid JSON ({err.msg} at {where}); truncated line?") from None
    except RecursionError:
        raise RowError(None, too_deep) from None
    if nesting_exceeds(value, MAX_JSON_DEPTH):
        raise RowError(None, too_deep)
    return value


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    text = _open_text(path)
    for n, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            yield n, RowError(None, f"line longer than {MAX_LINE_BYTES // 2**20} MiB")
            continue
        try:
            yield n, parse_json(line)
        except RowError as err:
            yield n, err


def read_json(path: Path) -> Iterator[tuple[int, Any]]:
    text = _open_text(path)
    too_deep = f"{path}: invalid JSON value: nested deeper than {MAX_JSON_DEPTH} levels"
    try:
        data = _JSON.decode(text)
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise DatasetError(too_deep) from None
    if nesting_exceeds(data, MAX_JSON_DEPTH + 1):  # + 1: the array that holds the records
        raise DatasetError(too_deep)
    if isinstance(data, dict):
        for key in ("data", "items", "examples", "rows"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of records (or {{'data': [...]}})")
    yield from enumerate(data, 1)


def read_csv(path: Path, *, delimiter: str = ",", header: bool | None = None,
             columns: list[str] | None = None) -> Iterator[tuple[int, Any]]:
    text = _open_text(path)
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        rows = list(reader)
    except csv.Error as err:
        raise DatasetError(f"{path}:{reader.line_num}: not valid CSV ({err})") from None
    if not rows:
        raise DatasetError(f"{path}: the file is empty")
    if header is None:
        header = True
    names = [c.strip() for c in rows[0]] if header else list(columns or [])
    start = 1 if header else 0
    for idx, row in enumerate(rows[start:], start + 1):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(names):
            yield idx, RowError(None, f"expected {len(names)} columns ({', '.join(names)}), got {len(row)}")
            continue
        yield idx, dict(zip(names, row, strict=True))


def file_suffix(path: Path) -> str:
    """The suffix that names the file type, looking through a final ``.gz`` (``a.csv.gz`` -> ``.csv``)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def read_file(path: Path) -> Iterator[tuple[int, Any]]:
    suffix = file_suffix(path)
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".json":
        return read_json(path)
    if suffix == ".tsv":
        return read_csv(path, delimiter="\t")
    if suffix == ".csv":
        return read_csv(path)
    raise DatasetError(f"{path}: unknown file type {suffix!r}; expected .jsonl, .json, .csv or .tsv (optionally .gz)")


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
    """A whole number in ``[minimum, maximum]`` from a row (an int, a float with no fraction, or such a
    number written as text); ``None`` when empty. NaN, infinity, booleans, fractions and numbers outside
    the range raise :class:`RowError` naming the field."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    expected = f"expected a whole number from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RowError(field_name, f"{expected}, got {type(value).__name__} {str(value)[:40]!r}")
    number: int | float = value
    if isinstance(value, str):
        try:
            number = float(value.strip()) if len(value) <= 100 else math.inf
        except ValueError:
            raise RowError(field_name, f"{expected}, got {value[:40]!r}") from None
    if isinstance(number, float):
        if not math.isfinite(number) or not number.is_integer():
            raise RowError(field_name, f"{expected}, got {str(value)[:40]!r}")
        number = int(number)
    if not minimum <= number <= maximum:
        shown = str(number) if abs(number) < 10**20 else f"a number of about {int(number.bit_length() * 0.30103)} digits"
        raise RowError(field_name, f"{expected}, got {shown}")
    return number


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
    data: dict[str, Any] = {}
    for name in GENERIC_FIELDS:
        c = col(name)
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
            data[name] = _as_list(data[name], col(name) or name)
    if "id" in data:
        data["id"] = str(data["id"])
    if answer_type:
        data["answer_type"] = answer_type
    elif "answer_type" not in data:
        data["answer_type"] = _guess_type(data.get("target"), data.get("choices"))
    used = {col(n) for n in GENERIC_FIELDS}
    data["metadata"] = {k: v for k, v in row.items() if k not in used}
    try:
        item = Item.model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        raise RowError(str(e["loc"][0]) if e["loc"] else None, e["msg"]) from None
    check_target(item.target, item.answer_type, item.choices, col("target") or "target")
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


def _rows_for(cfg: DatasetConfig, path: Path) -> Iterator[tuple[int, Any]]:
    if cfg.format == "mmlu":
        first = _open_text(path).split("\n", 1)[0].lower()
        has_header = first.startswith("question,") or ",question," in first
        return read_csv(path, header=has_header, columns=["question", "A", "B", "C", "D", "answer"])
    if cfg.format == "goemotions":
        if file_suffix(path) == ".tsv":
            return read_csv(path, delimiter="\t", header=False, columns=["text", "labels", "id"])
        return read_file(path)
    return read_file(path)


def _hf_rows(cfg: DatasetConfig) -> Iterator[tuple[int, Any]]:
    try:
        import datasets
    except ImportError:
        raise DatasetError(f"dataset {cfg.name!r}: hf_id needs the `datasets` package "
                           "(pip install 'reasonscope[datasets]')") from None
    try:
        ds = datasets.load_dataset(cfg.hf_id, cfg.hf_config, split=cfg.split)
    except Exception as err:  # network, missing dataset
        raise DatasetError(f"dataset {cfg.name!r}: could not load {cfg.hf_id!r} from the hub: {err}") from None
    for i, row in enumerate(ds, 1):
        yield i, dict(row)


def load_dataset(cfg: DatasetConfig, *, base_dir: Path | None = None, seed: int = 0) -> LoadResult:
    """Load a dataset described by a plan entry. Item ids are prefixed with the dataset name."""
    if cfg.format == "synthetic":
        items = synthetic_items(cfg.size, cfg.seed if cfg.seed is not None else seed)
        return LoadResult(_finish(items, cfg), [], "synthetic")
    if cfg.format == "topics":
        base = cfg.seed if cfg.seed is not None else seed
        items = topic_items(cfg.size, base + (0 if cfg.split == "train" else 1), prefix=cfg.split)
        return LoadResult(_finish(items, cfg), [], "synthetic-topics")
    if cfg.path:
        path = Path(cfg.path)
        if base_dir is not None and not path.is_absolute() and not path.exists():
            path = base_dir / path
        rows, source = _rows_for(cfg, path), str(path)
    else:
        rows, source = _hf_rows(cfg), f"hf:{cfg.hf_id}"
    convert = CONVERTERS.get(cfg.format)

    def to_item(row: dict) -> Item:
        if cfg.mapping and convert is not None:
            row = {**row, **{k: row[v] for k, v in cfg.mapping.items() if v in row}}
        item = convert(row) if convert else generic_row(row, cfg.mapping, cfg.answer_type)
        if cfg.answer_type and convert is None:
            item.answer_type = cfg.answer_type
        return item

    converted, bad = convert_rows(rows, source, to_item, skip_bad_rows=cfg.skip_bad_rows, limit=cfg.limit)
    items = [item for _, item in converted]
    if not items:
        raise DatasetError(f"{source}: no usable rows" + (f" ({len(bad)} bad rows skipped)" if bad else ""))
    return LoadResult(_finish(items, cfg), bad, source)


def _finish(items: list[Item], cfg: DatasetConfig) -> list[Item]:
    seen: set[str] = set()
    for it in items:
        it.group = cfg.name
        if it.id in seen:
            raise DatasetError(f"dataset {cfg.name!r}: duplicate item id {it.id!r}")
        seen.add(it.id)
    return items[: cfg.limit] if cfg.limit else items
