"""``reasonscope compare`` on the command line: exit codes, the four outputs, bad inputs, nothing written."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.compare import compare_runs, json_schema, render_html, render_markdown, render_text
from reasonscope.storage.rundir import RunDirLock
from test_compare import CQ_BASE, CQ_NEW, make_run, shares

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "schemas" / "compare.schema.json"


def snapshot(*folders: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under the folders: (size, mtime in ns, sha256), and the folders' own mtimes."""
    out = {}
    for folder in folders:
        out[str(folder)] = (0, folder.stat().st_mtime_ns, "")
        for path in sorted(folder.rglob("*")):
            st = path.stat()
            out[str(path)] = (st.st_size, st.st_mtime_ns,
                              hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "")
    return out


def invoke(*args: str):
    return CliRunner().invoke(app, ["compare", *args])


@pytest.fixture
def worse(tmp_path):
    base = make_run(tmp_path / "base", {("behavior", "CQ", "m"): shares(CQ_BASE)},
                    outputs={("m", "i00"): "Answer: 1 <script>alert(1)</script>"})
    new = make_run(tmp_path / "new", {("behavior", "CQ", "m"): shares(CQ_NEW)},
                   outputs={("m", "i00"): "Answer: 7"}, seed=1)
    return base, new


def test_exit_codes_0_1_2_and_nothing_written(worse, tmp_path):
    base, new = worse
    before = snapshot(base, new)
    res = invoke(str(base), str(new))
    assert res.exit_code == 1, res.output
    assert "gate: FAIL (exit 1)" in res.output and "worse !" in res.output
    assert invoke(str(new), str(base)).exit_code == 0
    assert invoke(str(base), str(new), "--min-effect", "0.95").exit_code == 0
    other = make_run(tmp_path / "other", {("behavior", "CQ", "m"): {"zz": 1.0}})
    res = invoke(str(base), str(other))
    assert res.exit_code == 2 and "share no scored item" in res.output
    assert snapshot(base, new) == before


def test_the_terminal_table_is_readable_at_80_columns(tmp_path):
    long = "coverage_contradict:edit_chars"
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): shares(CQ_BASE),
                                     ("evidence", long, "m"): {"i00": 0.5, "i01": 0.25}}, config={"families": {}})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): shares(CQ_NEW),
                                    ("evidence", long, "m"): {"i00": 0.75, "i01": 0.25}}, config={"families": {}})
    console = Console(width=80, record=True)
    render_text(compare_runs(base, new, metrics=["CQ"]), console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text
    assert "worse !" in text and "no change°" in text and "evidence" in text
    cq_line = next(line for line in text.splitlines() if line.startswith("CQ "))
    assert cq_line.split()[1:5] == ["10", "1.000", "0.100", "-0.900"]


def test_markdown_and_json_outputs(worse):
    base, new = worse
    res = invoke(str(base), str(new), "--format", "markdown")
    assert res.exit_code == 1
    assert res.stdout.startswith("### reasonscope compare: FAIL (exit 1)")
    assert "| Correctness (CQ) (behavior) | m | 10 | 1.000 | 0.100 | -0.900 |" in res.stdout
    res = invoke(str(base), str(new), "--format", "json")
    data = json.loads(res.stdout)
    assert data["exit_code"] == 1 and data["metrics"][0]["p_value"] == pytest.approx(2 * 0.5 ** 9)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema)(schema).validate(data)


def test_the_committed_schema_is_the_generated_one():
    assert SCHEMA.read_text(encoding="utf-8") == json.dumps(json_schema(), indent=2, sort_keys=True,
                                                            ensure_ascii=False) + "\n", \
        "run `reasonscope compare --schema > docs/schemas/compare.schema.json`"
    res = invoke("--schema")
    assert res.exit_code == 0 and json.loads(res.stdout) == json_schema()


def test_html_has_the_plot_and_the_escaped_drill_down(worse, tmp_path):
    base, new = worse
    page = tmp_path / "out" / "compare.html"
    res = invoke(str(base), str(new), "--html", str(page))
    assert res.exit_code == 1
    html = page.read_text(encoding="utf-8")
    assert "data:image/png;base64," in html and "Items that changed most" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Answer: 7" in html and "behavior/CQ (m)" in html
    assert "Gate: FAIL (exit 1)" in html
    assert render_html(compare_runs(base, new)).count("<tr>") == html.count("<tr>")
    res = invoke(str(base), str(new), "--html", str(base / "c.html"))
    assert res.exit_code == 2 and "inside a run folder" in res.output and not (base / "c.html").exists()


