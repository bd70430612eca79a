"""A finished run that already answers the plan is reported as up to date (no call, no scoring, no new run);
anything that may change a result runs again."""

from __future__ import annotations

import contextlib
import json
import re

import pytest
from typer.testing import CliRunner

from reasonscope.cli import app
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan
from reasonscope.storage.store import Store

runner = CliRunner()


def plan(tmp_path, resamples=200, path=None):
    datasets = [{"name": "syn", "format": "synthetic", "size": 2}] if path is None else \
        [{"name": "syn", "format": "jsonl", "path": str(path)}]
    return parse_plan({
        "experiment": {"name": "u", "seed": 2, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "a", "max_tokens": 40}],
        "datasets": datasets,
        "families": {"behavior": {"samples": 2, "paraphrases": 1, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": resamples}})


@pytest.fixture(params=["unread", "loaded"])
def check(request, monkeypatch):
    """Both ways a re-run is found up to date: from the datasets' source digests before any is read
    (``unread``), and from the loaded items' digest (``loaded``: a Hub dataset, or a run recorded before
    the source digests)."""
    if request.param == "loaded":
        import reasonscope.pipeline.runner as runner_module

        monkeypatch.setattr(runner_module, "source_digests", lambda *args, **kwargs: None)
    return Check(request.param, monkeypatch)


class Check:
    def __init__(self, way: str, monkeypatch):
        self.way, self.monkeypatch = way, monkeypatch

    @contextlib.contextmanager
    def up_to_date(self):
        """Around a run that must be found up to date: by the ``unread`` way, no dataset may be read."""
        with self.monkeypatch.context() as mp:
            if self.way == "unread":
                def unread(runner):
                    raise AssertionError("a dataset was read")

                mp.setattr(Runner, "load_datasets", unread)
            yield


def runs(tmp_path):
    store = Store(tmp_path / "u")
    try:
        return [r["run_id"] for r in store.runs()]
    finally:
        store.close()


def test_a_finished_run_is_reused_until_something_changes(tmp_path, check):
    first = Runner(plan(tmp_path), show_progress=False).run()
    assert first.calls_made > 0
    summary = (tmp_path / "u" / "summary.json").read_text()
    with check.up_to_date():
        again = Runner(plan(tmp_path), show_progress=False).run()
    assert again.run_id == first.run_id and again.calls_made == 0 and again.outcome.code == 0
    assert runs(tmp_path) == [first.run_id] and (tmp_path / "u" / "summary.json").read_text() == summary
    # --rescore: scored again from the store, a new run, still no model call
    rescored = Runner(plan(tmp_path), show_progress=False, reuse_finished=False).run()
    assert rescored.run_id != first.run_id and rescored.calls_made == 0
    # a changed setting: a new run
    changed = Runner(plan(tmp_path, resamples=300), show_progress=False).run()
    assert changed.run_id not in (first.run_id, rescored.run_id)
    # a missing output: a new run that writes it
    (tmp_path / "u" / "report.html").unlink()
    rebuilt = Runner(plan(tmp_path, resamples=300), show_progress=False).run()
    assert rebuilt.run_id != changed.run_id and (tmp_path / "u" / "report.html").is_file()


def test_a_changed_gold_answer_is_not_up_to_date(tmp_path, check):
    data = tmp_path / "d.jsonl"
    rows = [{"id": "q1", "question": "What is 2+2?", "answer": 4}, {"id": "q2", "question": "What is 3+3?",
                                                                     "answer": 6}]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    first = Runner(plan(tmp_path, path=data), show_progress=False).run()
    with check.up_to_date():
        assert Runner(plan(tmp_path, path=data), show_progress=False).run().run_id == first.run_id
    rows[0]["answer"] = 5  # same prompts (same request keys), another gold answer
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    second = Runner(plan(tmp_path, path=data), show_progress=False).run()
    assert second.run_id != first.run_id and second.calls_made == 0


def test_a_generation_gone_from_the_store_is_not_up_to_date(tmp_path, check):
    first = Runner(plan(tmp_path), show_progress=False).run()
    store = Store(tmp_path / "u")
    try:
        key = store.conn.execute("SELECT key FROM run_generations WHERE run_id=? ORDER BY key LIMIT 1",
                                 (first.run_id,)).fetchone()[0]
        linked = store.run_link_state(first.run_id)
        with store.transaction() as c:
            c.execute("DELETE FROM generations WHERE key=?", (key,))
        assert linked[:2] == (18, 18) and store.run_link_state(first.run_id)[:2] == (18, 17)  # 6 items x (2 + 1)
    finally:
        store.close()
    again = Runner(plan(tmp_path), show_progress=False).run()
    assert again.run_id != first.run_id and again.calls_made == 1  # the lost one, generated again


def test_items_rewritten_by_an_interrupted_run_are_not_up_to_date(tmp_path, check):
    # the store's items table belongs to the run directory: a run started on an edited question and then
    # interrupted leaves the edited item there, while the finished run answered the old question
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": "What is 2+2?", "answer": 4}) + "\n")
    first = Runner(plan(tmp_path, path=data), show_progress=False).run()
    data.write_text(json.dumps({"id": "q1", "question": "What is 2+3?", "answer": 5}) + "\n")
    edited = Runner(plan(tmp_path, path=data), show_progress=False).load_datasets()[0]
    store = Store(tmp_path / "u")
    try:
        store.put_items("syn", edited["syn"])  # what the interrupted run wrote before its first call
    finally:
        store.close()
    again = Runner(plan(tmp_path, path=data), show_progress=False).run()
    assert again.run_id != first.run_id and again.calls_made == 2  # the new question, 2 samples (no paraphrase)


def test_a_generation_written_again_after_the_run_is_not_up_to_date(tmp_path, check):
    # e.g. a failed generation sent again by a later (interrupted) --retry-failed run: same key, new text
    first = Runner(plan(tmp_path), show_progress=False).run()
    store = Store(tmp_path / "u")
    try:
        assert store.run_link_state(first.run_id)[2] == store.run(first.run_id)["notes"]["generations_written"]
        with store.transaction() as c:  # written again one second *earlier*: no clock is compared
            c.execute("UPDATE generations SET text='Answer: 5', created=created - 1 WHERE key=(SELECT MIN(key) "
                      "FROM run_generations WHERE run_id=?)", (first.run_id,))
    finally:
        store.close()
    again = Runner(plan(tmp_path), show_progress=False).run()
    assert again.run_id != first.run_id and again.calls_made == 0  # scored again from the store


def test_link_state_of_a_large_run(tmp_path):
    # 20,000 generations written now: their write times in microseconds sum past 2**63
    import time

    from reasonscope.types import Completion

    store = Store(tmp_path / "big")
    try:
        now = time.time()
        with store.transaction():
            for i in range(20_000):
                store.put_completion(f"k{i}", provider="mock", model_id="m", request={}, completion=Completion(text="x"))
        store.link([("r", "m", "d", f"i{i}", "original", 0, f"k{i}", None) for i in range(20_001)])
        linked, stored, written = store.run_link_state("r")
        assert (linked, stored) == (20_001, 20_000) and written > 2**63
        assert abs(written / 20_000 / 1e6 - now) < 60  # the mean write time: now
        with store.transaction() as c:
            c.execute("UPDATE generations SET created = created + 0.001 WHERE key='k7'")
        assert store.run_link_state("r")[2] != written
    finally:
        store.close()


def test_changed_reasonscope_code_is_not_up_to_date(tmp_path, monkeypatch, check):
    # an editable install keeps its version number while its code changes: the source digest shows it
    import reasonscope.storage.versions as versions

    first = Runner(plan(tmp_path), show_progress=False).run()
    monkeypatch.setattr(versions, "source_digest", lambda root=None: "0" * 16)
    again = Runner(plan(tmp_path), show_progress=False).run()
    assert again.run_id != first.run_id and again.calls_made == 0  # scored again, every completion cached
    with check.up_to_date():
        assert Runner(plan(tmp_path), show_progress=False).run().run_id == again.run_id


def test_only_a_run_answers_a_plan(tmp_path, check):
    # the latest finished record is the scoring of imported outputs: its links are not the plan's requests
    first = Runner(plan(tmp_path), show_progress=False).run()
    store = Store(tmp_path / "u")
    try:
        with store.transaction() as c:
            c.execute("UPDATE runs SET kind='score' WHERE run_id=?", (first.run_id,))
    finally:
        store.close()
    assert Runner(plan(tmp_path), show_progress=False).run().run_id != first.run_id


def test_source_digest_follows_every_file_but_compiled_caches(tmp_path):
    from reasonscope.storage.versions import source_digest

    pkg = tmp_path / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "t.html").write_text("<p>")
    base = source_digest(pkg)
    assert re.fullmatch(r"[0-9a-f]{16}", base)
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert source_digest(pkg) == base
    (pkg / "t.html").write_text("<p>.")
    assert source_digest(pkg) != base
    (pkg / "t.html").write_text("<p>")
    (pkg / "a.py").rename(pkg / "b.py")  # a file's name counts, not only its bytes
    assert source_digest(pkg) != base


def test_source_digest_follows_linked_folders_once(tmp_path):
    from reasonscope.storage.versions import source_digest

    pkg, elsewhere = tmp_path / "pkg", tmp_path / "elsewhere"
    pkg.mkdir()
    elsewhere.mkdir()
    (elsewhere / "m.py").write_text("y = 1\n")
    (pkg / "sub").symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "loop").symlink_to(pkg, target_is_directory=True)  # back to an ancestor: no endless walk
    base = source_digest(pkg)
    (elsewhere / "m.py").write_text("y = 2\n")  # a change inside the linked folder shows
    assert source_digest(pkg) != base


def test_the_run_record_holds_the_versions_that_compute_its_numbers(tmp_path):
    import platform

    first = Runner(plan(tmp_path), show_progress=False).run()
    store = Store(tmp_path / "u")
    try:
        run = store.run(first.run_id)
    finally:
        store.close()
    versions = run["versions"]
    assert versions["python"] == platform.python_version() and len(versions["reasonscope-source"]) == 16
    assert {"sympy", "math-verify", "scikit-learn", "rapidfuzz", "pydantic"} <= set(versions)
    assert versions["pydantic"] is not None and run["notes"]["items"].keys() == {"syn"}


def test_an_up_to_date_run_reads_no_dataset(tmp_path, monkeypatch):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": "What is 2+2?", "answer": 4}) + "\n" + "not json\n")
    both = plan(tmp_path, path=data).model_dump()
    both["datasets"][0]["skip_bad_rows"] = True
    both["datasets"].append({"name": "gen", "format": "synthetic", "size": 2})
    first = Runner(parse_plan(both), show_progress=False).run()
    store = Store(tmp_path / "u")
    try:
        notes = store.run(first.run_id)["notes"]
        linked = store.run_link_state(first.run_id)[0]
    finally:
        store.close()
    digest = __import__("hashlib").sha256(data.read_bytes()).hexdigest()[:16]
    assert notes["sources"] == {"gen": "generated", "syn": digest} and notes["requests"] == linked == 2 + 6 * 3

    def unread(self):
        raise AssertionError("a dataset was read")

    monkeypatch.setattr(Runner, "load_datasets", unread)
    from rich.console import Console

    console = Console(record=True, width=200)
    again = Runner(parse_plan(both), show_progress=False, console=console).run()
    said = console.export_text()
    assert again.run_id == first.run_id and again.calls_made == 0 and again.cached == linked
    assert "up to date" in said and "syn: skipped 1 bad rows when the run was made (line 2: invalid JSON" in said


def test_an_edited_evidence_test_file_is_not_up_to_date(tmp_path, check):
    from reasonscope.data.synthetic_topics import topic_items

    test = tmp_path / "te.jsonl"
    rows = [it.model_dump(mode="json", exclude={"group"}) for it in topic_items(10, 4, prefix="test")]
    test.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"experiment": {"name": "u", "seed": 3, "output_dir": str(tmp_path)},
            "models": [{"spec": "mock/reasoner", "name": "a"}],
            "families": {"behavior": None, "evidence": {
                "train": {"name": "tr", "format": "topics", "size": 40, "split": "train"},
                "test": {"name": "te", "format": "jsonl", "path": str(test)},
                "sweep_k": [3], "sweep_delta": [0.1], "n_permutations": 100}},
            "stats": {"n_resamples": 100}}
    first = Runner(parse_plan(spec), show_progress=False).run()
    assert first.calls_made == 10
    with check.up_to_date():
        assert Runner(parse_plan(spec), show_progress=False).run().run_id == first.run_id
    labels = sorted({r["target"] for r in rows})
    rows[0]["target"] = next(label for label in labels if label != rows[0]["target"])  # another gold label
    test.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = Runner(parse_plan(spec), show_progress=False).run()
    assert again.run_id != first.run_id and again.calls_made == 0


