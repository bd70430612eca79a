"""Evidence (RACE) outputs: flat tables, plots, and highlighted rationales for the HTML report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..report.cards import Card, CardLine, estimate_line, few_items_caveat
from ..report.numbers import estimate_cells, round_p
from ..report.plots import HALF, outside_legend, pyplot, save, text_colour
from ..report.view import FamilyReport, Table
from .catalogue import EVIDENCE
from .summary_model import EvidenceInstance, EvidenceSummary

HIGHLIGHT_PREFERENCE = ("edit", "edit_chars", "token", "exact")


def _r(v):
    return round(v, 4) if isinstance(v, float) else v


def evidence_sheets(evidence: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The evidence family's flat tables: summary, coverage, tests and the three sweeps, over every model."""
    summary, coverage, tests, sweep_k, sweep_delta, sweep_delta_chars = [], [], [], [], [], []
    for model, t in evidence.items():
        summary.append({"model": model, "classifier_test_accuracy": _r(t["classifier"]["test_accuracy"]),
                        "llm_accuracy": _r(t["llm"]["accuracy"]), "n": t["llm"]["n"],
                        "failed": t["llm"].get("failed", 0),
                        "unparseable": t["llm"]["unparseable"], "no_rationale": t["llm"]["no_rationale"],
                        "label_reading": t["llm"].get("label_method") or "sampled (the label the model wrote)",
                        **{f"setting_{k}": v for k, v in t["settings"].items()}})
        for matcher, tab in merged_matchers(t["coverage"]).items():
            for group in ("correct", "incorrect"):
                g = tab[group]
                row = {"model": model, "matcher": matcher, "threshold": tab.get("threshold", ""), "group": group,
                       "n": g["n"]}
                for side in ("support", "contradict"):
                    row[side], row[f"{side}_low"], row[f"{side}_high"] = estimate_cells(
                        g[side]["value"], g[side]["low"], g[side]["high"])
                coverage.append({**row, "asymmetry": _r(g["asymmetry"])})
            d = tab["asymmetry_difference"]
            tests.append({"model": model, "matcher": matcher, "threshold": tab.get("threshold", ""),
                          "asymmetry_difference": _r(d["value"]),
                          "p_value": round_p(d["p_value"]), "p_adjusted": round_p(d.get("p_adjusted")),
                          "p_adjust": d.get("p_adjust"), "test": d.get("test"), "null": d.get("null"),
                          "relabellings": relabellings(d)})
        sweep_k += [{"model": model, **{k: _r(v) for k, v in row.items()}} for row in merged_sweep(t["sweep_k"], "k")]
        sweep_delta += [{"model": model, **{k: _r(v) for k, v in row.items()}}
                        for row in merged_sweep(t["sweep_delta"], "delta")]
        sweep_delta_chars += [{"model": model, **{k: _r(v) for k, v in row.items()}}
                              for row in merged_sweep(t.get("sweep_delta_chars", []), "delta_chars")]
    return {"evidence_summary": summary, "evidence_coverage": coverage, "evidence_tests": tests,
            "evidence_sweep_k": sweep_k, "evidence_sweep_delta": sweep_delta,
            "evidence_sweep_delta_chars": sweep_delta_chars}


def merged_matchers(coverage: dict[str, Any]) -> dict[str, Any]:
    """A model's coverage tables, matchers that found exactly the same numbers merged into one entry.

    The merged entry is named like ``"exact = token"`` (the tables and plots would otherwise repeat identical
    rows and lines); the threshold column then names each merged matcher that has a threshold with it
    (``"edit: normalised Levenshtein <= 0.2; edit_chars: ..."``).
    """
    groups: dict[str, list[str]] = {}
    for matcher, tab in coverage.items():
        same = next((first for first in groups
                     if {k: v for k, v in coverage[first].items() if k != "threshold"}
                     == {k: v for k, v in tab.items() if k != "threshold"}), None)
        groups.setdefault(same or matcher, []).append(matcher)
    out = {}
    for first, names in groups.items():
        thresholds = {m: str(coverage[m].get("threshold") or "") for m in names}
        shown = [f"{m}: {t}" if len(names) > 1 else t for m, t in thresholds.items() if t]
        out[" = ".join(names)] = {**coverage[first], "threshold": "; ".join(shown)}
    return out


