"""Dataset loaders on small files written in the test, and their error messages."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonscope.data.loaders import DatasetError, load_dataset
from reasonscope.data.synthetic import synthetic_items
from reasonscope.plan import DatasetConfig


def cfg(fmt, path, **kw):
    return DatasetConfig(name="d", format=fmt, path=str(path), **kw)


def test_synthetic_is_deterministic_with_paraphrases():
    a, b = synthetic_items(3, seed=11), synthetic_items(3, seed=11)
    assert [i.model_dump() for i in a] == [i.model_dump() for i in b]
    assert len(a) == 9 and all(len(i.perturbations) == 3 for i in a)
    assert {i.metadata["type"] for i in a} == {"arithmetic", "logic", "multiple_choice"}
    assert synthetic_items(3, seed=12)[0].input != a[0].input or synthetic_items(3, seed=12)[0].target != a[0].target
    arith = next(i for i in a if i.answer_type == "number")
    assert str(arith.target) in arith.rationale


def test_gsm8k(tmp_path):
    p = tmp_path / "gsm.jsonl"
    p.write_text(json.dumps({"question": "Q1?", "answer": "3 + 4 = 7\n#### 7"}) + "\n"
                 + json.dumps({"question": "Q2?", "answer": "so\n#### 1,250"}) + "\n")
    items = load_dataset(cfg("gsm8k", p)).items
    assert [i.target for i in items] == [7, 1250] and items[0].rationale == "3 + 4 = 7"
    assert items[0].answer_type == "number" and items[0].group == "d"


def test_gsm8k_bad_rows(tmp_path):
    p = tmp_path / "gsm.jsonl"
    p.write_text(json.dumps({"question": "Q1?", "answer": "#### 7"}) + "\n" + '{"question": "Q2", "answ\n'
                 + json.dumps({"question": "Q3?", "answer": "no marker"}) + "\n"
                 + json.dumps({"answer": "#### 2"}) + "\n")
    with pytest.raises(DatasetError, match=r"gsm.jsonl:2: invalid JSON .*truncated line"):
        load_dataset(cfg("gsm8k", p))
    res = load_dataset(cfg("gsm8k", p, skip_bad_rows=True))
    assert len(res.items) == 1
    assert [(b.line, b.field) for b in res.bad_rows] == [(2, None), (3, "answer"), (4, "question")]


def test_strategyqa(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps([{"qid": "a1", "question": "Can fish fly?", "answer": False, "facts": ["F1.", "F2."]},
                             {"qid": "a2", "question": "Is ice cold?", "answer": True, "facts": []}]))
    items = load_dataset(cfg("strategyqa", p)).items
    assert [(i.id, i.target, i.answer_type) for i in items] == [("a1", False, "boolean"), ("a2", True, "boolean")]
    assert items[0].rationale == "F1. F2."
    p.write_text(json.dumps([{"qid": "a1", "question": "Q", "answer": "maybe"}]))
    with pytest.raises(DatasetError, match=r"s.json:1: field 'answer': expected a boolean"):
        load_dataset(cfg("strategyqa", p))


def test_mmlu_with_and_without_header(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text('What is 2+2?,3,4,5,6,B\n"Capital of France, the city?",Paris,Rome,Oslo,Bern,A\n')
    items = load_dataset(cfg("mmlu", p)).items
    assert [i.target for i in items] == ["B", "A"] and items[1].choices[0] == "Paris"
    p.write_text("question,A,B,C,D,answer\nQ?,a,b,c,d,2\n")
    assert load_dataset(cfg("mmlu", p)).items[0].target == "C"
    p.write_text("Q?,a,b,c,d,F\n")
    with pytest.raises(DatasetError, match=r"m.csv:1: field 'answer': expected A, B, C or D, got 'F'"):
        load_dataset(cfg("mmlu", p))
    p.write_text("Q?,a,b,c\n")
    with pytest.raises(DatasetError, match=r"m.csv:1: expected 6 columns"):
        load_dataset(cfg("mmlu", p))


def test_esnli(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("pairID,Sentence1,Sentence2,gold_label,Explanation_1\n"
                 "p1,A man sleeps.,A man is awake.,contradiction,Sleeping people are not awake.\n")
    [item] = load_dataset(cfg("esnli", p)).items
    assert item.target == "contradiction" and item.answer_type == "label"
    assert item.metadata["premise"] == "A man sleeps." and item.rationale.startswith("Sleeping")


def test_ecqa(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps({"id": "e1", "question": "Where do fish live?", "options": ["tree", "water", "sky"],
                             "answer": "water", "explanation": "Fish need water."}) + "\n")
    [item] = load_dataset(cfg("ecqa", p)).items
    assert item.target == "B" and item.choices == ["tree", "water", "sky"]
    p.write_text(json.dumps({"question": "Q", "options": "a||b", "answer": "c"}) + "\n")
    with pytest.raises(DatasetError, match="field 'answer': expected one of the options"):
        load_dataset(cfg("ecqa", p))


def test_goemotions_tsv(tmp_path):
    p = tmp_path / "g.tsv"
    p.write_text("I love it\t18,17\tid1\nmeh\t27\tid2\n")
    items = load_dataset(cfg("goemotions", p)).items
    assert items[0].target == "love" and items[0].metadata["labels"] == ["love", "joy"]
    assert items[1].target == "neutral"
    p.write_text("x\t99\tid3\n")
    with pytest.raises(DatasetError, match="field 'labels': expected comma-separated label ids"):
        load_dataset(cfg("goemotions", p))


def test_agnews_and_imdb(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text('Class Index,Title,Description\n2,Team wins,"The team won, again."\n')
    [item] = load_dataset(cfg("agnews", p)).items
    assert item.target == "Sports" and item.input.startswith("Team wins.")
    q = tmp_path / "i.csv"
    q.write_text("review,sentiment\nGreat film,positive\nAwful,negative\n")
    assert [i.target for i in load_dataset(cfg("imdb", q)).items] == ["positive", "negative"]


def test_generic_jsonl_with_mapping(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"qid": "q1", "q": "What is 6*7?", "gold": "42", "para": ["Six times seven?"]}) + "\n")
    [item] = load_dataset(cfg("jsonl", p, mapping={"id": "qid", "input": "q", "target": "gold",
                                                   "perturbations": "para"})).items
    assert (item.id, item.target, item.answer_type, item.perturbations) == ("q1", "42", "number", ["Six times seven?"])
    with pytest.raises(DatasetError, match=r"x.jsonl:1: field 'question': missing field 'question'"):
        load_dataset(cfg("jsonl", p, mapping={"input": "question"}))


def test_generic_json_array_and_source_document_format(tmp_path):
    p = tmp_path / "my.json"
    p.write_text(json.dumps([{"id": "q001", "question": "Capital of France?", "answer": "Paris", "type": "reasoning",
                              "perturbations": ["Name the capital of France."]}]))
    [item] = load_dataset(cfg("json", p)).items
    assert item.input == "Capital of France?" and item.target == "Paris" and item.metadata["type"] == "reasoning"


@pytest.mark.parametrize("content,message", [
    (b"", "the file is empty"),
    (b"   \n", "the file is empty"),
    (b'{"input": "caf\xe9"}\n', r"x.jsonl:1: not valid UTF-8"),
    (b'{"input": "ok"}\n{"input": "b\xff"}\n', r"x.jsonl:2: not valid UTF-8"),
    (b"[1, 2]\n", r"x.jsonl:1: expected an object, got list"),
])
def test_bad_files(tmp_path, content, message):
    p = tmp_path / "x.jsonl"
    p.write_bytes(content)
    with pytest.raises(DatasetError, match=message):
        load_dataset(cfg("jsonl", p))


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(cfg("jsonl", tmp_path / "nope.jsonl"))
    p = tmp_path / "x.parquet"
    p.write_text("x")
    with pytest.raises(DatasetError, match="unknown file type '.parquet'"):
        load_dataset(cfg("jsonl", p))


def test_huge_line_is_a_bad_row(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"input": "' + "a" * (21 * 2**20) + '"}\n{"input": "ok", "target": "1"}\n')
    res = load_dataset(cfg("jsonl", p, skip_bad_rows=True))
    assert len(res.items) == 1 and "longer than" in res.bad_rows[0].message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_fuzzed_jsonl_gives_items_or_dataset_error(tmp_path, blob):
    p = tmp_path / "fz.jsonl"
    p.write_bytes(blob)
    try:
        res = load_dataset(cfg("jsonl", p, skip_bad_rows=True))
    except DatasetError:
        return
    assert res.items


def test_synthetic_questions_are_unique():
    items = synthetic_items(40, seed=0)
    assert len({i.input for i in items}) == len(items) == 120


def test_large_synthetic_set_widens_its_ranges_instead_of_repeating():
    # 3,200 multiple-choice items: more than the 3,136 distinct questions of the fixed ranges (the last
    # ones used to repeat, each after 1,000 futile draws)
    items = synthetic_items(3200, seed=1)
    assert len({i.input for i in items}) == len(items) == 9600
    choice = [i for i in items if i.answer_type == "choice"]
    assert max(int(i.input.split()[2]) for i in choice) > 60  # some drawn from a widened range
    for it in choice:  # the item is still right: the target letter points at a + b
        a, b = (int(w.rstrip("?")) for w in it.input.split()[2::2])
        assert it.choices["ABCD".index(it.target)] == str(a + b)
        assert len(set(it.choices)) == 4 and all(int(c) > 0 for c in it.choices)
    for it in items:  # every kind's gold answer still follows from its numbers
        if it.answer_type == "number":
            a, op, b, _, result = it.rationale.split()
            assert it.target == int(result) == {"+": int(a) + int(b), "-": int(a) - int(b),
                                                "x": int(a) * int(b)}[op] and it.target > 0
        elif it.input.startswith("Is ") and "greater than" in it.input:
            a, b = (int(w.rstrip("?")) for w in it.input.split()[1::3])
            assert it.target == (a > b) and a != b


def test_sets_that_never_widen_are_unchanged(monkeypatch):
    # the sets of the docs and benchmarks keep their items: the same as drawn without any widening
    import reasonscope.data.synthetic as synthetic

    widened = {seed: synthetic_items(300, seed) for seed in range(20)}
    monkeypatch.setattr(synthetic, "WIDEN_AFTER", synthetic.MAX_DRAWS)  # spread stays 1
    assert all(synthetic_items(300, seed) == items for seed, items in widened.items())
    assert widened[1][0].input == "Chen has 24 books and gives away 5. How many books are left?"
