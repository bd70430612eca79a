"""The ``reasonscope`` command line (typer + rich). Every family is reached through a plan
(``reasonscope run``), and ``reasonscope score`` scores outputs the user already has.

Exit codes: 0 ok, 1 a model measured too little (skipped, nothing answered, or more failed
generations than ``--max-failed``), 2 invalid plan, data or option, 3 requests pending (run again),
130 interrupted; see :mod:`reasonscope.outcome`. The reason of a non-zero code is the last line.

Commands that write a run directory hold its lock (:mod:`reasonscope.rundir`); when another process
holds it they stop with exit code 75 (:data:`LOCKED_EXIT`, "try again later") and a message naming
that process, or wait with ``--wait-lock SECONDS``. ``report`` and ``cache ls`` take no lock.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .config import PlanError, load_plan, parse_plan, plan_json_schema
from .rundir import RunDirLock, RunDirLocked

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="reasonscope: measure the quality of a language model's reasoning, not only its answers.")
cache_app = typer.Typer(no_args_is_help=True, help="Inspect or clear the request cache of a run directory.")
app.add_typer(cache_app, name="cache")
information_app = typer.Typer(no_args_is_help=True, help="REV and LAREV: how much label information a rationale "
                              "adds over a baseline (trained evaluators).")
app.add_typer(information_app, name="information")
attributes_app = typer.Typer(no_args_is_help=True, help="Rationale attributes: LLM judges, ROSCOE-style metrics, "
                             "SHAP on human preferences, per-attribute Elo / Bradley-Terry.")
app.add_typer(attributes_app, name="attributes")
console = Console(stderr=True)
out = Console()
LOCKED_EXIT = 75  # EX_TEMPFAIL: another process holds the run directory; try again later
_WAIT_LOCK = typer.Option(0.0, "--wait-lock", metavar="SECONDS", help="When another process holds the run "
                          "directory, wait up to SECONDS for it to finish (default 0: stop at once; inf: no limit).")


def _fail(message: str, code: int = 2) -> None:
    console.print(Text("error: ", style="red") + Text(message), soft_wrap=True)
    raise typer.Exit(code)


def _locked(err: RunDirLocked) -> None:
    _fail(str(err), LOCKED_EXIT)


def _status(run: dict) -> str:
    """A run's status, with its process when it is still running."""
    if run["status"] == "running" and run.get("pid"):
        return f"running (pid {run['pid']} on {run.get('host') or '?'})"
    return str(run["status"])


def _print_summary(summary_path: Path) -> None:
    data = json.loads(summary_path.read_text())
    ev = data.get("evidence")
    for model, t in (ev or {}).items():
        llm = t["llm"]
        acc = "n/a" if llm["accuracy"] is None else f"{llm['accuracy']:.2f}"
        failed = f", {llm['failed']} failed" if llm.get("failed") else ""
        table = Table(title=f"evidence: {model} (classifier acc {t['classifier']['test_accuracy']:.2f}, "
                            f"LLM acc {acc}, n={llm['n']}{failed})")
        for col in ("matcher", "group", "support", "contradict", "asymmetry", "A(c)-A(i) p (perm., 2-sided)"):
            table.add_column(col)
        for matcher, tab in t["coverage"].items():
            for group in ("correct", "incorrect"):
                g = tab[group]
                fmt = lambda e: "n/a" if e["value"] is None else f"{e['value']:.3f}"  # noqa: E731
                p = tab["asymmetry_difference"]["p_value"]
                table.add_row(matcher, f"{group} ({g['n']})", fmt(g["support"]), fmt(g["contradict"]),
                              "n/a" if g["asymmetry"] is None else f"{g['asymmetry']:.3f}",
                              (f"{p:.3g}" if p is not None else "n/a") if group == "correct" else "")
        out.print(table)
        for w in t.get("warnings", []):
            console.print("[yellow]note:[/yellow] " + escape(w))
    _print_attributes(data.get("attributes"))
    _print_attack(data.get("attack"))
    _print_information(data.get("information"))
    beh = data.get("behavior")
    if not beh:
        return
    policy = (beh.get("settings") or {}).get("failed_generations", "wrong")
    reading = beh.get("settings", {}).get("efficiency", "corpus")
    table = Table(title=f"behavior (mean [95% CI], n items; failed generations: {policy}; ES = ES_{reading}: "
                        f"{'H(CQ, mean length score)' if reading == 'corpus' else 'mean of per-item H(CQ_i, L_i)'})")
    table.add_column("model")
    for m in ("CQ", "CS", "RS", "LS", "ES", "SS"):
        table.add_column(m)
    not_applicable = []
    for model, mets in beh["metrics"].items():
        cells = []
        for m in ("CQ", "CS", "RS", "LS", "ES", "SS"):
            e = mets[m]
            cells.append(_fmt_estimate(e) + _fmt_counts(e))
            if e["value"] is None:
                not_applicable.append(f"{model} {m}: {e.get('reason') or 'no item could be scored'}")
        table.add_row(model, *cells)
    out.print(table)
    for line in not_applicable:
        console.print("[dim]n/a:[/dim] " + escape(line))
    for w in beh.get("warnings", []):
        console.print("[yellow]note:[/yellow] " + escape(w))


