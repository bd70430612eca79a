"""Hostile but ordinary inputs and surroundings: outputs that must describe one run (a report taken while
a run writes, a killed run on a changed plan), inputs that must be streamed and bounded (``/dev/zero``, a
gzip bomb, a FIFO), a disk that fills up, a folder that is read-only, a store that is corrupt, and model
replies too long (or too strange) to embed whole in ``report.html``."""

from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reasonscope.cli import LOCKED_EXIT, app
from reasonscope.data.files import MAX_DECOMPRESSED_BYTES, MAX_LINE_BYTES, DatasetError
from reasonscope.data.loaders import load_dataset
from reasonscope.report.build import SAMPLE_TEXT_CHARS
from reasonscope.report.html import HTML_TEXT_CHARS
from reasonscope.shared_settings import DatasetConfig
from reasonscope.storage.store import Store
from reasonscope.storage.yaml_io import read_yaml

runner = CliRunner()
pytest.importorskip("torch")  # imported whole here: the runs below load the embedding scorer in a thread


def write_plan(tmp_path: Path, name: str = "h", *, data: str | None = None, model: dict | None = None,
               n_resamples: int = 200, size: int = 2, families: dict | None = None) -> Path:
    dataset = {"name": "d", "format": "jsonl", "path": data} if data else \
        {"name": "d", "format": "synthetic", "size": size}
    plan = {"experiment": {"name": name, "seed": 1, "output_dir": str(tmp_path / "runs")},
            "models": [model or {"spec": "mock/reasoner"}], "datasets": [dataset],
            "families": families or {"behavior": {"samples": 2, "paraphrases": 0, "nli": {"backend": "none"},
                                                  "similarity": {"method": "embedding"}}},
            "stats": {"n_resamples": n_resamples}}
    path = tmp_path / f"{name}-{n_resamples}.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def last_line(res) -> str:
    return res.output.strip().splitlines()[-1]


# --------------------------------------------------------------------------- 8. unbounded outputs


def long_reply_plan(tmp_path: Path, texts: list[str]) -> Path:
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i}+1?", "answer": i + 1}) + "\n"
                            for i in range(len(texts))))
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"item_id": f"d/q{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    return write_plan(tmp_path, "long", data=str(data), model={"spec": "mock/replay", "max_tokens": 1_000_000,
                                                                 "options": {"path": str(replay)}},
                      families={"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                             "similarity": {"method": "embedding"}}})


def test_six_one_megabyte_replies_make_a_bounded_report_with_each_text_once(tmp_path):
    """Six 1 MB single-token replies made a 12.7 MB report.html (each text twice: raw and as its step).
    The report embeds at most HTML_TEXT_CHARS characters of a text, once, with a pointer to samples.jsonl."""
    texts = [f"R{i}" + chr(ord("a") + i) * 1_000_000 for i in range(6)]
    res = runner.invoke(app, ["run", str(long_reply_plan(tmp_path, texts))])
    assert res.exit_code == 0, res.output
    run_dir = tmp_path / "runs" / "long"
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert len(html.encode()) < 600_000  # 6 texts x 20,000 characters + the page; was 12.7 MB
    for t in texts:
        head = t[:HTML_TEXT_CHARS]
        assert html.count(head) == 1  # embedded once
        assert t[: HTML_TEXT_CHARS + 1] not in html  # and no more than the bound
    assert html.count("more characters of this text are in samples.jsonl") == 6
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    more = 1_000_002 - SAMPLE_TEXT_CHARS  # samples.jsonl: each text once, cut with the rest's length stated
    assert sorted(r["prediction"] for r in rows) == sorted(
        t[:SAMPLE_TEXT_CHARS] + f" … [{more:,} more characters; the whole text is in store.sqlite]" for t in texts)
    assert all(r["trace"] == "" and not any(len(s) > 202 for s in r["steps"]) for r in rows)
    stored = {t for (t,) in Store(run_dir).conn.execute("SELECT text FROM generations")}
    assert stored == set(texts)  # the store keeps every text whole


def test_control_characters_are_never_written_raw_into_the_report(tmp_path):
    """NUL and ESC in a reply were written raw into report.html; every C0 control character but tab and
    newline (and DEL, C1 controls) is shown as a visible symbol instead."""
    hostile = "a\x00b\x1b[31mred\x1b[0m\x07\x08\x0b\x0c\r\x7f\x85end\ttab\nline"
    res = runner.invoke(app, ["run", str(long_reply_plan(tmp_path, [hostile, "Answer: 2"]))])
    assert res.exit_code == 0, res.output
    raw = (tmp_path / "runs" / "long" / "report.html").read_bytes()
    controls = {b for b in raw if b < 0x20 and b not in (0x09, 0x0A)} | ({0x7F} & set(raw))
    assert controls == set()
    html = raw.decode("utf-8")
    assert "\x85" not in html
    assert "a\u2400b\u241b[31mred\u241b[0m\u2407\u2408\u240b\u240c\u240d\u2421\ufffdend\ttab\nline" in html


def test_html_text_bound_for_many_steps(tmp_path):
    """A reply of many short steps: the steps list is bounded too (it repeats the text's sentences)."""
    text = "".join(f"Step {k} adds one more to the running total.\n" for k in range(30_000)) + "Answer: 1"
    res = runner.invoke(app, ["run", str(long_reply_plan(tmp_path, [text]))])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "runs" / "long" / "report.html").read_text(encoding="utf-8")
    assert len(html.encode()) < 150_000  # the reply alone is 1.4 MB
    assert "Step 0 adds one more" in html and "Step 29999 adds" not in html
    assert "more steps are in samples.jsonl" in html


