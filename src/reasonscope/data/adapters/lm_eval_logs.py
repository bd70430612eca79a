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
  absent and ES is "not applicable"). With ``--tokenizer`` an output whose token count reaches
  ``max_gen_toks`` is marked truncated (finish reason ``length``: lm-eval stopped it there); without
  it, an output that used all ``max_gen_toks`` cannot be told from a finished one and every output
  counts as finished (``stop``), which the notes say. The count re-tokenises the logged text with the
  tokenizer given, so it is exact when that is the model's tokenizer and the text round-trips.
* Several runs in one folder (lm-eval adds ``samples_<task>_<date>.jsonl`` and ``results_<date>.json``
  per run to the same ``--output_path``): per model folder and task, the run with the latest date in
  its file name is read and the others are named in the notes; ``--log-run`` picks a run (a file name
  or the ``<date>``).
* A samples file with fewer documents than its run's results file counts (``n-samples``: the file was
  cut at a line boundary or copied in part) is read, with a warning giving both counts.
* A file of another framework (an inspect-ai ``.eval`` or ``.json`` log) or lm-eval's results file is
  refused with an error naming the right input (``--from inspect``; the run's samples files).
* The record's source is ``<file>:<line>`` and its sample index, so every number traces back to the
  line of the samples file (a folder: the file's path relative to it).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..files import first_line
from ..loaders import BadRow, DatasetError, RowError, convert_rows, read_jsonl
from ..predictions import assemble_records
from .common import (
    KINDS,
    ForeignImport,
    LogRun,
    answer_type_of,
    choose_runs,
    new_record,
    sniff_log,
    split_gold,
)

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


def _n_samples(info: dict[str, Any], task: str) -> int | None:
    """The number of documents the run evaluated for ``task``.

    ``n-samples[task].effective`` of the results file (``original`` less ``--limit``), None when the file does
    not say.
    """
    counts = info.get("n-samples")
    entry = counts.get(task) if isinstance(counts, dict) else None
    value = entry.get("effective") if isinstance(entry, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _read_file(path: Path, label_prefix: str, *, skip_bad_rows: bool, answer_type: str | None,
               budget: int | None, out: ForeignImport, records: list, prompts: dict, token_counter=None) -> None:
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
    docs: set[int] = set()  # the documents read (rows of the first filter)
    at_budget = 0  # outputs whose counted tokens reach max_gen_toks: truncated

    def convert(row: dict) -> list[dict[str, Any]] | None:
        nonlocal set_aside, repeated, at_budget
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
        docs.add(doc_id)
        recs = []
        for k, text in enumerate(outputs):
            # lm-eval logs no token count and no finish reason: counted with --tokenizer, an output that
            # reaches max_gen_toks was cut there (finish reason "length"); uncounted, it counts as finished
            tokens = token_counter(text) if token_counter is not None else None
            cut = tokens is not None and max_tokens is not None and tokens >= max_tokens
            at_budget += cut
            recs.append(new_record(input=question, target=gold, prediction=text, id=str(doc_id), model=model,
                                   sample=k, answer_type=kind, max_tokens=max_tokens, dataset=task,
                                   completion_tokens=tokens, finish_reason="length" if cut else "stop"))
        return recs

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
    if at_budget:
        out.notes.append(f"{path.name}: {at_budget} output(s) reach max_gen_toks (tokens counted with --tokenizer): "
                         "marked truncated (finish reason length)")
    expected = _n_samples(info, task)
    if expected is not None and len(docs) < expected:
        skipped = f"; {len(bad)} bad row(s) skipped" if bad else ""
        out.warnings.append(f"{path.name}: {len(docs)} of the {expected} documents of task {task!r} that the run's "
                            f"results file counts (n-samples) are in the samples file{skipped}: the file is cut short "
                            f"or copied in part, and the metrics cover the {len(docs)} read")


def _runs(path: Path, files: list[Path]) -> list[LogRun]:
    runs = []
    for f in files:
        rel = str(f.relative_to(path)) if path.is_dir() else f.name
        m = SAMPLES_RE.match(f.stem)
        if m is None:  # not named as lm-eval names its files: a run of its own
            runs.append(LogRun(f, (rel,), "", frozenset({f.name, rel})))
            continue
        folder = str(f.parent.relative_to(path)) if path.is_dir() else f.parent.name
        runs.append(LogRun(f, (folder or ".", m["task"]), m["date"],
                           frozenset({f.name, f.stem, rel, m["date"], f"results_{m['date']}.json"})))
    return runs


PICK_HINT = "a samples or results file name, or a run date as in results_<date>.json"


def _foreign(path: Path) -> DatasetError | None:
    """The error for a file that is another known log, not an lm-eval samples file, naming the right input."""
    kind = sniff_log(path)
    if kind in ("inspect-eval", "inspect-json"):
        return DatasetError(f"{path}: {KINDS[kind]}, not an lm-eval samples file: read it with --from inspect")
    if kind is None and _looks_like_results(path):
        kind = "lm-eval-results"
    if kind == "lm-eval-results":
        m = re.match(r"^results_(.+)\.json$", path.name)
        beside = sorted(path.parent.glob(f"samples_*_{m[1]}.jsonl")) if m else []
        where = (f"its run's samples files ({', '.join(f.name for f in beside)}), or the folder {path.parent}" if beside
                 else "the samples files of its run (samples_<task>_<date>.jsonl); none are beside it: run lm_eval "
                      "with --log_samples")
        return DatasetError(f"{path}: {KINDS[kind]}, not its per-sample log; give {where}")
    return None


def _looks_like_results(path: Path) -> bool:
    """A results file the sniffer could not place from its first 64 KiB.

    Named ``results_<date>.json``, or whose first record is an object with ``results`` and no ``doc_id``
    (a results file of many tasks puts ``configs`` and ``n-samples`` far beyond the sniffed head).
    """
    if SAMPLES_RE.match(path.stem):
        return False
    if re.match(r"^results_.+\.json$", path.name):
        return True
    try:
        line = first_line(path)
    except DatasetError:
        return False
    if not line.lstrip().startswith("{") or '"results"' not in line:
        return False
    try:
        first = json.loads(line)
    except ValueError:
        return False
    return isinstance(first, dict) and "results" in first and "doc_id" not in first


def _folder_hint(path: Path) -> str:
    """What a folder without lm-eval samples files holds, if it is another known log."""
    if any(path.rglob("results_*.json")):
        return "; it holds lm-eval results files only: run lm_eval with --log_samples as well"
    for f in [*path.rglob("*.eval"), *path.rglob("*.json")][:50]:
        if sniff_log(f) in ("inspect-eval", "inspect-json"):
            return f"; it holds inspect-ai logs ({f.name}): read them with --from inspect"
    return "; run lm_eval with --log_samples --output_path"


def read_lm_eval(path: str | Path, *, skip_bad_rows: bool = False, answer_type: str | None = None,
                 budget: int | None = None, token_counter=None, log_run: str | None = None) -> ForeignImport:
    """Read an lm-eval samples file (``samples_<task>_<date>.jsonl``) or a folder of them.

    Returns items per task and one generation per document and repeat (see the module docstring for
    the field mapping). A row that cannot be mapped raises :class:`DatasetError` naming the file, the
    line and the field, or is skipped and listed in ``bad_rows`` with ``skip_bad_rows``. A folder with
    several runs of a task (lm-eval run again with the same ``--output_path``) gives the latest run of
    each task and model folder, by the run date in the file names; ``log_run`` (a file name or a run
    date) reads that run instead. ``token_counter`` (``--tokenizer``) counts each output's tokens: an
    output that reaches ``max_gen_toks`` is marked truncated.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.rglob("samples_*.jsonl"))
        if not files:
            raise DatasetError(f"{path}: no lm-eval samples files (samples_<task>_<date>.jsonl) in this folder"
                               + _folder_hint(path))
    elif path.is_file():
        if (err := _foreign(path)) is not None:
            raise err
        files = [path]
    else:
        raise DatasetError(f"{path}: no such file or folder")
    chosen, run_notes = choose_runs(_runs(path, files), log_run, path, PICK_HINT)
    out = ForeignImport(items={}, generations=[], source=str(path))
    records: list[tuple[int | str, dict[str, Any]]] = []
    prompts: dict[tuple[str, int], str] = {}  # (task, doc_id) -> the first prompt seen: the item's input
    for run in chosen:
        f = run.path
        prefix = f"{f.relative_to(path)}:" if path.is_dir() else ""
        _read_file(f, prefix, skip_bad_rows=skip_bad_rows, answer_type=answer_type, budget=budget, out=out,
                   records=records, prompts=prompts, token_counter=token_counter)
    if not records:
        raise DatasetError(f"{path}: no usable lm-eval records"
                           + (f" ({len(out.bad_rows)} bad rows skipped)" if out.bad_rows else ""))
    assembled = assemble_records(records, path, out.bad_rows, token_counter)
    out.items, out.generations = assembled.items, assembled.generations
    tasks = sorted(out.items)
    out.notes[:0] = [f"lm-eval: {len(chosen)} samples file(s), tasks {', '.join(tasks)}, "
                     f"models {', '.join(sorted({g.model for g in out.generations}))}", *run_notes]
    if token_counter is None:
        out.notes.append("lm-eval logs no finish reason and no token count: an output that used all max_gen_toks "
                         "cannot be told from a finished one, and every output counts as finished; --tokenizer "
                         "(the model's tokenizer) counts the tokens and marks those that reach max_gen_toks truncated")
    return out