def _fmt_counts(e: dict) -> str:
    """`` n=12`` and, when some were failed generations, ``, 2 failed``."""
    failed = e.get("failed") or 0
    if e["value"] is None:
        return f" ({failed} failed)" if failed else ""
    return f" n={e['n']}" + (f", {failed} failed" if failed else "")


def _fmt_estimate(e: dict) -> str:
    if e["value"] is None:
        return "n/a"
    return f"{e['value']:.3f}" if e["low"] is None else f"{e['value']:.3f} [{e['low']:.2f}, {e['high']:.2f}]"


def _print_attributes(t: dict | None) -> None:
    if not t:
        return
    if t.get("scores"):
        models = list(t["scores"])
        table = Table(title=f"attributes (mean [95% CI]; judges: {', '.join(t['judges']) or 'none'})")
        table.add_column("attribute")
        for m in models:
            table.add_column(m)
        for a in next(iter(t["scores"].values())):
            table.add_row(a, *(_fmt_estimate(t["scores"][m][a]) for m in models))
        out.print(table)
    if t.get("ratings"):
        table = Table(title=f"attribute ratings (Bradley-Terry MLE [95% bootstrap CI], rank [95% bounds]; "
                            f"ties: |difference| <= {t['margin']} + 1e-9)")
        for col in ("attribute", "model", "rating", "rank", "elo", "battles"):
            table.add_column(col)
        for a, r in t["ratings"].items():
            _rating_rows(table, a, r)
        out.print(table)
    pref = t.get("preferences") or {}
    _print_preference_ratings(pref.get("ratings"))
    exp = pref.get("explain")
    if exp:
        acc = "n/a" if exp["cv_accuracy"] is None else f"{exp['cv_accuracy']:.3f}"
        auc = "n/a" if exp["cv_auc"] is None else f"{exp['cv_auc']:.3f}"
        table = Table(title=f"what explains human preferences (LightGBM, {exp['folds']}-fold accuracy {acc}, AUC {auc}, "
                            f"n={exp['n']})")
        for col in ("attribute", "mean |SHAP|", "direction"):
            table.add_column(col)
        for r in exp["importance"]:
            table.add_row(r["attribute"], f"{r['mean_abs_shap']:.4f}", r["direction"])
        out.print(table)
    for j, p in pref.get("pairwise", {}).items():
        agree = "n/a" if p["agreement_with_human"] is None else f"{p['agreement_with_human']:.3f}"
        out.print(f"pairwise judge {escape(j)}: {p['consistent']} consistent, {p['inconsistent']} inconsistent across "
                  f"orders, {p['unparsed']} unparsed; agreement with humans {agree} (n={p['compared']})")
    for w in t.get("warnings", []):
        console.print("[yellow]attributes:[/yellow] " + escape(w))


def _rating_rows(table: Table, label: str, r: dict) -> None:
    for m, bt in sorted(r["bradley_terry"].items(), key=lambda kv: kv[1]["rank"]):
        ci = f" [{bt['low']:.0f}, {bt['high']:.0f}]" if bt["low"] is not None else ""
        bounds = f" ({bt['rank_low']}-{bt['rank_high']})" if bt["rank_low"] is not None else ""
        table.add_row(label, m, f"{bt['rating']:.0f}{ci}", f"{bt['rank']}{bounds}", f"{r['elo'][m]:.1f}",
                      str(r["battles"]))


def _print_preference_ratings(p: dict | None) -> None:
    if not p or not p.get("human"):
        return
    table = Table(title="preference battles decided by each attribute vs by the human label (Bradley-Terry MLE; "
                        "rank correlation of the ratings over models)")
    for col in ("decided by", "battles", "ties", "Spearman vs human", "Kendall vs human", "top model"):
        table.add_column(col)
    human = p["human"]
    top = lambda r: min(r["bradley_terry"], key=lambda m: r["bradley_terry"][m]["rank"])  # noqa: E731
    table.add_row("human label", str(human["battles"]), str(human["ties"]), "", "", top(human))
    for a, r in p["attributes"].items():
        ag = r["agreement_with_human"]
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        table.add_row(a, str(r["battles"]), str(r["ties"]), fmt(ag["spearman"]), fmt(ag["kendall"]), top(r))
    out.print(table)


def _print_attack(t: dict | None) -> None:
    if not t:
        return
    table = Table(title=f"attack (MATCHA; reasoning check: {t['reasoning_check']}; rates over decided attacks = "
                  "attacked - clean wrong - not judged - invalid [95% CI]; higher success = more fragile reasoning)")
    for col in ("model", "method", "attacked", "clean wrong", "not judged", "invalid", "decided", "success", "wrong",
                "unattackable", "s/item"):
        table.add_column(col)
    for model, m in t["models"].items():
        for method, r in m["rates"].items():
            secs = m["seconds_per_item"].get(method)
            c = r["counts"]
            table.add_row(model, method, f"{r['attacked']} of {m['answered_correctly']} correct ({m['items']} items)",
                          str(c["clean_wrong"]), str(c["not_judged"]), str(c["invalid"]), str(r["n"]),
                          *(_fmt_estimate(r[o]) for o in ("success", "wrong", "unattackable")),
                          "n/a" if secs is None else f"{secs:.1f}")
    out.print(table)
    for model, m in t["models"].items():
        for method, ins in m.get("insertion", {}).items():
            if ins["attacks"]:
                out.print(f"{escape(model)} {method}: random insertion drawn again for {ins['redrawn']} of "
                          f"{ins['attacks']} items ({ins['rejected_meaning']} draws failed the meaning filter, "
                          f"{ins['rejected_retokenisation']} re-tokenisation); no valid draw for {ins['no_valid_draw']}")
    for model, tr in t.get("transfer", {}).items():
        for method, r in tr.get("rates", {}).items():
            out.print(f"transfer to {escape(model)} ({method}, decided {r['n']} of {r['attacked']}): success "
                      f"{_fmt_estimate(r['success'])}, wrong {_fmt_estimate(r['wrong'])} (higher success = more "
                      "fragile reasoning)")
    for w in t.get("warnings", []):
        console.print("[yellow]attack:[/yellow] " + escape(w))