def merged_sweep(rows: list[dict[str, Any]], param: str) -> list[dict[str, Any]]:
    """Sweep rows with matchers whose whole sweep is identical merged (as :func:`merged_matchers`)."""
    by_matcher: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_matcher.setdefault(r["matcher"], []).append(r)

    def numbers(m: str) -> list[tuple]:
        return [tuple((k, v) for k, v in r.items() if k not in ("matcher", "threshold")) for r in by_matcher[m]]

    groups: dict[str, list[str]] = {}
    for m in by_matcher:
        same = next((first for first in groups if numbers(first) == numbers(m)), None)
        groups.setdefault(same or m, []).append(m)
    out = []
    for first, names in groups.items():
        for r in by_matcher[first]:
            out.append({**r, "matcher": " = ".join(names)})
    return sorted(out, key=lambda r: (r[param] is None, r[param] if r[param] is not None else 0))


def relabellings(d: dict[str, Any]) -> str:
    """How many relabellings the permutation test drew.

    ``"exact: all 56"`` when it enumerated them, else ``"Monte Carlo: 2000"`` (the test's own text says which;
    the configured number is a cap); ``"none (test undefined)"`` when the test gave no p-value.
    """
    test = d.get("test") or ""
    if d.get("p_value") is None:
        return "none (test undefined)"
    if "exact" in test and "all " in test:
        count = test.split("all ", 1)[1].split(" ", 1)[0]
        return f"exact: all {count}"
    return f"Monte Carlo: {d.get('n_permutations')}"


def highlight_segments(text: str, matches: dict[str, list[dict]]) -> list[tuple[str, str | None]]:
    """Split ``text`` into (piece, css class) with supporting / contradicting matches marked.

    The template escapes every piece. Overlapping spans keep the earlier one.
    """
    spans = sorted([(m["start"], m["end"], side) for side in ("support", "contradict") for m in matches.get(side, [])])
    out: list[tuple[str, str | None]] = []
    pos = 0
    for start, end, side in spans:
        if start < pos:
            continue
        if start > pos:
            out.append((text[pos:start], None))
        out.append((text[start:end], side))
        pos = end
    if pos < len(text):
        out.append((text[pos:], None))
    return out


def instance_views(t: dict[str, Any]) -> list[dict[str, Any]]:
    """One view per evidence instance for the HTML drill-down.

    Gold and predicted label, evidence, and the rationale highlighted by the preferred matcher.
    """
    matcher = next((m for m in HIGHLIGHT_PREFERENCE if m in t["settings"]["matchers"]), t["settings"]["matchers"][0])
    views = []
    for inst in t["instances"]:
        views.append({
            "id": inst["item_id"], "gold": ", ".join(inst["gold"]), "predicted": inst["predicted"],
            "correct": inst["correct"], "reason": inst["reason"], "matcher": matcher,
            "support": [f["text"] for f in inst["support"]], "contradict": [f["text"] for f in inst["contradict"]],
            "segments": highlight_segments(inst["rationale"], inst["matches"].get(matcher, {})),
            "coverage": inst["coverage"],
        })
    return views


def file_slug(name: str, used: set[str]) -> str:
    """A file-name part for ``name`` (a model): letters, digits, ``-``, ``_`` and ``.``, unique among ``used``.

    ``Qwen/Qwen2.5-7B`` -> ``Qwen_Qwen2.5-7B``; a second name with the same part gets ``~2``.
    """
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"
    base = base[:60]
    slug, n = base, 1
    while slug.lower() in used:
        n += 1
        slug = f"{base}~{n}"
    used.add(slug.lower())
    return slug


