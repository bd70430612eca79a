"""Baselines of REV / LAREV: questions become statements that contain the answer (never the Leaky
rationale's "The answer is y."), NLI pairs get one of several wordings per label, and an llm rewrite
that fails is replaced by the rule baseline and counted."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from rich.console import Console

from reasonscope.information.baseline import (
    NLI_RELATION_WORDS,
    NLI_WORDINGS,
    nli_baseline,
    question_statement,
    rule_baseline_with_rule,
)
from reasonscope.information.leakage import stop_words
from reasonscope.information.scoring import baseline_notes, make_baselines
from reasonscope.information.variants import leaky
from reasonscope.plan import InformationConfig
from reasonscope.storage.store import Store
from reasonscope.types import Item

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.parametrize(("question", "answer", "statement", "rule"), [
    ("What is 2 + 2?", "4", "2 + 2 is 4.", "question"),
    ("How many apples does Ana have?", "8", "Ana has 8 apples.", "question"),
    ("Ana has 3 apples and gets 5 more. How many apples does Ana have?", "8",
     "Ana has 3 apples and gets 5 more. Ana has 8 apples.", "question"),
    ("The man didn't like the cold tile, so where did he put carpeting?", "the bedroom",
     "The man didn't like the cold tile, so he put carpeting in the bedroom.", "question"),
    ("Who wrote Hamlet?", "Shakespeare", "Shakespeare wrote Hamlet.", "question"),
    ("Which city did he visit?", "Paris", "He visited Paris.", "question"),
    ("What would you find in a kitchen?", "a stove", "You would find a stove in a kitchen.", "question"),
    ("What did he look at?", "the moon", "He looked at the moon.", "question"),
    ("How many apples are there in the basket?", "5", "There are 5 apples in the basket.", "question"),
    ("Janet sells 16 eggs a day. How much does she make every day?", "18",
     "Janet sells 16 eggs a day. She makes 18 every day.", "question"),
    ("Does Ana have apples?", "no", "Ana does not have apples.", "yes-no"),
    ("Does Ana have apples?", "yes", "Ana has apples.", "yes-no"),
    ("All oaks are trees. Is a bur oak a tree?", "yes", "All oaks are trees. A bur oak is a tree.", "yes-no"),
    ("Is the sky blue?", "no", "The sky is not blue.", "yes-no"),
    ("Can birds fly?", "no", "Birds cannot fly.", "yes-no"),
    ("How did he travel?", "by car", 'Asked "How did he travel?", the reply is by car.', "fallback"),
    ("Compute 3 + 5.", "8", 'Asked "Compute 3 + 5.", the reply is 8.', "fallback"),
])
def test_questions_become_statements_with_the_answer(question, answer, statement, rule):
    assert question_statement(question, answer) == (statement, rule)
    assert leaky(answer) not in statement  # never the Leaky rationale's text


def test_a_question_without_context_no_longer_equals_the_leaky_rationale():
    mc = Item(id="c", input="What is 2 + 2?", target="B", choices=["3", "4"], answer_type="choice")
    built = rule_baseline_with_rule(mc)
    assert built.text == "2 + 2 is 4." and built.rule == "question" and "The answer is" not in built.text


@pytest.mark.parametrize("relation, wording_sets", [("word", NLI_RELATION_WORDS), ("phrase", NLI_WORDINGS)])
def test_nli_wordings_vary_per_pair_and_name_the_relation(relation, wording_sets):
    pairs = [(f"A man is playing a guitar number {i} .", f"A person plays music {i} .") for i in range(60)]
    for label, wordings in wording_sets.items():
        texts = [nli_baseline(p, h, label, relation) for p, h in pairs]
        used = {next(i for i, w in enumerate(wordings) if _matches(w, t)) for t in texts}
        assert len(used) == len(wordings)  # every wording is drawn on 60 pairs
        assert all("a person plays music" in t and t.endswith(".") and " ." not in t for t in texts)
    # the same pair always gets the same wording (a hash of premise and hypothesis picks it)
    assert nli_baseline(*pairs[0], "entailment") == nli_baseline(*pairs[0], "entailment")
    assert "relation" in nli_baseline("A dog runs.", "An animal moves.", "unknown-label", relation)


def test_nli_wordings_known_texts_and_a_bad_relation():
    def b(label: str, relation: str) -> str:
        return nli_baseline("A dog runs.", "An animal moves.", label, relation)

    assert b("entailment", "word") == "A dog runs, which implies that an animal moves."
    assert b("contradiction", "word") == "A dog runs, which contradicts that an animal moves."
    assert b("neutral", "word") == "A dog runs, which allows that an animal moves."
    assert b("entailment", "phrase") == "A dog runs, which means that an animal moves."
    assert b("contradiction", "phrase") == "A dog runs, which means it is not true that an animal moves."
    assert b("neutral", "phrase") == "A dog runs, which does not tell whether an animal moves."
    with pytest.raises(ValueError, match="nli relation must be one of \\['phrase', 'word'\\], got 'verb'"):
        b("neutral", "verb")


def _label_words(relation: str, premise: str, hypothesis: str) -> set[str]:
    """The words of one pair's baselines that are not in all three labels' baselines."""
    words = [set(re.findall(r"[a-z]+", nli_baseline(premise, hypothesis, label, relation).lower()))
             for label in ("entailment", "contradiction", "neutral")]
    return set.union(*words) - set.intersection(*words)


def test_the_word_relation_puts_the_label_in_one_content_word_that_the_leakage_term_can_take():
    pairs = [(f"A man is playing a guitar number {i} .", f"A person plays music {i} .") for i in range(60)]
    stops = stop_words()
    for p, h in pairs:
        label_words = _label_words("word", p, h)
        assert len(label_words) == 3 and not label_words & stops  # one verb per label, never a stop word
        for label in ("entailment", "contradiction", "neutral"):  # exactly one of them in each baseline
            text = nli_baseline(p, h, label, "word").lower()
            assert len([w for w in label_words if re.search(rf"\b{w}\b", text)]) == 1
    # the phrase set keeps label words that LAREV never masks (stop words: not, may, neither, ...)
    assert any(_label_words("phrase", p, h) & stops for p, h in pairs)


def test_the_nli_relation_setting_reaches_the_rule_baselines(tmp_path):
    items = [Item(id="n", input="Premise: A dog runs.\nHypothesis: An animal moves.", target="neutral",
                  answer_type="label", metadata={"premise": "A dog runs.", "hypothesis": "An animal moves."})]
    train = {"name": "t", "format": "jsonl", "path": "t.jsonl"}
    store = Store(tmp_path / "s.sqlite")
    word = make_baselines(items, InformationConfig(train=train), store, seed=0, console=Console(quiet=True))
    phrase = make_baselines(items, InformationConfig(train=train, nli_relation="phrase"), store, seed=0,
                            console=Console(quiet=True))
    assert word["n"].text == "A dog runs, which allows that an animal moves." and word["n"].rule == "nli"
    assert phrase["n"].text == "A dog runs, which does not tell whether an animal moves."


def _matches(wording: str, text: str) -> bool:
    pattern = re.escape(wording).replace(r"\{P\}", ".+").replace(r"\{p\}", ".+").replace(r"\{h\}", ".+")
    return re.fullmatch(pattern, text) is not None


def test_failed_llm_rewrites_fall_back_to_the_rule_baseline_and_are_counted(tmp_path):
    items = [Item(id=f"q{i}", input=f"What is {i} + {i}?", target=str(2 * i), answer_type="number") for i in range(3)]
    responses = {"q0": "", "q1": "1 plus 1 makes 2.\nextra line", "q2": "   "}
    cfg = InformationConfig(train={"name": "t", "format": "synthetic"}, baseline="llm",
                            baseline_model={"spec": "mock/scripted", "options": {"responses": responses}})
    built = make_baselines(items, cfg, Store(tmp_path), seed=0, console=Console(stderr=True))
    assert built["q0"].text == "0 + 0 is 0." and built["q0"].rule == "llm failed -> rule"
    assert built["q1"].text == "1 plus 1 makes 2." and built["q1"].rule == "llm"
    assert built["q2"].text == "2 + 2 is 4." and built["q2"].rule == "llm failed -> rule"
    counts, notes = baseline_notes(built)
    assert counts == {"llm failed -> rule": 2, "llm": 1}
    assert notes == ["2 of 3 llm baseline rewrites failed or came back empty: those items use the rule baseline "
                     "instead (rule 'llm failed -> rule' in the baselines table)"]


def test_fallback_baselines_are_counted():
    from reasonscope.information.baseline import Baseline

    counts, notes = baseline_notes({"a": Baseline("x", "question"), "b": Baseline("y", "fallback")})
    assert counts == {"question": 1, "fallback": 1}
    assert len(notes) == 1 and "1 of 2 rule baselines use the fallback wording" in notes[0]


def test_esnli_loader_reads_the_gzipped_file_and_baselines_differ_from_leaky():
    path = DATA / "esnli_dev.csv.gz"
    if not path.is_file():
        pytest.skip(f"real e-SNLI data not available ({path.name} absent)")
    from reasonscope.data.loaders import load_dataset
    from reasonscope.plan import DatasetConfig

    items = load_dataset(DatasetConfig(name="e", format="esnli", path=str(path), limit=300)).items
    assert len(items) == 300 and items[1].target == "entailment" and items[1].rationale
    texts = {rule_baseline_with_rule(it).text for it in items}
    assert len(texts) == 300 and not any("The answer is" in t for t in texts)
    assert gzip.decompress(path.read_bytes()).startswith(b"pairID,gold_label")


def test_the_cli_passes_nli_relation_and_rejects_an_unknown_one(monkeypatch):
    from typer.testing import CliRunner

    from reasonscope.cli import app, common

    plans = []
    monkeypatch.setattr(common, "run_plan", lambda plan, *a, **k: plans.append(plan))
    args = ["information", "train", "--train", "synthetic", "--size", "2"]
    assert CliRunner().invoke(app, [*args, "--nli-relation", "phrase"]).exit_code == 0
    assert CliRunner().invoke(app, args).exit_code == 0
    assert [p.families.information.nli_relation for p in plans] == ["phrase", "word"]
    bad = CliRunner().invoke(app, [*args, "--nli-relation", "verb"])
    assert bad.exit_code == 2 and "nli_relation" in bad.output and "'word' or 'phrase'" in bad.output
