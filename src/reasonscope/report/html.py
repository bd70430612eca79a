r"""The self-contained HTML report: summary cards, one section per family, per-item drill-down.

Layout, top to bottom: run line and warnings; one summary card per family present
(:mod:`reasonscope.report.cards`); per family its "how computed" paragraph, its tables
(:func:`reasonscope.report.html_tables.table_view`: human labels, ``value [low, high]`` rounded to what
the CI supports, a note under each table), its plots inlined as base64 PNG and, where a plot had
nothing to draw, a sentence saying why instead; then the per-item drill-down (``<details>``).

Every text reaches the page through Jinja2 autoescaping; the only script is the expand/collapse
button handler, which never inserts text.

Bounded texts
-------------
The page embeds a bounded part of every text; ``samples.jsonl`` keeps every text whole. In the item
drill-down a question and a generation's raw text show their first :data:`HTML_TEXT_CHARS` characters,
followed by a note saying how many more characters ``samples.jsonl`` holds. A generation's steps (its
trace cut into sentences: the same text again) are listed by their first :data:`STEP_PREVIEW_CHARS`
characters each, next to their contradiction probability, and the list stops once
:data:`STEPS_SHOWN_CHARS` characters of steps are shown (a note counts the steps left out). Any other text
longer than :data:`HTML_TEXT_CHARS` (a table cell, an error message) is cut the same way by
:func:`visible_text`. Six replies of 1 MB make a page of 0.25 MB.

Control characters
------------------
No C0 control character but tab and newline, no DEL and no C1 control is written into the page: each
is shown as its visible Unicode "control picture" (NUL as ␀, ESC as ␛, a lone carriage return as ␍,
DEL as ␡) and a C1 control or a lone surrogate as U+FFFD (�). A ``\r\n`` line end is read as ``\n``.
This applies to every value the template writes (:func:`visible_text` is the environment's
``finalize``).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from typing import IO, Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ..results import RunData
from ..types import is_question_variant
from .cards import family_cards
from .evidence_view import instance_views
from .html_tables import TableView, table_view

# sheet -> (family, title, note). The note says how the table's numbers were computed; each metric
# column's catalogue description is appended to it (reasonscope.metric_specs).
SHEETS: dict[str, tuple[str, str, str]] = {
    "raw_metrics": ("behavior", "Behaviour metrics per model",
                    "Mean over items with a 95% CI chosen by the kind of values (exact Clopper-Pearson for 0/1 values "
                    "such as CQ, a score interval for bounded means; see the Statistics page); under each value n = "
                    "items with a value and the failed generations the metric read."),
    "strategies": ("behavior", "Weighted strategy scores",
                   "Each strategy's weighted mean of the model's metrics (weights in the next table); a metric "
                   "that is n/a is left out and the remaining weights renormalised (\"without ...\"). 95% CI: "
                   "percentile item bootstrap, the items resampled together for every metric and the weighted "
                   "mean recomputed on each resample."),
    "strategy_weights": ("behavior", "Strategy weights", "Normalised weight of each metric in each strategy (sum 1)."),
    "per_dataset": ("behavior", "Per dataset", "The metrics restricted to the items of each dataset, 95% CIs over "
                    "those items (by the kind of values, as above)."),
    "per_type": ("behavior", "Per item type", "The metrics restricted to the items of each type, 95% CIs over "
                 "those items (by the kind of values, as above)."),
    "paired_differences": ("behavior", "Paired differences (A - B, same items)",
                           "p: paired sign-flip permutation test, H0: per-item differences symmetric about 0, "
                           "two-sided; adjusted as the Adjustment column says."),
    "evidence_summary": ("evidence", "Classifier and LLM", "Accuracy of the TF-IDF classifier and of the LLM on the "
                         "test split; n = test instances."),
    "evidence_coverage": ("evidence", "Coverage by matcher and correctness",
                          "Mean per-instance coverage of each group with a 95% CI (a score interval for a bounded "
                          "mean); an instance whose "
                          "feature set is empty is n/a and left out."),
    "evidence_tests": ("evidence", "Asymmetry test", "Two-group label permutation test of A(correct) - "
                       "A(incorrect), H0: coverage independent of correctness, two-sided."),
    "evidence_sweep_k": ("evidence", "Sweep over k", "Coverages recomputed for each number k of top features."),
    "evidence_sweep_delta": ("evidence", "Sweep over delta (normalised)",
                             "Coverages recomputed for each normalised edit-distance threshold."),
    "evidence_sweep_delta_chars": ("evidence", "Sweep over delta (characters)",
                                   "Coverages recomputed for each absolute edit-distance threshold."),
    "attributes_scores": ("attributes", "Mean attribute scores (attribute x model)", "Mean over items of the "
                          "normalised score (0-1, higher is better), 95% CI over items (a score interval for a bounded "
                          "mean); n = items with a score."),
    "attributes_ratings": ("attributes", "Per-attribute ratings", "Battles per attribute between every two models "
                           "on each item; rank bounds from the bootstrap ranks."),
    "attributes_judges": ("attributes", "Per judge", "Each judge's unscored answers and mean score per model."),
    "attributes_agreement": ("attributes", "Agreement between judges", "Krippendorff's alpha (interval) over the "
                             "judged units and Spearman's rho between judges; p from the test named per row."),
    "attributes_hostile": ("attributes", "Rationales flagged as hostile", "Rationales that address the judge or "
                           "hold instructions; their scores are kept and flagged."),
    "attributes_shap": ("attributes", "Preference explanation (SHAP)", "LightGBM on attribute(A) - attribute(B) "
                        "predicting the human preference."),
    "attributes_pairwise": ("attributes", "Pairwise judging", "Pairwise judgements, each pair judged in both orders."),
    "attributes_human_ratings": ("attributes", "Ratings from the human labels",
                                 "Bradley-Terry and Elo ratings of the recorded battles decided by the human labels."),
    "attributes_preference_ratings": ("attributes", "Ratings when an attribute decides the battles",
                                      "The recorded battles decided by each attribute's judged scores."),
    "attributes_preference_agreement": ("attributes", "Attribute ratings vs human-label ratings",
                                        "Rank correlation over the models."),
    "information_scores": ("information", "Score per rationale variant", "Mean over test items with a 95% CI (no "
                           "known range: the wider of the t and bootstrap-t intervals; the interval column names it), in nats."),
    "information_separation": ("information", "Separations", "Mean paired difference Gold - X over the test items, "
                               "95% CI (the interval column names its method); p from the paired sign-flip permutation test."),
    "information_accuracy": ("information", "Evaluator accuracy per variant", "Share of test items whose label the "
                             "evaluator ranks first."),
    "information_baseline_only": ("information", "Baseline-only check", "Phi_base alone on held-out items: a high "
                                  "accuracy means b gives the label away."),
    "information_substitutions": ("information", "How baselines and antonym environments were built",
                                  "Stand-ins are flagged in the Substitution column."),
    "information_truncation": ("information", "Truncated inputs", "Inputs longer than the evaluator's budget."),
    "information_training": ("information", "Training", "Best epoch by validation loss."),
    "information_penalties": ("information", "LAREV penalty weights", "lambda IRM and lambda probe as used."),
    "attack_rates": ("attack", "Outcome rates", "Rates over the decided attacks (attacked minus the excluded "
                     "columns) with exact 95% Clopper-Pearson CIs; higher success = more fragile reasoning, higher unattackable = "
                     "more robust."),
    "attack_transfer": ("attack", "Transfer to other models", "The successful perturbations replayed on each transfer "
                        "model, rated the same way."),
}
BEHAVIOR_COUNTS = ("ES_corpus", "ES_item", "ES_reading", "items", "failed", "pending", "unparseable", "truncated",
                   "failed_generations")
ATTACK_COUNTS = ("items", "answered_correctly", "attacked", "clean_reasoning_already_wrong", "not_judged",
                 "invalid_attack", "insertion_redrawn", "insertion_no_valid_draw")
HIDDEN = {"attack_rates": ("reading", *ATTACK_COUNTS), "attack_transfer": ("reading",), "raw_metrics": BEHAVIOR_COUNTS,
          # a sweep's threshold column repeats its delta column in words
          "evidence_sweep_delta": ("threshold",), "evidence_sweep_delta_chars": ("threshold",)}
# a second view of a sheet: view key -> (sheet, family, title, note, columns shown). The behaviour table
# is split so that each part fits a 1280-pixel screen; each metric is listed once per part.
SPLIT_VIEWS: dict[str, tuple[str, str, str, str, tuple[str, ...]]] = {
    "behavior_counts": ("raw_metrics", "behavior", "Other efficiency reading and counts per model",
                        "The other reading of ES (the one the strategies use is the ES column above, as the "
                        "settings line says), and the items, failed, pending, unparseable and truncated generations "
                        "of each model.", ("model", *BEHAVIOR_COUNTS)),
    "attack_counts": ("attack_rates", "attack", "Attacks per model and method: the denominators",
                      "How the decided attacks of the rates above come about: decided = attacked - clean reasoning "
                      "already wrong - not judged - invalid attack; insertions redrawn for the random baseline.",
                      ("model", "method", *ATTACK_COUNTS, "decided (n)")),
}

HTML_TEXT_CHARS = 20_000
"""Most characters of one text (a question, a generation's raw text, any other value) the page embeds."""
STEP_PREVIEW_CHARS = 200
"""Most characters shown of one step of a generation (the steps repeat the text)."""
STEPS_SHOWN_CHARS = 4_000
"""Most characters of steps listed per generation; the remaining steps are counted, not shown."""
_VISIBLE = {**{c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}, 0x7F: 0x2421,
            **{c: 0xFFFD for c in range(0x80, 0xA0)}, **{c: 0xFFFD for c in range(0xD800, 0xE000)}}


def visible(text: str) -> str:
    r"""``text`` with every control character but tab and newline shown as a visible symbol.

    See the module docstring; ``\r\n`` becomes ``\n``.
    """
    return text.replace("\r\n", "\n").translate(_VISIBLE)


def clip(text: str, limit: int = HTML_TEXT_CHARS) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` and how many were left out."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def visible_text(value: Any) -> Any:
    """The template's ``finalize``.

    A string is cut to :data:`HTML_TEXT_CHARS` characters (with a note) and its control characters made
    visible; markup the template made itself (a macro's output, the base64 of a plot) is written as it is.
    """
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    shown, more = clip(value)
    return visible(shown) + (f" … [{more:,} more characters in samples.jsonl]" if more else "")


def step_views(steps: list[str], probs: list[float] | None, primary: bool) -> tuple[list[tuple[str, float | None]], int]:
    """The steps shown for one generation, and how many steps are left out.

    Each shown step is (its first :data:`STEP_PREVIEW_CHARS` characters, contradiction probability with the
    next step or None); steps are shown until :data:`STEPS_SHOWN_CHARS` characters are.
    """
    shown: list[tuple[str, float | None]] = []
    used = 0
    for i, step in enumerate(steps):
        if used >= STEPS_SHOWN_CHARS:
            return shown, len(steps) - i
        text, more = clip(step, STEP_PREVIEW_CHARS)
        used += len(text)
        shown.append((text + (" …" if more else ""), probs[i] if (primary and probs and i < len(probs)) else None))
    return shown, 0


def family_tables(sheets: dict[str, list[dict[str, Any]]]) -> dict[str, list[TableView]]:
    """The table views of each family, in :data:`SHEETS` order; empty sheets are left out."""
    out: dict[str, list[TableView]] = {}
    for key, (family, title, note) in SHEETS.items():
        view = table_view(key, sheets.get(key) or [], family, title, note, HIDDEN.get(key, ()))
        if view is not None:
            out.setdefault(family, []).append(view)
        for split, (sheet, fam, stitle, snote, columns) in SPLIT_VIEWS.items():
            if sheet == key:
                rows = [{k: v for k, v in r.items()
                         if (k.split("_low")[0].split("_high")[0] in columns or k in columns)
                         and not (r.get("ES_reading") and k.startswith(r["ES_reading"]))}  # ES: once per page
                        for r in sheets.get(key) or []]
                split_view = table_view(split, rows, fam, stitle, snote)
                if split_view is not None:
                    out.setdefault(fam, []).append(split_view)
    return out


def status_warnings(run: dict[str, Any]) -> list[str]:
    """A banner for a run that did not finish (see reasonscope.store, "Run status")."""
    if run.get("status") == "interrupted":
        return ["this run was interrupted before it finished: the numbers cover only the generations and scores it "
                "stored; run the same command again to complete it (stored generations are not requested again)"]
    if run.get("status") == "running":
        where = f" (pid {run['pid']} on {run.get('host')})" if run.get("pid") else ""
        return [f"this run is still running{where}: this report shows what it has stored so far"]
    return []


def item_views(data: RunData, scores_by_item: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Per item: question, gold, every question-variant generation, and the per-model CQ verdict.

    Each generation comes with its steps and their contradiction probabilities.
    """
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
            primary = g.variant == "original" and g.sample == 0
            probs = (sc.get("behavior.LS", {}).get("details") or {}).get("contradiction") or []
            cq = sc.get("behavior.CQ")
            if primary and cq and cq["value"] is not None:
                verdicts[g.model] = cq["value"] == 1.0
            steps_scored, steps_left = step_views(g.steps, probs, primary)
            raw_text, raw_left = clip(g.raw_text)
            rendered.append({"model": g.model, "variant": g.variant, "sample": g.sample, "answer": g.answer,
                             "answer_reason": g.answer_reason, "error": g.error, "truncated": g.truncated,
                             "raw_text": raw_text, "raw_left": raw_left, "steps_scored": steps_scored,
                             "steps_left": steps_left})  # what the page shows (module docstring: bounded texts)
        question, question_left = clip(item.input)
        items.append({"key": key, "type": item.metadata.get("type") or item.answer_type, "input": question,
                      "input_left": question_left, "choices": item.choices, "target": item.target,
                      "generations": rendered, "verdicts": verdicts})
    return items


def run_warnings(run: dict[str, Any], notes: dict[str, Any], tables: dict[str, Any]) -> list[str]:
    """The page's banners: run-level warnings only (status, exit code, skipped models).

    A family's warnings are listed in full on its card (:mod:`reasonscope.report.cards`), so each is written
    once.
    """
    warnings = status_warnings(run)
    for model, why in (notes.get("skipped_models") or {}).items():
        warnings.append(f"skipped model {model}: {why}")
    outcome = notes.get("outcome") or {}
    if outcome.get("code"):
        warnings.insert(0, f"exit code {outcome['code']}: {outcome['message']}")
    return warnings


def stream_html(out: IO[str], run: dict[str, Any], tables: dict[str, Any], items: Iterable[dict[str, Any]],
                sheets: dict[str, list[dict[str, Any]]], images: dict[str, str],
                gaps: dict[str, list[str]] | None = None, *, header: dict[str, Any] | None = None,
                about: list[str] | None = None) -> None:
    """Write the report page to ``out`` as it renders, reading ``items`` once: never held in memory whole.

    ``items``: the item views (:func:`item_views`, e.g. chunk by chunk). ``tables``: each family's stored
    result (None when absent); ``images``: plot name -> base64 PNG (a name starts with its family); ``gaps``:
    per family, why a plot was not drawn; ``header``: the models, datasets and date the first line names;
    ``about``: lines on what the numbers show and do not (the demo's caveats).
    """
    env = Environment(loader=PackageLoader("reasonscope.report", "templates"),
                      autoescape=select_autoescape(["html", "j2"]), finalize=visible_text)
    images = {name: Markup(data) for name, data in images.items()}  # base64: written whole, nothing to escape
    notes = run.get("notes") or {}
    evidence = tables.get("evidence")
    views = iter(items)
    first = next(views, None)  # whether the page has an Items section, without reading further
    env.get_template("report.html.j2").stream(
        run=run, cards=family_cards(**tables), warnings=run_warnings(run, notes, tables),
        views=family_tables(sheets), images=images, gaps=gaps or {},
        items=chain([first], views) if first is not None else iter(()), has_items=first is not None,
        bad_rows=notes.get("bad_rows") or {}, ev_views={m: instance_views(t) for m, t in (evidence or {}).items()},
        attack_rows=sheets.get("attack_items", []), text_chars=HTML_TEXT_CHARS, header=header, about=about or [],
        **tables).dump(out)
