"""Evidence labels by log-likelihood (``families.evidence.label_reading: likelihood``): the
multiple-choice method of lm-evaluation-harness.

For each test item and each class label c, with the model's prompt for that item (the same
instruction as the generated prediction, :func:`reasonscope.evidence.family.build_messages`),

    lp_c = log p(c | prompt)        (summed over the label's tokens, not length-normalised, as lm-eval's acc)
    label = argmax_c lp_c           (ties to the first label in class order)

(:func:`reasonscope.judge.logprob_scores.most_likely_label`). A local model (``hf/...``, ``smollm2``)
reads the label where its JSON answer starts, after its chat template's assistant turn and
``{"label": "``, with the closing quote as part of each continuation (so "sport" cannot win by being
a prefix of "sports"); the prompt's key/value cache is shared by the labels. An OpenAI-compatible model
reads the first answer token's ``top_logprobs`` after "Answer with the label only." (a label outside
the top 20, or longer than one token, is compared by its first token only: stated in the table).

The label replaces the sampled one; the rationale stays the one the model wrote (the coverage of a
rationale is measured against the classifier's evidence for the evaluated class, which now follows
the likelihood label). The log-probabilities are cached in the store (score cache kind
``label-logprobs``), so a re-run makes no model call. Models the run cannot rebuild (``reasonscope
score`` on imported outputs) keep their sampled labels, with a warning.
"""

from __future__ import annotations

from typing import Any

from ..judge.logprob_scores import chat_prompt, logprobs_many, most_likely_label
from ..scorers.cache import logprob_scorer
from ..types import Item

LIKELIHOOD_VERSION = "evidence-likelihood-v1"
METHOD = "most likely label by log-likelihood (lm-eval multiple choice)"
JSON_START = '{"label": "'


def label_prompt(model: Any, messages: list[dict[str, str]]) -> tuple[str, bool]:
    """(prompt, local): the chat turn plus the start of the JSON answer for a local model, else the user
    text asking for the label only."""
    text, local = chat_prompt(model, messages)
    return (text + JSON_START, True) if local else (text + "\nAnswer with the label only.", False)


def likelihood_labels(model: Any, items: list[Item], labels: list[str], messages_of, store=None
                      ) -> dict[str, dict[str, Any]]:
    """item id -> {"label", "probabilities" (renormalised over the labels), "valid_mass", "method"};
    ``label`` is None with ``reason`` when no label has a finite log-probability."""
    prompts, local = [], False
    for it in items:
        prompt, local = label_prompt(model, messages_of(it, labels))
        prompts.append(prompt)
    conts = [lab + '"' for lab in labels] if local else list(labels)
    scorer = logprob_scorer(model, kind="label-logprobs", template=LIKELIHOOD_VERSION, continuations=conts,
                            compute=lambda m, ps: logprobs_many(m, ps, conts), what="label log-likelihoods",
                            store=store, chunk=16, label=f"evidence {model.name} (label likelihoods)")
    out: dict[str, dict[str, Any]] = {}
    for it, lps in zip(items, scorer.run(prompts) if prompts else [], strict=True):
        w = most_likely_label(dict(zip(labels, lps, strict=True)), labels)
        out[it.id] = {"label": w.value, "probabilities": w.probabilities, "valid_mass": w.valid_mass,
                      "method": METHOD + ("" if local else " (first answer token's top_logprobs)"),
                      "reason": w.reason}
    return out
