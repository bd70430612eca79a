"""What the readers of other frameworks' logs share: the record they build and the result they return.

A reader turns each generation of the source log into one record with the fields of
:data:`reasonscope.data.predictions.FIELDS` and hands the records to
:func:`~reasonscope.data.predictions.assemble_records`, the same assembly ``reasonscope score --map``
uses. An adapted log and the same rows written as a JSONL file and given to ``--map`` therefore
become the same items and generations, and score the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..loaders import _guess_type
from ..predictions import FIELDS, ImportResult


@dataclass
class ForeignImport(ImportResult):
    """An :class:`ImportResult` with what the source log says beyond its records.

    ``temperatures``: model -> sampling temperature, for the models whose log states it and that
    sampled an item more than once (temperature 0 makes CS and SS trivially 1; the report says so).
    ``notes``: what was read and what was set aside on purpose (shown on the console, kept in the run).
    """

    temperatures: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def new_record(**values: Any) -> dict[str, Any]:
    """A record with every field of :data:`FIELDS` (``None`` where the source has nothing)."""
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise KeyError(f"not record fields: {sorted(unknown)}")
    rec: dict[str, Any] = dict.fromkeys(FIELDS)
    rec.update(variant="original", sample=0)
    rec.update(values)
    return rec


def split_gold(target: str) -> str:
    """The gold answer of a target string: what follows the last ``####`` when there is one (the GSM8K
    convention, where the worked solution comes before the marker), else the whole string, stripped."""
    if "####" in target:
        return target.rpartition("####")[2].strip()
    return target.strip()


def answer_type_of(target: Any, choices: list[str] | None, given: str | None) -> str:
    """The record's answer type: ``given`` (the log's own, or ``--answer-type``), else guessed from the
    target as ``reasonscope score`` guesses it for a predictions file (yes/no -> boolean, options ->
    choice, a number -> number, else text)."""
    return given or _guess_type(target, choices)
