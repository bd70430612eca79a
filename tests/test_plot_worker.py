"""The plots drawn by a second process (reasonscope.report.plot_worker): the same files, failures told, no orphan."""

from __future__ import annotations

import io
import json
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import openpyxl
import pytest
from rich.console import Console

from reasonscope.behavior.report_view import REPORT
from reasonscope.pipeline import runner
from reasonscope.pipeline.runner import Runner
from reasonscope.plan import parse_plan
from reasonscope.report.plot_worker import PlotWorker, PlotWorkerFailed
from reasonscope.report.view import FamilyReport


def plan(tmp_path):
    return parse_plan({
        "experiment": {"name": "r", "seed": 1, "output_dir": str(tmp_path)},
        "models": [{"spec": "mock/reasoner", "name": "m", "max_tokens": 64}],
        "datasets": [{"name": "syn", "format": "synthetic", "size": 2}],
        "families": {"behavior": {"samples": 1, "paraphrases": 0, "nli": {"backend": "none"},
                                  "similarity": {"method": "embedding"}}},
        "stats": {"n_resamples": 200},
    })


def masked(text: str) -> str:
    """A page or a summary with its run id and times masked (they differ between two runs of one plan)."""
    text = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "RUN", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "TIME", text)
    return re.sub(r'"(created|finished|latency_s|generations_written)": [0-9.e+-]+', r'"\1": 0', text)


def run_outputs(tmp_path, monkeypatch, make_worker) -> dict[str, bytes]:
    """The plot, page and samples of a run whose plots ``make_worker()`` draws (None: drawn here); ``said``: its
    messages."""
    monkeypatch.setattr(runner, "start_plot_worker", lambda plan, console: make_worker())
    console = Console(file=io.StringIO(), width=300)
    summary = Runner(plan(tmp_path), show_progress=False, console=console).run()
    assert summary.outcome.code == 0
    folder = tmp_path / "r"
    out = {name: (folder / name).read_bytes() for name in ("behavior_bars.png", "report.html", "samples.jsonl")}
    workbook = openpyxl.load_workbook(folder / "results.xlsx", read_only=True)
    cells = {ws.title: [[masked(str(c).replace(str(tmp_path), "OUT")) for c in row] for row in ws.iter_rows(values_only=True)
                        if not str(row[0]).startswith(("versions.reasonscope-source", "notes.phase_seconds"))]
             for ws in workbook.worksheets}
    return {**out, "said": console.file.getvalue(), "workbook": cells}


