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


def test_the_validation_carve_takes_whole_premises_from_the_end_of_training(load_benchmark):
    carve = load_benchmark("esnli_split").carve_validation
    train = [_row("a"), _row("b"), _row("a"), _row("c"), _row("d"), _row("c"), _row("d")]
    kept, validation = carve(train, 3)
    # from the end: "d" (2 pairs), then "c" (2 pairs) reaches 3 or more; every pair of a premise moves
    assert [r["Sentence1"] for r in validation] == ["c", "d", "c", "d"]
    assert [r["Sentence1"] for r in kept] == ["a", "b", "a"]
    assert carve(train, 0) == (train, [])
    assert carve(train, 1)[1] == [train[4], train[6]]  # one premise ("d", 2 pairs) already gives 1 or more
