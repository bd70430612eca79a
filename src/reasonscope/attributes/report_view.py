"""Attributes outputs: flat tables (xlsx, csv, HTML) and plots.

The plots: mean scores with CIs, per-attribute Bradley-Terry ratings with CIs (horizontal: one row per
attribute), SHAP beeswarm and bar, and, for preference data, each attribute's ratings of the recorded battles
against the human-label ratings.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..report.cards import Card, estimate_line, few_items_caveat
from ..report.numbers import estimate_cells, format_number, round_p
from ..report.plots import ci_bars, outside_legend, pyplot, pyplot_module, save, tall
from ..report.view import FamilyReport, Table
from .catalogue import ATTRIBUTES, attribute_label
from .summary_model import AttributesJudgement, AttributesSummary


def _r(v):
    return round(v, 4) if isinstance(v, float) else v


def attributes_sheets(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The attributes family's flat tables: mean scores with CIs, ratings, judges, agreement, preferences."""
    scores = score_grid(t["scores"])
    ratings = [row for a, r in t["ratings"].items() for row in _rating_rows(a, r)]
    judges = [{"judge": j, "attribute": a, "unscored": n, **{f"mean_{m}": _r(v) for m, v in
                                                             ((m, t["per_judge"][j][m][a]) for m in t["per_judge"][j])}}
              for j, row in t["unscored"].items() for a, n in row.items()]
    agreement = [{"attribute": a, "krippendorff_alpha": _r(v["krippendorff_alpha"]),
                  "alpha_p_value": round_p(v.get("alpha_p_value")), "alpha_p_adjusted": round_p(v.get("alpha_p_adjusted")),
                  "p_adjust": (t.get("agreement_p_adjust") or {}).get("description"), "alpha_test": v.get("alpha_test"),
                  "alpha_null": v.get("alpha_null"), "spearman": _r(v["spearman"]), "units": v["units"]}
                 for a, v in t.get("agreement", {}).items()]
    out = {"attributes_scores": scores, "attributes_ratings": ratings, "attributes_judges": judges,
           "attributes_agreement": agreement,
           "attributes_hostile": [{"model": h["model"], "item": h["item"], "flags": "; ".join(h["flags"])}
                                  for h in t.get("hostile", [])]}
    pref = t.get("preferences")
    if pref:
        exp = pref.get("explain") or {}
        out["attributes_shap"] = [{"attribute": r["attribute"], "mean_abs_shap": _r(r["mean_abs_shap"]),
                                   "direction": r["direction"]} for r in exp.get("importance", [])]
        out["attributes_pairwise"] = [{"judge": j, **{k: _r(v) for k, v in p.items() if k != "records"}}
                                      for j, p in pref.get("pairwise", {}).items()]
        out["attributes_human_ratings"] = [{"model": m, "bt": _r(v["rating"]), "low": _r(v["low"]),
                                            "high": _r(v["high"]), "rank": v["rank"],
                                            "elo": _r((pref.get("human_elo") or {}).get(m))}
                                           for m, v in (pref.get("human_ratings") or {}).items()]
        out.update(preference_rating_sheets(pref.get("ratings")))
    return out


MODEL_COLUMN = "model:"
"""Prefix of a model's column in a model x attribute grid (its label is the model's name as given)."""