def _fmt_score(e: dict) -> str:
    if e["value"] is None:
        return "n/a"
    return f"{e['value']:+.4f}" if e["low"] is None else f"{e['value']:+.4f} [{e['low']:+.4f}, {e['high']:+.4f}]"


def _print_information(t: dict | None) -> None:
    if not t:
        return
    reduction = "sum" if t["reduction"] == "sum" else "per-token mean"
    table = Table(title=f"information: log p(y | r, b) - log p(y | b), {reduction} over y's tokens "
                        f"(mean [95% CI], n={t['n_test']} test items)")
    table.add_column("variant")
    for m in t["methods"]:
        table.add_column(m.upper())
    variants = list(next(iter(t["absolute"].values()), {}))
    for v in variants:
        table.add_row(v, *(_fmt_score(t["absolute"][m][v]) for m in t["methods"]))
    seps = list(next(iter(t["separation"].values()), {}))
    for pair in seps:
        table.add_row(pair.replace("-", " - ") if pair != "SUM" else "SUM of separations",
                      *(_fmt_score(t["separation"][m][pair]) for m in t["methods"]))
    if variants:
        out.print(table)
    b = t.get("baseline_only") or {}
    if b.get("accuracy") is not None:
        out.print(f"baseline only: from b alone, Phi_base ranks the true label first for {b['accuracy']:.1%} of "
                  f"{b['n']} held-out {b['split']} items (mean p(y | b) {b['mean_p_label']:.3f})")
    if t.get("penalties"):
        p = t["penalties"]
        out.print(f"LAREV penalty weights: lambda_IRM {p['lambda_irm']}, lambda_probe {p['lambda_probe']} ({p['source']})")
    rules = t.get("baseline_rules") or {}
    if rules:
        out.print("baselines built by: " + ", ".join(f"{k} {v}" for k, v in sorted(rules.items())))
    tr = t.get("truncation") or {}
    if tr.get("inputs"):
        out.print(f"inputs over {tr['max_input_tokens']} tokens (rationale shortened, b kept): "
                  f"{tr['rationale_truncated']} of {tr['inputs']}")
    for w in t.get("warnings", []):
        style = "bold red" if w.startswith("the baseline alone gives the label away") else "yellow"
        console.print(f"[{style}]information:[/{style}] " + escape(w))


def _run_plan(plan, base_dir: Path | None, retry_failed: bool, executor: str, max_failed: str | None = None,
              wait_lock: float = 0.0) -> None:
    """Run a plan, print its tables, and exit with the run's outcome code (reason on the last line)."""
    from .data.loaders import DatasetError
    from .outcome import INTERRUPTED, FailedLimit
    from .runner import Runner

    if executor not in ("local", "ray"):
        _fail(f"unknown executor {executor!r}; expected local or ray")
        return
    try:
        limit = FailedLimit.parse(max_failed) if max_failed is not None else None
    except ValueError as err:
        _fail(str(err))
        return
    try:
        summary = Runner(plan, console=console, retry_failed=retry_failed, base_dir=base_dir,
                         executor=executor, max_failed=limit, wait_lock=wait_lock).run()
    except RunDirLocked as err:
        _locked(err)
        return
    except (DatasetError, PlanError, ValueError) as err:
        _fail(str(err))
        return
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: completed generations are stored; run the same command again "
                      "to finish without repeating them")
        raise typer.Exit(INTERRUPTED) from None
    console.print(f"[green]done[/green] run {summary.run_id}: {summary.calls_made} model calls, "
                  f"{summary.cached} from the store, {summary.failed} failed, {summary.pending} pending, "
                  f"{summary.wall_s:.1f}s")
    _print_summary(summary.run_dir / "summary.json")
    console.print(f"outputs in {summary.run_dir}/ (report.html, summary.json, samples.jsonl, results.xlsx)")
    outcome = summary.outcome
    if outcome is not None and outcome.code:
        _fail(outcome.message, outcome.code)


