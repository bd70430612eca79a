"""Reading the per-sample logs of lm-evaluation-harness (``lm_eval ... --log_samples``).

lm-eval writes, per model, a folder ``OUTPUT_PATH/<model name sanitised>/`` with one
``samples_<task>_<date>.jsonl`` per task and a ``results_<date>.json`` (the model name, the task
configs). Each line of a samples file is one document of the task, logged once per filter of the
task (the same model outputs each time, filtered differently). The reader takes a samples file or
a folder (every ``samples_*.jsonl`` below it, each with the results file of the same run).

Field mapping (one record per document and repeat)
-------------------------------------------------
==========================  =====================================================================
reasonscope                 lm-eval
==========================  =====================================================================
dataset                     the task: ``<task>`` of ``samples_<task>_<date>.jsonl`` (else the file stem)
item id                     ``doc_id``
input                       ``arguments.gen_args_0.arg_0``: the prompt as the model saw it (with
                            its few-shot examples and chat template, if the run had them); in a
                            folder with several models, the prompt of the first file holding the
                            document (each model's own prompt stays at its record's source line)
target                      ``target`` (lm-eval's ``doc_to_target``); when it holds ``####`` (GSM8K
                            style), the gold answer is what follows the last ``####``
prediction, sample k        ``resps[0][k]``: the raw text of the k-th repeat (``repeats: K`` in the
                            task gives K samples per document -> CS, SS)
model                       ``model_name`` of the run's ``results_<date>.json``, else its
                            ``config.model`` (an LM object's class name), else ``lm-eval``
max_tokens (ES budget)      ``arguments.gen_args_0.arg_1.max_gen_toks``, else ``--budget``
answer_type                 ``--answer-type``, else guessed from the gold answer as for ``--map``
temperature                 ``arg_1.temperature`` (0 when ``do_sample`` is false or no temperature
                            is given: lm-eval's default is greedy decoding)
==========================  =====================================================================

Choices
-------
* Only the raw ``resps`` are read; ``filtered_resps`` (lm-eval's regex / majority-vote filters) are
  not: reasonscope extracts the answer from the raw text with its own typed extraction. Of the rows
  logged for each filter, the rows of the first filter in the file are read and the others (the same
  outputs again) are set aside and counted in the notes.
* Tasks scored by log-likelihood (``output_type`` ``multiple_choice``, ``loglikelihood``,
  ``loglikelihood_rolling``) are refused: their log holds a log-probability per choice, not generated
  text, so there is no answer statement and no reasoning to score. A row is recognised by its request
  (``arg_1`` is the continuation text, or absent) and by the task's ``output_type`` in the results file.
* lm-eval logs no token counts and no finish reason: ES needs ``--tokenizer`` (or the counts are
  absent and ES is "not applicable"); every output counts as finished (``stop``).
* The record's source is ``<file>:<line>`` and its sample index, so every number traces back to the
  line of the samples file (a folder: the file's path relative to it).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..loaders import BadRow, DatasetError, RowError, convert_rows, read_jsonl
from ..predictions import assemble_records
from .common import ForeignImport, answer_type_of, new_record, split_gold

SAMPLES_RE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)$")
LOGLIKELIHOOD_TYPES = ("multiple_choice", "loglikelihood", "loglikelihood_rolling")
REFUSED = ("is scored by log-likelihood in lm-eval (output_type {kind}): its log holds a log-probability "
           "per choice, not generated text, so there is no reasoning to score; run a generative variant of "
           "the task (output_type: generate_until)")


def _run_info(samples_file: Path) -> tuple[str, dict[str, Any]]:
    """(task name, the run's results json or {}) for a samples file."""
    m = SAMPLES_RE.match(samples_file.stem)
    if not m:
        return samples_file.stem, {}
    results = samples_file.with_name(f"results_{m['date']}.json")
    try:
        info = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DatasetError(f"{results}: not a readable lm-eval results file ({err})") from None
    return m["task"], info if isinstance(info, dict) else {}


def _model_name(info: dict[str, Any]) -> str:
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    return str(info.get("model_name") or config.get("model") or "lm-eval")


def _request(row: dict) -> tuple[str, dict[str, Any]]:
    """(prompt, generation kwargs) of a generate_until document; RowError for anything else."""
    args = row.get("arguments")
    if args is None:
        raise RowError("arguments", "missing field 'arguments' (the request lm-eval sent to the model)")
    if isinstance(args, dict):  # the written form: {"gen_args_0": {"arg_0": prompt, "arg_1": kwargs}}
        req = args.get("gen_args_0")
        if not isinstance(req, dict):
            raise RowError("arguments", f"expected {{'gen_args_0': {{'arg_0': prompt, 'arg_1': ...}}}}, got keys "
                                        f"{sorted(args)}")
        prompt, kwargs = req.get("arg_0"), req.get("arg_1")
        if isinstance(kwargs, dict) and len(args) != 1:
            raise RowError("arguments", f"expected one generation request per document, got {len(args)}")
    elif isinstance(args, list) and len(args) == 1 and isinstance(args[0], list):  # the in-memory form
        prompt, kwargs = (args[0] + [None, None])[:2]
    else:
        raise RowError("arguments", f"expected {{'gen_args_0': {{'arg_0': prompt, 'arg_1': ...}}}}, got "
                                    f"{type(args).__name__}")
    if not isinstance(kwargs, dict):
        kind = "loglikelihood_rolling" if kwargs is None else "multiple_choice or loglikelihood"
        raise RowError("arguments", "this document " + REFUSED.format(kind=kind))
    if not isinstance(prompt, str) or not prompt.strip():
        raise RowError("arguments.gen_args_0.arg_0", f"expected the prompt text, got {prompt!r:.60}")
    return prompt, kwargs


def _responses(row: dict) -> list[str]:
    resps = row.get("resps")
    if resps is None:
        raise RowError("resps", "missing field 'resps' (the model outputs)")
    if not (isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list) and resps[0]
            and all(isinstance(r, str) for r in resps[0])):
        raise RowError("resps", f"expected [[output text, ...]] (one request, one text per repeat), got "
                                f"{json.dumps(resps, default=str)[:80]}")
    return resps[0]


