"""The summary cards at the top of the HTML report: one per family present.

A card shows the family's headline number per model (or per method) with its 95% CI and n, what
computed it (backend, evaluator, judges), and how many warnings the family raised with the first two.
The headline of each family, and why:

* behavior: correctness CQ, the number every other behaviour metric is read against;
* evidence: support coverage of correctly predicted instances (the preferred matcher), RACE's main
  reading: do right answers cite the classifier's supporting evidence;
* information: REV and LAREV of the gold rationales, in nats;
* attributes: the judged correctness attribute (else the first attribute scored), mean 0-1;
* attack: attack success rate of the first attack method, over the decided attacks (higher = more
  fragile reasoning).

Caveats: a card whose numbers cannot mean much says so first, in its own box above the numbers
(:func:`caveats`): an information evaluator whose accuracy on the gold rationales is at most
:data:`CHANCE_MARGIN` above chance (1 / number of labels; 0 when the labels are decoded, more than
20), a headline over fewer than :data:`FEW_ITEMS` items (the n of the card's own lines: the attributes
card counts one model's scored answers, not all models' together), a judge that is also a judged model,
judges whose Krippendorff's alpha is below :data:`MIN_ALPHA` on some attribute. Models a family left out
(an attack needs a white-box model) are listed first among the card's warnings. A card's
warnings are listed in full (the first :data:`FIRST_WARNINGS`, the rest behind "more"); the report's
banners hold only run-level warnings, so each warning is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..family_order import SUMMARY_ORDER
from ..metric_specs import attribute_label, metric_spec
from .evidence_view import HIGHLIGHT_PREFERENCE
from .numbers import format_column, format_estimate, format_number

FIRST_WARNINGS = 2
FEW_ITEMS = 30
"""Fewer items than this behind a headline: its interval is wide and the card says the numbers show the
pipeline rather than measure a model."""
CHANCE_MARGIN = 0.1
"""An evaluator within this much of chance accuracy on the gold rationales makes REV/LAREV meaningless."""
MIN_ALPHA = 0.667
"""Judges whose Krippendorff's alpha is below this on an attribute disagree too much for its mean to be read
(Krippendorff, "Content Analysis": 0.667 is the least for tentative conclusions)."""
MAX_LISTED_LABELS = 20
"""The information family ranks at most this many labels; with more, labels are decoded (chance ~ 0)."""


@dataclass
class CardLine:
    """One line of a summary card: a model (or model and method), its formatted value and n."""

    name: str
    value: str
    n: str = ""
    estimate: dict[str, Any] | None = None
    """The estimate behind ``value`` (``value``, ``low``, ``high``): the card's lines are one column, rounded
    alike (:func:`reasonscope.report.numbers.format_column`)."""
    unit: str = ""


@dataclass
class Card:
    """A summary card of one family: headline metric and direction, and one line per model.

    Also what computed it, and the family's warnings and caveats.
    """

    family: str
    title: str
    anchor: str
    headline: str
    direction: str
    lines: list[CardLine]
    backend: str
    warnings: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    @property
    def first_warnings(self) -> list[str]:
        """The warnings shown open on the card, in full."""
        return self.warnings[:FIRST_WARNINGS]

    @property
    def more_warnings(self) -> list[str]:
        """The warnings behind the card's "more" (in full)."""
        return self.warnings[FIRST_WARNINGS:]


def few_items_caveat(what: str, n: int | None) -> list[str]:
    """``["only n <what>: ..."]`` when ``n`` is below :data:`FEW_ITEMS`, else ``[]``."""
    if n is None or n >= FEW_ITEMS:
        return []
    return [f"only {n} {what}: the intervals are wide; these numbers show the pipeline at work, they do not "
            "measure the model"]


def information_caveats(t: dict[str, Any]) -> list[str]:
    """Why REV or LAREV cannot be read: its evaluator's accuracy on the gold rationales near chance.

    One caveat naming every method whose evaluator (Phi for REV, Phi_LA for LAREV) ranks the true label
    first for at most chance + :data:`CHANCE_MARGIN` of the test items; the other methods stay readable.
    """
    labels = t.get("labels") or []
    chance = 1 / len(labels) if 0 < len(labels) <= MAX_LISTED_LABELS else 0.0
    gold = {m.upper(): acc.get("gold") for m, acc in (t.get("accuracy") or {}).items() if acc.get("gold") is not None}
    near = {m: a for m, a in gold.items() if a <= chance + CHANCE_MARGIN}
    if not near:
        return []
    accs = ", ".join(f"{m} {format_number(a, 2)}" for m, a in near.items())
    which = "these scores cannot" if len(near) == len(gold) else f"the {' and '.join(near)} scores cannot"
    return [f"{which} mean much: with the gold rationales the evaluators rank the true label first for "
            f"{accs} of the test items (chance {format_number(chance, 2)}); an evaluator that has not learnt the task "
            "gives log-probability differences that carry no label information, however tight their intervals"]


def _direction(family: str, key: str) -> str:
    hib = metric_spec(family, key).higher_is_better
    return {True: "higher is better", False: "lower is better"}.get(hib, "neither direction is better")


def _line(name: str, e: dict[str, Any] | None, unit: str = "", n: Any = None) -> CardLine:
    n = (e or {}).get("n") if n is None else n
    if not e or e.get("value") is None:
        why = (e or {}).get("reason") or ("no item" if n == 0 else None)
        return CardLine(name, "n/a" + (f" ({why})" if why else ""), "" if n is None else f"n={n}")
    return CardLine(name, format_estimate(e["value"], e.get("low"), e.get("high"), unit), "" if n is None else f"n={n}",
                    e, unit)