def test_a_file_changed_while_it_is_read_is_recorded_without_sources(tmp_path, monkeypatch):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": "What is 2+2?", "answer": 4}) + "\n")
    load_datasets = Runner.load_datasets

    def edited_while_read(runner):
        loaded = load_datasets(runner)
        data.write_text(json.dumps({"id": "q1", "question": "What is 2+2?", "answer": 5}) + "\n")
        return loaded

    monkeypatch.setattr(Runner, "load_datasets", edited_while_read)
    first = Runner(plan(tmp_path, path=data), show_progress=False).run()
    store = Store(tmp_path / "u")
    try:
        assert store.run(first.run_id)["notes"]["sources"] is None
    finally:
        store.close()


def test_an_up_to_date_run_writes_back_the_plan_a_later_interrupted_run_left(tmp_path, check):
    first = Runner(plan(tmp_path), show_progress=False).run()
    config = tmp_path / "u" / "config.yaml"
    written = config.read_text()
    config.write_text(written.replace("n_resamples: 200", "n_resamples: 999"))  # as a later run started it
    with check.up_to_date():
        assert Runner(plan(tmp_path), show_progress=False).run().run_id == first.run_id
    assert config.read_text() == written


def test_an_up_to_date_run_leaves_a_config_that_holds_its_plan_as_it_is(tmp_path, check):
    Runner(plan(tmp_path), show_progress=False).run()
    config = tmp_path / "u" / "config.yaml"
    before = config.stat().st_mtime_ns, config.stat().st_ino
    with check.up_to_date():
        Runner(plan(tmp_path), show_progress=False).run()
    assert (config.stat().st_mtime_ns, config.stat().st_ino) == before  # not written again (atomic writes
    # replace the file, so a rewrite gives another inode even within one clock tick)


