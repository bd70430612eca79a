"""The demo plan parses, and its per-family notes report the counts the issue's targets are about."""

from __future__ import annotations

from reasonscope.demo import demo_plan, family_notes


def test_demo_plan_parses_with_expected_judge_scores_and_no_llm_nli_over_step_pairs():
    from reasonscope.plan import parse_plan

    plan = parse_plan(demo_plan("runs"), "<demo plan>")
    attributes = plan.families.attributes
    assert attributes.scoring == "expected" and attributes.scale == "0-10"  # G-Eval scores, not one sampled score
    assert attributes.automatic.nli.backend == "none"
    assert plan.families.attack.limit is None and plan.families.attack.answer_types == ["number"]


def test_family_notes_count_parsed_scored_and_attacked():
    summary = {
        "behavior": {"metrics": {}},
        "evidence": {"topics-test": {"llm": {"n": 12, "unparseable": 1}}},
        "attributes": {"attributes": ["a", "b"], "n_targets": 3, "unscored": {"judge": {"a": 1, "b": 0}}},
        "attack": {"models": {"smollm2": {"items": 6, "answered_correctly": 3,
                                          "rates": {"token": {"attacked": 3, "n": 1, "counts": {"clean_wrong": 2}},
                                                    "random": {"attacked": 2, "n": 0,
                                                               "counts": {"clean_wrong": 2}}}}}},
    }
    notes = family_notes(summary)
    assert notes[0].startswith("behavior:")
    assert "evidence: 11/12 constrained predictions give a label and a rationale" in notes[1]
    assert "attributes: 5/6 judge scores read from judge" in notes[2]
    assert "attack: 3/6 items answered correctly by smollm2; attacked per method {'token': 3, 'random': 2}, " \
        "decided {'token': 1, 'random': 0}; 2 with clean reasoning already wrong" in notes[3]
    assert "(constrained to the judge's JSON schema)" in notes[2]
    assert len(notes) == 4  # no information table, no line
