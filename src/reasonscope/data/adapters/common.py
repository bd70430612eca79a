"""What the readers of other frameworks' logs share: the record they build and the result they return.

A reader turns each generation of the source log into one record with the fields of
:data:`reasonscope.data.predictions.FIELDS` and hands the records to
:func:`~reasonscope.data.predictions.assemble_records`, the same assembly ``reasonscope score --map``
uses. An adapted log and the same rows written as a JSONL file and given to ``--map`` therefore
become the same items and generations, and score the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...models.reported import finish_reason
from ..formats import integer_field
from ..loaders import DatasetError, _guess_type
from ..predictions import FIELDS, ImportResult


@dataclass
class ForeignImport(ImportResult):
    """An :class:`ImportResult` with what the source log says beyond its records.

    ``temperatures``: model -> sampling temperature, for the models whose log states it and that
    sampled an item more than once (temperature 0 makes CS and SS trivially 1; the report says so).
    ``notes``: what was read and what was set aside on purpose (shown on the console, kept in the run).
    ``warnings``: what the log says is missing from it, read anyway (a samples file with fewer documents
    than its run's results file counts); shown in yellow, kept in the run.
    """

    temperatures: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def new_record(**values: Any) -> dict[str, Any]:
    """A record with every field of :data:`FIELDS` (``None`` where the source has nothing).

    Token counts and the finish reason pass the rule every provider's reply passes
    (:mod:`reasonscope.models.reported`): a count that breaks it raises :class:`RowError` naming the field.
    """
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise KeyError(f"not record fields: {sorted(unknown)}")
    rec: dict[str, Any] = dict.fromkeys(FIELDS)
    rec.update(variant="original", sample=0)
    rec.update(values)
    rec["completion_tokens"] = integer_field(rec["completion_tokens"], "completion_tokens")
    rec["finish_reason"] = finish_reason(rec["finish_reason"])
    return rec


def split_gold(target: str) -> str:
    """The gold answer of a target string.

    What follows the last ``####`` when there is one (the GSM8K convention, where the worked solution comes
    before the marker), else the whole string, stripped.
    """
    if "####" in target:
        return target.rpartition("####")[2].strip()
    return target.strip()


def answer_type_of(target: Any, choices: list[str] | None, given: str | None) -> str:
    """The record's answer type.

    ``given`` (the log's own, or ``--answer-type``), else guessed from the target as ``reasonscope score``
    guesses it for a predictions file (yes/no -> boolean, options -> choice, a number -> number, else text).
    """
    return given or _guess_type(target, choices)


# ----------------------------------------------------------------------------------------------
# Several runs in one folder: the latest run of each task is read, or the run the user picks

@dataclass(frozen=True)
class LogRun:
    """One log file of a folder, as a run of something.

    ``group``: what the run is a run of (lm-eval: the model folder and the task; inspect: the task and
    the model); two files of one group are two runs of the same thing. ``stamp``: the run's own time
    (lm-eval: the date in the file name; inspect: ``eval.created`` in UTC), ISO 8601, so later sorts
    after. ``names``: the strings that pick this run (its file name, its run date or run ids).
    ``tiebreak``: orders runs with the same stamp (inspect stamps to the second: its completion time,
    then the file's modification time).
    """

    path: Path
    group: tuple[str, ...]
    stamp: str
    names: frozenset[str]
    tiebreak: tuple = ()


def utc_stamp(text: str) -> str:
    """An ISO 8601 time as UTC.

    Written ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` (a time without a zone is taken as UTC), so stamps of logs
    written in different zones sort in time order; ``text`` as it is when unparseable.
    """
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return text
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC).isoformat(timespec="microseconds")


def choose_runs(runs: list[LogRun], pick: str | None, folder: Path, pick_hint: str) -> tuple[list[LogRun], list[str]]:
    """The runs to read, and notes saying which were set aside.

    Without ``pick``: per group, the run with the latest ``stamp`` (ties: ``tiebreak``, then the name); the
    others are set aside and named in a note (frameworks add a new file per run to the same folder, so
    re-running an eval leaves both). With ``pick``: the runs ``pick`` names (then the latest per group
    among them); a pick that names nothing raises :class:`DatasetError` listing the runs there are.
    ``pick_hint`` says, in the notes and errors, what a pick may be.
    """
    notes: list[str] = []
    chosen = runs
    if pick is not None:
        chosen = [r for r in runs if pick.strip() in r.names]
        if not chosen:
            stamps = sorted({r.stamp for r in runs})
            listing = ", ".join(stamps[-10:]) + (f" (and {len(stamps) - 10} earlier)" if len(stamps) > 10 else "")
            raise DatasetError(f"{folder}: --log-run {pick!r} names no log here; expected {pick_hint}; "
                               f"the runs here are from {listing}")
        notes.append(f"--log-run {pick!r}: {len(chosen)} of {len(runs)} log file(s) read")
    groups: dict[tuple[str, ...], list[LogRun]] = {}
    for r in chosen:
        groups.setdefault(r.group, []).append(r)
    keep: list[LogRun] = []
    for group, members in groups.items():
        members.sort(key=lambda r: (r.stamp, r.tiebreak, r.path.name))
        latest = members[-1]
        keep.append(latest)
        if len(members) > 1:
            older = ", ".join(f"{r.stamp} ({r.path.name})" for r in reversed(members[:-1]))
            notes.append(f"{' / '.join(group)}: {len(members)} runs in the folder; read the latest, run of "
                         f"{latest.stamp} ({latest.path.name}); set aside {older}. Pick another with "
                         f"--log-run ({pick_hint})")
    return sorted(keep, key=lambda r: r.path), notes


# ----------------------------------------------------------------------------------------------
# Which framework wrote a file: a log given to the wrong reader names the right one

SNIFF_BYTES = 65536
_KEY = re.compile(r'"([A-Za-z_][\w\-]*)"\s*:')
ZIP_MAGIC = b"PK\x03\x04"


def sniff_log(path: Path) -> str | None:
    """What ``path`` looks like from its first 64 KiB, or None when it is none of these kinds.

    ``inspect-eval`` (a zip file whose first entry is inspect's journal, header or a sample: inspect-ai's
    ``.eval`` log), ``inspect-json`` (a JSON document with
    ``version``, ``status`` and ``eval`` keys: inspect-ai's ``.json`` log), ``lm-eval-results``
    (``results_<date>.json``: a document with ``n-samples``, or ``results`` and ``configs``) and
    ``lm-eval-samples`` (JSON lines with ``doc_id``, ``arguments`` and ``resps``). Reads only a regular
    file (a FIFO or a device would block or never end).
    """
    if not path.is_file():
        return None
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return None
    if head.startswith(ZIP_MAGIC):  # a zip file: inspect's .eval starts with its journal (or its header)
        name_length = int.from_bytes(head[26:28], "little")
        first_entry = head[30:30 + name_length]
        return "inspect-eval" if first_entry.startswith((b"_journal/", b"header.json", b"samples/")) else None
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return None
    first_line = text.split("\n", 1)[0]
    keys = set(_KEY.findall(first_line))
    if {"doc_id", "arguments", "resps"} <= keys:
        return "lm-eval-samples"
    if first_line.strip() == "{" or "\n" not in text:  # one document over several lines (or one line)
        keys = set(_KEY.findall(text))
        first = _KEY.search(text)
        if first is not None and first[1] == "version" and "status" in keys and re.search(r'"eval"\s*:\s*\{', text):
            return "inspect-json"
        if re.search(r'"results"\s*:\s*\{', text) and ("n-samples" in keys or (first is not None
                                                                            and first[1] == "results"
                                                                            and "configs" in keys)):
            return "lm-eval-results"
    return None


KINDS = {"inspect-eval": "an inspect-ai eval log (.eval)", "inspect-json": "an inspect-ai eval log (.json)",
         "lm-eval-results": "lm-eval's results file (aggregate scores of one run)",
         "lm-eval-samples": "an lm-eval samples file (--log_samples)"}