def test_source_digests_say_what_items_are_made_from(tmp_path):
    from reasonscope.pipeline.up_to_date import GENERATED, source_digests
    from reasonscope.shared_settings import DatasetConfig

    (tmp_path / "d.jsonl").write_text('{"question": "q", "answer": 1}\n')
    local = DatasetConfig(name="a", format="jsonl", path="d.jsonl")
    generated = DatasetConfig(name="b", format="synthetic", size=3)
    first = source_digests([local, generated], base_dir=tmp_path)
    assert first == {"a": __import__("hashlib").sha256(b'{"question": "q", "answer": 1}\n').hexdigest()[:16],
                     "b": GENERATED}
    (tmp_path / "d.jsonl").write_text('{"question": "q", "answer": 2}\n')
    assert source_digests([local], base_dir=tmp_path)["a"] != first["a"]
    assert source_digests([local], base_dir=tmp_path / "elsewhere") is None  # no such file: loading says so
    assert source_digests([DatasetConfig(name="h", format="jsonl", hf_id="org/set"), generated]) is None  # the Hub


def test_installed_versions_are_importlib_metadatas_for_every_installed_distribution():
    from importlib import metadata

    from reasonscope.storage.versions import installed_versions

    names = sorted({d.metadata["Name"] for d in metadata.distributions()} - {None})
    assert len(names) > 50
    assert installed_versions(names) == {name: metadata.version(name) for name in names}
    assert installed_versions(["surely-not-installed-xyz"]) == {"surely-not-installed-xyz": None}


