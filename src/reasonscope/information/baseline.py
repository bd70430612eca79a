"""Baseline inputs b for REV and LAREV: what the evaluator may know without the rationale.

In REV (Chen et al., 2023, *REV: Information-Theoretic Evaluation of Free-Text Rationales*) and LAREV
(Li, 2026, *LAREV: Leakage-Aware Rationale Evaluation with Conditional V-information*) the baseline is
the input x and the label y combined into one declarative statement: for question answering the
question turned into a statement that contains the answer (the document uses a trained T5 infiller),
for NLI the premise, the label's relation and the hypothesis as one sentence (the document fills a
template and paraphrases it with a T5 paraphraser "to avoid fixed template patterns").

Constructors (``information.baseline``):

* ``rule`` (default), :func:`rule_baseline`, no model needed:

  - NLI items (``metadata.premise`` / ``metadata.hypothesis``): one of five wordings per label, picked
    by a hash of the premise and hypothesis (so a pair always gets the same one). Two sets
    (``information.nli_relation``):

    - ``word`` (default, :data:`NLI_RELATION_WORDS`): one sentence frame per pair, shared by the three
      labels, with the relation in *one verb*, as in the LAREV thesis's e-SNLI baselines ("p implies
      that h", leakage term "implies", antonym "denies"): entailment "p, which implies that h.",
      contradiction "p, which contradicts that h.", neutral "p, which allows that h.". No other word
      tells the labels apart, so masking the one term that integrated gradients finds removes the
      label from b.
    - ``phrase`` (:data:`NLI_WORDINGS`): the relation in a phrase, e.g. entailment "Since p, it follows
      that h.", contradiction "Since p, it cannot be that h.", neutral "Since p, it may or may not be
      that h.". Several words carry the label, and some ("not", "may", "cannot", "neither") are stop
      words that LAREV never takes as the leakage term, so the masked baseline still holds the label.

    The wordings stand in for the document's paraphraser: they vary the sentence frame, but every
    wording still names the relation, as the document's baselines do. The label is therefore
    recoverable from b by construction; see the baseline-only warning of
    :mod:`reasonscope.information.scoring`.
  - Questions (:func:`question_statement`): the last question of the input becomes a statement with
    the answer in the question word's place: "What is 2 + 2?" -> "2 + 2 is 4."; "How many apples does
    Ana have?" -> "Ana has 8 apples."; "..., so where did he put carpeting?" -> "..., so he put
    carpeting in the bedroom."; "Does Ana have apples?" + no -> "Ana does not have apples.". Verbs
    are inflected with lemminflect; the subject / verb boundary is a stated heuristic (the first
    base-form verb after the subject that no determiner precedes). A question the rules cannot
    rewrite gets ``Asked "<question>", the reply is <y>.`` and is counted (rule ``fallback``).
    No rule produces the Leaky rationale's "The answer is y.".

* ``llm``: any provider rewrites question + answer into one declarative sentence (cached in the
  store like every call). A failed or empty rewrite falls back to the ``rule`` baseline; every such
  substitution is counted, warned about and shown in the report.
* ``column``: the item's ``metadata[<column>]`` (a baseline the user computed).

Every baseline comes with the rule that built it (:class:`Baseline`), so the tables can count them.
The label y is :func:`label_text`: the option text for a choice item, yes/no for a boolean, the label
or the answer as text otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..types import Item, stable_hash

NLI_WORDINGS: dict[str, tuple[str, ...]] = {
    "entailment": ("{P}, which means that {h}.", "Since {p}, it follows that {h}.", "If {p}, then {h}.",
                   "{P}; therefore {h}.", "Because {p}, it must be true that {h}."),
    "contradiction": ("{P}, which means it is not true that {h}.", "Since {p}, it cannot be that {h}.",
                      "If {p}, then it is false that {h}.", "{P}; therefore it is not the case that {h}.",
                      "Because {p}, it must be false that {h}."),
    "neutral": ("{P}, which does not tell whether {h}.", "Since {p}, it may or may not be that {h}.",
                "If {p}, then possibly {h}, or possibly not.", "{P}; this neither confirms nor rules out that {h}.",
                "Because {p}, it might be true that {h}."),
}
# one frame per index, shared by the labels; the relation is the one verb {V} (a content word, never a stop word)
NLI_RELATION_FRAMES: tuple[str, ...] = ("{P}, which {V} that {h}.", "That {p} {V} that {h}.",
                                        "The fact that {p} {V} that {h}.", "{P}; this {V} that {h}.",
                                        "{P}, and this {V} that {h}.")
NLI_RELATION_VERBS: dict[str, tuple[str, ...]] = {
    "entailment": ("implies", "confirms", "proves", "shows", "entails"),
    "contradiction": ("contradicts", "refutes", "disproves", "denies", "excludes"),
    "neutral": ("allows", "permits", "admits", "allows", "permits"),
}
NLI_RELATION_WORDS: dict[str, tuple[str, ...]] = {
    label: tuple(frame.replace("{V}", verb) for frame, verb in zip(NLI_RELATION_FRAMES, verbs, strict=True))
    for label, verbs in NLI_RELATION_VERBS.items()}
NLI_RELATIONS = {"word": NLI_RELATION_WORDS, "phrase": NLI_WORDINGS}
WH_PREPOSITION = {"where": "in", "when": "in", "why": "because of"}
_COPULA = {"is", "are", "was", "were", "am"}
_DO = {"do": None, "does": "VBZ", "did": "VBD"}
_MODAL = {"can", "could", "will", "would", "shall", "should", "may", "might", "must", "has", "have", "had"}
_NEGATED = {"can": "cannot", "will": "will not", "would": "would not", "could": "could not", "shall": "shall not",
            "should": "should not", "may": "may not", "might": "might not", "must": "must not", "has": "has not",
            "have": "have not", "had": "had not"}
_DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "his", "her", "their", "my", "your", "its",
                "our", "some", "any", "every", "each", "no"}
_PREPOSITIONS = {"at", "for", "to", "with", "on", "in", "about", "from", "of", "into", "by", "after", "over"}
_WH = {"what", "who", "whom", "which", "where", "when", "why", "how"}
_WH_SEARCH = re.compile(r"\b(what|who|whom|which|where|when|why|how)\b", re.I)


@dataclass(frozen=True)
class Baseline:
    """A baseline text and the rule that built it.

    The rule is one of ``nli``, ``question``, ``yes-no``, ``fallback``, ``llm``, ``llm failed -> rule``,
    ``column``.
    """

    text: str
    rule: str


def label_text(item: Item) -> str:
    """The label y as text: the option text of a choice item, yes / no for a boolean, else the target.

    A choice target is a letter (A = first option) or a 0-based index; an integral float is written
    without its ``.0``.
    """
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


def _sentence_body(text: str) -> str:
    return re.sub(r"\s*[.!]+\s*$", "", str(text).strip())


def _lower_first(text: str) -> str:
    """Lower-case a capitalised first word ("A couple", "Two women"; not "I" or an acronym)."""
    first = text.split(" ", 1)[0]
    if first == "A" or (len(first) > 1 and first[1:].islower()):
        return text[0].lower() + text[1:]
    return text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def nli_baseline(premise: str, hypothesis: str, label: str, relation: str = "word") -> str:
    """The premise, the label's relation and the hypothesis as one sentence (a wording per pair).

    ``relation`` picks the wording set: ``word`` (:data:`NLI_RELATION_WORDS`, the relation in one verb)
    or ``phrase`` (:data:`NLI_WORDINGS`). A label outside both sets is named as it is.
    """
    p, h = _sentence_body(premise), _lower_first(_sentence_body(hypothesis))
    if relation not in NLI_RELATIONS:
        raise ValueError(f"nli relation must be one of {sorted(NLI_RELATIONS)}, got {relation!r}")
    wordings = NLI_RELATIONS[relation].get(label.lower())
    if wordings is None:
        return f"{_upper_first(p)}, and its relation to the statement that {h} is {label}."
    pick = int(stable_hash([p, h], 8), 16) % len(wordings)
    return wordings[pick].format(P=_upper_first(p), p=_lower_first(p), h=h)


def rule_baseline(item: Item, nli_relation: str = "word") -> str:
    """The rule baseline b of ``item`` (:func:`rule_baseline_with_rule` without the rule's name)."""
    return rule_baseline_with_rule(item, nli_relation).text


def rule_baseline_with_rule(item: Item, nli_relation: str = "word") -> Baseline:
    """The rule baseline b of ``item`` and the rule that built it.

    An NLI item (``premise`` and ``hypothesis`` in its metadata) gets :func:`nli_baseline` with the
    ``nli_relation`` wording set; any other item the statement of its question and label
    (:func:`question_statement`).
    """
    y = label_text(item)
    meta = item.metadata
    if "premise" in meta and "hypothesis" in meta:
        return Baseline(nli_baseline(str(meta["premise"]), str(meta["hypothesis"]), y, nli_relation), "nli")
    statement, rule = question_statement(item.input, y)
    return Baseline(statement, rule)


# -- questions -> statements ----------------------------------------------------------------------------


def _is_base_verb(word: str) -> bool:
    from lemminflect import getAllLemmas

    lemmas = getAllLemmas(word.lower()).get("VERB", ())
    return word.lower() in lemmas


def _split_subject(words: list[str]) -> tuple[list[str], str, list[str]] | None:
    """Split "<subject> <base verb> <remainder>" into (subject, verb, remainder), or None.

    The verb is the first
    base-form verb after at least one subject word that is not preceded by a determiner or a possessive.
    """
    for i in range(1, len(words)):
        prev = words[i - 1].lower()
        if prev in _DETERMINERS or prev.endswith("'s"):
            continue
        if _is_base_verb(words[i]):
            return words[:i], words[i], words[i + 1:]
    return None


def _inflect(verb: str, tag: str | None) -> str:
    if tag is None:
        return verb
    from lemminflect import getInflection

    forms = getInflection(verb.lower(), tag)
    return forms[0] if forms else verb


def _split_copula_subject(words: list[str]) -> tuple[list[str], list[str]] | None:
    """Split "<subject> <predicate>" after a fronted copula into (subject, predicate), or None.

    The predicate starts at the first determiner, preposition, adjective or participle after the first subject
    word.
    """
    from lemminflect import getAllLemmas

    for i in range(1, len(words)):
        w = words[i].lower()
        lemmas = getAllLemmas(w)
        if (w in _DETERMINERS or w in _PREPOSITIONS - {"of"} or w.endswith(("ing", "ed"))
                or (w in lemmas.get("ADJ", ()) and (i >= 2 or "NOUN" not in lemmas))):
            return words[:i], words[i:]
        if len(words) == 2:
            return words[:1], words[1:]
    return None


def _yes_no(words: list[str], yes: bool) -> str | None:
    aux, rest = words[0].lower(), words[1:]
    if not rest:
        return None
    if aux in _COPULA:
        split = _split_copula_subject(rest)
        if split is None:
            return None
        subject, predicate = split
        return " ".join(subject + [aux if yes else f"{aux} not"] + predicate)
    split = _split_subject(rest)
    if split is None:
        return None
    subject, verb, remainder = split
    if aux in _DO:
        verbs = [_inflect(verb, _DO[aux])] if yes else [aux, "not", verb]
    elif aux in _MODAL:
        verbs = [aux, verb] if yes else [_NEGATED[aux], verb]
    else:
        return None
    return " ".join(subject + verbs + remainder)


def _wh(words: list[str], y: str) -> str | None:
    wh = words[0].lower()
    aux_at = next((i for i, w in enumerate(words[1:], 1) if w.lower() in _COPULA | set(_DO) | _MODAL), None)
    how_many = wh == "how" and len(words) > 1 and words[1].lower() in ("many", "much")
    if wh == "how" and not how_many:
        return None  # manner / degree questions: no slot a rule can fill
    noun = (words[2:aux_at] if aux_at else words[2:3]) if how_many else []
    answer = " ".join([y] + noun) if how_many else y
    if aux_at is None or (aux_at > 1 and not how_many and wh not in ("what", "which")):
        # subject question: "Who wrote Hamlet?" -> "Y wrote Hamlet."
        head = 2 + len(noun) if how_many else 1
        return " ".join([answer] + words[head:]) if len(words) > head else None
    if wh in ("what", "which") and aux_at > 1:  # "Which city did he visit?": the noun names the answer's kind
        answer = y
    aux, rest = words[aux_at].lower(), words[aux_at + 1:]
    if not rest:
        return None
    prep = WH_PREPOSITION.get(wh)
    if aux in _COPULA:
        if prep:
            return " ".join(rest + [aux, prep, y])
        if rest[0].lower() == "there":
            return " ".join(["there", aux, answer] + rest[1:])
        if rest[0].lower() in _PREPOSITIONS:  # "How many apples are in the basket?"
            return " ".join([answer, aux] + rest)
        return " ".join(rest + [aux, answer])
    split = _split_subject(rest)
    if split is None:
        return None
    subject, verb, remainder = split
    verbs = [_inflect(verb, _DO[aux])] if aux in _DO else [aux, verb]
    if prep:
        return " ".join(subject + verbs + remainder + [prep, y])
    if remainder and remainder[-1].lower() in _PREPOSITIONS:
        return " ".join(subject + verbs + remainder + [answer])
    return " ".join(subject + verbs + [answer] + remainder)


def question_statement(question: str, y: str) -> tuple[str, str]:
    """(statement, rule): the input's last question rewritten as a statement that contains ``y``.

    Rules: ``yes-no`` for a question opened by an auxiliary with a yes/no answer, ``question`` for a
    wh-question (what, who, which, where, when, why, how many/much), ``fallback`` otherwise.
    """
    text = " ".join(str(question).split())
    sentences = re.split(r"(?<=[.!?])\s+", text)
    last = sentences[-1]
    context = " ".join(sentences[:-1])
    statement, rule = None, "fallback"
    clause_prefix = ""
    if last.endswith("?"):
        words = last.rstrip("?").split()
        if words and words[0].lower() in _COPULA | set(_DO) | _MODAL and y.lower() in ("yes", "no"):
            statement, rule = _yes_no(words, y.lower() == "yes"), "yes-no"
        else:
            m = _WH_SEARCH.search(last)
            if m is not None:
                clause_prefix = last[:m.start()]
                statement, rule = _wh(last[m.start():].rstrip("?").split(), y), "question"
    if statement is None:
        lead = f"{context} " if context else ""
        return f'{lead}Asked "{last}", the reply is {y}.', "fallback"
    statement = (clause_prefix + statement) if clause_prefix else _upper_first(statement)
    return (f"{context} " if context else "") + statement.rstrip(" ,;") + ".", rule


def rewrite_messages(question: str, answer: str) -> list[dict[str, str]]:
    """The prompt asking an LLM to rewrite a question and its answer as one declarative sentence (``llm``)."""
    return [{"role": "user", "content": "Rewrite the question and its answer as one short declarative sentence "
             "that states the answer. Reply with the sentence only.\n\n"
             f"Question: {question}\nAnswer: {answer}\nSentence:"}]
