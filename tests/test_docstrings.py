"""The examples in the metric functions' docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

# Modules whose public functions carry doctest examples (kept fast: no model is loaded).
MODULES = {
    "reasonscope.behavior.metrics": 16,
    "reasonscope.attributes.roscoe": 27,
    "reasonscope.evidence.matchers": 8,
    "reasonscope.information.variants": 2,
    "reasonscope.attack.outcome_rules": 3,
    "reasonscope.evidence.scoring": 1,
    "reasonscope.behavior.efficiency": 1,
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} docstring example(s) failed (run python -m doctest -v)"
    assert result.attempted == MODULES[name], f"{name}: {result.attempted} examples run, expected {MODULES[name]}"


METRIC_FUNCTIONS = [
    ("reasonscope.behavior.metrics", ("pairs_agreement", "robustness", "coherence", "length_score", "efficiency")),
    ("reasonscope.behavior.efficiency", ("corpus_efficiency",)),
    ("reasonscope.attributes.roscoe", ("faithfulness", "faithfulness_ww", "informativeness", "informativeness_chain",
                                       "repetition_step", "repetition_word", "self_consistency", "source_consistency",
                                       "perplexity_chain", "perplexity_step", "perplexity_step_max")),
    ("reasonscope.information.tables", ("score_variants", "separations")),
    ("reasonscope.attack.outcome_rules", ("outcome_rates",)),
    ("reasonscope.evidence.scoring", ("evaluate_instance", "asymmetry")),
]


@pytest.mark.parametrize(("name", "functions"), METRIC_FUNCTIONS, ids=[m for m, _ in METRIC_FUNCTIONS])
def test_metric_docstrings_state_range_and_direction(name, functions):
    module = importlib.import_module(name)
    for fn in functions:
        doc = getattr(module, fn).__doc__ or ""
        assert "Returns:" in doc, f"{name}.{fn}: no Returns section"
        assert any(r in doc for r in ("[0, 1]", "(0, 1]", "[-1, 1]", "unbounded", "Unbounded")), f"{name}.{fn}: no range"
        assert any(d in doc for d in ("higher is", "lower is", "Higher is", "higher", "lower")), \
            f"{name}.{fn}: no direction"


def test_matcher_docstrings_state_what_matches():
    from reasonscope.evidence import matchers

    for fn in ("exact_match", "token_match", "edit_match", "edit_chars_match"):
        doc = getattr(matchers, fn).__doc__ or ""
        assert "Returns:" in doc and "None" in doc and "Examples:" in doc, f"matchers.{fn}"
