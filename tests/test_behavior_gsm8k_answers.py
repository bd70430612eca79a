"""benchmarks/behavior_gsm8k_answers.py: the three output forms, our verdicts, the peer's wiring, agreement."""

from __future__ import annotations

import sys

SOLUTION = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips."

# A stand-in for the peer's two modules with its substring rule (the real package is not installed offline).
STUB_ACCURACY = '''
class AccuracyMetric:
    def compute_per_instance(self, predictions, gold_answers):
        return [1.0 if g and g in p.lower() else 0.0 for p, g in zip(predictions, gold_answers)]
'''
STUB_GSM8K = '''
import re
def _extract_gsm8k_answer(text):
    return re.search(r"####\\s*([\\d,.\\-]+)", text).group(1).replace(",", "")
'''


def test_the_three_forms_and_our_verdicts(load_benchmark):
    b = load_benchmark("behavior_gsm8k_answers")
    forms = b.outputs(SOLUTION + "\n#### 72", 72)
    assert forms["as written"].endswith("72 clips.\n#### 72")
    assert forms["sentence"].endswith("72 clips.\nThe answer is 72.")
    assert forms["wrong (10 x gold + 1)"].endswith("\nThe answer is 721.")
    assert [b.ours(forms[f], 72) for f in b.FORMS] == [1, 1, 0]
    assert b.gold_value("72.0") == 72 and b.gold_value(2.5) == 2.5


def test_peer_reads_runs_the_peer_modules_in_their_own_python(load_benchmark, tmp_path):
    b = load_benchmark("behavior_gsm8k_answers")
    for package in ("metrics", "llm_datasets"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "metrics" / "accuracy.py").write_text(STUB_ACCURACY)
    (tmp_path / "llm_datasets" / "gsm8k_dataset.py").write_text(STUB_GSM8K)
    forms = b.outputs(SOLUTION, 72)
    rows = [{"output": forms[f], "solution": forms["as written"]} for f in b.FORMS]
    rows.append({"output": "I do not know.", "solution": "x\n#### 1,000"})
    # the driver sits in tmp_path, so its imports find the stand-in packages there
    assert b.peer_reads(sys.executable, rows, tmp_path) == [1, 1, 1, 0]


def test_agreement_counts_each_cell(load_benchmark):
    b = load_benchmark("behavior_gsm8k_answers")
    assert b.agreement([1, 1, 0, 0, 1], [1, 0, 1, 0, 1]) == {"both accept": 2, "only ours": 1, "only peer": 1,
                                                             "both reject": 1}