def test_options_are_checked(worse):
    base, new = worse
    res = invoke(str(base), str(new), "--pair", "nope")
    assert res.exit_code == 2 and "expected BASE_MODEL=NEW_MODEL" in res.output
    res = invoke(str(base), str(new), "--format", "xml")
    assert res.exit_code == 2 and "expected one of text, markdown, json" in res.output
    res = invoke(str(base), str(new), "--metrics", "CQ,XX")
    assert res.exit_code == 2 and "--metrics XX: no such metric" in res.output
    assert invoke(str(base), str(new), "--metrics", "behavior/CQ", "--format", "json").exit_code == 1
    assert invoke(str(base)).exit_code == 2


@pytest.mark.parametrize("case", ["file", "no store", "lock held", "damaged", "other datasets", "no such run"])
def test_bad_input_one_message_naming_the_file_exit_2_nothing_written(worse, tmp_path, case):
    base, new = worse
    lock = None
    target = new
    if case == "file":
        target = tmp_path / "a-file"
        target.write_text("x")
        expected = f"{target}: not a folder; expected the NEW run folder"
    elif case == "no store":
        target = tmp_path / "empty"
        target.mkdir()
        expected = f"{target}/store.sqlite: no such file; {target} is not a run folder"
    elif case == "lock held":
        lock = RunDirLock(new).acquire()
        expected = f"{new}/.reasonscope.lock: the NEW run is still being written (lock held by pid "
    elif case == "damaged":
        (new / "store.sqlite").write_bytes(b"not a database " * 100)
        expected = f"{new}/store.sqlite: not a readable reasonscope store"
    elif case == "other datasets":
        target = make_run(tmp_path / "other", {("behavior", "CQ", "m"): shares(CQ_NEW)}, dataset="gsm8k")
        expected = f"{target}/store.sqlite: NEW holds the datasets gsm8k"
    else:
        expected = f"{new}/store.sqlite: no run 'nope' (the store holds "
    before = snapshot(base, target)
    try:
        args = [str(base), str(target)] + (["--new-run-id", "nope"] if case == "no such run" else [])
        res = invoke(*args)
    finally:
        if lock is not None:
            after_locked = snapshot(base, target)
            lock.release()
    assert res.exit_code == 2, res.output
    message = " ".join(res.output.split())
    assert message.count("error:") == 1 and expected in message, message
    assert (after_locked if lock is not None else snapshot(base, target)) == before


def test_a_store_with_a_write_ahead_log_is_read_whole_and_left_as_it_is(worse):
    base, new = worse
    writer = sqlite3.connect(new / "store.sqlite", isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE scores SET value=1.0 WHERE metric='CQ'")  # in the WAL only: NEW equals BASE now
        assert (new / "store.sqlite-wal").stat().st_size > 0
        before = snapshot(base, new)
        res = compare_runs(base, new)
        assert res.metrics[0].difference == 0.0 and res.exit_code == 0
        assert snapshot(base, new) == before
    finally:
        writer.close()


def test_a_run_still_running_is_refused(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "m"): shares(CQ_BASE)})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "m"): shares(CQ_NEW)}, finish=False)  # this process: alive
    res = invoke(str(base), str(new))
    assert res.exit_code == 2 and "is still being written (pid" in " ".join(res.output.split())


def test_markdown_escapes_pipes(tmp_path):
    base = make_run(tmp_path / "b", {("behavior", "CQ", "a|b"): shares(CQ_BASE)})
    new = make_run(tmp_path / "n", {("behavior", "CQ", "a|b"): shares(CQ_NEW)})
    text = render_markdown(compare_runs(base, new))
    row = next(line for line in text.splitlines() if line.startswith("| Correctness"))
    assert "| a\\|b |" in row and row.count(" | ") == 9


@pytest.mark.slow
def test_real_mock_runs_end_to_end(tmp_path, monkeypatch):
    """Two runs of the mock reasoner (accuracy 0.9 vs 0.3, 30 items): CQ worse, exit 1, outputs in the drill-down."""
    from rich.console import Console as RichConsole

    from reasonscope.pipeline.runner import Runner
    from reasonscope.plan import parse_plan

    def run(name, accuracy):
        plan = parse_plan({"experiment": {"name": name, "seed": 1, "output_dir": str(tmp_path)},
                           "models": [{"spec": "mock/reasoner", "name": f"mock-{name}",
                                       "options": {"accuracy": accuracy}}],
                           "datasets": [{"name": "synthetic", "format": "synthetic", "size": 10, "seed": 0}],
                           "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                                     "similarity": {"method": "embedding"}}}})
        Runner(plan, console=RichConsole(quiet=True)).run()
        return tmp_path / name

    base, new = run("base", 0.9), run("new", 0.3)
    before = snapshot(base, new)
    res = compare_runs(base, new)
    cq = next(r for r in res.metrics if r.metric == "CQ")
    assert res.pairs == {"mock-base": "mock-new"} and cq.n_shared == 30 and cq.verdict == "worse"
    assert res.exit_code == 1
    assert any(c.base_output and "Answer:" in c.base_output for c in res.changes)
    assert snapshot(base, new) == before
