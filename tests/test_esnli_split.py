"""benchmarks/esnli_split.py: training, test and confirmation rows never share a premise, in file order."""

from __future__ import annotations


def _row(premise: str, label: str = "neutral", explanation: str = "because") -> dict:
    return {"Sentence1": premise, "Sentence2": "h", "gold_label": label, "Explanation_1": explanation}


def test_the_three_parts_share_no_premise_and_skip_unusable_rows(load_benchmark):
    split_rows = load_benchmark("esnli_split").split_rows
    rows = [_row("a"), _row("a"), _row("b", label="-"), _row("c", explanation=" "), _row("a"), _row("d"),
            _row("e"), _row("d"), _row("f"), _row("e"), _row("g"), _row("h")]
    train, test, confirm = split_rows(rows, 2, 2, 3)
    assert [r["Sentence1"] for r in train] == ["a", "a"]  # "b" has no gold label, "c" no explanation
    assert [r["Sentence1"] for r in test] == ["d", "e"]  # the later "a" is a training premise
    assert [r["Sentence1"] for r in confirm] == ["f", "g", "h"]  # after the last test row; "d", "e" are test's
    assert split_rows(rows, 2, 2)[2] == []  # no confirmation rows unless asked