def behavior_card(t: dict[str, Any]) -> Card:
    """The behaviour card: CQ per model, with the answer matching, NLI and similarity backends."""
    lines = [_line(m, mets.get("CQ")) for m, mets in t.get("metrics", {}).items()]
    b = t.get("backends", {})
    n = max((mets.get("CQ", {}).get("n") or 0 for mets in t.get("metrics", {}).values()), default=None)
    return Card("behavior", "Behaviour", "behavior", metric_spec("behavior", "CQ").label, _direction("behavior", "CQ"),
                lines, f"answers: {b.get('answer_matching')}; NLI: {b.get('nli')}; similarity: {b.get('similarity')}",
                list(t.get("warnings", [])), few_items_caveat("items per model", n))


def evidence_card(evidence: dict[str, Any]) -> Card:
    """The evidence card: support coverage of correctly predicted instances per model (preferred matcher)."""
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
        lines.append(_line(model, group["support"], n=group["n"]))
    return Card("evidence", "Evidence (RACE)", "evidence", "Support coverage of correct predictions",
                _direction("evidence", "coverage_support"), lines,
                f"TF-IDF + logistic regression; matcher: {', '.join(sorted(matchers)) or 'none'}", warnings,
                few_items_caveat("test instances per model", max(sizes, default=None)))


def information_card(t: dict[str, Any]) -> Card:
    """The information card: REV and LAREV of the gold rationales in nats (higher = more label info)."""
    lines = [_line(m.upper(), row.get("gold"), "nats") for m, row in t.get("absolute", {}).items()]
    return Card("information", "Information (REV, LAREV)", "information", "Score of the gold rationales",
                "higher = more new label information", lines,
                f"evaluator: {t.get('evaluator')}; baseline: {t.get('baseline')}; log p {t.get('reduction')} over y's "
                "tokens", list(t.get("warnings", [])),
                information_caveats(t) + few_items_caveat("test items", t.get("n_test")))


def attributes_card(t: dict[str, Any]) -> Card:
    """The attributes card: judged correctness per model (else the first attribute scored), judges."""
    scores = t.get("scores") or {}
    attrs = list(next(iter(scores.values()), {}))
    scored = [a for a in attrs if any(scores[m][a]["value"] is not None for m in scores)]
    attr = "correctness" if "correctness" in scored else (scored[0] if scored else None)
    lines = [_line(m, row.get(attr)) for m, row in scores.items()] if attr else []
    judges = ", ".join(t.get("judges") or []) or "none"
    self_judged = sorted(set(t.get("judges") or []) & set(scores))
    caveats = [f"{', '.join(self_judged)} judges its own answers"] if self_judged else []
    caveats += judge_disagreement_caveat(t.get("agreement") or {})
    label = attribute_label(attr) if attr else ""
    # the lines' own n (answers of one model with a score), never the judged answers of all models together
    n = min((row[attr].get("n") or 0 for row in scores.values()), default=None) if attr else t.get("n_targets")
    return Card("attributes", "Attributes", "attributes",
                f"{label} (mean score 0-1)" if attr else "No attribute scored",
                _direction("attributes", "score"), lines, f"judges: {judges} (scale {t.get('scale')})",
                list(t.get("warnings", [])), caveats + few_items_caveat("judged answers per model", n))


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


def attack_card(t: dict[str, Any]) -> Card:
    """The attack card: each model's attack success rate of its first method, over the decided attacks."""
    lines, decided = [], []
    for model, m in t.get("models", {}).items():
        method = next(iter(m.get("rates", {})), None)
        if method is None:
            lines.append(CardLine(model, "n/a (not attacked)"))
            continue
        r = m["rates"][method]
        decided.append(r["n"])
        line = _line(f"{model} · {method}", r["success"], n=r["n"]) if r["n"] else \
            CardLine(f"{model} · {method}", "n/a (no decided attack)", f"n=0 of {r['attacked']} attacked")
        lines.append(line)
    return Card("attack", "Attack (MATCHA)", "attack", metric_spec("attack", "success").label,
                "higher = more fragile reasoning", lines, f"reasoning check: {t.get('reasoning_check')}",
                list(t.get("warnings", [])), few_items_caveat("decided attacks", max(decided, default=None)))


def family_cards(behavior=None, evidence=None, information=None, attributes=None, attack=None) -> list[Card]:
    """The cards of the families present, in the report's order.

    The order is :data:`reasonscope.family_order.SUMMARY_ORDER`, also the terminal's.
    """
    tables = {"behavior": (behavior, behavior_card), "evidence": (evidence, evidence_card),
              "attributes": (attributes, attributes_card), "information": (information, information_card),
              "attack": (attack, attack_card)}
    cards = []
    for name in SUMMARY_ORDER:
        t = tables[name][0]
        if t:
            card = tables[name][1](t)
            same_rule(card.lines)
            card.warnings = [f"left out {why}" if why.startswith(f"{m}:") else f"left out {m}: {why}"
                             for m, why in left_out_models(t).items()] + card.warnings
            cards.append(card)
    return cards


def same_rule(lines: list[CardLine]) -> None:
    """Rewrite the values of a card's lines at one rounding rule (the lines are one column)."""
    shown = [line for line in lines if line.estimate and line.estimate.get("value") is not None]
    for line, text in zip(shown, format_column([line.estimate for line in shown]), strict=True):
        line.value = f"{text} {line.unit}" if line.unit else text


def left_out_models(t: dict[str, Any]) -> dict[str, str]:
    """The models a family's result says it left out (``skipped_models``: model -> why), else ``{}``."""
    return dict(t.get("skipped_models") or {}) if isinstance(t, dict) else {}