def _int_field(row: dict, name: str) -> int:
    value = row.get(name)
    if value is None:
        raise RowError(name, f"missing field {name!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RowError(name, f"expected a non-negative integer, got {value!r}")
    return value


def _temperature(kwargs: dict[str, Any]) -> float | None:
    if kwargs.get("do_sample") is False:
        return 0.0
    try:
        return float(kwargs.get("temperature") or 0.0)
    except (TypeError, ValueError):
        return None


def _read_file(path: Path, label_prefix: str, *, skip_bad_rows: bool, answer_type: str | None,
               budget: int | None, out: ForeignImport, records: list, prompts: dict) -> None:
    task, info = _run_info(path)
    model = _model_name(info)
    configs = info.get("configs") if isinstance(info.get("configs"), dict) else {}
    output_type = configs[task].get("output_type") if isinstance(configs.get(task), dict) else None
    if output_type in LOGLIKELIHOOD_TYPES:
        message = f"task {task!r} " + REFUSED.format(kind=output_type)
        if not skip_bad_rows:
            raise DatasetError(f"{path}: {message}")
        out.bad_rows.append(BadRow(label_prefix.rstrip(":") or path.name, "output_type", message))  # type: ignore[arg-type]
        return
    first_filter: list[Any] = []
    set_aside = 0
    temps: set[float] = set()
    repeated = False

    def convert(row: dict) -> list[dict[str, Any]] | None:
        nonlocal set_aside, repeated
        filt = row.get("filter")
        if not first_filter:
            first_filter.append(filt)
        elif filt != first_filter[0]:
            set_aside += 1
            return None
        doc_id = _int_field(row, "doc_id")
        prompt, kwargs = _request(row)
        outputs = _responses(row)
        target = row.get("target")
        if not isinstance(target, str | int | float) or isinstance(target, bool) or not str(target).strip():
            raise RowError("target", f"expected the gold answer (a string), got {target!r:.60}")
        gold = split_gold(str(target))
        if not gold:
            raise RowError("target", f"no gold answer after '####' in {str(target)[-60:]!r}")
        max_tokens = kwargs.get("max_gen_toks", budget)
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens <= 0):
            raise RowError("arguments.gen_args_0.arg_1.max_gen_toks", f"expected a positive integer, got {max_tokens!r}")
        temp = _temperature(kwargs)
        if temp is not None:
            temps.add(temp)
        repeated = repeated or len(outputs) > 1
        kind = answer_type_of(gold, None, answer_type)
        question = prompts.setdefault((task, doc_id), prompt)
        return [new_record(input=question, target=gold, prediction=text, id=str(doc_id), model=model, sample=k,
                           answer_type=kind, max_tokens=max_tokens, dataset=task)
                for k, text in enumerate(outputs)]

    rows, bad = convert_rows(read_jsonl(path), str(path), convert, skip_bad_rows=skip_bad_rows)

    def label(line: int) -> int | str:
        return f"{label_prefix}{line}" if label_prefix else line

    for line, recs in rows:
        records.extend((label(line), rec) for rec in recs or [])
    out.bad_rows.extend(BadRow(label(b.line), b.field, b.message) for b in bad)  # type: ignore[arg-type]
    if set_aside:
        out.notes.append(f"{path.name}: {set_aside} rows of filters other than {first_filter[0]!r} set aside "
                         "(the same outputs, filtered differently)")
    if repeated and temps:
        # the lowest temperature of the model's repeated tasks: a greedy one makes its CS/SS trivial
        out.temperatures[model] = min([*temps, out.temperatures.get(model, math.inf)])