def score_grid(scores: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The mean scores as a grid: one row per attribute, per model its mean, CI and n (``model:<name>`` columns)."""
    attrs = list(dict.fromkeys(a for row in scores.values() for a in row))
    rows = []
    for a in attrs:
        row: dict[str, Any] = {"attribute": a}
        for m, per in scores.items():
            e = per.get(a) or {}
            key = f"{MODEL_COLUMN}{m}"
            row[key], row[f"{key}_low"], row[f"{key}_high"] = estimate_cells(e.get("value"), e.get("low"), e.get("high"))
            row[f"{key}_n"] = e.get("n")
        rows.append(row)
    return rows


def _rating_rows(label: str, r: dict[str, Any], **extra: Any) -> list[dict[str, Any]]:
    return [{"attribute": label, "model": m, **{k: _r(v) for k, v in extra.get(m, {}).items()},
             "elo": _r(r["elo"].get(m)), "bt": _r(bt["rating"]), "bt_low": _r(bt["low"]), "bt_high": _r(bt["high"]),
             "rank": bt["rank"], "rank_low": bt["rank_low"], "rank_high": bt["rank_high"], "battles": r["battles"],
             "ties": r["ties"], "draws_unbounded": bt.get("draws_unbounded")}
            for m, bt in sorted(r["bradley_terry"].items(), key=lambda kv: kv[1]["rank"])]


def preference_rating_sheets(p: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """The attribute-specific Elo of the preference battles.

    Ratings per attribute next to the human-label rating of each model, and the rank agreement of each
    attribute with the human labels.
    """
    if not p or not p.get("human"):
        return {}
    human = p["human"]["bradley_terry"]
    ref = {m: {"human_bt": v["rating"], "human_rank": v["rank"]} for m, v in human.items()}
    rows = _rating_rows("human label", p["human"], **ref)
    agreement = []
    for a, r in p["attributes"].items():
        rows += _rating_rows(a, r, **ref)
        ag = r["agreement_with_human"]
        agreement.append({"attribute": a, "spearman_vs_human": _r(ag["spearman"]),
                          "kendall_vs_human": _r(ag["kendall"]), "models": ag["models"], "battles": r["battles"],
                          "ties": r["ties"], "unscored_records": r.get("unscored_records"),
                          "margin": p["margin"]})
    return {"attributes_preference_ratings": rows, "attributes_preference_agreement": agreement}


def _errors(bt: dict[str, dict], models: list[str]) -> np.ndarray:
    """Error-bar lengths (2 x n) from each rating to its interval ends (0 where there is no interval)."""
    return np.array([[v["rating"] - (v["low"] if v["low"] is not None else v["rating"]),
                      (v["high"] if v["high"] is not None else v["rating"]) - v["rating"]]
                     for v in (bt[m] for m in models)]).T.reshape(2, len(models))


def preference_ratings_plot(p: dict[str, Any], path: Path) -> Path | None:
    """One panel per attribute: each model's rating from the recorded battles against its human-label rating.

    Y: the Bradley-Terry rating when the attribute decides the recorded battles (95% CI); x: the rating from
    the human labels (95% CI); each panel names Spearman's rho.
    """
    if not p or not p.get("human") or not p.get("attributes"):
        return None
    plt = pyplot()
    human = p["human"]["bradley_terry"]
    attrs = list(p["attributes"])
    cols = min(4, len(attrs))
    rows = math.ceil(len(attrs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.0 * rows), squeeze=False)
    for ax, a in zip(axes.flat, attrs, strict=False):
        bt = p["attributes"][a]["bradley_terry"]
        models = [m for m in bt if m in human]
        x = np.array([human[m]["rating"] for m in models])
        y = np.array([bt[m]["rating"] for m in models])
        ax.errorbar(x, y, xerr=_errors(human, models), yerr=_errors(bt, models), fmt="o", ms=3, lw=0.6, capsize=1.5)
        for m, xi, yi in zip(models, x, y, strict=True):
            ax.annotate(m, (xi, yi), fontsize=8, xytext=(2, 2), textcoords="offset points")
        rho = p["attributes"][a]["agreement_with_human"]["spearman"]
        ax.set_title(f"{attribute_label(a)} (rho = {'n/a' if rho is None else f'{rho:.2f}'})", fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(attrs):]:
        ax.axis("off")
    fig.supxlabel("Bradley-Terry rating from the human labels (Elo scale)", fontsize=9)
    fig.supylabel("rating when the attribute decides (Elo scale)", fontsize=9)
    fig.tight_layout()
    return save(fig, path)


def attributes_plots(t: dict[str, Any], folder: Path, gaps: list[str] | None = None) -> dict[str, Path]:
    """Mean scores, ratings, preference ratings and SHAP plots.

    A plot with nothing to draw is not drawn and why is appended to ``gaps``.
    """
    out: dict[str, Path] = {}
    gaps = [] if gaps is None else gaps
    plt = pyplot()
    if not any(e["value"] is not None for row in (t["scores"] or {}).values() for e in row.values()):
        gaps.append("no score plot: no attribute received a score (every judgement unscored or no judge configured)")
    if t["scores"]:
        models = list(t["scores"])
        attrs = [a for a in next(iter(t["scores"].values())) if any(t["scores"][m][a]["value"] is not None
                                                                       for m in models)]
        if attrs:  # many attributes: horizontal bars, labels on the y axis (the layout rule of plots.py)
            fig, ax = plt.subplots(figsize=tall(len(attrs), len(models)))
            ci_bars(ax, attrs, t["scores"], capsize=2, horizontal=True, labels=[attribute_label(a) for a in attrs])
            ax.set_xlim(0, 1.05)
            ax.set_xlabel("mean score (0-1, higher is better; 95% CI)")
            outside_legend(ax)
            ax.set_title("Attribute scores per model")
            out["attributes_scores"] = save(fig, folder / "attributes_scores.png")
    ratings = t.get("ratings") or {}
    if not ratings:
        gaps.append("no rating plots: ratings need at least two models scored on the same items")
    if ratings:
        attrs = list(ratings)
        models = sorted({m for r in ratings.values() for m in r["bradley_terry"]})
        fig, ax = plt.subplots(figsize=tall(len(attrs), len(models)))
        series = {m: {a: {"value": r["bradley_terry"][m]["rating"], "low": r["bradley_terry"][m]["low"],
                          "high": r["bradley_terry"][m]["high"]} for a, r in ratings.items() if m in r["bradley_terry"]}
                  for m in models}
        ci_bars(ax, attrs, series, points=True, horizontal=True, labels=[attribute_label(a) for a in attrs])
        ax.axvline(1000, color="grey", lw=0.5)
        ax.set_xlabel("Bradley-Terry rating (Elo scale, 1000 = average; 95% CI)")
        outside_legend(ax)
        ax.set_title("Per-attribute ratings (higher is better)")
        out["attributes_ratings"] = save(fig, folder / "attributes_ratings.png")
    pref_plot = preference_ratings_plot((t.get("preferences") or {}).get("ratings"),
                                        folder / "attributes_preference_elo.png")
    if pref_plot is not None:
        out["attributes_preference_elo"] = pref_plot
    exp = (t.get("preferences") or {}).get("explain")
    if exp and exp.get("shap_values"):
        feats = np.array([[np.nan if x is None else x for x in row] for row in exp["features"]], dtype=float)
        names = [attribute_label(a) for a in t["attributes"]]  # "No hallucination (1 = none)": the sign reads right
        for kind, p in shap_plots(np.array(exp["shap_values"], dtype=float), feats, names, folder).items():
            out[f"attributes_shap_{kind}"] = p
    return out


def shap_plots(shap_values: np.ndarray, features: np.ndarray, names: list[str], folder: Path,
               prefix: str = "attributes") -> dict[str, Path]:
    """SHAP beeswarm and bar plots (PNG) of a preference explanation."""
    import shap

    plt = pyplot_module()
    out = {}
    for kind in ("beeswarm", "bar"):
        plt.figure()
        shap.summary_plot(shap_values, features, feature_names=names, show=False,
                          plot_type="dot" if kind == "beeswarm" else "bar")
        path = Path(folder) / f"{prefix}_shap_{kind}.png"
        plt.tight_layout()
        out[kind] = save(plt.gcf(), path, dpi=100)
    return out


MIN_ALPHA = 0.667
"""Judges whose Krippendorff's alpha is below this on an attribute disagree too much for its mean to be read
(Krippendorff, "Content Analysis": 0.667 is the least for tentative conclusions)."""


def judge_disagreement_caveat(agreement: dict[str, Any]) -> list[str]:
    """A caveat when the judges disagree: Krippendorff's alpha below :data:`MIN_ALPHA` for some attribute.

    Names the range of alpha over those attributes and how many they are; ``[]`` when every alpha is at
    least :data:`MIN_ALPHA` or there is none (one judge).
    """
    low = {a: v["krippendorff_alpha"] for a, v in agreement.items()
           if v.get("krippendorff_alpha") is not None and v["krippendorff_alpha"] < MIN_ALPHA}
    if not low:
        return []
    lo, hi = min(low.values()), max(low.values())
    span = format_number(lo, 2) if len(low) == 1 else f"{format_number(lo, 2)} to {format_number(hi, 2)}"
    return [f"the judges disagree: Krippendorff's alpha {span} on {len(low)} of {len(agreement)} attributes (below "
            f"{MIN_ALPHA}, the least Krippendorff accepts for tentative conclusions); a mean score there says more "
            "about the judge than about the answers"]


def attributes_card(t: dict[str, Any]) -> Card:
    """The attributes card: judged correctness per model (else the first attribute scored), judges.

    Caveats: a judge that is also a judged model, judges that disagree (:func:`judge_disagreement_caveat`),
    few scored answers (the n of one model's scored answers, never all models' together).
    """
    scores = t.get("scores") or {}
    attrs = list(next(iter(scores.values()), {}))
    scored = [a for a in attrs if any(scores[m][a]["value"] is not None for m in scores)]
    attr = "correctness" if "correctness" in scored else (scored[0] if scored else None)
    lines = [estimate_line(m, row.get(attr)) for m, row in scores.items()] if attr else []
    judges = ", ".join(t.get("judges") or []) or "none"
    self_judged = sorted(set(t.get("judges") or []) & set(scores))
    caveats = [f"{', '.join(self_judged)} judges its own answers"] if self_judged else []
    caveats += judge_disagreement_caveat(t.get("agreement") or {})
    label = attribute_label(attr) if attr else ""
    # the lines' own n (answers of one model with a score), never the judged answers of all models together
    n = min((row[attr].get("n") or 0 for row in scores.values()), default=None) if attr else t.get("n_targets")
    return Card("attributes", "Attributes", "attributes",
                f"{label} (mean score 0-1)" if attr else "No attribute scored",
                REPORT.direction("score"), lines, f"judges: {judges} (scale {t.get('scale')})",
                list(t.get("warnings", [])), caveats + few_items_caveat("judged answers per model", n))


class AttributesReport(FamilyReport):
    """The attributes family's report: score grid, ratings, agreement, preference tables, plots and card."""

    name = "attributes"
    title = "Attributes"
    metrics = ATTRIBUTES
    summary_type = AttributesSummary
    records = {"attributes_judgements": AttributesJudgement}
    template = "attributes.html.j2"
    column_labels = {"bt": "Bradley-Terry rating (Elo)", "value": "Mean score"}
    spec_aliases = {"value": "score"}
    tables = {
        "attributes_scores": Table("Mean attribute scores (attribute x model)", "Mean over items of the normalised "
                                   "score (0-1, higher is better), 95% CI over items (a score interval for a bounded "
                                   "mean); n = items with a score."),
        "attributes_ratings": Table("Per-attribute ratings", "Battles per attribute between every two models on each "
                                    "item; rank bounds from the bootstrap ranks."),
        "attributes_judges": Table("Per judge", "Each judge's unscored answers and mean score per model."),
        "attributes_agreement": Table("Agreement between judges", "Krippendorff's alpha (interval) over the judged "
                                      "units and Spearman's rho between judges; p from the test named per row."),
        "attributes_hostile": Table("Rationales flagged as hostile", "Rationales that address the judge or hold "
                                    "instructions; their scores are kept and flagged."),
        "attributes_shap": Table("Preference explanation (SHAP)", "LightGBM on attribute(A) - attribute(B) "
                                 "predicting the human preference."),
        "attributes_pairwise": Table("Pairwise judging", "Pairwise judgements, each pair judged in both orders."),
        "attributes_human_ratings": Table("Ratings from the human labels", "Bradley-Terry and Elo ratings of the "
                                          "recorded battles decided by the human labels."),
        "attributes_preference_ratings": Table("Ratings when an attribute decides the battles",
                                               "The recorded battles decided by each attribute's judged scores."),
        "attributes_preference_agreement": Table("Attribute ratings vs human-label ratings",
                                                 "Rank correlation over the models."),
    }

    def summary(self, artefact: dict[str, Any]) -> dict[str, Any]:
        """The tables without the judgements (those are ``attributes_judgements.jsonl``)."""
        return {k: v for k, v in artefact.items() if k != "judgements"}

    def record_rows(self, artefact: dict[str, Any]) -> dict[str, Any]:
        """``attributes_judgements``: one line per judge and judged chain."""
        return {"attributes_judgements": artefact["judgements"]}

    def sheets(self, artefact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """:func:`attributes_sheets`."""
        return attributes_sheets(artefact)

    def plots(self, artefact: dict[str, Any], folder: Path, gaps: list[str]) -> dict[str, Path]:
        """:func:`attributes_plots`."""
        return attributes_plots(artefact, folder, gaps)

    def card(self, artefact: dict[str, Any]) -> Card:
        """:func:`attributes_card`."""
        return attributes_card(artefact)

    def value_label(self, column: str, value: str) -> str | None:
        """An attribute's label (:func:`attribute_label`) in an ``attribute`` column; a metric's in ``metric``."""
        if column == "attribute":
            return attribute_label(value)
        return super().value_label(column, value)


REPORT = AttributesReport()
