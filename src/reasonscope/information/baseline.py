"""Baseline inputs b (seed 002): what the evaluator may know without the rationale.

Constructors (``information.baseline``):

* ``rule`` (default): a declarative rewrite of question + answer for QA items, and a label template
  for NLI items (``metadata.premise`` / ``metadata.hypothesis``): "premise implies hypothesis"
  (entailment), "premise contradicts hypothesis" (contradiction), "premise is not related to
  hypothesis" (neutral). QA rules, in order: a yes/no question ("Is/Are/Does/Can ...?") becomes
  "Yes, ..." / "No, ..." + the question as a statement; a question with a final "...?" clause after
  a context becomes context + "The answer to '<clause>' is <answer>."; otherwise "<question> The
  answer is <answer>." The rules are deliberately simple and stated (the source document uses a
  trained T5 infiller, which does not ship here; ``llm`` is the stronger route).
* ``llm``: any provider rewrites question + answer into one declarative sentence (cached in the
  store like every call).
* ``column``: the item's ``metadata[<column>]`` (a baseline the user computed).

The label y is :func:`label_text`: the option text for a choice item, yes/no for a boolean, the
label or the answer as text otherwise.
"""

from __future__ import annotations

import re

from ..types import Item

NLI_TEMPLATES = {"entailment": "implies", "contradiction": "contradicts", "neutral": "is not related to"}
_YESNO = re.compile(r"^(is|are|was|were|does|do|did|can|could|will|would|should|has|have|had)\b", re.I)


def label_text(item: Item) -> str:
    t = item.target
    if item.answer_type == "choice" and item.choices:
        idx = ord(str(t).upper()[0]) - ord("A") if not str(t).isdigit() else int(t)
        if 0 <= idx < len(item.choices):
            return str(item.choices[idx])
    if item.answer_type == "boolean" or isinstance(t, bool):
        return "yes" if t in (True, "yes", "true", "True", 1) else "no"
    if isinstance(t, float) and t.is_integer():
        return str(int(t))
    return str(t)


def rule_baseline(item: Item) -> str:
    y = label_text(item)
    meta = item.metadata
    if "premise" in meta and "hypothesis" in meta:
        verb = NLI_TEMPLATES.get(y.lower(), f"has the relation {y} to")
        return f"{str(meta['premise']).rstrip('.')} {verb} {str(meta['hypothesis']).rstrip('.')}."
    q = item.input.strip()
    sentences = re.split(r"(?<=[.!?])\s+", q)
    last = sentences[-1]
    context = " ".join(sentences[:-1])
    if _YESNO.match(last) and y.lower() in ("yes", "no"):
        return (f"{context} " if context else "") + f"{y.capitalize()}: {last.rstrip('?')}."
    if last.endswith("?") and context:
        return f"{context} The answer to \"{last}\" is {y}."
    return f"{q} The answer is {y}."


def rewrite_messages(question: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": "Rewrite the question and its answer as one short declarative sentence "
             "that states the answer. Reply with the sentence only.\n\n"
             f"Question: {question}\nAnswer: {answer}\nSentence:"}]