def evidence_plots(evidence: dict[str, Any], run_dir: Path, gaps: list[str] | None = None) -> dict[str, Path]:
    """Per model: coverage scatter, confusion matrix, coverage bars by matcher and the sweeps.

    A plot with nothing to draw is not drawn; why is appended to ``gaps`` (shown in the report instead).
    """
    plt = pyplot()
    gaps = [] if gaps is None else gaps
    out: dict[str, Path] = {}
    used: set[str] = set()
    for model, t in evidence.items():
        safe = file_slug(model, used)
        matcher = next((m for m in HIGHLIGHT_PREFERENCE if m in t["settings"]["matchers"]), t["settings"]["matchers"][0])
        # per-instance scatter: support vs contradiction coverage, coloured by correctness
        points = {flag: [(i["coverage"][matcher]["support"], i["coverage"][matcher]["contradict"])
                         for i in t["instances"] if i["evaluated"] and i["correct"] == flag and i["coverage"].get(matcher)]
                  for flag in (True, False)}
        if not any(points.values()):
            gaps.append(f"{model}: no per-instance coverage scatter: no instance was evaluated with the {matcher} "
                        "matcher (no parseable prediction with a rationale)")
        else:
            _scatter(plt, model, matcher, points, run_dir, safe, out)
        # confusion matrix of the LLM's predictions
        conf = t["confusion"]
        if not conf["matrix"] or not any(any(row) for row in conf["matrix"]):
            gaps.append(f"{model}: no confusion matrix: no prediction could be compared with a gold label")
        else:
            _confusion(plt, model, conf, run_dir, safe, out)
        coverage = merged_matchers(t["coverage"])
        matchers = list(coverage)
        if not any(coverage[m][g][side]["value"] is not None for m in matchers for g in ("correct", "incorrect")
                   for side in ("support", "contradict")):
            gaps.append(f"{model}: no coverage bars: every coverage is n/a (empty feature sets or no instances)")
        else:
            _coverage_bars(plt, model, {**t, "coverage": coverage}, matchers, run_dir, safe, out)
        _sweeps(plt, model, t, run_dir, safe, out, gaps)
    return out