def test_the_version_is_read_from_the_metadata_header_only():
    import email

    from reasonscope.storage.versions import _header_version

    header = "Metadata-Version: 2.1\nName: thing\nversion:\t 1.2rc1 \nSummary: s\n\nVersion: 9.9 (in the description)\n"
    assert _header_version(header) == "1.2rc1 " == email.message_from_string(header)["Version"]
    assert _header_version("Metadata-Version: 2.1\nName: thing\n\nVersion: 9.9\n") is None
    assert _header_version("Name: thing\n Version: 9.9\nVersion: 1.0\n") == "1.0"  # a continuation line is no field
    assert _header_version("Name: thing\nVersion: 1.0\n  folded\n") is None  # folded: importlib.metadata reads it
    assert _header_version("") is None


def test_cli_says_up_to_date_and_rescore_scores_again(tmp_path):
    path = tmp_path / "p.yaml"
    import yaml

    path.write_text(yaml.safe_dump(plan(tmp_path).model_dump(mode="json", exclude_none=True)))
    res = runner.invoke(app, ["run", str(path)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["run", str(path)])
    assert res.exit_code == 0 and "up to date" in res.output and "0 model calls" in res.output
    res = runner.invoke(app, ["run", str(path), "--rescore"])
    assert res.exit_code == 0 and "up to date" not in res.output
    assert len(runs(tmp_path)) == 2
