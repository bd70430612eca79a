r"""Dataset loaders: generic JSONL / JSON / CSV with a field mapping, and the real formats.

Every loader reads a local path (a ``.gz`` file is decompressed as it is read: ``esnli_dev.csv.gz``
reads as a csv file), or a Hugging Face dataset id through ``datasets.load_dataset``
(online only). A local path must be a regular file: a directory, FIFO, socket or device (``/dev/zero``)
is refused before it is opened (:func:`~reasonscope.data.files.check_regular_file`). JSONL, CSV and TSV
files are streamed line by line, each line at most :data:`MAX_LINE_BYTES` bytes, a ``.gz`` file at
most :data:`~reasonscope.data.files.MAX_DECOMPRESSED_BYTES` bytes once decompressed; a ``.json``
document is parsed whole, at most :data:`~reasonscope.data.files.MAX_DOCUMENT_BYTES` bytes.
Rows become :class:`~reasonscope.types.Item` objects. A malformed row raises
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
                (``split: train`` and ``split: test`` draw different texts from the same seed);
                ``word_problems`` ``size`` seeded one- and two-step arithmetic word problems
                (:mod:`reasonscope.data.word_problems`).
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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..shared_settings import DatasetConfig
from ..types import Item
from .files import (
    MAX_COUNT,
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    MAX_LINE_BYTES,
    BadRow,
    DatasetError,
    LoadResult,
    RowError,
    _open_text,  # noqa: F401  (imported from here by existing code)
    convert_rows,
    file_suffix,
    first_line,
    parse_json,
    read_csv,
    read_file,
    read_json,
    read_jsonl,
    resolve_path,
    row_error_message,
)
from .formats import (  # noqa: F401  (imported from here by existing code)
    AGNEWS_LABELS,
    CONVERTERS,
    GENERIC_ALIASES,
    GENERIC_FIELDS,
    GOEMOTIONS_LABELS,
    NLI_LABELS,
    _as_list,
    _guess_type,
    agnews_row,
    check_target,
    ecqa_row,
    esnli_row,
    generic_row,
    goemotions_row,
    gsm8k_row,
    imdb_row,
    integer_field,
    mmlu_row,
    strategyqa_row,
)
from .synthetic import synthetic_items
from .synthetic_topics import topic_items
from .word_problems import word_problem_items

__all__ = [  # what this module has always offered; rows are read in .files, converted in .formats
    "AGNEWS_LABELS", "CONVERTERS", "GENERIC_ALIASES", "GENERIC_FIELDS", "GOEMOTIONS_LABELS", "MAX_COUNT",
    "MAX_INT_DIGITS", "MAX_JSON_DEPTH", "MAX_LINE_BYTES", "NLI_LABELS", "BadRow", "DatasetError", "LoadResult",
    "RowError", "agnews_row", "check_target", "convert_rows", "ecqa_row", "esnli_row", "file_suffix", "generic_row",
    "goemotions_row", "gsm8k_row", "imdb_row", "integer_field", "load_dataset", "mmlu_row", "parse_json",
    "read_csv", "read_file", "read_json", "read_jsonl", "row_error_message", "strategyqa_row",
]


def _rows_for(cfg: DatasetConfig, path: Path) -> Iterator[tuple[int, Any]]:
    if cfg.format == "mmlu":
        first = first_line(path).lower()
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
    if cfg.format == "word_problems":
        items = word_problem_items(cfg.size, cfg.seed if cfg.seed is not None else seed)
        return LoadResult(_finish(items, cfg), [], "word-problems")
    if cfg.path:
        path = resolve_path(cfg.path, base_dir)
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