@app.command()
def run(plan_path: Path = typer.Argument(..., help="YAML plan"),
        retry_failed: bool = typer.Option(False, help="Send again requests stored as failed."),
        skip_bad_rows: bool = typer.Option(False, help="Skip malformed dataset rows (counted and listed)."),
        executor: str = typer.Option("local", help="Executor for per-item scoring work: local, or ray "
                                     "(pip install 'reasonscope[ray]'; RAY_ADDRESS for a cluster)."),
        max_failed: str | None = typer.Option(None, help="Exit 1 when a model has more failed generations than "
                                              "this: a share of its requests that ended (5%) or a count (3)."),
        wait_lock: float = _WAIT_LOCK) -> None:
    """Run a YAML plan: generate (cached, resumable), score, and write the report.

    Exit codes: 0 ok; 1 a model was skipped, answered nothing, or failed more than --max-failed;
    2 invalid plan, data or option; 3 requests pending after rate limits or server errors (run the
    same command again); 75 the run directory is in use by another process; 130 interrupted. The reason of a non-zero code is the last line.
    """
    try:
        plan = load_plan(plan_path)
    except PlanError as err:
        _fail(str(err))
        return
    if skip_bad_rows:
        for ds in plan.datasets:
            ds.skip_bad_rows = True
    _run_plan(plan, plan_path.parent, retry_failed, executor, max_failed, wait_lock)


@app.command()
def demo(output_dir: str = typer.Option("runs", help="Parent folder of the run directory (runs/demo)."),
         size: int = typer.Option(6, min=1, help="Synthetic items per kind (3 kinds)."),
         max_tokens: int = typer.Option(160, min=16, help="Max new tokens per generation (also the ES budget)."),
         wait_lock: float = _WAIT_LOCK) -> None:
    """Run the built-in plan on the synthetic set with the embedded SmolLM2 (CPU, a few minutes)."""
    from .demo import demo_plan

    try:
        plan = parse_plan(demo_plan(output_dir, size, max_tokens), "<demo plan>")
    except PlanError as err:
        _fail(str(err))
        return
    from .demo import print_notes

    try:
        _run_plan(plan, None, False, "local", wait_lock=wait_lock)
    finally:
        print_notes(console, Path(output_dir) / "demo")


@app.command()
def score(input_path: Path | None = typer.Option(None, "--input", "-i", help="JSONL / JSON / CSV of existing outputs."),
          from_: str | None = typer.Option(None, "--from", help="Read another framework's logs at PATH instead: "
                                           "lm-eval (samples files of --log_samples) or inspect (eval logs)."),
          log_path: Path | None = typer.Argument(None, metavar="[PATH]", help="The log file or folder for --from."),
          map_: str | None = typer.Option(None, "--map", help="field=column,... (input, target, prediction, id, "
                                          "model, sample, variant, rationale, answer_type, choices, ...)."),
          plan_path: Path | None = typer.Option(None, "--plan", help="A score plan (YAML) instead of the options."),
          output_dir: str = typer.Option("runs", help="Parent folder of the run directory."),
          name: str = typer.Option("scored", help="Run name (the run directory is OUTPUT_DIR/NAME)."),
          skip_bad_rows: bool = typer.Option(False, help="Skip malformed rows (counted and listed) instead of failing."),
          answer_type: str | None = typer.Option(None, help="Answer type for rows without one."),
          budget: int | None = typer.Option(None, help="Token budget for ES when rows carry no max_tokens."),
          tokenizer: str | None = typer.Option(None, help="HF id or path to count prediction tokens for ES."),
          nli: str = typer.Option("none", help="NLI backend for LS: none, hf:<id-or-path>, llm:<model spec>."),
          similarity: str = typer.Option("embedding", help="SS method: embedding or bertscore (embedded MiniLM)."),
          evidence_train: str | None = typer.Option(None, help="A labelled training split (file, or 'topics'): "
                                                     "also score the records' rationales with RACE."),
          evidence_format: str = typer.Option("csv", help="Format of --evidence-train (agnews, imdb, csv, ...)."),
          wait_lock: float = _WAIT_LOCK) -> None:
    """Score outputs you already have (no generation): the same metrics and report as a generated run."""
    from .config import ScorePlan
    from .data.loaders import DatasetError
    from .data.predictions import parse_mapping
    from .importer import score_file

    try:
        if plan_path is not None:
            plan = load_plan(plan_path, ScorePlan)
        else:
            if from_ is not None:
                if input_path is not None and log_path is not None:
                    _fail("give the log as PATH or as --input, not both")
                    return
                input_path = log_path or input_path
            elif log_path is not None:
                _fail(f"PATH {log_path} needs --from lm-eval|inspect (a predictions file is given with --input)")
                return
            if input_path is None:
                _fail("give --input FILE, --from lm-eval|inspect PATH, or --plan PLAN.yaml")
                return
            backend, _, model = nli.partition(":")
            nli_cfg = {"backend": backend} | ({"model": model} if model else {})
            plan = parse_plan({
                "experiment": {"name": name, "output_dir": output_dir},
                "input": {"path": str(input_path), "format": from_ or "predictions",
                          "mapping": parse_mapping(map_), "skip_bad_rows": skip_bad_rows,
                          "answer_type": answer_type, "budget": budget, "tokenizer": tokenizer},
                "families": {"behavior": {"nli": nli_cfg, "similarity": {"method": similarity}},
                             **({"evidence": {"train": (
                                 {"name": "topics-train", "format": "topics", "size": 200, "split": "train"}
                                 if evidence_train == "topics" else
                                 {"name": "evidence-train", "format": evidence_format, "path": evidence_train})}}
                                if evidence_train else {})},
            }, "<command line>", model=ScorePlan)
        summary = score_file(plan, console=console, wait_lock=wait_lock)
    except RunDirLocked as err:
        _locked(err)
        return
    except (PlanError, DatasetError, ValueError) as err:
        _fail(str(err))
        return
    console.print(f"[green]scored[/green] {summary.records} records of {summary.items} items"
                  + (f", {len(summary.bad_rows)} bad rows skipped" if summary.bad_rows else "")
                  + f" -> {summary.run_dir}/")
    _print_summary(summary.run_dir / "summary.json")