def _scatter(plt, model, matcher, points, run_dir, safe, out) -> None:
    """Per-instance scatter: support vs contradiction coverage, coloured by correctness."""
    fig, ax = plt.subplots(figsize=HALF)
    for flag, color, label in ((True, "tab:green", "correct"), (False, "tab:red", "incorrect")):
        pts = points[flag]
        xs = [p[0] if p[0] is not None else -0.05 for p in pts]
        ys = [p[1] if p[1] is not None else -0.05 for p in pts]
        ax.scatter(xs, ys, s=18, alpha=0.6, c=color, label=f"{label} (n={len(pts)})")
    ax.set_xlabel(f"support coverage ({matcher}); -0.05 = empty set")
    ax.set_ylabel("contradiction coverage")
    ax.set_xlim(-0.1, 1.05)
    ax.set_ylim(-0.1, 1.05)
    ax.set_title(f"{model}: per-instance coverage", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out[f"evidence_scatter_{safe}"] = save(fig, run_dir / f"evidence_scatter_{safe}.png")


def _confusion(plt, model, conf, run_dir, safe, out) -> None:
    """Confusion matrix of the LLM's predictions against the gold labels."""
    fig, ax = plt.subplots(figsize=HALF)
    image = ax.imshow(conf["matrix"], cmap="Blues")
    ax.set_xticks(range(len(conf["predicted"])), conf["predicted"], rotation=30, ha="right", fontsize=9)
    ax.set_yticks(range(len(conf["gold"])), conf["gold"], fontsize=9)
    for i, row in enumerate(conf["matrix"]):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center", fontsize=9, color=text_colour(image.to_rgba(v)))
    ax.set_xlabel("LLM prediction (count of test instances)")
    ax.set_ylabel("gold label")
    ax.set_title(f"{model}: confusion matrix", fontsize=9)
    fig.tight_layout()
    out[f"evidence_confusion_{safe}"] = save(fig, run_dir / f"evidence_confusion_{safe}.png")


def _coverage_bars(plt, model, t, matchers, run_dir, safe, out) -> None:
    """Coverage by matcher: support and contradiction, correct and incorrect, with 95% CIs (n/a written as such)."""
    fig, ax = plt.subplots(figsize=HALF)
    bars = [("correct", "support"), ("correct", "contradict"), ("incorrect", "support"), ("incorrect", "contradict")]
    width = 0.8 / len(bars)
    for b, (group, side) in enumerate(bars):
        xs, vals, lo, hi = [], [], [], []
        for i, m in enumerate(matchers):
            e = t["coverage"][m][group][side]
            if e["value"] is None:  # written n/a where the bar would be: never read as a 0
                ax.annotate("n/a", (i + b * width, 0), xytext=(0, 2), textcoords="offset points", ha="center",
                            fontsize=8, color="grey", rotation=90)
                continue
            xs.append(i + b * width)
            vals.append(e["value"])
            lo.append(e["value"] - e["low"] if e["low"] is not None else 0)
            hi.append(e["high"] - e["value"] if e["high"] is not None else 0)
        ax.bar(xs, vals, width, yerr=[lo, hi], capsize=2, label=f"{side} | {group}")
    ax.set_xticks([i + width * 1.5 for i in range(len(matchers))], [m.replace(" = ", " =\n") for m in matchers],
                  fontsize=8)
    ax.set_ylabel("coverage (share of features, 0-1; 95% CI)")
    ax.set_xlabel("matcher (matchers with identical results merged)")
    ax.set_ylim(0, 1.05)
    outside_legend(ax)
    ax.set_title(f"{model}: coverage by matcher", fontsize=9)
    fig.tight_layout()
    out[f"evidence_bars_{safe}"] = save(fig, run_dir / f"evidence_bars_{safe}.png")


SWEEP_LINES = (("support_correct", "-", "support coverage, correct"),
               ("contradict_incorrect", "--", "contradiction coverage, incorrect"),
               ("asymmetry_difference", ":", "A(correct) - A(incorrect)"))
SWEEP_AXES = {"k": "top-k features (k)", "delta": "delta (normalised Levenshtein: edits / length)",
              "delta_chars": "delta (Levenshtein, characters)"}


def _sweeps(plt, model, t, run_dir, safe, out, gaps) -> None:
    """One line plot per sweep (k, delta, delta in characters), with the legend under the axes.

    Matchers with identical sweeps are merged into one series (:func:`merged_sweep`); a sweep whose every
    value is n/a is not drawn. The sweep tables hold no intervals, so the lines have none.
    """
    from matplotlib.ticker import MaxNLocator

    for param, rows_key in (("k", "sweep_k"), ("delta", "sweep_delta"), ("delta_chars", "sweep_delta_chars")):
        rows = merged_sweep(t.get(rows_key, []), param)
        if not rows:
            continue
        if all(r[key] is None for r in rows for key, _, _ in SWEEP_LINES):
            gaps.append(f"{model}: no sweep over {param}: every coverage in the sweep is n/a")
            continue
        fig, ax = plt.subplots(figsize=HALF)
        for c, m in enumerate(dict.fromkeys(r["matcher"] for r in rows)):  # a colour per matcher, a style per line
            sub = [r for r in rows if r["matcher"] == m]
            xs = [r[param] for r in sub]
            for key, style, label in SWEEP_LINES:
                ys = [r[key] if r[key] is not None else float("nan") for r in sub]
                ax.plot(xs, ys, style, marker="o", ms=3, color=f"C{c % 10}", label=f"{label} [{m}]")
        ax.set_xlabel(SWEEP_AXES[param])
        ax.set_ylabel("coverage or asymmetry (share, -1 to 1)")
        if param == "k":  # ticks at the k values swept, whole numbers
            ax.set_xticks(sorted({r["k"] for r in rows if r["k"] is not None}))
        elif param == "delta_chars":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_title(f"{model}: sweep over {param}", fontsize=10)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
        out[f"evidence_sweep_{param}_{safe}"] = save(fig, run_dir / f"evidence_sweep_{param}_{safe}.png")


def evidence_card(evidence: dict[str, Any]) -> Card:
    """The evidence card: support coverage of correctly predicted instances per model (preferred matcher).

    RACE's main reading: do right answers cite the classifier's supporting evidence.
    """
    lines, matchers, warnings, sizes = [], set(), [], []
    for model, t in evidence.items():
        warnings += t.get("warnings", [])
        sizes.append((t.get("llm") or {}).get("n") or 0)
        matcher = next((m for m in HIGHLIGHT_PREFERENCE if m in t["coverage"]), next(iter(t["coverage"]), None))
        if matcher is None:
            lines.append(CardLine(model, "n/a (no matcher ran)"))
            continue
        matchers.add(matcher)
        group = t["coverage"][matcher]["correct"]
        lines.append(estimate_line(model, group["support"], n=group["n"]))
    return Card("evidence", "Evidence (RACE)", "evidence", "Support coverage of correct predictions",
                REPORT.direction("coverage_support"), lines,
                f"TF-IDF + logistic regression; matcher: {', '.join(sorted(matchers)) or 'none'}", warnings,
                few_items_caveat("test instances per model", max(sizes, default=None)))


class EvidenceReport(FamilyReport):
    """The evidence family's report: per-model tables, plots, the coverage card and highlighted rationales."""

    name = "evidence"
    title = "Evidence (RACE)"
    metrics = EVIDENCE
    summary_type = dict[str, EvidenceSummary]
    summary_description = "model -> tables"
    records = {"evidence_instances": EvidenceInstance}
    template = "evidence.html.j2"
    column_labels = {"support": "Support coverage", "contradict": "Contradiction coverage"}
    spec_aliases = {"support": "coverage_support", "contradict": "coverage_contradict"}
    tables = {
        "evidence_summary": Table("Classifier and LLM", "Accuracy of the TF-IDF classifier and of the LLM on the "
                                  "test split; n = test instances."),
        "evidence_coverage": Table("Coverage by matcher and correctness",
                                   "Mean per-instance coverage of each group with a 95% CI (a score interval for a "
                                   "bounded mean); an instance whose feature set is empty is n/a and left out."),
        "evidence_tests": Table("Asymmetry test", "Two-group label permutation test of A(correct) - A(incorrect), "
                                "H0: coverage independent of correctness, two-sided."),
        "evidence_sweep_k": Table("Sweep over k", "Coverages recomputed for each number k of top features."),
        # a sweep's threshold column repeats its delta column in words
        "evidence_sweep_delta": Table("Sweep over delta (normalised)",
                                      "Coverages recomputed for each normalised edit-distance threshold.",
                                      ("threshold",)),
        "evidence_sweep_delta_chars": Table("Sweep over delta (characters)",
                                            "Coverages recomputed for each absolute edit-distance threshold.",
                                            ("threshold",)),
    }

    def summary(self, artefact: dict[str, Any]) -> dict[str, Any]:
        """Each model's tables without its instances (those are ``evidence_instances.jsonl``)."""
        return {m: {k: v for k, v in t.items() if k != "instances"} for m, t in artefact.items()}

    def record_rows(self, artefact: dict[str, Any]) -> dict[str, Any]:
        """``evidence_instances``: every model's test instances, each with its model."""
        return {"evidence_instances": ({"model": model, **inst} for model, t in artefact.items()
                                       for inst in t["instances"])}

    def sheets(self, artefact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """:func:`evidence_sheets`."""
        return evidence_sheets(artefact)

    def plots(self, artefact: dict[str, Any], folder: Path, gaps: list[str]) -> dict[str, Path]:
        """:func:`evidence_plots`."""
        return evidence_plots(artefact, folder, gaps)

    def card(self, artefact: dict[str, Any]) -> Card:
        """:func:`evidence_card`."""
        return evidence_card(artefact)

    def section(self, artefact: dict[str, Any], sheets: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """``views``: model -> its highlighted rationales (:func:`instance_views`)."""
        return {"views": {m: instance_views(t) for m, t in artefact.items()}}


REPORT = EvidenceReport()
