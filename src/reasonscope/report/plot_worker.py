"""The families' plots drawn by a second process, while this one writes the other outputs.

A run's plots cost about 0.4 s of one core: importing matplotlib's figure and Agg canvas (about 0.25 s) and
drawing. The machine's other core is mostly idle meanwhile, and a thread cannot use it for Python work (the
GIL), so :class:`PlotWorker` starts a fresh interpreter (``subprocess``, the same ``sys.executable``) early in
the run. The worker imports matplotlib and the families' report modules at once, then waits on its standard
input; at the end of the run :meth:`PlotWorker.send` sends it each family's stored result, and the worker calls
the same :meth:`~reasonscope.report.view.FamilyReport.plots` into a temporary folder and sends back the files'
bytes, which this process writes where the report's other files go (staged and renamed together with them:
:mod:`reasonscope.storage.atomic_files`). Same function, same matplotlib, same settings: the same PNG bytes
as drawing here (tested). Once the plots are sent back the worker also writes ``results.xlsx`` from the tables
the run sends (:meth:`PlotWorker.send_workbook`: the same function, the same cells), while the run writes the
page.

Why ``subprocess`` and not ``multiprocessing``: the worker is a fresh interpreter on every platform (no fork of
a run that holds threads and native libraries; no import of the caller's main module, which multiprocessing's
spawn start does, the default on Windows and macOS), its start costs about 0.02 s plus its imports on the
idle core, and a closed pipe ends it (a pool's workers wait on a queue they hold both ends of).

The messages are pickles, one per direction and step, over the child's standard input and output (both ends
are this package). A worker that fails (an exception, a crash, a module it cannot import) sends or leaves its
traceback; :meth:`PlotWorker.receive` raises :class:`PlotWorkerFailed` with it, and the caller draws in its own
process instead and says so (:func:`reasonscope.report.build.write_report`'s ``plotter``). A worker that
neither replies nor dies (a hang) is waited for :data:`WAIT_S` seconds plus :data:`WAIT_S_PER_MB` per MB of the
data sent for that reply, then killed, and its reply fails the same way (the message says how long it was waited
for). When this process ends, however it ends, the worker's standard input closes and the worker exits: it is
never left behind. :meth:`PlotWorker.close` (or leaving a ``with PlotWorker(...)`` block) ends it and closes the
temporary file that holds its error output.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .view import FamilyReport

PATH_VARIABLE = "REASONSCOPE_PLOT_WORKER_PATH"
"""The environment variable that gives the worker this process's ``sys.path`` (JSON)."""

WAIT_S = 120.0
"""Seconds a reply is waited for, beyond :data:`WAIT_S_PER_MB`, before the worker is taken for hung and killed.

Generous: the worker's whole work for the benchmark's run (importing matplotlib, drawing, the workbook) takes
about 0.5 s of one core, so a wait this long means the worker is stuck, not slow (a loaded machine, a cold disk)."""

WAIT_S_PER_MB = 10.0
"""Seconds added to :data:`WAIT_S` per MB of pickled data sent for a reply (the plots' stored results, the
workbook's tables): the worker's work grows with them (about 0.2 s per MB of tables for the workbook, measured)."""

WORKER_CODE = (f"import json, os, sys; sys.path[:] = json.loads(os.environ.pop({PATH_VARIABLE!r})); "
               "from reasonscope.report.plot_worker import serve; serve()")
"""What the worker's interpreter runs (``python -c``): first this process's ``sys.path``, in its order, so the
worker imports the modules this process would (this reasonscope; the standard library before the site
folders; not the working folder, which ``-c`` puts first, unless this process has it)."""


class PlotWorkerFailed(RuntimeError):
    """The plot worker did not return what was asked; the message holds its traceback (or its exit status and output)."""


