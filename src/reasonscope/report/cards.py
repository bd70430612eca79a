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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..metric_specs import metric_spec
from .evidence_view import HIGHLIGHT_PREFERENCE
from .numbers import format_estimate

FIRST_WARNINGS = 2
WARNING_CHARS = 180


@dataclass
class CardLine:
    name: str
    value: str
    n: str = ""


@dataclass
class Card:
    family: str
    title: str
    anchor: str
    headline: str
    direction: str
    lines: list[CardLine]
    backend: str
    warnings: list[str] = field(default_factory=list)

    @property
    def first_warnings(self) -> list[str]:
        return [w if len(w) <= WARNING_CHARS else w[: WARNING_CHARS - 1] + "…" for w in self.warnings[:FIRST_WARNINGS]]


def _direction(family: str, key: str) -> str:
    hib = metric_spec(family, key).higher_is_better
    return {True: "higher is better", False: "lower is better"}.get(hib, "neither direction is better")


def _line(name: str, e: dict[str, Any] | None, unit: str = "", n: Any = None) -> CardLine:
    n = (e or {}).get("n") if n is None else n
    if not e or e.get("value") is None:
        why = (e or {}).get("reason") or ("no item" if n == 0 else None)
        return CardLine(name, "n/a" + (f" ({why})" if why else ""), "" if n is None else f"n={n}")
    return CardLine(name, format_estimate(e["value"], e.get("low"), e.get("high"), unit), "" if n is None else f"n={n}")


def behavior_card(t: dict[str, Any]) -> Card:
    lines = [_line(m, mets.get("CQ")) for m, mets in t.get("metrics", {}).items()]
    b = t.get("backends", {})
    return Card("behavior", "Behaviour", "behavior", metric_spec("behavior", "CQ").label, _direction("behavior", "CQ"),
                lines, f"answers: {b.get('answer_matching')}; NLI: {b.get('nli')}; similarity: {b.get('similarity')}",
                list(t.get("warnings", [])))


def evidence_card(evidence: dict[str, Any]) -> Card:
    lines, matchers, warnings = [], set(), []
    for model, t in evidence.items():
        warnings += t.get("warnings", [])
        matcher = next((m for m in HIGHLIGHT_PREFERENCE if m in t["coverage"]), next(iter(t["coverage"]), None))
        if matcher is None:
            lines.append(CardLine(model, "n/a (no matcher ran)"))
            continue
        matchers.add(matcher)
        group = t["coverage"][matcher]["correct"]
        lines.append(_line(model, group["support"], n=group["n"]))
    return Card("evidence", "Evidence (RACE)", "evidence", "Support coverage of correct predictions",
                _direction("evidence", "coverage_support"), lines,
                f"TF-IDF + logistic regression; matcher: {', '.join(sorted(matchers)) or 'none'}", warnings)


def information_card(t: dict[str, Any]) -> Card:
    lines = [_line(m.upper(), row.get("gold"), "nats") for m, row in t.get("absolute", {}).items()]
    return Card("information", "Information (REV, LAREV)", "information", "Score of the gold rationales",
                "higher = more new label information", lines,
                f"evaluator: {t.get('evaluator')}; baseline: {t.get('baseline')}; log p {t.get('reduction')} over y's "
                "tokens", list(t.get("warnings", [])))


def attributes_card(t: dict[str, Any]) -> Card:
    scores = t.get("scores") or {}
    attrs = list(next(iter(scores.values()), {}))
    scored = [a for a in attrs if any(scores[m][a]["value"] is not None for m in scores)]
    attr = "correctness" if "correctness" in scored else (scored[0] if scored else None)
    lines = [_line(m, row.get(attr)) for m, row in scores.items()] if attr else []
    judges = ", ".join(t.get("judges") or []) or "none"
    return Card("attributes", "Attributes", "attributes",
                f"{attr.replace('_', ' ').capitalize()} (mean score 0-1)" if attr else "No attribute scored",
                _direction("attributes", "score"), lines, f"judges: {judges} (scale {t.get('scale')})",
                list(t.get("warnings", [])))


def attack_card(t: dict[str, Any]) -> Card:
    lines = []
    for model, m in t.get("models", {}).items():
        method = next(iter(m.get("rates", {})), None)
        if method is None:
            lines.append(CardLine(model, "n/a (not attacked)"))
            continue
        r = m["rates"][method]
        line = _line(f"{model} · {method}", r["success"], n=r["n"]) if r["n"] else \
            CardLine(f"{model} · {method}", "n/a (no decided attack)", f"n=0 of {r['attacked']} attacked")
        lines.append(line)
    return Card("attack", "Attack (MATCHA)", "attack", metric_spec("attack", "success").label,
                "higher = more fragile reasoning", lines, f"reasoning check: {t.get('reasoning_check')}",
                list(t.get("warnings", [])))


def family_cards(behavior=None, evidence=None, information=None, attributes=None, attack=None) -> list[Card]:
    """The cards of the families present, in the report's order."""
    out = []
    for table, make in ((behavior, behavior_card), (evidence, evidence_card), (attributes, attributes_card),
                        (information, information_card), (attack, attack_card)):
        if table:
            out.append(make(table))
    return out
