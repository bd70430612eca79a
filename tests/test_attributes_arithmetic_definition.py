"""The wiring of benchmarks/attributes_arithmetic_definition.py: the tiny causal LM as the judge on a two-row
e-SNLI file and two word problems."""

from __future__ import annotations

import csv
import gzip
import io

import pytest


def test_arithmetic_definition_benchmark_wiring(tmp_path, tiny_causal_lm, capsys, load_benchmark):
    buf = io.StringIO()
    w = csv.DictWriter(buf, ["Sentence1", "Sentence2", "Explanation_1"])
    w.writeheader()
    w.writerows([{"Sentence1": "A dog runs.", "Sentence2": "An animal moves.", "Explanation_1": "A dog is an animal."},
                 {"Sentence1": "A man sits.", "Sentence2": "A man stands.", "Explanation_1": ""},  # skipped
                 {"Sentence1": "Kids play.", "Sentence2": "Kids sleep.", "Explanation_1": "Playing is not sleeping."}])
    data = tmp_path / "esnli_dev.csv.gz"
    data.write_bytes(gzip.compress(buf.getvalue().encode()))
    bench = load_benchmark("attributes_arithmetic_definition")
    assert [e for _, e in bench.esnli_rationales(str(data), 5)] == ["A dog is an animal.", "Playing is not sleeping."]
    good, bad = bench.word_problem_rationales(2)
    assert len(good) == len(bad) == 2 and all(g != b for g, b in zip(good, bad, strict=True))
    out = bench.main(["--esnli", str(data), "--pairs", "2", "--problems", "2", "--judge", f"hf/{tiny_causal_lm}"])
    old, new = bench.DEFINITIONS
    assert "0 if it performs no calculation" in bench.DEFINITIONS[old]
    for r in out.values():
        assert r["n"] == 2 and all(0 <= v <= 1 for v in r["scores"][old] + r["scores"][new])
        # the paired difference is the mean of the per-rationale differences
        diffs = [b - a for a, b in zip(r["scores"][old], r["scores"][new], strict=True)]
        assert r["difference"].value == pytest.approx(sum(diffs) / 2)
    printed = capsys.readouterr().out
    assert "| no arithmetic (e-SNLI explanations) | 2 |" in printed and "v3 - v2" in printed