@app.command()
def evidence(train: str = typer.Option(..., help="Training split: a file (CSV/JSONL/TSV) or 'topics' (built in)."),
             test: str = typer.Option(..., help="Test split: a file or 'topics'."),
             format_: str = typer.Option("csv", "--format", help="Dataset format of both files: agnews, imdb, "
                                         "goemotions, esnli, csv, jsonl, json, topics."),
             map_: str | None = typer.Option(None, "--map", help="field=column,... for generic formats "
                                             "(input=text,target=label)."),
             predictions: Path | None = typer.Option(None, help="JSONL of existing predictions "
                                                     "(id, label, rationale[, model]) or (id, output)."),
             model: list[str] = typer.Option([], "--model", help="Model spec(s) that label and explain the test "
                                             "items (e.g. smollm2, openai/gpt-4o-mini)."),
             k: int = typer.Option(5, min=1, help="Top-k classifier features per instance."),
             delta: float = typer.Option(0.2, min=0, max=1, help="Threshold of the edit matcher (normalised "
                                         "Levenshtein distance)."),
             delta_chars: int = typer.Option(1, min=0, help="Threshold of the edit_chars matcher (Levenshtein "
                                             "distance in characters)."),
             stop_words: str = typer.Option("function_words", help="Stop words removed before the classifier forms "
                                            "n-grams: function_words, english (scikit-learn's list) or none."),
             text_field: list[str] = typer.Option([], "--text-field", help="A field holding the items' own text "
                                                  "(repeat for several; each is vectorised on its own). Default: the "
                                                  "fields the format declares (esnli: premise, hypothesis), else input."),
             target: str = typer.Option("predicted", help="Class whose evidence is evaluated: predicted or gold."),
             size: int = typer.Option(200, help="Items per split when a split is 'topics'."),
             limit: int | None = typer.Option(None, help="Use at most this many test items."),
             output_dir: str = typer.Option("runs", help="Parent folder of the run directory."),
             name: str = typer.Option("evidence", help="Run name."),
             seed: int = typer.Option(0), wait_lock: float = _WAIT_LOCK) -> None:
    """RACE: do rationales cite the evidence a TF-IDF logistic regression relies on?"""
    from .data.predictions import parse_mapping

    if bool(predictions) == bool(model):
        _fail("give exactly one of --predictions FILE or --model SPEC")
        return

    def split(value: str, split_name: str) -> dict:
        if value == "topics":
            return {"name": f"topics-{split_name}", "format": "topics", "size": size, "split": split_name,
                    **({"limit": limit} if limit and split_name == "test" else {})}
        out = {"name": Path(value).stem + f"-{split_name}", "format": format_, "path": value,
               "mapping": parse_mapping(map_) if map_ else {}}
        if limit and split_name == "test":
            out["limit"] = limit
        return out

    try:
        plan = parse_plan({
            "experiment": {"name": name, "seed": seed, "output_dir": output_dir},
            "models": [{"spec": m} for m in model],
            "families": {"behavior": None, "evidence": {
                "train": split(train, "train"), "test": split(test, "test"),
                "predictions": str(predictions) if predictions else None, "k": k, "delta": delta,
                "delta_chars": delta_chars, "stop_words": stop_words, "text_fields": text_field or None,
                "target": target}},
        }, "<command line>")
    except (PlanError, ValueError) as err:
        _fail(str(err))
        return
    _run_plan(plan, None, False, "local", wait_lock=wait_lock)


def _attributes_settings(judge: list[str], scale: str, attribute: list[str], embedding: str | None,
                         nli: str, perplexity: str | None, margin: float, resamples: int,
                         show_reference: bool = False) -> dict:
    backend, _, nli_model = nli.partition(":")
    return {"judges": [{"spec": j} for j in judge], "scale": scale, "attributes": attribute or None,
            "automatic": {"embedding": embedding or None, "nli": {"backend": backend} | (
                {"model": nli_model} if nli_model else {}), "perplexity": perplexity},
            "margin": margin, "rating_resamples": resamples, "show_reference": show_reference}


_JUDGE = typer.Option([], "--judge", help="Judge model spec(s), e.g. openai/gpt-4o-mini, smollm2, mock/judge.")
_SCALE = typer.Option("0-1", help="Scale the judges answer on: 0-1 or 0-10 (normalised to 0-1).")
_ATTRIBUTE = typer.Option([], "--attribute", help="Judge only these attributes (default: all twelve).")
_EMBED = typer.Option("embedded-minilm", help="Embedding model of the ROSCOE metrics ('' = off).")
_NLI = typer.Option("none", help="NLI backend of self/source consistency: none, hf:<id-or-path>, llm:<model spec>.")
_PPL = typer.Option(None, help="Causal LM for perplexity (smollm2, hf/<path>); off by default.")
_MARGIN = typer.Option(0.0, min=0, max=1, help="Attribute battles tie when the scores differ by at most this "
                       "(+1e-9); 0 = only equal scores tie, as in the publication.")
