"""Evidence (RACE) on real e-SNLI pairs: the classifier reads the two sentences, never the template.

Reads the e-SNLI validation file from the shared data folder beside the repository (skipped when it
is absent). Human explanations are the rationales and the gold label the class under evaluation.
"""

from __future__ import annotations

import csv
import gzip
import random
from pathlib import Path

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from reasonscope.data.loaders import esnli_row
from reasonscope.evidence.analysis import make_analyzer
from reasonscope.evidence.scoring import Prediction, run_evidence

ESNLI = next((p / "shared" / "data" / "esnli_dev.csv.gz" for p in Path(__file__).resolve().parents
              if (p / "shared" / "data" / "esnli_dev.csv.gz").is_file()), None)
pytestmark = pytest.mark.skipif(ESNLI is None, reason="e-SNLI validation file (shared/data/esnli_dev.csv.gz) absent")
TEMPLATE_WORDS = {"premise", "hypothesis"}


@pytest.fixture(scope="module")
def split():
    """500 test pairs and 1,500 training pairs, grouped by premise (an SNLI premise comes with one
    hypothesis per label: a random split would put its other labels in training)."""
    with gzip.open(ESNLI, "rt", encoding="utf-8") as fh:
        items = [esnli_row(row) for row in csv.DictReader(fh)]
    premises = sorted({it.metadata["premise"] for it in items})
    random.Random(0).shuffle(premises)
    test_premises = set(premises[:200])
    test = [it for it in items if it.metadata["premise"] in test_premises][:500]
    train = [it for it in items if it.metadata["premise"] not in test_premises][:1500]
    preds = {it.id: Prediction(it.target, it.metadata["explanations"][0]) for it in test}
    return train, test, preds


def _evidence(split, **kw):
    train, test, preds = split
    _, tables = run_evidence(train, test, preds, k=5, target="gold", matchers=("exact",), sweep_k=(),
                             sweep_delta=(), sweep_delta_chars=(), n_resamples=100, n_permutations=100, **kw)
    return tables


@pytest.fixture(scope="module")
def default_tables(split):
    return _evidence(split)


def _template_instances(tables) -> int:
    return sum(any(TEMPLATE_WORDS & set(f["text"].split()) for f in inst["support"] + inst["contradict"])
               for inst in tables["instances"])


def test_template_words_are_evidence_only_when_the_classifier_reads_the_template(split, default_tables):
    before = _evidence(split, text_fields=["input"], stop_words="none")  # the formatted prompt input, as before
    after = default_tables                                               # premise and hypothesis, function words out
    assert before["settings"]["text_fields"] == ["input"]
    assert after["settings"]["text_fields"] == ["premise, hypothesis"]
    assert abs(_template_instances(before) - 233) <= 15  # measured: 233 of 500 instances
    assert _template_instances(after) == 0
    assert after["llm"]["n"] == 500 and after["llm"]["accuracy"] == 1.0  # gold labels as predictions


def test_no_feature_is_a_function_word_or_spans_the_pair_boundary(split, default_tables):
    train, _, _ = split
    tables = default_tables
    stop = make_analyzer("function_words").stop_set
    words = {w for inst in tables["instances"] for f in inst["support"] + inst["contradict"] for w in f["text"].split()}
    assert words and not words & stop and not words & TEMPLATE_WORDS
    boundary = {f"{p.split()[-2].lower()} {h.split()[0].lower()}" for p, h in
                ((it.metadata["premise"], it.metadata["hypothesis"]) for it in train)}
    seen = {f["text"] for inst in tables["instances"] for f in inst["support"] + inst["contradict"]}
    within = {g for it in train for g in make_analyzer("function_words").ngrams([it.metadata["premise"],
                                                                                  it.metadata["hypothesis"]])}
    assert not (seen & boundary) - within  # a boundary bigram appears only where some sentence holds it


@pytest.mark.parametrize("stop_words", ["function_words", pytest.param("none", marks=pytest.mark.slow)])
def test_exact_coverage_equals_an_independent_implementation_on_every_instance_side(split, default_tables,
                                                                                    stop_words):
    tables = default_tables if stop_words == "function_words" else _evidence(split, stop_words=stop_words)
    stop = sorted(make_analyzer(stop_words).stop_set) or None
    formed = TfidfVectorizer(ngram_range=(1, 2), stop_words=stop).build_analyzer()
    rationales = {it.id: it.metadata["explanations"][0] for it in split[1]}
    sides = 0
    for inst in tables["instances"]:
        grams = set(formed(rationales[inst["item_id"]]))
        for side in ("support", "contradict"):
            feats = inst[side]
            if feats:
                sides += 1
                expected = sum(f["text"] in grams for f in feats) / len(feats)
                assert inst["coverage"]["exact"][side] == expected, inst["item_id"]
    assert sides > 900
