"""Probability-weighted attribute scores (``families.attributes.scoring: expected``).

The method of *G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment* (Liu et al., 2023).

Instead of reading the one score a judge writes, each attribute is asked on its own (as G-Eval asks
one criterion per prompt): the judge sees the question, the reasoning, the attribute's definition and
"answer with a whole number from 0 to 10 and nothing else", and the log-probability of each score
string "0".."10" as the judge's answer is read. With lp_s those log-probabilities,

    p_s = exp(lp_s) / sum_t exp(lp_t)        (renormalised over the eleven valid scores)
    score = sum_s p_s * s / 10               (normalised to 0-1 like every judge score)

(:func:`reasonscope.judge.logprob_scores.expected_score`). The mass the judge puts on anything else
is dropped by the renormalisation and kept with the score as ``valid_mass``; a judge whose valid
scores all have probability 0 (log-probability not finite) leaves the attribute unscored, with the
reason. A local model (``hf/...``, ``smollm2``) reads the score after its chat template's assistant
turn; the twelve prompts of one rationale are tokenised whole and their common token prefix (everything
up to the attribute) is run once, the eleven score strings and the twelve attribute endings on copies
of its key/value cache (:meth:`~reasonscope.models.hf_provider.HFModel.logprobs_shared`: the same
numbers as each prompt alone). An OpenAI-compatible model reads the first answer token's
``top_logprobs`` (scores outside the top 20 get probability 0).

Why: a small judge writes the same sampled score for everything (the embedded SmolLM2 writes one
score for every rationale), while its probabilities over the scores still differ between rationales.
Departure from G-Eval: no chain-of-thought "evaluation steps" are generated first, so every
attribute costs one forward pass and no generation.

Caching: the log-probabilities are stored in the score cache (kind ``judge-score``, keyed by judge
spec, template version and prompt text), so a re-run makes no judge call. Needs the 0-10 scale
(whole-number score strings); plan validation says so otherwise.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..judge.attributes import ATTRIBUTES
from ..judge.logprob_scores import chat_prompt, expected_score, logprobs_many, scale_values
from ..scorers.cache import logprob_scorer
from ..storage.store import Store
from .judging import Judged, Target
from .settings import AttributesConfig

# v2: arithmetic accuracy was 0 without a calculation; v3: that sentence removed (the publication's rubric)
EXPECTED_VERSION = "judge-expected-v3"
METHOD = "expected score over the valid score strings 0..10 (G-Eval)"
MARKER = "\n\nAttribute: "  # the per-attribute part comes last, so one rationale's prompts share the rest


def expected_messages(question: str, rationale: str, attribute: str, context: str | None = None, *,
                      definition: str | None = None) -> list[dict[str, str]]:
    """One attribute, answered by a bare whole number from 0 to 10 (module docstring).

    ``definition`` replaces the attribute's definition (a benchmark compares wordings); None: the shipped one.
    """
    system = ("You grade the reasoning written by another model on one attribute. Answer with a single whole "
              "number from 0 to 10 and nothing else; higher is better.")
    user = (f"Question:\n{question}\n\n" + (f"Context:\n{context}\n\n" if context else "")
            + f"Reasoning to grade:\n{rationale}{MARKER}{attribute}: {definition or ATTRIBUTES[attribute]}\n\nScore (0-10):")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def prompt_for(judge: Any, messages: list[dict[str, str]]) -> str:
    """The text whose continuation is the score (:func:`~reasonscope.judge.logprob_scores.chat_prompt`)."""
    return chat_prompt(judge, messages)[0]


def _compute(judge: Any, units: list[list[str]], continuations: list[str]) -> list[list[list[float]]]:
    """Log-probabilities of the score strings after every prompt of every unit (one rationale's prompts)."""
    shared = getattr(judge, "logprobs_shared", None)
    if shared is not None:
        return [shared(list(prompts), continuations) for prompts in units]
    flat = iter(logprobs_many(judge, [p for prompts in units for p in prompts], continuations))
    return [[next(flat) for _ in prompts] for prompts in units]


def judge_expected(judge: Any, targets: list[Target], cfg: AttributesConfig, store: Store | None
                   ) -> dict[tuple[str, str], Judged]:
    """``(model, unit)`` -> expected scores of every attribute by ``judge`` (failed generations skipped).

    One cached input per rationale: its twelve attribute prompts, which share everything up to the attribute
    (the attribute comes last), so a local judge runs the shared part once.
    """
    values = scale_values(0, 10)
    conts = list(values)
    scorer = logprob_scorer(judge, kind="judge-score", template=EXPECTED_VERSION, continuations=conts,
                            compute=lambda j, units: _compute(j, units, conts), what="G-Eval score log-probabilities",
                            store=store, chunk=2, label=f"judge {judge.name} (expected scores)")
    names = cfg.names
    units: list[tuple[tuple[str, str], list]] = []
    for t in targets:
        if t.error:
            continue
        context = f"Reference answer: {t.reference}" if cfg.show_reference and t.reference else None
        units.append(((t.model, t.unit), [prompt_for(judge, expected_messages(t.question, t.rationale, a, context))
                                          for a in names]))
    lps = scorer.run([u for _, u in units]) if units else []
    out: dict[tuple[str, str], Judged] = {}
    for (unit, _), per_attribute in zip(units, lps, strict=True):
        res = Judged(judge.name, f"expected:{unit[0]}|{unit[1]}", {}, {}, {}, "")
        for attribute, lp in zip(names, per_attribute, strict=True):
            w = expected_score(dict(zip(conts, lp, strict=True)), values)
            if w.value is None:
                res.unscored[attribute] = f"expected score: {w.reason}"
            else:
                res.scores[attribute] = float(w.value) / 10.0
                res.explanations[attribute] = f"{METHOD}: {float(w.value):.2f}/10, valid mass {w.valid_mass:.3f}"
        res.raw = json.dumps({"method": METHOD, "scores": res.scores, "unscored": res.unscored,
                              "probabilities": {a: {c: math.exp(v) for c, v in zip(conts, lp, strict=True)}
                                                for a, lp in zip(names, per_attribute, strict=True)}})
        out[unit] = res
    return out