def test_a_run_with_the_plot_worker_writes_the_same_files(tmp_path, monkeypatch):
    here = run_outputs(tmp_path / "here", monkeypatch, lambda: None)
    drawn = run_outputs(tmp_path / "worker", monkeypatch, lambda: PlotWorker([REPORT]))
    assert drawn["behavior_bars.png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert drawn["behavior_bars.png"] == here["behavior_bars.png"]  # the same bytes, drawn in the other process
    assert drawn["samples.jsonl"].count(b"\n") == 3 * 2
    assert masked(drawn["samples.jsonl"].decode()) == masked(here["samples.jsonl"].decode())
    page = masked(drawn["report.html"].decode())
    assert page == masked(here["report.html"].decode()) and "data:image/png;base64," in page
    assert drawn["workbook"] == here["workbook"] and drawn["workbook"]["items"][0][:2] == ["model", "variant"]


def test_a_failing_worker_is_told_and_the_plots_are_drawn_here(tmp_path, monkeypatch):
    crash = [sys.executable, "-c", "import sys; sys.stdin.read(); sys.stderr.write('no plots here'); sys.exit(3)"]
    here = run_outputs(tmp_path / "here", monkeypatch, lambda: None)
    drawn = run_outputs(tmp_path / "crash", monkeypatch, lambda: PlotWorker([REPORT], command=crash))
    assert drawn["said"] == here["said"] + ("the plot worker failed, so the plots are drawn in this process instead; its error:\n"
                             "the plot worker exited with status 3 and no plots; its output:\nno plots here\n")
    assert drawn["behavior_bars.png"] == here["behavior_bars.png"]
    assert drawn["workbook"] == here["workbook"]  # written here too, told once


def test_a_workbook_that_fails_in_the_worker_is_told_and_written_here(tmp_path, monkeypatch):
    from reasonscope.report import plot_worker

    here = run_outputs(tmp_path / "here", monkeypatch, lambda: None)
    worker = PlotWorker([REPORT], command=[sys.executable, "-c", "from reasonscope.report import plot_worker; "
                                           "plot_worker.workbook_bytes = None; plot_worker.serve()"])
    drawn = run_outputs(tmp_path / "worker", monkeypatch, lambda: worker)  # its workbook_bytes: None (TypeError)
    said = drawn["said"].replace(here["said"], "", 1)
    assert said.startswith("the plot worker failed, so the workbook is written in this process instead; its "
                           "error:\nTraceback (most recent call last)") and "TypeError" in said
    assert drawn["workbook"] == here["workbook"] and drawn["behavior_bars.png"] == here["behavior_bars.png"]
    assert plot_worker.workbook_bytes is not None


def test_a_hung_worker_is_killed_told_and_the_plots_and_workbook_are_made_here(tmp_path, monkeypatch):
    hang = [sys.executable, "-c", "import sys, time; sys.stderr.write('stuck'); sys.stderr.flush(); time.sleep(600)"]
    here = run_outputs(tmp_path / "here", monkeypatch, lambda: None)
    worker = PlotWorker([REPORT], command=hang, wait_s=0.2)  # alive, reading nothing, replying nothing
    drawn = run_outputs(tmp_path / "hung", monkeypatch, lambda: worker)
    said = drawn["said"].replace(here["said"], "", 1)
    assert re.fullmatch(r"the plot worker failed, so the plots are drawn in this process instead; its error:\n"
                        r"the plot worker sent no plots within 0\.2\d* s \(PlotWorker\.wait_s 0\.2 s \+ 10 s per MB "
                        r"sent\), so it was killed; its output:\nstuck\n", said), said  # told once, the workbook too
    assert worker.process.returncode == -signal.SIGKILL
    assert worker._stderr.closed  # the run closed the worker: its error output's file with it
    assert drawn["behavior_bars.png"] == here["behavior_bars.png"] and drawn["workbook"] == here["workbook"]
    assert masked(drawn["report.html"].decode()) == masked(here["report.html"].decode())


def test_a_worker_hung_on_the_workbook_is_killed_after_its_wait_scaled_to_the_tables():
    hang = [sys.executable, "-c", "import time; from reasonscope.report import plot_worker; "
            "plot_worker.workbook_bytes = lambda *a: time.sleep(600); plot_worker.serve()"]
    sheets, meta = {"s": [{"a": f"{i:01000d}"} for i in range(50)]}, {"k": 1}
    with PlotWorker([REPORT], command=hang) as worker:
        assert worker.wait_limit("plots") == 120.0  # nothing sent yet: plot_worker.WAIT_S
        worker.send([])
        assert worker.receive() == {"files": {}, "plots": {}, "gaps": {}, "clipped": {}}
        worker.wait_s = 0.25
        worker.send_workbook(sheets, meta)
        sent = len(pickle.dumps((sheets, meta), protocol=pickle.HIGHEST_PROTOCOL))
        assert 50_000 < sent < 60_000 and worker.wait_limit("workbook") == pytest.approx(0.25 + 10 * sent / 1e6)
        with pytest.raises(PlotWorkerFailed) as err:
            worker.receive_workbook()
        assert str(err.value) == (f"the plot worker sent no workbook within {0.25 + 10 * sent / 1e6:.3g} s "
                                  "(PlotWorker.wait_s 0.25 s + 10 s per MB sent), so it was killed")
        assert worker.failed and worker.process.returncode == -signal.SIGKILL
        with pytest.raises(PlotWorkerFailed, match="^the plot worker sent no workbook within"):
            worker.receive_workbook()  # at once: the worker is gone
    assert worker._stderr.closed


def test_the_workers_traceback_reaches_the_caller():
    worker = PlotWorker([REPORT])
    worker.send([(REPORT, {"metrics": {"m": {}}})])  # no CQ: behavior_plots fails on it
    with pytest.raises(PlotWorkerFailed) as err:
        worker.receive()
    assert "Traceback (most recent call last)" in str(err.value) and "KeyError: 'CQ'" in str(err.value)
    assert worker.failed
    worker.close()
    assert worker.process.returncode == 0  # it reported the failure and ended on its closed input



class BigPlot(FamilyReport):
    """A report whose one plot is ``artefact["size"]`` bytes (imported by the worker from this module)."""

    name = "big"

    def plots(self, artefact, folder, gaps):
        path = folder / "big.png"
        path.write_bytes(b"p" * artefact["size"])
        return {"big": path}


def test_plots_and_tables_larger_than_a_pipe_do_not_block_each_other():
    report, got = BigPlot(), {}
    worker = PlotWorker([report])
    rows = [{"a": f"{i:0100d}"} for i in range(3000)]  # about 0.3 MB pickled, as the 1 MB plot: past a pipe's buffer

    def exchange():  # in a run's order: the tables sent before the plots are read
        worker.send([(report, {"size": 1 << 20})])
        worker.send_workbook({"s": rows}, {})
        got["plots"] = worker.receive()
        got["workbook"] = worker.receive_workbook()

    thread = threading.Thread(target=exchange, daemon=True)
    thread.start()
    thread.join(timeout=60)
    if thread.is_alive():
        worker.process.kill()
        pytest.fail("the run and its plot worker each waited for the other")
    worker.close()
    assert got["plots"]["files"] == {"big.png": b"p" * (1 << 20)} and got["plots"]["plots"] == {"big": {"big": "big.png"}}
    sheet = openpyxl.load_workbook(io.BytesIO(got["workbook"]), read_only=True)["s"]
    cells = [row for row in sheet.iter_rows(values_only=True)]
    assert len(cells) == 3001 and cells[0] == ("a",) and cells[-1] == (f"{2999:0100d}",)
    assert worker.process.returncode == 0


def test_the_worker_imports_what_the_run_imports_not_the_working_folders_modules(tmp_path, monkeypatch):
    (tmp_path / "xlsxwriter.py").write_text("raise ImportError('the working folder shadows xlsxwriter')\n")
    monkeypatch.chdir(tmp_path)  # the run's own sys.path does not hold its working folder (a console script)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    worker = PlotWorker([REPORT])
    worker.send([])
    assert worker.receive() == {"files": {}, "plots": {}, "gaps": {}, "clipped": {}}
    worker.close()
    assert worker.process.returncode == 0

@pytest.mark.slow
def test_a_worker_given_nothing_to_draw_ends():
    worker = PlotWorker([REPORT])
    worker.close()
    assert worker.process.returncode == 0
    with pytest.raises(RuntimeError, match="nothing was sent to the plot worker"):
        PlotWorker([REPORT], command=[sys.executable, "-c", "pass"]).receive()


@pytest.mark.slow
def test_the_worker_ends_when_the_run_is_killed(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import json, time
        from reasonscope.behavior.report_view import REPORT
        from reasonscope.report.plot_worker import PlotWorker
        worker = PlotWorker([REPORT])
        print(json.dumps(worker.process.pid), flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    pid = json.loads(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            state = open(f"/proc/{pid}/stat").read().split(") ")[1][0]
        except FileNotFoundError:
            break
        if state == "Z":  # ended; its parent is gone, so init reaps it
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the plot worker {pid} outlived the killed run")
