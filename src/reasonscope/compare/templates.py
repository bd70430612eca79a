"""The prompt templates a run's generations were made with, and where two runs' templates differ.

Every stored generation records the version of the prompt template that built its messages: the
``template`` field of the stored request (``generations.request``), written with the completion (the version
also enters the request's cache key; storing it changes no key): ``qa-v1`` for the answers, ``race-v1`` for evidence's annotator, ``judge-attributes-v3``
for the attribute judges, ``imported:<format>`` for imported outputs. A generation stored before templates
were recorded has none: its template is :data:`UNKNOWN`.

**What is read**, per run, model and *use* (:func:`read_templates`):

* ``answers``: the run's linked requests of the question variants (``original``, ``p0``, ``p1``...), read by
  every family that scores answers;
* ``<family>.requests``: a family's own linked requests (variant ``<family>`` or ``<family>:...``: evidence's
  annotator);
* ``<family>.calls``: the completions whose keys the family's item-level scores record (a ``key`` anywhere in
  a score's details: the attribute judges), by the scored model;
* ``<family>.records``: a family's own records (provider ``<family>``, request ``item`` one of the family's
  scored items, in any run of the folder: the attack family's white-box records, whose ``prompt`` is read
  where ``template`` is missing).

**What is compared** (:func:`template_check`), for every compared family and model pair: the uses of the
family (its own, plus ``answers`` when it scores answers), BASE model's set of templates against NEW model's.
Known templates that differ are a ``definition`` mismatch ("prompt template qa-v1 -> qa-v2 (behavior,
answers)"), which blocks the gate like any other definition that differs; a side whose generations carry no
template (:data:`UNKNOWN`), or that has no generation of a use the other side has, cannot be checked: that
is said in a note and blocks nothing.

**Runtimes** (:func:`read_runtimes`, :func:`runtime_check`): the ``runtime`` of the stored requests of the
answers, of a family's own requests and of its scoring calls (``llama-cpp`` for the embedded model on llama.cpp;
none recorded: :data:`DEFAULT_RUNTIME`) are compared the same way: "model runtime torch -> llama-cpp
(behavior, answers)" is a ``definition`` mismatch, since ``runtime: auto`` in both runs' settings may have
resolved to different runtimes.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .model import Mismatch

DEFAULT_RUNTIME = "torch"
"""The runtime of a generation whose stored request names none (every model but the embedded one on llama.cpp)."""
UNKNOWN = "unknown"
"""The template of a generation stored without one (a store written before templates were recorded)."""
ANSWERS = "answers"
"""The use of the run's answers to the plan's questions."""
ANSWER_VARIANT = re.compile(r"original|p\d+")
"""Variants of the answers: the original question and its paraphrases."""
USE_LABELS = {"requests": "own requests", "calls": "scoring calls", "records": "records"}
NO_TEMPLATE = "generations stored without a template (by an older reasonscope)"
NO_GENERATION = "no generation of this use"

Templates = dict[str, dict[str, set[str]]]
"""use -> model -> template labels."""
ReadsAnswers = Callable[[str, dict[str, Any] | None], bool | None]
"""``(family, its stored settings) -> whether it scores the run's answers`` (None: cannot tell)."""


def _label(value: Any) -> str:
    return UNKNOWN if value is None or value == "" else str(value)


def _model_names(config: dict[str, Any]) -> dict[str, list[str]]:
    """Model spec -> the names of the run's models with that spec (the records name the spec)."""
    out: dict[str, list[str]] = defaultdict(list)
    for m in config.get("models") or []:
        if isinstance(m, dict) and m.get("spec"):
            out[m["spec"]].append(m.get("name") or m["spec"])
    return out


_TEMPLATE = "CASE WHEN json_valid(g.request) THEN json_extract(g.request, '$.template') END"
_RUNTIME = (f"COALESCE(CASE WHEN json_valid(g.request) THEN json_extract(g.request, '$.runtime') END, "
            f"'{DEFAULT_RUNTIME}')")


def _requests_and_calls(conn: sqlite3.Connection, run_id: str, field: str) -> Templates:
    """``field`` of the run's generations, per use and model.

    ``field`` is an SQL expression over the stored request ``g.request``. Uses: ``answers`` and
    ``<family>.requests`` (the run's linked requests), ``<family>.calls`` (the completions whose keys the
    family's item-level scores record).
    """
    out: Templates = defaultdict(lambda: defaultdict(set))
    for model, variant, value in conn.execute(
            f"SELECT rg.model, rg.variant, {field} FROM run_generations rg JOIN generations g ON g.key = rg.key "
            "WHERE rg.run_id = ? GROUP BY 1, 2, 3", (run_id,)):
        variant = variant or ""
        use = ANSWERS if ANSWER_VARIANT.fullmatch(variant) else f"{variant.split(':', 1)[0]}.requests"
        out[use][model].add(_label(value))
    for family, model, value in conn.execute(
            f"SELECT s.family, s.model, {field} FROM scores s, json_tree(s.details) t "
            "JOIN generations g ON g.key = t.value WHERE s.run_id = ? AND s.item_id != '' AND json_valid(s.details) "
            "AND s.details LIKE '%\"key\"%' AND t.key = 'key' AND t.type = 'text' GROUP BY 1, 2, 3", (run_id,)):
        out[f"{family}.calls"][model].add(_label(value))
    return out


def read_runtimes(conn: sqlite3.Connection, run_id: str) -> Templates:
    """The runtimes that made run ``run_id``'s generations, per use and model.

    The ``runtime`` of the stored request: ``llama-cpp`` for the embedded model on llama.cpp; a request without
    one ran on :data:`DEFAULT_RUNTIME`.
    """
    return {use: dict(models) for use, models in _requests_and_calls(conn, run_id, _RUNTIME).items()}