_RESAMPLES = typer.Option(100, min=10, help="Bootstrap rounds of Bradley-Terry.")


@attributes_app.command("judge")
def attributes_judge(input_path: Path | None = typer.Option(None, "--input", "-i", help="JSONL / JSON / CSV of "
                                                             "outputs to judge (as for `reasonscope score`)."),
                     run_dir: Path | None = typer.Option(None, "--run", help="Judge the generations of a run "
                                                         "directory instead (primary answers)."),
                     map_: str | None = typer.Option(None, "--map", help="field=column,... as for `score`."),
                     judge: list[str] = _JUDGE, scale: str = _SCALE, attribute: list[str] = _ATTRIBUTE,
                     embedding: str = _EMBED, nli: str = _NLI, perplexity: str | None = _PPL,
                     margin: float = _MARGIN, resamples: int = _RESAMPLES,
                     show_reference: bool = typer.Option(False, "--show-reference", help="Show the gold answer "
                                                         "to the judges (off by default, as in the publication)."),
                     output_dir: str = typer.Option("runs", help="Parent folder of the run directory (--input)."),
                     name: str = typer.Option("attributes", help="Run name (--input)."),
                     seed: int = typer.Option(0), wait_lock: float = _WAIT_LOCK) -> None:
    """Score rationales on the twelve attributes with LLM judges and ROSCOE-style metrics, then rate models."""
    from .config import AttributesConfig, ScorePlan, StatsConfig
    from .data.loaders import DatasetError
    from .data.predictions import parse_mapping

    if (input_path is None) == (run_dir is None):
        _fail("give exactly one of --input FILE or --run RUN_DIR")
        return
    settings = _attributes_settings(judge, scale, attribute, embedding, nli, perplexity, margin, resamples,
                                    show_reference)
    try:
        if run_dir is not None:
            from .attributes.family import score_attributes
            from .report.build import write_report
            from .results import load_run_data
            from .store import Store

            cfg = parse_plan(settings, "<command line>", model=AttributesConfig)
            store = Store.open_existing(run_dir)
            with RunDirLock(run_dir, wait=wait_lock):
                rid = store.run()["run_id"]
                score_attributes(store, rid, cfg, StatsConfig(), load_run_data(store, rid), seed=seed,
                                 console=console)
                write_report(store, rid, run_dir)
            store.close()
            _print_summary(run_dir / "summary.json")
            return
        from .importer import score_file

        plan = parse_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "input": {"path": str(input_path), "mapping": parse_mapping(map_)},
                           "families": {"attributes": settings}}, "<command line>", model=ScorePlan)
        summary = score_file(plan, console=console, wait_lock=wait_lock)
    except RunDirLocked as err:
        _locked(err)
        return
    except (PlanError, DatasetError, ValueError, FileNotFoundError, LookupError) as err:
        _fail(str(err))
        return
    console.print(f"[green]judged[/green] {summary.records} records -> {summary.run_dir}/")
    _print_summary(summary.run_dir / "summary.json")


@attributes_app.command("explain")
def attributes_explain(preferences: Path = typer.Option(..., help="Human preferences: MT-Bench human judgments, "
                                                        "Chatbot Arena battles, or JSONL question/response_a/"
                                                        "response_b/model_a/model_b/winner."),
                       judge: list[str] = _JUDGE, scale: str = _SCALE, attribute: list[str] = _ATTRIBUTE,
                       pairwise: bool = typer.Option(True, help="Also judge each pair in both orders."),
                       folds: int = typer.Option(5, min=2, help="Cross-validation folds."),
                       margin: float = _MARGIN, resamples: int = _RESAMPLES,
                       output_dir: str = typer.Option("runs", help="Parent folder of the run directory."),
                       name: str = typer.Option("preferences", help="Run name."),
                       seed: int = typer.Option(0), wait_lock: float = _WAIT_LOCK) -> None:
    """Which attributes explain human preferences? Judge both responses, LightGBM + SHAP on the differences."""
    settings = _attributes_settings(judge, scale, attribute, "", "none", None, margin, resamples)
    settings.update(automatic=None, preferences=str(preferences), pairwise=pairwise, folds=folds)
    try:
        plan = parse_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "families": {"attributes": settings}}, "<command line>")
    except (PlanError, ValueError) as err:
        _fail(str(err))
        return
    _run_plan(plan, None, False, "local", wait_lock=wait_lock)


@attributes_app.command("elo")
def attributes_elo(run_dir: Path = typer.Argument(..., help="A run directory with attribute scores."),
                   margin: float = _MARGIN, resamples: int = _RESAMPLES,
                   seed: int = typer.Option(0), wait_lock: float = _WAIT_LOCK) -> None:
    """Recompute per-attribute online Elo and Bradley-Terry (bootstrap CIs, ranks) from stored scores, for the
    run's models and for the recorded battles of its preference set."""
    from .attributes.family import rebuild_ratings
    from .report.build import write_report
    from .store import Store

    try:
        store = Store.open_existing(run_dir)
        with RunDirLock(run_dir, wait=wait_lock):
            rid = store.run()["run_id"]
            with console.status("attributes: rating"):
                rebuild_ratings(store, rid, margin=margin, n_resamples=resamples, seed=seed)
            write_report(store, rid, run_dir)
    except RunDirLocked as err:
        _locked(err)
        return
    except (FileNotFoundError, LookupError, ValueError) as err:
        _fail(str(err))
        return
    store.close()
    _print_summary(run_dir / "summary.json")


