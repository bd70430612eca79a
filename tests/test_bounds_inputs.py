"""Untrusted files bounded where they enter: inspect-ai log members, plan files, output folders through links,
lm-eval results files, and samples.jsonl rows."""

from __future__ import annotations

import json
import os
import time
import zipfile

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.data.adapters import inspect_logs
from reasonscope.data.adapters.common import new_record
from reasonscope.data.adapters.lm_eval_logs import read_lm_eval
from reasonscope.data.loaders import DatasetError, RowError
from reasonscope.plan import PlanError, load_plan
from reasonscope.storage.rundir import check_output_dir
from reasonscope.storage.yaml_io import MAX_EVENTS, MAX_PLAN_BYTES

runner = CliRunner()
PLAN = "experiment: {name: t, output_dir: OUT}\nmodels: [{spec: mock/reasoner}]\ndatasets: [{name: s, format: synthetic}]\n"


# -- inspect-ai logs -----------------------------------------------------------------------------
def bomb_log(path, member_bytes: int) -> None:
    """A .eval-shaped zip whose one sample member unpacks to ``member_bytes`` spaces (~1000:1 compressed)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("_journal/start.json", json.dumps({"version": 2}))
        with z.open("samples/1_epoch_1.json", "w", force_zip64=True) as member:
            chunk = b" " * (1 << 20)
            for _ in range(member_bytes >> 20):
                member.write(chunk)


def test_an_inspect_log_member_that_unpacks_past_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "2026-01-01T00-00-00+00-00_t_abc.eval"
    bomb_log(path, 64 << 20)
    assert path.stat().st_size < 200_000  # 64 MiB once unpacked
    assert inspect_logs.MAX_LOG_MEMBER_BYTES == 256 << 20  # the default; lowered here to keep the test small
    monkeypatch.setattr(inspect_logs, "MAX_LOG_MEMBER_BYTES", 16 << 20)
    start = time.monotonic()
    with pytest.raises(DatasetError) as err:
        inspect_logs.check_log_size(path)
    assert time.monotonic() - start < 1.0
    message = str(err.value)
    assert message.startswith(f"{path}: member 'samples/1_epoch_1.json' unpacks to 67,108,864 bytes")
    assert "more than the 16,777,216 bytes one log member may hold" in message and "MAX_LOG_MEMBER_BYTES" in message


def test_score_from_inspect_refuses_the_bomb_through_the_command(tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai")
    path = tmp_path / "2026-01-01T00-00-00+00-00_t_abc.eval"
    bomb_log(path, 32 << 20)
    monkeypatch.setattr(inspect_logs, "MAX_LOG_MEMBER_BYTES", 8 << 20)
    res = runner.invoke(app, ["score", "--from", "inspect", str(path), "--output-dir", str(tmp_path), "--name", "x"])
    assert res.exit_code != 0 and "unpacks to 33,554,432 bytes" in res.output and "Traceback" not in res.output


def test_a_json_log_past_its_limit_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "log.json"
    path.write_text('{"version": 2, "status": "success", "eval": {}}' + " " * 5000)
    monkeypatch.setattr(inspect_logs, "MAX_JSON_LOG_BYTES", 1000)
    with pytest.raises(DatasetError, match=r"log.json: a .json log of 5,047 bytes, more than the 1,000 bytes"):
        inspect_logs.check_log_size(path)


# -- numbers in imported logs ----------------------------------------------------------------------
def test_imported_log_records_pass_the_token_count_rule():
    with pytest.raises(RowError, match="expected a whole number from 0 to 2147483647, got -3"):
        new_record(input="q", target="1", prediction="1", completion_tokens=-3)
    assert new_record(input="q", target="1", prediction="1", completion_tokens=4.0,
                      finish_reason="max_tokens")["finish_reason"] == "length"


# -- plan files ------------------------------------------------------------------------------------
def test_a_multi_megabyte_file_that_is_not_a_plan_is_refused_at_once_saying_what_it_is(tmp_path):
    path = tmp_path / "big.yaml"
    line = json.dumps({"id": "x", "input": "What is 2 + 2? " * 5, "target": "4", "prediction": "*a &b *c"}) + "\n"
    path.write_text(line * (4 * 1024**2 // len(line)))  # ~4 MB of JSON lines
    start = time.monotonic()
    with pytest.raises(PlanError) as err:
        load_plan(path)
    took = time.monotonic() - start
    message = str(err.value)
    assert took < 0.5, took
    assert f"more than the {MAX_PLAN_BYTES:,} bytes a plan file may hold" in message
    assert "it looks like JSON Lines" in message and "alias" not in message


def test_a_small_file_that_is_not_a_plan_is_named_for_what_it_is(tmp_path):
    cases = {"data.csv": ("input,target\n2+2,4\n", "CSV or other tabular text"),
             "store.yaml": ("SQLite format 3\x00" + "x" * 100, "a SQLite database"),
             "notes.yaml": ("hello there\nthis is prose\n", "text whose first line is not a key"),
             "gz.yaml": (None, "a gzip-compressed file")}
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        if text is None:
            import gzip

            path.write_bytes(gzip.compress(PLAN.encode()))
        else:
            path.write_text(text)
        with pytest.raises(PlanError, match=f"{name}: not a YAML plan: it looks like {expected}"):
            load_plan(path)


def test_a_plan_of_many_values_without_aliases_is_not_called_an_alias_bomb(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text("experiment: {name: t}\nnotes: [" + ", ".join("1" for _ in range(MAX_EVENTS + 10)) + "]\n")
    assert path.stat().st_size < MAX_PLAN_BYTES
    with pytest.raises(PlanError) as err:
        load_plan(path)
    assert "many.yaml:2: the document holds more than 20,000 values, far more than any plan" in str(err.value)
    assert "alias" not in str(err.value)


def test_real_plans_still_load(tmp_path):
    for text in (PLAN, "# a comment\n%YAML 1.2\n---\n" + PLAN, json.dumps({"models": [{"spec": "mock/reasoner"}],
                                                                          "datasets": [{"name": "s",
                                                                                        "format": "synthetic"}]})):
        path = tmp_path / "plan.yaml"
        path.write_text(text.replace("OUT", str(tmp_path / "runs")))
        assert load_plan(path).models[0].spec == "mock/reasoner"


# -- output folders through links ------------------------------------------------------------------
@pytest.mark.parametrize("kind, words", [("loop", "is a symbolic link in a loop"),
                                         ("dangling", "is a dangling symbolic link")])
def test_validate_and_run_refuse_an_output_dir_through_a_bad_link_alike(kind, words, tmp_path):
    link = tmp_path / "out"
    if kind == "loop":
        os.symlink(tmp_path / "out2", link)
        os.symlink(link, tmp_path / "out2")
    else:
        os.symlink(tmp_path / "nowhere", link)
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("OUT", str(link / "runs")))
    checked = runner.invoke(app, ["validate", str(plan)])
    ran = runner.invoke(app, ["run", str(plan)])
    assert checked.exit_code != 0 and ran.exit_code != 0
    for res in (checked, ran):
        assert f"output_dir's parent {link} {words}" in " ".join(res.output.split()), res.output
    with pytest.raises(ValueError, match=words):
        check_output_dir(link)


# -- lm-eval results file given directly -----------------------------------------------------------
def test_an_lm_eval_results_file_of_many_tasks_names_its_samples_files(tmp_path):
    """A results file on one line whose 'configs' and 'n-samples' lie beyond the first 64 KiB."""
    date = "2026-01-01T00-00-00.000001"
    results = {"results": {f"task_{i}": {"exact_match,none": 0.5, "alias": f"task {i}" * 20} for i in range(600)},
               "configs": {}, "n-samples": {}}
    path = tmp_path / f"results_{date}.json"
    path.write_text(json.dumps(results))
    assert path.stat().st_size > 64 * 1024
    (tmp_path / f"samples_gsm8k_{date}.jsonl").write_text("")
    with pytest.raises(DatasetError) as err:
        read_lm_eval(path)
    assert "not its per-sample log; give its run's samples files (samples_gsm8k_" in str(err.value)
    assert "doc_id" not in str(err.value)
    other = tmp_path / "exported.json"
    other.write_text(json.dumps(results))
    with pytest.raises(DatasetError, match="lm-eval's results file"):
        read_lm_eval(other)


# -- samples.jsonl ---------------------------------------------------------------------------------
def test_samples_jsonl_writes_each_text_once_and_cuts_long_texts_with_their_length(tmp_path):
    from reasonscope.report.build import SAMPLE_TEXT_CHARS

    think = "I think. " * 12_000  # 108,000 characters
    steps = " ".join(f"Step {i} adds one more apple to the pile." for i in range(300))  # 13,000 characters
    prediction = f"<think>{think}</think>\n{steps}\nAnswer: 4"
    rows = [{"id": "a", "input": "What is 2 + 2?", "target": "4", "prediction": prediction},
            {"id": "b", "input": "What is 3 + 3?", "target": "6", "prediction": "3 + 3 = 6.\nAnswer: 6"}]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["score", "-i", str(path), "--output-dir", str(tmp_path), "--name", "x"])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "x" / "samples.jsonl").read_text().splitlines()
    long, short = (json.loads(line) for line in lines)
    more = len(prediction) - SAMPLE_TEXT_CHARS
    assert long["prediction"] == prediction[:SAMPLE_TEXT_CHARS] + \
        f" … [{more:,} more characters; the whole text is in store.sqlite]"
    assert long["think"] is None and long["trace"] == ""  # both are parts of the prediction: written once
    assert all(len(s) <= 202 for s in long["steps"]) and long["steps"][-1].endswith(" more steps]")
    assert len(lines[0]) < 1.2 * SAMPLE_TEXT_CHARS
    assert short["prediction"] == rows[1]["prediction"] and short["trace"] == "" and short["steps"]
