"""The information family's console summary: each evaluator's accuracy beside its scores, and a near-chance note."""

from __future__ import annotations

from rich.console import Console

from reasonscope.information.printer import print_summary


def _estimate(value, low, high):
    return {"value": value, "low": low, "high": high, "n": 300}


def test_summary_shows_each_evaluators_accuracy_and_names_a_collapsed_one():
    t = {"methods": ["rev", "larev"], "reduction": "sum", "n_test": 300, "labels": ["a", "b", "c"],
         "absolute": {m: {"gold": _estimate(0.5, 0.4, 0.6)} for m in ("rev", "larev")},
         "separation": {m: {"Gold-Leaky": _estimate(0.05, 0.02, 0.08)} for m in ("rev", "larev")},
         "accuracy": {"rev": {"gold": 0.833}, "larev": {"gold": 0.31}}}
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    print_summary(t, out, err)
    table, notes = out.export_text(), err.export_text()
    row = next(line for line in table.splitlines() if "accuracy with gold r + b" in line)
    assert "0.833" in row and "0.310" in row and row.index("0.833") < row.index("0.310")  # REV column first
    assert "the LAREV scores cannot mean much" in notes and "LAREV 0.31 of the test items (chance 0.33)" in notes
    t["accuracy"]["larev"]["gold"] = 0.80
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    print_summary(t, out, err)
    assert "cannot mean much" not in err.export_text()