# --------------------------------------------------------------------------- 3. unbounded reads


def cfg(path: Path, fmt: str = "jsonl", **kw) -> DatasetConfig:
    return DatasetConfig(name="x", format=fmt, path=str(path), **kw)


def test_dev_zero_is_refused_as_not_a_regular_file(tmp_path):
    for path in ("/dev/zero", "/dev/null"):
        with pytest.raises(DatasetError, match=rf"{path}: not a regular file \(a character device\); expected"):
            load_dataset(cfg(Path(path)))
    plan = write_plan(tmp_path, data="/dev/zero")
    for command in ("validate", "run"):
        res = runner.invoke(app, [command, str(plan)])
        assert res.exit_code == 2, res.output
        assert "/dev/zero: not a regular file (a character device)" in last_line(res) + res.output


def test_a_directory_as_dataset_is_refused(tmp_path):
    (tmp_path / "folder.jsonl").mkdir()
    with pytest.raises(DatasetError, match=r"folder.jsonl: not a regular file \(a directory\)"):
        load_dataset(cfg(tmp_path / "folder.jsonl"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
def test_a_fifo_is_refused_in_validate_and_run_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    plan = write_plan(tmp_path, data=str(fifo))
    for command in ("validate", "run"):
        proc = subprocess.run([sys.executable, "-m", "reasonscope.cli", command, str(plan)], capture_output=True,
                              text=True, timeout=60)  # blocked forever before (the FIFO was opened to be read)
        assert proc.returncode == 2, proc.stderr
        assert f"{fifo}: not a regular file (a FIFO)" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_validate_names_a_missing_dataset_file(tmp_path):
    plan = write_plan(tmp_path, data=str(tmp_path / "absent.jsonl"))
    res = runner.invoke(app, ["validate", str(plan)])
    assert res.exit_code == 2 and "absent.jsonl: no such file" in res.output, res.output


def gzip_bomb(path: Path, size: int) -> Path:
    chunk = b"0" * (1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as fh:
        for _ in range(size // len(chunk)):
            fh.write(chunk)
    return path


def peak_rss_mb(code: str) -> tuple[float, str]:
    """Run ``code`` in a fresh interpreter; its peak resident memory (MB) and its last stdout line."""
    wrapped = code + "\nimport resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    proc = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    return float(lines[-1]), "\n".join(lines[:-1])


@pytest.mark.slow
def test_a_gzip_bomb_is_streamed_and_stopped_with_bounded_memory(tmp_path):
    """1 GiB of zeros in a 1 MB .jsonl.gz peaked at 2.1 GB before its error (the file was read whole)."""
    bomb = gzip_bomb(tmp_path / "bomb.jsonl.gz", 1 << 30)
    assert bomb.stat().st_size < 2 << 20
    code = textwrap.dedent(f"""
        from reasonscope.data.loaders import load_dataset, DatasetError
        from reasonscope.shared_settings import DatasetConfig
        try:
            load_dataset(DatasetConfig(name="x", format="jsonl", path={str(bomb)!r}))
        except DatasetError as err:
            print(err)
    """)
    peak, message = peak_rss_mb(code)
    assert f"{bomb}: decompresses to more than" in message or f"{bomb}:1: line longer than" in message, message
    assert peak < 400, peak  # MB; the interpreter and reasonscope's imports are about 100 MB of it


def test_a_gzip_file_that_decompresses_past_the_bound_names_it(tmp_path, monkeypatch):
    import reasonscope.data.files as files

    monkeypatch.setattr(files, "MAX_DECOMPRESSED_BYTES", 1000)
    p = tmp_path / "big.jsonl.gz"
    p.write_bytes(gzip.compress(b"".join(json.dumps({"input": f"q{i}", "target": i}).encode() + b"\n"
                                         for i in range(200))))
    with pytest.raises(DatasetError, match=r"big.jsonl.gz: decompresses to more than 1,000 bytes"):
        load_dataset(cfg(p))
    assert MAX_DECOMPRESSED_BYTES >= 1 << 30


def test_an_over_long_line_is_a_bad_row_without_reading_it_whole(tmp_path, monkeypatch):
    import reasonscope.data.files as files

    monkeypatch.setattr(files, "MAX_LINE_BYTES", 100)
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"input": "y" * 500, "target": 1}) + "\n" + json.dumps({"input": "ok", "target": 2})
                 + "\n")
    res = load_dataset(cfg(p, skip_bad_rows=True))
    assert [i.input for i in res.items] == ["ok"]
    assert [(b.line, b.message) for b in res.bad_rows] == [(1, "line longer than 100 bytes")]
    assert MAX_LINE_BYTES == 20 * 2**20


def test_streamed_reading_keeps_lines_utf8_errors_and_bom(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"input": "caf\u00e9 \u2028 x", "target": 1}).encode() + b"\r\n\n"
                  + b'{"input": "b\xff", "target": 2}\n')
    for skip in (False, True):  # a file that is not UTF-8 is refused as a whole, naming the line and byte
        with pytest.raises(DatasetError, match=r"x.jsonl:3: not valid UTF-8 \(byte 62\)"):
            load_dataset(cfg(p, skip_bad_rows=skip))
    p.write_bytes(p.read_bytes().rsplit(b"\n", 2)[0] + b"\n")
    assert [i.input for i in load_dataset(cfg(p)).items] == ["caf\u00e9 \u2028 x"]


