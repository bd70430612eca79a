"""Evidence labels by log-likelihood (``families.evidence.label_reading: likelihood``).

This is the multiple-choice method of lm-evaluation-harness.

For each test item and each class label c, with the model's prompt for that item (the same
instruction as the generated prediction, :func:`reasonscope.evidence.scoring.build_messages`),

    lp_c = log p(c | prompt)        (summed over the label's tokens, not length-normalised, as lm-eval's acc)
    label = argmax_c lp_c           (ties to the first label in class order)

(:func:`reasonscope.judge.logprob_scores.most_likely_label`). A local model (``hf/...``, ``smollm2``)
reads the label where its JSON answer starts, after its chat template's assistant turn and
``{"label": "``, with the closing quote as part of each continuation (so "sport" cannot win by being
a prefix of "sports"); the prompt's key/value cache is shared by the labels. An OpenAI-compatible model
reads the first answer token's ``top_logprobs`` after "Answer with the label only.", and a label is
compared by its first token only (stated in the table): with t the longest prefix (of two characters or
more) of the label found among the 20 alternatives and T the same for the capitalised label (when it differs),
lp_c = log(p(t) + p(T)), -inf when neither is there (:func:`first_token_logprobs`). Labels of several
tokens ("entailment", "contradiction" on SmolLM2) are read this way; labels that share their first token
tie (the first one wins).

The label replaces the sampled one; the rationale stays the one the model wrote (the coverage of a
rationale is measured against the classifier's evidence for the evaluated class, which now follows
the likelihood label). The log-probabilities are cached in the store (score cache kind
``label-logprobs``), so a re-run makes no model call. Models the run cannot rebuild (``reasonscope
score`` on imported outputs) keep their sampled labels, with a warning.
"""

from __future__ import annotations

import math
from typing import Any

from ..judge.logprob_scores import chat_prompt, logprobs_many, most_likely_label
from ..scorers.cache import logprob_scorer
from ..types import Item

LIKELIHOOD_VERSION = "evidence-likelihood-v1"
METHOD = "most likely label by log-likelihood (lm-eval multiple choice)"
JSON_START = '{"label": "'


def label_prompt(model: Any, messages: list[dict[str, str]]) -> tuple[str, bool]:
    """The likelihood prompt of one item, as ``(prompt, local)``.

    For a local model the prompt is the chat turn plus the start of the JSON answer, else the user
    text asking for the label only.
    """
    text, local = chat_prompt(model, messages)
    return (text + JSON_START, True) if local else (text + "\nAnswer with the label only.", False)


def likelihood_labels(model: Any, items: list[Item], labels: list[str], messages_of, store=None
                      ) -> dict[str, dict[str, Any]]:
    """Map item id -> the most likely label and its reading.

    Each value is {"label", "probabilities" (renormalised over the labels), "valid_mass", "method"};
    ``label`` is None with ``reason`` when no label has a finite log-probability.
    """
    prompts, local = [], False
    for it in items:
        prompt, local = label_prompt(model, messages_of(it, labels))
        prompts.append(prompt)
    first = not local and bool(getattr(model, "logprobs_first_token", False))  # top alternatives only
    conts = [lab + '"' for lab in labels] if local else first_token_candidates(labels) if first else list(labels)
    scorer = logprob_scorer(model, kind="label-logprobs", template=LIKELIHOOD_VERSION, continuations=conts,
                            compute=lambda m, ps: logprobs_many(m, ps, conts), what="label log-likelihoods",
                            store=store, chunk=16, label=f"evidence {model.name} (label likelihoods)")
    out: dict[str, dict[str, Any]] = {}
    for it, lps in zip(items, scorer.run(prompts) if prompts else [], strict=True):
        if first:
            lps = first_token_logprobs(labels, dict(zip(conts, lps, strict=True)))
        w = most_likely_label(dict(zip(labels, lps, strict=True)), labels)
        out[it.id] = {"label": w.value, "probabilities": w.probabilities, "valid_mass": w.valid_mass,
                      "method": METHOD + ("" if local else " (first answer token's top_logprobs)"),
                      "reason": w.reason}
    return out


def first_token_candidates(labels: list[str]) -> list[str]:
    """The continuations asked of an API model.

    Every prefix of each label and of its capitalised form, of two characters or more (or the whole label when
    it is shorter), without repeats (the first answer token of a label is one of them; a one-letter token such
    as "C" or "e" says too little to name a label).
    """
    out: dict[str, None] = {}
    for lab in labels:
        for form in dict.fromkeys((lab, lab[:1].upper() + lab[1:])):
            out.update(dict.fromkeys(form[:i] for i in range(min(2, len(form)), len(form) + 1)))
    return list(out)


def first_token_logprobs(labels: list[str], read: dict[str, float]) -> list[float]:
    """Log-probability log p(label) read from the first answer token.

    For the label and its capitalised form (when it differs), the log-probability of its longest prefix
    (two characters or more, :func:`first_token_candidates`) that has a finite value in ``read``
    (candidate -> log-probability from the top alternatives); the two forms are different tokens, so
    their probabilities add: lp = log(p(t) + p(T)). -inf when neither form has one. Range (-inf, 0].
    """
    out = []
    for lab in labels:
        total = 0.0
        for form in dict.fromkeys((lab, lab[:1].upper() + lab[1:])):
            found = [read.get(form[:i], -math.inf) for i in range(len(form), min(2, len(form)) - 1, -1)]
            best = next((lp for lp in found if math.isfinite(lp)), None)
            total += math.exp(best) if best is not None else 0.0
        out.append(math.log(total) if total > 0 else -math.inf)
    return out