def read_templates(conn: sqlite3.Connection, run_id: str, config: dict[str, Any]) -> Templates:
    """The templates of run ``run_id``'s generations, per use and model (module docstring)."""
    out = _requests_and_calls(conn, run_id, _TEMPLATE)
    names = _model_names(config)
    for family, spec, value in conn.execute(
            "SELECT g.provider, g.model_id, CASE WHEN json_valid(g.request) THEN COALESCE("
            "json_extract(g.request, '$.template'), json_extract(g.request, '$.prompt')) END FROM generations g "
            "WHERE g.provider IN (SELECT DISTINCT family FROM scores WHERE run_id = ?) AND json_valid(g.request) "
            "AND json_extract(g.request, '$.item') IN (SELECT item_id FROM scores WHERE run_id = ? AND "
            "family = g.provider) GROUP BY 1, 2, 3", (run_id, run_id)):
        for model in names.get(spec) or [spec]:
            out[f"{family}.records"][model].add(_label(value))
    return {use: dict(models) for use, models in out.items()}


def summary(templates: Templates) -> dict[str, list[str]]:
    """use -> the sorted templates of every model of the run (what a run side reports)."""
    return {use: sorted(set().union(*models.values())) for use, models in sorted(templates.items())}


def family_uses(family: str, templates: Iterable[Templates], reads_answers: bool) -> list[str]:
    """The uses that define ``family``'s metrics: its own in either run, and ``answers`` when it scores them."""
    own = sorted({u for t in templates for u in t if u.split(".", 1)[0] == family and u != ANSWERS})
    return ([ANSWERS] if reads_answers else []) + own


def default_reads_answers(family: str, base: Templates, new: Templates) -> bool:
    """Without the family registry: a family scores the answers unless it has own requests or records."""
    return not any(f"{family}.{kind}" in t for t in (base, new) for kind in ("requests", "records"))


def use_label(use: str) -> str:
    """``answers``, ``own requests``, ``scoring calls`` or ``records``."""
    return USE_LABELS.get(use.split(".", 1)[-1], use) if use != ANSWERS else ANSWERS


def _text(labels: set[str] | frozenset[str]) -> str:
    return ", ".join(sorted(labels))


def _value(labels: frozenset[str]) -> str | list[str]:
    return next(iter(labels)) if len(labels) == 1 else sorted(labels)


def runtime_check(base: Templates, new: Templates, families: Iterable[str], model_map: dict[str, str],
                  reads_answers: Callable[[str], bool]) -> list[Mismatch]:
    """The ``definition`` mismatches of the runtimes that made the generations (:func:`read_runtimes`).

    Checked as prompt templates are (:func:`template_check`), per family, use and model pair: the embedded model
    on torch in one run and on llama.cpp in the other ("model runtime torch -> llama-cpp (behavior, answers)")
    is a mismatch whatever the runs' settings say (``runtime: auto`` takes llama.cpp where it is installed).
    Uses without generations on a side are left to the template check's notes.
    """
    mismatches, _ = template_check(base, new, families, model_map, reads_answers, what="model runtime",
                                   consequence="its metrics are not computed by the same model code")
    return mismatches


def template_check(base: Templates, new: Templates, families: Iterable[str], model_map: dict[str, str],
                   reads_answers: Callable[[str], bool], *, what: str = "prompt template",
                   consequence: str = "its metrics are not computed from the same prompt"
                   ) -> tuple[list[Mismatch], list[str]]:
    """The ``definition`` mismatches of the prompt templates, and the notes on what could not be checked.

    Args:
        base: BASE's templates (:func:`read_templates`).
        new: NEW's templates.
        families: The families compared.
        model_map: BASE model -> NEW model.
        reads_answers: Whether a family scores the answers.
        what: What the labels are, in the mismatch and its message (``model runtime``: :func:`runtime_check`).
        consequence: The message's last words: why the difference matters.

    Returns:
        One mismatch per (family, use, BASE's templates, NEW's templates), naming the model pairs when there
        are several; one note per (family, use) whose templates could not be checked, naming the side.
    """
    differ: dict[tuple[str, str, frozenset[str], frozenset[str]], list[str]] = defaultdict(list)
    unchecked: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for family in sorted(families):
        for use in family_uses(family, (base, new), reads_answers(family)):
            for bm, nm in model_map.items():
                bs, ns = base.get(use, {}).get(bm, set()), new.get(use, {}).get(nm, set())
                if not bs and not ns:
                    continue
                kb, kn = frozenset(bs - {UNKNOWN}), frozenset(ns - {UNKNOWN})
                if kb and kn and kb != kn:
                    differ[(family, use, kb, kn)].append(bm if bm == nm else f"{bm}->{nm}")
                for side, labels in (("BASE", bs), ("NEW", ns)):
                    if not labels:
                        unchecked[(family, use)][NO_GENERATION].add(side)
                    elif UNKNOWN in labels:
                        unchecked[(family, use)][NO_TEMPLATE].add(side)
    mismatches = []
    for (family, use, kb, kn), models in differ.items():
        who = f", {', '.join(models)}" if len(model_map) > 1 else ""
        mismatches.append(Mismatch(
            kind="definition", family=family, what=f"{what} ({use_label(use)})", base=_value(kb),
            new=_value(kn), message=f"{what} {_text(kb)} -> {_text(kn)} ({family}, {use_label(use)}{who}): "
                                    f"{consequence}"))
    notes = [f"{what} not checked ({family}, {use_label(use)}): "
             + "; ".join(f"{' and '.join(sorted(sides))}: {reason}" for reason, sides in sorted(why.items()))
             for (family, use), why in sorted(unchecked.items())]
    return mismatches, notes
