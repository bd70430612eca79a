"""Loaders of multi-field formats declare the fields holding the item's own text (metadata.text_fields)."""

from __future__ import annotations

from reasonscope.data.loaders import agnews_row, ecqa_row, esnli_row, imdb_row
from reasonscope.evidence.analysis import item_segments


def test_esnli_pairs_keep_the_prompt_input_and_declare_both_sentences():
    item = esnli_row({"pairID": "p1", "gold_label": "contradiction", "Sentence1": "A man sleeps .",
                      "Sentence2": "Nobody sleeps .", "Explanation_1": "a man is somebody"})
    assert item.input == "Premise: A man sleeps .\nHypothesis: Nobody sleeps ."
    assert item.metadata["text_fields"] == ["premise", "hypothesis"]
    assert item_segments(item) == ["A man sleeps .", "Nobody sleeps ."]


def test_agnews_title_and_description_are_two_fields():
    item = agnews_row({"Class Index": "3", "Title": "Stocks fall", "Description": "Markets slid on Monday."})
    assert item.input == "Stocks fall. Markets slid on Monday." and item.target == "Business"
    assert item_segments(item) == ["Stocks fall", "Markets slid on Monday."]
    assert item_segments(agnews_row({"label": 1, "text": "A goal."})) == ["A goal."]


def test_ecqa_question_and_each_option_are_segments():
    item = ecqa_row({"question": "Where do fish live?", "options": ["sea", "desert"], "answer": "sea"})
    assert item_segments(item) == ["Where do fish live?", "sea", "desert"]


def test_single_text_formats_declare_nothing():
    item = imdb_row({"review": "Great film", "sentiment": "positive"})
    assert "text_fields" not in item.metadata and item_segments(item) == ["Great film"]