# --------------------------------------------------------------------------- 1. stale outputs


def slow_plan(tmp_path: Path, n_resamples: int) -> Path:
    """A plan whose model answers 12 requests one at a time, 0.25 s each (3 s of generation)."""
    return write_plan(tmp_path, "stale", n_resamples=n_resamples,
                      model={"spec": "mock/reasoner", "concurrency": 1, "options": {"latency_s": 0.25}})


def start_run(plan: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "reasonscope.cli", "run", str(plan)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(condition, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "timed out"
        time.sleep(0.02)


def outputs_run(run_dir: Path) -> tuple[str, int]:
    """The run id summary.json shows and the n_resamples config.yaml holds."""
    summary = json.loads((run_dir / "summary.json").read_text())
    config, _ = read_yaml((run_dir / "config.yaml").read_text())
    assert summary["config"] == config  # config.yaml is the plan of the run the outputs show
    return summary["run"]["run_id"], config["stats"]["n_resamples"]


def test_report_while_a_run_on_a_changed_plan_writes_refuses_or_waits(tmp_path):
    """`report` during a run rebuilt the previous run's outputs over the new run's (4 of 4 tries). It now
    takes the run directory's lock: it stops at once (exit 75, naming the run that holds it) or, with
    --wait-lock, rebuilds the newest finished run once the run ends."""
    run_dir = tmp_path / "runs" / "stale"
    assert runner.invoke(app, ["run", str(slow_plan(tmp_path, 200))]).exit_code == 0
    first, _ = outputs_run(run_dir)
    proc = start_run(slow_plan(tmp_path, 300))
    wait_for(lambda: (run_dir / ".reasonscope.lock.json").is_file() and len(Store(run_dir).runs()) == 2, proc)
    res = runner.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == LOCKED_EXIT, res.output
    assert "in use" in res.output and f"pid {proc.pid}" in res.output and "--wait-lock" in res.output
    assert outputs_run(run_dir) == (first, 200)  # the previous run's outputs, whole, while the new one works
    res = runner.invoke(app, ["report", str(run_dir), "--wait-lock", "120"])
    assert res.exit_code == 0, res.output
    assert proc.wait(timeout=120) == 0
    store = Store(run_dir)
    newest = store.run()["run_id"]
    store.close()
    assert newest != first and outputs_run(run_dir) == (newest, 300)


def test_a_killed_run_on_a_changed_plan_leaves_config_and_outputs_of_one_run(tmp_path):
    """After kill -9 of a run on a changed plan, config.yaml held the new plan beside the old run's
    outputs, and `report` rebuilt the old run under it. config.yaml is written with the outputs, from the
    stored plan of the run they show."""
    run_dir = tmp_path / "runs" / "stale"
    assert runner.invoke(app, ["run", str(slow_plan(tmp_path, 200))]).exit_code == 0
    first, _ = outputs_run(run_dir)
    proc = start_run(slow_plan(tmp_path, 300))
    db = run_dir / "store.sqlite"

    def generating() -> bool:
        con = sqlite3.connect(db)
        try:
            return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
        finally:
            con.close()

    wait_for(generating, proc)
    assert outputs_run(run_dir) == (first, 200)  # while it runs
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert outputs_run(run_dir) == (first, 200)  # after the kill
    res = runner.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert f"of run {first} (finished)" in res.output
    assert outputs_run(run_dir) == (first, 200)
    res = runner.invoke(app, ["run", str(slow_plan(tmp_path, 300))])  # the same command finishes the new plan
    assert res.exit_code == 0, res.output
    assert outputs_run(run_dir)[1] == 300


# --------------------------------------------------------------------------- 5. disk full, read-only, corrupt store


def finished_run_dir(tmp_path: Path) -> tuple[Path, Path]:
    plan = write_plan(tmp_path, "c", size=1)
    res = runner.invoke(app, ["run", str(plan)])
    assert res.exit_code == 0, res.output
    return plan, tmp_path / "runs" / "c"


def damage(store: Path, how: str) -> None:
    if how == "truncated":
        data = store.read_bytes()
        store.write_bytes(data[: len(data) // 3])
    elif how == "random bytes":
        store.write_bytes(os.urandom(64 * 1024))
    else:
        store.unlink()
        store.mkdir()


@pytest.mark.parametrize("how", ["truncated", "random bytes", "a directory"])
def test_a_damaged_store_gives_one_message_naming_it_in_run_report_and_cache_ls(tmp_path, how):
    """A store cut short, overwritten or replaced by a folder gave 46-404-line tracebacks. Every command
    exits 2 with one message that names the file and says what to do."""
    plan, run_dir = finished_run_dir(tmp_path)
    store = run_dir / "store.sqlite"
    for extra in ("store.sqlite-wal", "store.sqlite-shm"):
        (run_dir / extra).unlink(missing_ok=True)
    damage(store, how)
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "q1", "input": "1+1?", "target": 2, "model": "m", "prediction": "2"}) + "\n")
    score = ["score", "--input", str(preds), "--output-dir", str(run_dir.parent), "--name", run_dir.name]
    for command in (["run", str(plan)], ["report", str(run_dir)], ["cache", "ls", str(run_dir)], score):
        res = runner.invoke(app, command)
        assert isinstance(res.exception, SystemExit), (command, res.exception)  # no traceback
        assert res.exit_code == 2, (command, res.output)
        message = " ".join(res.output.split())
        assert f"error: {store}: " in message and "Traceback" not in message, message
        assert "move it away" in message.lower() or "Move it away" in message, message


def test_a_read_only_folder_gives_one_message_and_exit_74(tmp_path, monkeypatch):
    """Writing into a read-only folder (simulated: root, who runs these tests in CI, ignores permission
    bits) gave a traceback; `report` and `run` now exit 74 naming the file, and `cache ls` reads the store
    as it is."""
    import reasonscope.cli.cache as cache_cli
    import reasonscope.report.build as build
    from reasonscope.storage.store import Store as RealStore

    plan, run_dir = finished_run_dir(tmp_path)

    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(build, "write_text", read_only)
    for command in (["report", str(run_dir)], ["run", "--rescore", str(plan)]):
        res = runner.invoke(app, command)
        assert isinstance(res.exception, SystemExit) and res.exit_code == 74, (command, res.output)
        message = " ".join(res.output.split())
        assert f"error: {run_dir / 'summary.json'}: cannot write (Read-only file system)" in message, message

    def cannot_open(run_dir):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(RealStore, "open_existing", cannot_open)
    monkeypatch.setattr(cache_cli, "_read_only_fs", lambda path: True)
    res = runner.invoke(app, ["cache", "ls", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert " run finished" in res.output


def count_calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_disk_full_while_generating_stores_the_answers_in_hand_and_names_the_store(tmp_path, monkeypatch):
    """The disk filled while answers arrived: 46-404-line tracebacks, and after freeing space the re-run
    paid 24 calls twice. The run now stops with exit 74 and one message naming the store; the answers
    received are committed with the space the store had set aside, so the re-run sends only what was
    never answered."""
    import reasonscope.storage.store as store_module

    log = tmp_path / "calls.log"
    plan = write_plan(tmp_path, "full", size=4, model={"spec": "mock/reasoner", "concurrency": 4,
                                                        "options": {"call_log": str(log)}})
    real_put = store_module.Store.put_completion
    state = {"puts": 0, "full": True}

    def put_completion(self, key, **fields):
        state["puts"] += 1
        if state["puts"] > 10 and state["full"] and self.reserve_path.exists():
            raise sqlite3.OperationalError("database or disk is full")
        return real_put(self, key, **fields)

    monkeypatch.setattr(store_module.Store, "put_completion", put_completion)
    res = runner.invoke(app, ["run", str(plan)])
    assert isinstance(res.exception, SystemExit) and res.exit_code == 74, res.output
    store_path = tmp_path / "runs" / "full" / "store.sqlite"
    message = " ".join(res.output.split())
    assert f"error: {store_path}: no space left (database or disk is full). Free space" in message, message
    first = count_calls(log)
    con = sqlite3.connect(store_path)
    stored = con.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    con.close()
    assert 10 < stored <= first
    lost = first - stored  # requests in flight when the run stopped
    assert lost <= 4  # at most the model's concurrency
    monkeypatch.setattr(store_module.Store, "put_completion", real_put)
    res = runner.invoke(app, ["run", str(plan)])
    assert res.exit_code == 0, res.output
    requests = 12 * 2  # 12 items x 2 samples
    assert count_calls(log) == requests + lost  # only the unanswered ones were sent again


def test_disk_full_while_writing_the_outputs_pays_nothing_again(tmp_path, monkeypatch):
    import reasonscope.report.build as build

    log = tmp_path / "calls.log"
    plan = write_plan(tmp_path, "out", size=1, model={"spec": "mock/reasoner", "options": {"call_log": str(log)}})

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "runs" / "out" / ".summary.json.tmp"))

    monkeypatch.setattr(build, "write_text", full)
    res = runner.invoke(app, ["run", str(plan)])
    assert isinstance(res.exception, SystemExit) and res.exit_code == 74, res.output
    assert "No space left on device" in res.output and "Free space" in " ".join(res.output.split())
    sent = count_calls(log)
    monkeypatch.undo()
    res = runner.invoke(app, ["run", str(plan)])
    assert res.exit_code == 0, res.output
    assert count_calls(log) == sent == 6  # 3 items x 2 samples, each sent once