def read_lm_eval(path: str | Path, *, skip_bad_rows: bool = False, answer_type: str | None = None,
                 budget: int | None = None, token_counter=None) -> ForeignImport:
    """Read an lm-eval samples file (``samples_<task>_<date>.jsonl``) or a folder of them.

    Returns items per task and one generation per document and repeat (see the module docstring for
    the field mapping). A row that cannot be mapped raises :class:`DatasetError` naming the file, the
    line and the field, or is skipped and listed in ``bad_rows`` with ``skip_bad_rows``.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.rglob("samples_*.jsonl"))
        if not files:
            raise DatasetError(f"{path}: no lm-eval samples files (samples_<task>_<date>.jsonl) in this folder; "
                               "run lm_eval with --log_samples --output_path")
    elif path.is_file():
        files = [path]
    else:
        raise DatasetError(f"{path}: no such file or folder")
    out = ForeignImport(items={}, generations=[], source=str(path))
    records: list[tuple[int | str, dict[str, Any]]] = []
    prompts: dict[tuple[str, int], str] = {}  # (task, doc_id) -> the first prompt seen: the item's input
    for f in files:
        prefix = f"{f.relative_to(path)}:" if path.is_dir() else ""
        _read_file(f, prefix, skip_bad_rows=skip_bad_rows, answer_type=answer_type, budget=budget, out=out,
                   records=records, prompts=prompts)
    if not records:
        raise DatasetError(f"{path}: no usable lm-eval records"
                           + (f" ({len(out.bad_rows)} bad rows skipped)" if out.bad_rows else ""))
    assembled = assemble_records(records, path, out.bad_rows, token_counter)
    out.items, out.generations = assembled.items, assembled.generations
    tasks = sorted(out.items)
    out.notes.insert(0, f"lm-eval: {len(files)} samples file(s), tasks {', '.join(tasks)}, "
                        f"models {', '.join(sorted({g.model for g in out.generations}))}")
    return out