def _split(value: str, split_name: str, format_: str, size: int, seed: int) -> dict:
    if value == "synthetic":
        return {"name": f"synthetic-{split_name}", "format": "synthetic", "size": size,
                "seed": seed + (0 if split_name == "train" else 1)}
    return {"name": Path(value).stem + f"-{split_name}", "format": format_, "path": value}


@information_app.command("train")
def information_train(train: str = typer.Option(..., help="Items with gold rationales: a file (esnli, ecqa, jsonl "
                                                "with rationale, ...) or 'synthetic'."),
                      test: str | None = typer.Option(None, help="Also score these items (file or 'synthetic')."),
                      format_: str = typer.Option("jsonl", "--format", help="Format of the files."),
                      evaluator: str = typer.Option("t5-small", help="t5-small, facebook/bart-base, any HF seq2seq or "
                                                    "causal id/path, or embedded-minilm-ed (offline)."),
                      method: list[str] = typer.Option(["rev", "larev"], "--method", help="rev and/or larev."),
                      baseline: str = typer.Option("rule", help="Baseline constructor: rule, llm or column."),
                      epochs: int = typer.Option(8, help="Epochs of Phi_base and Phi."),
                      probe_epochs: int = typer.Option(8), larev_epochs: int = typer.Option(2),
                      lr: float = typer.Option(3e-5), size: int = typer.Option(50, help="Synthetic items per kind."),
                      reduction: str = typer.Option("sum", help="log p(y | .) over y's tokens: sum (the documents') "
                                                    "or mean."),
                      lambda_irm: float | None = typer.Option(None, help="IRM weight (default: by dataset format)."),
                      lambda_probe: float | None = typer.Option(None, help="Probe weight (default: by dataset "
                                                                "format)."),
                      output_dir: str = typer.Option("runs"), name: str = typer.Option("information"),
                      seed: int = typer.Option(0), wait_lock: float = _WAIT_LOCK) -> None:
    """Train Phi_base, Phi (and for LAREV the probe and Phi_LA); with --test, score the rationale variants."""
    try:
        plan = parse_plan({"experiment": {"name": name, "seed": seed, "output_dir": output_dir},
                           "families": {"information": {
                               "train": _split(train, "train", format_, size, seed),
                               "test": _split(test, "test", format_, max(1, size // 5), seed) if test else None,
                               "evaluator": evaluator, "methods": method, "baseline": baseline, "epochs": epochs,
                               "probe_epochs": probe_epochs, "larev_epochs": larev_epochs, "lr": lr,
                               "reduction": reduction, "lambda_irm": lambda_irm, "lambda_probe": lambda_probe}}},
                          "<command line>")
    except (PlanError, ValueError) as err:
        _fail(str(err))
        return
    _run_plan(plan, None, False, "local", wait_lock=wait_lock)


@information_app.command("score")
def information_score(run_dir: Path = typer.Argument(..., help="A run directory with trained evaluators."),
                      test: str = typer.Option(..., help="Items to score: a file or 'synthetic'."),
                      format_: str = typer.Option("jsonl", "--format"),
                      size: int = typer.Option(10, help="Synthetic items per kind."),
                      generator: list[str] = typer.Option([], "--generator", help="Model spec(s) whose rationales "
                                                          "are scored too."),
                      wait_lock: float = _WAIT_LOCK) -> None:
    """Score rationale variants (and generated rationales) with the evaluators trained in RUN_DIR."""
    from .config import DatasetConfig, ModelConfig

    config = run_dir / "config.yaml"
    if not config.is_file():
        _fail(f"{run_dir}: no config.yaml; train first with `reasonscope information train`")
        return
    try:
        plan = load_plan(config)
        info = plan.families.information
        if info is None:
            _fail(f"{config}: the run has no information family")
            return
        seed = plan.experiment.seed
        info = info.model_copy(update={
            "test": parse_plan(_split(test, "test", format_, size, seed), "<--test>", model=DatasetConfig),
            "generators": [parse_plan({"spec": g}, "<--generator>", model=ModelConfig) for g in generator]})
        plan = plan.model_copy(update={"families": plan.families.model_copy(update={"information": info})})
    except (PlanError, ValueError) as err:
        _fail(str(err))
        return
    _run_plan(plan, None, False, "local", wait_lock=wait_lock)


@app.command()
def attack(model: list[str] = typer.Option(["smollm2"], "--model", help="White-box target(s): hf/<id-or-path> or "
                                           "smollm2."),
           dataset: str = typer.Option("synthetic", help="A file (jsonl, gsm8k, strategyqa, ...) or 'synthetic'."),
           format_: str = typer.Option("jsonl", "--format", help="Format of --dataset when it is a file."),
           method: list[str] = typer.Option(["token", "embedding", "random"], "--method",
                                            help="token, embedding and/or random (repeat the option)."),
           limit: int | None = typer.Option(None, help="Attack at most this many items."),
           size: int = typer.Option(2, help="Synthetic items per kind (arithmetic only is attacked)."),
           ratio: float = typer.Option(0.2, help="Inserted tokens per question token (at least 1)."),
           steps: int = typer.Option(5, help="Gradient-guided replacement rounds."),
           epsilon_p: float = typer.Option(0.005, help="Embedding ball: eps = p * max token-embedding L-inf norm."),
           cot_tokens: int = typer.Option(96, help="Max tokens of each regenerated chain of thought."),
           judge: str | None = typer.Option(None, help="Judge of the clean, perturbed and transfer reasoning (any "
                                            "provider spec); without one only false equations are detected and a "
                                            "kept answer without one is 'not judged'."),
           transfer: list[str] = typer.Option([], "--transfer", help="Model spec(s) that receive the successful "
                                              "perturbed questions."),
           executor: str = typer.Option("local", help="local, or ray (one actor per GPU)."),
           output_dir: str = typer.Option("runs", help="Parent folder of the run directory."),
           name: str = typer.Option("attack", help="Run name."),
           seed: int = typer.Option(0), wait_lock: float = _WAIT_LOCK) -> None:
    """MATCHA: perturbations that keep the answer but break the chain of thought (white-box models)."""
    ds = ({"name": "synthetic", "format": "synthetic", "size": size} if dataset == "synthetic" else
          {"name": Path(dataset).stem, "format": format_, "path": dataset})
    try:
        plan = parse_plan({
            "experiment": {"name": name, "seed": seed, "output_dir": output_dir},
            "models": [{"spec": m} for m in model], "datasets": [ds],
            "families": {"attack": {"methods": method, "limit": limit, "ratio": ratio, "steps": steps,
                                    "epsilon_p": epsilon_p, "cot_tokens": cot_tokens,
                                    "judge": {"spec": judge} if judge else None,
                                    "transfer": [{"spec": t} for t in transfer],
                                    **({"answer_types": ["number"]} if dataset == "synthetic" else {})}},
        }, "<command line>")
    except (PlanError, ValueError) as err:
        _fail(str(err))
        return
    _run_plan(plan, None, False, executor, wait_lock=wait_lock)


@app.command()
def report(run_dir: Path = typer.Argument(..., help="A run directory (holds store.sqlite)."),
           run_id: str | None = typer.Option(None, help="Run id (default: the latest finished run).")) -> None:
    """Rebuild every output of a run from its store alone (no lock: it reads a consistent snapshot and
    replaces each output file atomically)."""
    from .report.build import write_report
    from .store import Store

    try:
        store = Store.open_existing(run_dir)
        record = store.run(run_id)
    except (FileNotFoundError, LookupError, ValueError) as err:
        _fail(str(err))
        return
    rid = record["run_id"]
    paths = write_report(store, rid, run_dir)
    store.close()
    console.print(f"rebuilt {len(paths)} outputs of run {rid} ({_status(record)}) in {run_dir}/")
    _print_summary(run_dir / "summary.json")


@app.command()
def schema() -> None:
    """Print the JSON schema of the YAML plan."""
    out.print_json(json.dumps(plan_json_schema()))


@app.command()
def validate(plan_path: Path = typer.Argument(..., help="YAML plan")) -> None:
    """Check a plan (keys, types, values, weights) without running anything."""
    try:
        plan = load_plan(plan_path)
    except PlanError as err:
        _fail(str(err))
        return
    console.print(f"[green]ok[/green]: {len(plan.models)} models, {len(plan.datasets)} datasets -> {plan.run_dir}")


@app.command()
def providers() -> None:
    """List the model providers and their spec strings."""
    from .models.registry import PROVIDERS

    for name, target in PROVIDERS.items():
        out.print(f"{name:18} {target}")


@cache_app.command("ls")
def cache_ls(run_dir: Path = typer.Argument(..., help="A run directory.")) -> None:
    """List cached completions per provider and model."""
    from .store import Store

    try:
        store = Store.open_existing(run_dir)
    except (FileNotFoundError, ValueError) as err:
        _fail(str(err))
        return
    table = Table(title=f"request cache of {run_dir}")
    for col in ("provider", "model_id", "source", "entries", "failed", "tokens"):
        table.add_column(col)
    for row in store.cache_summary():
        table.add_row(*(str(row[k]) for k in ("provider", "model_id", "source", "entries", "failed", "tokens")))
    out.print(table)
    for r in store.runs():
        out.print(f"run {r['run_id']} {r['kind']} {_status(r)}")


@cache_app.command("clear")
def cache_clear(run_dir: Path = typer.Argument(..., help="A run directory."),
                model: str | None = typer.Option(None, help="Only this model id."),
                failed_only: bool = typer.Option(False, help="Only failed completions."),
                yes: bool = typer.Option(False, "--yes", help="Do not ask."),
                wait_lock: float = _WAIT_LOCK) -> None:
    """Delete cached completions (they will be requested again on the next run)."""
    from .store import Store

    try:
        store = Store.open_existing(run_dir)
    except (FileNotFoundError, ValueError) as err:
        _fail(str(err))
        return
    if not yes and sys.stdin.isatty():
        typer.confirm("Delete cached completions?", abort=True)
    try:
        with RunDirLock(run_dir, wait=wait_lock):
            n = store.clear_cache(model_id=model, failed_only=failed_only)
    except RunDirLocked as err:
        _locked(err)
        return
    console.print(f"deleted {n} cached completions")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