class PlotWorker:
    """A second interpreter that imports matplotlib and ``reports``' modules now and draws their plots later.

    ``reports``: the report parts (:class:`~reasonscope.report.view.FamilyReport`) whose plots it may draw; each
    is pickled (by reference to its class), so unpickling it in the worker imports its module. ``command``: the
    worker's command line (default: this interpreter running :func:`serve`; a test passes another).

    Messages, in order: the reports (now), the plots' data (:meth:`send`), then optionally the workbook's
    tables (:meth:`send_workbook`); replies: the plots (:meth:`receive`), then the workbook
    (:meth:`receive_workbook`). ``failed``: whether a reply has failed (the caller tells it once).

    ``wait_s``: seconds each reply is waited for before the worker is killed as hung, plus :data:`WAIT_S_PER_MB`
    per MB sent for it (default :data:`WAIT_S`; a test sets a fraction of a second). A context manager:
    leaving the block calls :meth:`close`.
    """

    def __init__(self, reports: Iterable[FamilyReport], command: list[str] | None = None,
                 wait_s: float = WAIT_S) -> None:
        import json
        import tempfile

        env = {**os.environ, PATH_VARIABLE: json.dumps([os.path.abspath(p) if p else os.getcwd()
                                                         for p in map(str, sys.path)])}
        self.wait_s = wait_s
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: the worker never blocks on what it says
        try:
            self.process = subprocess.Popen(command or [sys.executable, "-c", WORKER_CODE], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        except BaseException:
            self._stderr.close()
            raise
        self.failed = False
        self._sent = False
        self._sizes = {"plots": 0, "workbook": 0}  # bytes sent for each reply (its wait grows with them)
        self._hung: str | None = None  # why the worker was killed as hung (then every later reply fails at once)
        self._writer: threading.Thread | None = None  # writes the workbook's tables (send_workbook)
        try:
            # sys.path as this process has it (a plugin family's report module found on it), then the reports
            reports = pickle.dumps(list(reports), protocol=pickle.HIGHEST_PROTOCOL)  # unpickled once the path is set
            self._write((list(sys.path), reports))
            self._unsent: Exception | None = None
        except Exception as exc:  # noqa: BLE001 - the worker died at once or a report does not pickle
            self._unsent = exc  # nothing more is sent; receive() reports it

    def __enter__(self) -> PlotWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, message: Any) -> int:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)  # whole first: never half a message
        self.process.stdin.write(payload)
        self.process.stdin.flush()
        return len(payload)

    def send(self, jobs: list[tuple[FamilyReport, dict[str, Any]]], extra_formats: tuple[str, ...] = ()) -> None:
        """Send each ``(report, stored result)`` to be drawn (with ``extra_formats`` copies: ``"svg"``, ``"pdf"``).

        Returns at once: the worker draws while this process goes on; :meth:`receive` waits for the files.
        """
        if self._sent:
            raise RuntimeError("a PlotWorker draws once")
        self._sent = True
        if self._unsent is None:
            try:
                self._sizes["plots"] = self._write(([(r.name, r, a) for r, a in jobs], tuple(extra_formats)))
            except Exception as err:  # noqa: BLE001 - not sent (the worker died, a value does not pickle)
                self._unsent = err
        if self._unsent is not None:
            self._end_input()

    def send_workbook(self, sheets: dict[str, Any], metadata: dict[str, Any]) -> None:
        """Send the tables of ``results.xlsx`` (:func:`~reasonscope.report.spreadsheets.write_xlsx`'s arguments).

        The worker writes it once it has drawn the plots; :meth:`receive_workbook` waits for the file's bytes.
        Returns at once: the tables are written to the worker's input by a thread, because the worker reads them
        only after it has sent the plots, which the caller reads later (:meth:`receive`); written here, tables
        and plots both larger than a pipe's buffer would leave each process waiting for the other.
        """
        if self._unsent is None and self.process.stdin is not None and not self.process.stdin.closed:
            try:
                payload = pickle.dumps((sheets, metadata), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as err:  # noqa: BLE001 - a value does not pickle: told by receive_workbook()
                self._unsent = err
            else:
                self._sizes["workbook"] = len(payload)
                self._writer = threading.Thread(target=self._write_input, args=(payload,), daemon=True,
                                                name="plot-worker-input")
                self._writer.start()
                return
        self._end_input()

    def _write_input(self, payload: bytes) -> None:
        try:
            self.process.stdin.write(payload)
            self.process.stdin.flush()
        except Exception as err:  # noqa: BLE001 - the worker ended (or close() ended it): told by receive_workbook()
            self._unsent = err
        finally:
            self._end_input()

    def _end_input(self) -> None:
        try:
            self.process.stdin.close()  # nothing more to send: the worker ends after its replies
        except OSError:
            pass

    def receive(self) -> dict[str, Any]:
        """Wait for the plots sent (:meth:`send`).

        Returns ``{"files": {relative path: bytes}, "plots": {family: {plot name: relative path}},
        "gaps": {family: [why a plot is missing]}, "clipped": {file name: [texts]}}``.

        Raises:
            PlotWorkerFailed: the worker failed; the message holds its traceback or its exit status and output.
        """
        if not self._sent:
            raise RuntimeError("nothing was sent to the plot worker")
        return self._reply("plots")

    def receive_workbook(self) -> bytes:
        """Wait for the bytes of the workbook sent (:meth:`send_workbook`).

        Raises:
            PlotWorkerFailed: as :meth:`receive`.
        """
        return self._reply("workbook")["workbook"]

    def wait_limit(self, what: str) -> float:
        """Seconds the reply ``what`` (``"plots"``, ``"workbook"``) is waited for before the worker is killed.

        ``wait_s`` plus :data:`WAIT_S_PER_MB` per MB sent for it.
        """
        return self.wait_s + WAIT_S_PER_MB * self._sizes[what] / 1e6

    def _reply(self, what: str) -> dict[str, Any]:
        if self._hung is not None:  # killed while an earlier reply was awaited: nothing more comes
            self.failed = True
            raise PlotWorkerFailed(self._hung)
        limit = self.wait_limit(what)
        lock, state = threading.Lock(), {"done": False, "killed": False}

        def expire() -> None:  # a worker that neither replies nor dies: killed, which ends the read below
            with lock:
                if not state["done"]:
                    state["killed"] = True
                    self.process.kill()

        timer = threading.Timer(limit, expire)
        timer.daemon = True
        timer.start()
        try:
            if what == "workbook" and self._writer is not None:  # the worker reads the tables once plots are read
                self._writer.join()
            try:
                reply = pickle.load(self.process.stdout)
            except Exception:  # noqa: BLE001 - the worker ended (or crashed mid-reply): told below with its status
                reply = None
        finally:
            with lock:
                state["done"] = True
            timer.cancel()
        if isinstance(reply, dict) and "error" in reply:
            self.failed = True
            raise PlotWorkerFailed(reply["error"])
        if not isinstance(reply, dict):
            self.failed = True
            self._end()
            text = self._output()
            if state["killed"]:
                self._hung = why = (f"the plot worker sent no {what} within {limit:.3g} s (PlotWorker.wait_s "
                                    f"{self.wait_s:g} s + {WAIT_S_PER_MB:g} s per MB sent), so it was killed")
            else:
                why = f"the plot worker exited with status {self.process.returncode} and no {what}"
            if self._unsent is not None and not state["killed"]:
                why = f"the data could not be sent to the plot worker ({self._unsent!r}); " + why
            raise PlotWorkerFailed(why + (f"; its output:\n{text}" if text else ""))
        return reply

    def _output(self) -> str:
        """What the worker wrote to its error stream ("" once :meth:`close` has closed the file)."""
        if self._stderr.closed:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace").strip()

    def close(self) -> None:
        """End the worker: its pipes closed (a reply not read yet is dropped), it exits; killed after 5 s.

        Its output is closed first: a worker blocked sending a reply nobody reads ends on the closed pipe, and so
        does a write of :meth:`send_workbook`'s thread blocked on the worker (closing the input waits for it).
        Then the temporary file of its error output is closed. Calling it again does nothing.
        """
        try:
            self._end()
        finally:
            self._stderr.close()

    def _end(self) -> None:
        """The worker ended (:meth:`close` without closing its error output's file)."""
        proc = self.process
        if proc.returncode is None:
            try:
                proc.stdout.close()
            except OSError:
                pass
            if self._writer is not None:
                self._writer.join(timeout=5)
                if self._writer.is_alive():  # a worker that reads nothing: its end of the pipe goes with it
                    proc.kill()
                    self._writer.join()
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def serve() -> None:  # pragma: no cover - runs in the worker process (tested through PlotWorker)
    """The worker's side: read the reports, import matplotlib, wait for the plots' data, send back the files.

    Then, when the run sends them, write the workbook's tables and send back its bytes.
    """
    import gc

    gc.disable()  # a short-lived process: importing without collections (matplotlib's many classes)
    out, source = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # anything printed goes to the error stream, never into the replies

    def reply(work) -> None:
        try:
            answer = work()
        except Exception:  # noqa: BLE001 - any failure goes back to the run with its traceback
            import traceback

            answer = {"error": traceback.format_exc()}
        pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    try:
        try:
            path, reports = pickle.load(source)
        except EOFError:  # the run ended at once (or died)
            return
        sys.path.extend(p for p in path if p not in sys.path)

        def prepare() -> dict[str, Any]:
            pickle.loads(reports)  # the reports' modules imported now
            from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401 - imported now, used later
            from matplotlib.figure import Figure  # noqa: F401
            from xlsxwriter import Workbook  # noqa: F401

            from .plots import pyplot

            pyplot()  # the Agg backend and the report's font sizes
            return {}

        try:
            prepare()
            prepared = None
        except Exception:  # noqa: BLE001 - told with the plots' reply
            import traceback

            prepared = {"error": traceback.format_exc()}
        gc.enable()
        gc.freeze()
        try:
            jobs, formats = pickle.load(source)
        except EOFError:  # the run ended without plots (or died): nothing to draw
            return
        reply(lambda: prepared or draw_files(jobs, formats))
        try:
            sheets, metadata = pickle.load(source)
        except EOFError:  # no workbook asked for
            return
        reply(lambda: {"workbook": workbook_bytes(sheets, metadata)})
    except KeyboardInterrupt:
        sys.exit(130)


def workbook_bytes(sheets: dict[str, Any], metadata: dict[str, Any]) -> bytes:
    """``results.xlsx`` of ``sheets`` and ``metadata`` (:func:`~reasonscope.report.spreadsheets.write_xlsx`), as bytes."""
    import tempfile

    from .spreadsheets import write_xlsx

    with tempfile.TemporaryDirectory(prefix="reasonscope-workbook-") as tmp:
        return write_xlsx(Path(tmp) / "results.xlsx", sheets, metadata).read_bytes()


def draw_files(jobs: list[tuple[str, FamilyReport, dict[str, Any]]], formats: tuple[str, ...]) -> dict[str, Any]:
    """Each report's plots drawn into a temporary folder, as :meth:`PlotWorker.receive` returns them."""
    import tempfile

    from .plots import CLIPPED, EXTRA_FORMATS

    token = EXTRA_FORMATS.set(tuple(formats))
    try:
        with tempfile.TemporaryDirectory(prefix="reasonscope-plots-") as tmp:
            folder = Path(tmp)
            plots, gaps = {}, {}
            for name, report, artefact in jobs:
                gaps[name] = []
                drawn = report.plots(artefact, folder, gaps[name])
                plots[name] = {key: Path(p).relative_to(folder).as_posix() for key, p in drawn.items()}
            files = {p.relative_to(folder).as_posix(): p.read_bytes()
                     for p in sorted(folder.rglob("*")) if p.is_file()}
    finally:
        EXTRA_FORMATS.reset(token)
    return {"files": files, "plots": plots, "gaps": gaps, "clipped": dict(CLIPPED)}
