"""Writing every output of a run from the store alone.

``RUN_DIR/summary.json``    run metadata (config, versions, git hash, seed, skipped models, bad rows)
                            and each family's tables (estimates with CIs, strategies, breakdowns).
``RUN_DIR/samples.jsonl``   one line per generation: item fields, raw text, extracted answer and
                            reason, trace, steps, tokens, finish reason, error, source, and the
                            item-level scores (on the item's primary generation, variant original
                            sample 0).
``RUN_DIR/results.xlsx``    one sheet per table, plus Metadata (no text cell is ever a formula:
                            :mod:`reasonscope.report.spreadsheets`).
``RUN_DIR/tables/*.csv``    the same tables as CSV (text cells that start like a formula get a ``'``).
``RUN_DIR/*.png``           radar and grouped bars (CIs as error bars).
``RUN_DIR/report.html``     self-contained (plots inlined), every model text escaped by Jinja2
                            autoescaping, per-item drill-down with ``<details>`` (no script).

Every file is written beside its target, and the files are renamed into place together once all are
written (:mod:`reasonscope.atomic_files`), so a process killed while writing leaves the previous
report whole, never a truncated file or a mix of two runs. The report shows
the run's status: a runner writes the outputs of a run that ends well with status ``finished`` and
only then records that status in the store (:func:`reasonscope.runner.finish_run_with_outputs`).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from ..atomic_files import atomic_open, read_staged, remove_stale_temporaries, replace_together, write_text
from ..config import BEHAVIOR_METRICS
from ..results import RunData, load_run_data
from ..store import Store
from ..types import is_question_variant
from .attack_view import attack_plot, attack_sheets
from .attributes_view import attributes_plots, attributes_sheets
from .evidence_view import evidence_plots, evidence_sheets, instance_views
from .information_view import information_plot, information_sheets
from .spreadsheets import write_csvs, write_xlsx
from .tables import behavior_tables


def _jsonable(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


def sample_rows(data: RunData, scores_by_item: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for g in data.generations:
        item = data.items[g.item_id]
        row = {
            "model": g.model, "dataset": item.group, "item_id": item.id, "variant": g.variant, "sample": g.sample,
            "input": item.variant_text(g.variant), "original_input": item.input, "choices": item.choices,
            "target": item.target, "answer_type": item.answer_type, "type": item.metadata.get("type"),
            "prediction": g.raw_text, "answer": g.answer, "answer_reason": g.answer_reason, "think": g.think,
            "trace": g.trace, "steps": g.steps, "prompt_tokens": g.prompt_tokens,
            "completion_tokens": g.completion_tokens, "max_tokens": g.max_tokens, "finish_reason": g.finish_reason,
            "truncated": g.truncated, "error": g.error, "latency_s": g.latency_s, "source": g.source,
        }
        if g.variant == "original" and g.sample == 0:
            row["scores"] = scores_by_item.get((g.model, g.item_id), {})
        rows.append(_jsonable(row))
    return rows


def write_jsonl(path: Path, rows: Any) -> Path:
    """One JSON object per line, written atomically."""
    with atomic_open(path, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return path


def write_report(store: Store, run_id: str, run_dir: Path, data: RunData | None = None) -> dict[str, Path]:
    """Write every output of ``run_id`` into ``run_dir`` (replaced together, see the module docstring);
    return them by name. ``data`` (read from the store when None) carries the run record shown."""
    run_dir = Path(run_dir)
    data = data or load_run_data(store, run_id)
    remove_stale_temporaries(run_dir)
    remove_stale_temporaries(run_dir / "tables")
    with replace_together():
        return _write_outputs(store, run_id, run_dir, data)


def _write_outputs(store: Store, run_id: str, run_dir: Path, data: RunData) -> dict[str, Path]:
    run = data.run
    scores = store.scores(run_id)
    raw_b = store.artefact(run_id, "behavior.json")
    behavior = json.loads(raw_b) if raw_b else None
    raw_e = store.artefact(run_id, "evidence.json")
    evidence = json.loads(raw_e) if raw_e else None
    raw_a = store.artefact(run_id, "attributes.json")
    attributes = json.loads(raw_a) if raw_a else None
    raw_i = store.artefact(run_id, "information.json")
    information = json.loads(raw_i) if raw_i else None
    raw_k = store.artefact(run_id, "attack.json")
    attack = json.loads(raw_k) if raw_k else None
    scores_by_item: dict[tuple[str, str], dict[str, Any]] = {}
    for s in scores:
        if s.item_id:
            scores_by_item.setdefault((s.model, s.item_id), {})[f"{s.family}.{s.metric}"] = \
                {"value": s.value, "reason": s.reason, "details": s.details}
    notes = run.get("notes") or {}
    summary = {
        "run": {k: run[k] for k in ("run_id", "kind", "status", "seed", "git_hash", "versions", "created",
                                    "finished")},
        "config": run["config"], "notes": notes,
        "generations": {"total": len(data.generations), "missing": data.missing,
                        "missing_by_model": data.missing_by_model,
                        "failed": sum(1 for g in data.generations if g.error),
                        "imported": sum(1 for g in data.generations if g.source != "generated")},
        "behavior": behavior,
        "evidence": {m: {k: v for k, v in t.items() if k != "instances"} for m, t in evidence.items()}
        if evidence else None,
        "attributes": {k: v for k, v in attributes.items() if k != "judgements"} if attributes else None,
        "attack": {**attack, "models": {m: {k: v for k, v in t.items() if k != "rows"}
                                        for m, t in attack["models"].items()}} if attack else None,
        "information": information,
    }
    out: dict[str, Path] = {}
    out["summary"] = write_text(run_dir / "summary.json", json.dumps(summary, indent=2, default=str))
    out["samples"] = write_jsonl(run_dir / "samples.jsonl", sample_rows(data, scores_by_item))
    sheets: dict[str, list[dict[str, Any]]] = behavior_tables(behavior) if behavior else {}
    if evidence:
        sheets.update(evidence_sheets(evidence))
        out["evidence_instances"] = write_jsonl(run_dir / "evidence_instances.jsonl", (
            {"model": model, **inst} for model, t in evidence.items() for inst in t["instances"]))
    if attributes:
        sheets.update(attributes_sheets(attributes))
        out["attributes_judgements"] = write_jsonl(run_dir / "attributes_judgements.jsonl", attributes["judgements"])
    if information:
        sheets.update(information_sheets(information))
    if attack:
        sheets.update(attack_sheets(attack))
        out["attack_items"] = write_jsonl(run_dir / "attack_items.jsonl",
                                          (row for t in attack["models"].values() for row in t["rows"]))
    sheets["items"] = [{"model": m, "item": i, **{k: v["value"] for k, v in d.items()}}
                       for (m, i), d in scores_by_item.items()]
    meta = {"run_id": run_id, "kind": run["kind"], "status": run["status"], "seed": run["seed"],
            "git_hash": run["git_hash"], "versions": run["versions"], "config": run["config"], "notes": notes}
    out["xlsx"] = write_xlsx(run_dir / "results.xlsx", sheets, meta)
    write_csvs(run_dir / "tables", sheets)
    images: dict[str, str] = {}
    if behavior and behavior.get("metrics"):
        from .plots import grouped_bars, radar

        for name, fn in (("radar", radar), ("bars", grouped_bars)):
            p = fn(behavior["metrics"], run_dir / f"behavior_{name}.png")
            out[name] = p
            images[name] = base64.b64encode(read_staged(p)).decode()
    ev_images: dict[str, str] = {}
    if evidence:
        for name, p in evidence_plots(evidence, run_dir).items():
            out[name] = p
            ev_images[name] = base64.b64encode(read_staged(p)).decode()
    family_images: dict[str, str] = {}
    plots = {**(attributes_plots(attributes, run_dir) if attributes else {}),
             **(attack_plot(attack, run_dir) if attack else {}),
             **(information_plot(information, run_dir) if information else {})}
    if plots:
        for name, p in plots.items():
            out[name] = p
            family_images[name] = base64.b64encode(read_staged(p)).decode()
    out["html"] = write_text(run_dir / "report.html", render_html(
        data, behavior, scores_by_item, sheets, images, notes, evidence, ev_images, attributes, family_images, attack,
        information))
    return out


def _status_warnings(run: dict[str, Any]) -> list[str]:
    """A banner for a run that did not finish (see reasonscope.store, "Run status")."""
    if run.get("status") == "interrupted":
        return ["this run was interrupted before it finished: the numbers cover only the generations and scores it "
                "stored; run the same command again to complete it (stored generations are not requested again)"]
    if run.get("status") == "running":
        where = f" (pid {run['pid']} on {run.get('host')})" if run.get("pid") else ""
        return [f"this run is still running{where}: this report shows what it has stored so far"]
    return []


def render_html(data: RunData, behavior, scores_by_item, sheets, images, notes, evidence=None,
                ev_images=None, attributes=None, family_images=None, attack=None, information=None) -> str:
    env = Environment(loader=PackageLoader("reasonscope.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    items = []
    by_item: dict[str, list] = {}
    for g in data.generations:
        by_item.setdefault(g.item_id, []).append(g)
    for key, gens in by_item.items():
        item = data.items[key]
        gens = [g for g in gens if is_question_variant(g.variant)]
        if not gens:
            continue
        gens = sorted(gens, key=lambda g: (g.model, g.variant != "original", g.variant, g.sample))
        verdicts = {}
        rendered = []
        for g in gens:
            sc = scores_by_item.get((g.model, key), {})
            probs = (sc.get("behavior.LS", {}).get("details") or {}).get("contradiction") or []
            cq = sc.get("behavior.CQ")
            if g.variant == "original" and g.sample == 0 and cq and cq["value"] is not None:
                verdicts[g.model] = cq["value"] == 1.0
            steps_scored = [(s, probs[i] if (g.variant == "original" and g.sample == 0 and i < len(probs)) else None)
                            for i, s in enumerate(g.steps)]
            rendered.append({**g.model_dump(), "steps_scored": steps_scored})
        items.append({"key": key, "type": item.metadata.get("type") or item.answer_type, "input": item.input,
                      "choices": item.choices, "target": item.target, "generations": rendered,
                      "verdicts": verdicts})
    warnings = _status_warnings(data.run) + list((behavior or {}).get("warnings", []))
    for t in (evidence or {}).values():
        warnings += t.get("warnings", [])
    warnings += [f"attributes: {w}" for w in (attributes or {}).get("warnings", [])]
    warnings += [f"attack: {w}" for w in (attack or {}).get("warnings", [])]
    warnings += [f"information: {w}" for w in (information or {}).get("warnings", [])]
    for model, why in (notes.get("skipped_models") or {}).items():
        warnings.append(f"skipped model {model}: {why}")
    outcome = notes.get("outcome") or {}
    if outcome.get("code"):
        warnings.insert(0, f"exit code {outcome['code']}: {outcome['message']}")
    breakdowns = {label: sheets[key] for label, key in (("Per dataset", "per_dataset"), ("Per item type", "per_type"))
                  if sheets.get(key)}
    return env.get_template("report.html.j2").render(
        run=data.run, behavior=behavior, metric_names=BEHAVIOR_METRICS, images=images, items=items,
        warnings=warnings, breakdowns=breakdowns, bad_rows=notes.get("bad_rows") or {},
        evidence=evidence, ev_views={m: instance_views(t) for m, t in (evidence or {}).items()},
        ev_images=ev_images or {}, ev_sheets={k: v for k, v in sheets.items() if k.startswith("evidence_")},
        attributes=attributes, family_images=family_images or {},
        attr_sheets={k: v for k, v in sheets.items() if k.startswith("attributes_")}, attack=attack,
        attack_sheets={k: v for k, v in sheets.items() if k in ("attack_rates", "attack_transfer")},
        attack_rows=sheets.get("attack_items", []), information=information,
        info_sheets={k: v for k, v in sheets.items() if k.startswith("information_")})
