"""Reading inspect-ai eval logs (``.eval`` or ``.json``) through inspect-ai's own log reader.

Needs the ``[inspect]`` extra (``pip install 'reasonscope[inspect]'``); inspect-ai is imported only
when a log is read. The path is a log file or a folder of logs (inspect's ``list_eval_logs``, which
lists the files named as inspect names its logs).

Field mapping (one record per sample and epoch)
-----------------------------------------------
==========================  =====================================================================
reasonscope                 inspect-ai
==========================  =====================================================================
dataset                     the task name (``eval.task``)
item id                     the sample ``id``
input                       the sample ``input`` (a chat input: its last user message, as inspect's
                            ``TaskState.input_text``)
target                      the sample ``target`` (a list of one target: that target)
choices                     the sample ``choices``
prediction, sample k        ``output.completion`` of epoch k + 1 (epochs -> samples: CS, SS); a
                            reasoning block of the output message is kept as ``<think>...</think>``
                            before it, so the trace keeps it apart from the answer
model                       ``eval.model`` (the model the eval was run with, e.g. ``openai/gpt-4o``)
completion tokens           ``output.usage.output_tokens`` (else ``--tokenizer``)
max_tokens (ES budget)      the eval's generate config ``max_tokens``, else ``--budget``
finish reason               ``stop_reason``: ``max_tokens`` and ``model_length`` are truncations
error                       the sample ``error`` (or ``output.error``): a failed generation (left out
                            or scored wrong: ``stats.failed_generations``)
answer_type                 the sample metadata ``answer_type``, else ``--answer-type``, else guessed
                            from the target as for ``--map``
temperature                 the eval's generate config ``temperature``, when it is set
==========================  =====================================================================

Choices
-------
* A sample with several targets (any of which inspect would accept) is refused: reasonscope scores one
  gold answer per item. The record names the log, the sample id and epoch, and the field.
* A log whose status is not ``success`` (an eval that errored, was cancelled or is still running) is
  read for the samples it holds; how many of the expected sample x epoch records are absent is noted.
* A log that inspect cannot read as a whole (a malformed sample in a ``.eval`` file) is read sample by
  sample, so the bad sample is named (and skipped with ``--skip-bad-rows``); a ``.json`` log is one
  document, so a malformed sample in it names the log, its position and the field.
* The record's source is ``sample=<id>,epoch=<epoch>`` in the log file.
* Several logs of one task and model in a folder (the eval run again into the same ``--log-dir``):
  the latest, by ``eval.created``, is read and the others are named in the notes; ``--log-run`` picks
  one (a file name, the eval's ``run_id`` or ``eval_id``, or its created time).
* An lm-eval samples or results file is refused with an error naming ``--from lm-eval``.

Sizes, bounded before anything is read
--------------------------------------
inspect's reader unpacks a ``.eval`` log's members (``header.json``, one ``samples/*.json`` per sample and
epoch) whole, and reads a ``.json`` log whole. Before it opens a log, every member's uncompressed size,
as the archive's directory states it, is checked against :data:`MAX_LOG_MEMBER_BYTES` (256 MiB), and a
``.json`` log's size against :data:`MAX_JSON_LOG_BYTES` (1 GiB). A log past either is refused at once
with a :class:`~reasonscope.data.loaders.DatasetError` naming the log, the member, its size and the limit
(a sample that unpacks to 1 GiB used to keep ``score --from inspect`` busy for minutes). The limits are
module settings: raise them for logs that are really that large. A member whose stated size is a lie
is read no further than that size (Python's ``zipfile`` stops there and then fails its checksum).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ...models.reported import TRUNCATION_ALIASES
from ..formats import integer_field
from ..loaders import BadRow, DatasetError, RowError, convert_rows
from ..predictions import VALID_TYPES, assemble_records
from .common import (
    KINDS,
    ForeignImport,
    LogRun,
    answer_type_of,
    choose_runs,
    new_record,
    sniff_log,
    utc_stamp,
)

MAX_LOG_MEMBER_BYTES = 256 * 1024**2
"""Largest uncompressed member of a ``.eval`` log (a sample with its messages; events are not read)."""
MAX_JSON_LOG_BYTES = 1024**3
"""Largest ``.json`` log (inspect reads it whole)."""
SKIPPED_FIELDS = {"events", "store", "attachments"}  # large and not needed to score the output


def _inspect_log():
    try:
        import inspect_ai.log as ilog
    except ImportError:
        raise DatasetError("reading inspect-ai logs needs inspect-ai: pip install 'reasonscope[inspect]'") from None
    return ilog


def _describe(err: Exception) -> tuple[str | None, str]:
    """(field, message) of an exception raised while reading a log (pydantic errors name the field)."""
    from pydantic import ValidationError

    if isinstance(err, ValidationError):
        e = err.errors()[0]
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(".")
        return loc or None, f"{e['msg']} (got {e.get('input')!r:.60})"
    return None, f"{type(err).__name__}: {err}"


def _unreadable(path: Path, err: Exception) -> DatasetError:
    field, message = _describe(err)
    if field:
        return DatasetError(f"{path}: not a readable inspect-ai log (field {field!r}: {message})")
    return DatasetError(f"{path}: not a readable inspect-ai log ({message}); the file may be truncated "
                        "(an eval still running or a copy cut short) or not an eval log")


def _log_files(path: Path) -> list[Path]:
    if path.is_file():
        kind = sniff_log(path)
        if kind in ("lm-eval-samples", "lm-eval-results"):
            raise DatasetError(f"{path}: {KINDS[kind]}, not an inspect-ai log: read "
                               + ("it" if kind == "lm-eval-samples" else "the samples files of its run")
                               + " with --from lm-eval")
        return [path]
    if not path.is_dir():
        raise DatasetError(f"{path}: no such file or folder")
    files = [Path(unquote(urlparse(info.name).path)) for info in _inspect_log().list_eval_logs(str(path), recursive=True)]
    if not files:
        hint = ("; it holds lm-eval samples files: read them with --from lm-eval"
                if next(path.rglob("samples_*.jsonl"), None) is not None else "")
        raise DatasetError(f"{path}: no inspect-ai logs (.eval or .json named as inspect names them) in this folder"
                           + hint)
    return sorted(files)


PICK_HINT = "a log file name, an eval's run_id or eval_id, or its created time"


def check_log_size(path: Path) -> None:
    """Refuse a log whose members (``.eval``) or whole file (``.json``) pass the size limits, before reading.

    A ``.eval`` file that is not a readable zip archive is left to inspect's reader, which names what is wrong.
    """
    if path.suffix.lower() != ".eval":
        size = path.stat().st_size
        if size > MAX_JSON_LOG_BYTES:
            raise DatasetError(f"{path}: a .json log of {size:,} bytes, more than the {MAX_JSON_LOG_BYTES:,} bytes "
                               "reasonscope reads whole (reasonscope.data.adapters.inspect_logs.MAX_JSON_LOG_BYTES); "
                               "write the log in inspect's .eval format, whose samples are read one at a time")
        return
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    for info in members:
        if info.file_size > MAX_LOG_MEMBER_BYTES:
            raise DatasetError(f"{path}: member {info.filename!r} unpacks to {info.file_size:,} bytes "
                               f"({info.compress_size:,} compressed), more than the {MAX_LOG_MEMBER_BYTES:,} bytes one "
                               "log member may hold (reasonscope.data.adapters.inspect_logs.MAX_LOG_MEMBER_BYTES); "
                               "nothing was read")


def _header(path: Path):
    check_log_size(path)
    try:
        return _inspect_log().read_eval_log(str(path), header_only=True)
    except Exception as err:
        raise _unreadable(path, err) from None


def _run_of(path: Path, root: Path, header) -> LogRun:
    """The log as a run of (task, model), stamped with ``eval.created`` (in UTC)."""
    ev = header.eval
    created = str(ev.created)
    names = {path.name, path.stem, str(ev.run_id or ""), str(ev.eval_id or ""), created, utc_stamp(created)}
    if root.is_dir():
        names.add(str(path.relative_to(root.resolve())))
    completed = getattr(header.stats, "completed_at", None) or ""
    return LogRun(path, (str(ev.task), str(ev.model)), utc_stamp(created), frozenset(n for n in names if n),
                  (utc_stamp(str(completed)), path.stat().st_mtime_ns))


def _label(sample_id: Any, epoch: Any) -> str:
    return f"sample={sample_id},epoch={epoch}"


def _samples(path: Path, header) -> Iterator[tuple[str, Any]]:
    """(label, EvalSample or RowError) for every sample x epoch the log holds."""
    ilog = _inspect_log()
    try:
        log = ilog.read_eval_log(str(path), exclude_fields=SKIPPED_FIELDS)
    except Exception as err:  # a malformed sample: find it, one sample at a time (.eval only)
        ids = header.eval.dataset.sample_ids
        if path.suffix != ".eval" or ids is None:
            raise _unreadable(path, err) from None
        for sample_id in ids:
            for epoch in range(1, (header.eval.config.epochs or 1) + 1):
                try:
                    yield _label(sample_id, epoch), ilog.read_eval_log_sample(
                        str(path), id=sample_id, epoch=epoch, exclude_fields=SKIPPED_FIELDS)
                except IndexError:
                    continue  # not in the log (an unfinished eval): counted as absent
                except Exception as sample_err:
                    field, message = _describe(sample_err)
                    yield _label(sample_id, epoch), RowError(field, f"unreadable sample: {message}")
        return
    for sample in log.samples or []:
        yield _label(sample.id, sample.epoch), sample


def input_text(value: Any) -> str:
    """A sample input as text.

    The string, or (a chat input) the text of its last user message, as inspect's ``TaskState.input_text``
    reads it.
    """
    if isinstance(value, str):
        return value
    users = [m for m in value if getattr(m, "role", None) == "user"]
    return users[-1].text if users else ""


def single_target(value: Any) -> str:
    """The one gold answer of an inspect target (a string or a list of one string); RowError otherwise."""
    if isinstance(value, list):
        if len(value) != 1:
            raise RowError("target", f"expected one target, got {len(value)} {value!r:.80}"
                           + ("; reasonscope scores one gold answer per item" if value else ""))
        value = value[0]
    if not isinstance(value, str) or not value.strip():
        raise RowError("target", f"expected the gold answer (a non-empty string), got {value!r:.60}")
    return value


def output_fields(output, error: str | None = None) -> dict[str, Any]:
    """The record fields of one inspect ``ModelOutput``.

    ``prediction`` (the completion, with any reasoning block of the message kept before it as
    ``<think>...</think>``), ``completion_tokens`` (a whole number from 0 to 2**31 - 1, else :class:`RowError`),
    ``finish_reason`` (``length`` for ``max_tokens`` /
    ``model_length`` stops) and ``error`` (the sample's error, else the output's). The log reader and the
    inspect scorers both read outputs here.
    """
    reasoning: list[str] = []
    stop = None
    if output.choices:
        stop = output.choices[0].stop_reason
        content = output.message.content
        if isinstance(content, list):
            reasoning = [c.reasoning for c in content
                         if getattr(c, "type", None) == "reasoning" and not c.redacted and c.reasoning]
    text = "".join(f"<think>{r}</think>\n" for r in reasoning) + (output.completion or "")
    usage = output.usage
    # the rule every provider's reply passes (reasonscope.models.reported): RowError naming the field
    tokens = integer_field(usage.output_tokens if usage is not None else None, "output.usage.output_tokens")
    return {"prediction": text, "completion_tokens": tokens,
            "finish_reason": "length" if stop in TRUNCATION_ALIASES else "stop",
            "error": error or getattr(output, "error", None) or None}


def _generate_setting(header, name: str) -> Any:
    for config in (getattr(header.plan, "config", None), getattr(header.eval, "model_generate_config", None)):
        value = getattr(config, name, None) if config is not None else None
        if value is not None:
            return value
    return None


def _read_log(path: Path, header, label_prefix: str, *, skip_bad_rows: bool, answer_type: str | None,
              budget: int | None, out: ForeignImport, records: list) -> None:
    model, task = str(header.eval.model), str(header.eval.task)
    epochs = header.eval.config.epochs or 1
    max_tokens = _generate_setting(header, "max_tokens") or budget
    temperature = _generate_setting(header, "temperature")

    def convert(row: dict) -> dict[str, Any]:
        sample = row["sample"]
        if not isinstance(sample.epoch, int) or sample.epoch < 1:
            raise RowError("epoch", f"expected an epoch number >= 1, got {sample.epoch!r}")
        meta = sample.metadata or {}
        kind = meta.get("answer_type")
        if kind is not None and kind not in VALID_TYPES:
            raise RowError("metadata.answer_type", f"expected one of {VALID_TYPES}, got {kind!r}")
        target = single_target(sample.target)
        choices = [str(c) for c in sample.choices] if sample.choices else None
        question = input_text(sample.input)
        if not question.strip():
            raise RowError("input", "the sample has no input text")
        fields = output_fields(sample.output, sample.error.message if sample.error is not None else None)
        return new_record(input=question, target=target, id=str(sample.id), model=model, sample=sample.epoch - 1,
                          answer_type=answer_type_of(target, choices, kind or answer_type), choices=choices,
                          max_tokens=max_tokens, dataset=task, **fields)

    found = 0

    def rows() -> Iterator[tuple[str, Any]]:
        nonlocal found
        for label, sample in _samples(path, header):
            found += 1
            yield label, sample if isinstance(sample, RowError) else {"sample": sample}

    converted, bad = convert_rows(rows(), str(path), convert, skip_bad_rows=skip_bad_rows)
    records.extend((f"{label_prefix}{label}", rec) for label, rec in converted)
    out.bad_rows.extend(BadRow(f"{label_prefix}{b.line}", b.field, b.message) for b in bad)  # type: ignore[arg-type]
    expected = len(header.eval.dataset.sample_ids or []) * epochs
    if header.status != "success" or (expected and found < expected):
        out.notes.append(f"{path.name}: log status {header.status!r}, {found} of {expected or '?'} "
                         "sample x epoch records present")
    if temperature is not None and epochs > 1:
        out.temperatures[model] = min(float(temperature), out.temperatures.get(model, float(temperature)))


def read_inspect_log(path: str | Path, *, skip_bad_rows: bool = False, answer_type: str | None = None,
                     budget: int | None = None, token_counter=None, log_run: str | None = None) -> ForeignImport:
    """Read an inspect-ai eval log (or a folder of logs) into items and generations.

    One generation per sample and epoch (epoch e is sample index e - 1); see the module docstring
    for the field mapping. A sample that cannot be mapped raises :class:`DatasetError` naming the
    log, the sample id and epoch, and the field, or is skipped and listed with ``skip_bad_rows``.
    A folder with several logs of one task and model (the eval run again into the same log folder)
    gives the latest, by ``eval.created``; ``log_run`` (a file name, a run or eval id, or the created
    time) reads that run instead.
    """
    path = Path(path)
    files = _log_files(path)
    headers = {f: _header(f) for f in files}
    chosen, run_notes = choose_runs([_run_of(f, path, h) for f, h in headers.items()], log_run, path, PICK_HINT)
    out = ForeignImport(items={}, generations=[], source=str(path))
    out.notes.extend(run_notes)
    records: list[tuple[int | str, dict[str, Any]]] = []
    for run in chosen:
        f = run.path
        prefix = f"{f.relative_to(path.resolve())}:" if path.is_dir() else ""
        _read_log(f, headers[f], prefix, skip_bad_rows=skip_bad_rows, answer_type=answer_type, budget=budget,
                  out=out, records=records)
    if not records:
        raise DatasetError(f"{path}: no usable samples in the inspect-ai log"
                           + (f" ({len(out.bad_rows)} bad samples skipped)" if out.bad_rows else ""))
    assembled = assemble_records(records, path, out.bad_rows, token_counter)
    out.items, out.generations = assembled.items, assembled.generations
    out.notes.insert(0, f"inspect-ai: {len(chosen)} log(s), tasks {', '.join(sorted(out.items))}, "
                        f"models {', '.join(sorted({g.model for g in out.generations}))}")
    return out
