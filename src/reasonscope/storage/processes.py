"""Which process is this, and is a recorded one still running?

Read by the run directory's lock (:mod:`reasonscope.storage.rundir`), the store (a run whose process is gone is
``interrupted``) and the atomic writer (:func:`reasonscope.storage.atomic_files.remove_stale_temporaries`). This
module sits at the bottom: it imports nothing of reasonscope.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessInfo", "pid_alive", "process_gone", "this_process"]


@dataclass(frozen=True)
class ProcessInfo:
    """A process as recorded by a run or a lock: pid, host, start time (epoch seconds) and command line.

    The start time tells a live process from a later one that reuses its pid.
    """

    pid: int
    host: str
    started: float  # process start time (epoch seconds)
    command: str

    def describe(self) -> str:
        """One line for messages: ``pid N on HOST, started YYYY-mm-dd HH:MM:SS: COMMAND``."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        return f"pid {self.pid} on {self.host}, started {when}: {self.command}"


def _start_time(pid: int) -> float | None:
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:  # no such process, access denied, psutil missing
        return None


def this_process() -> ProcessInfo:
    """The calling process as a :class:`ProcessInfo` (command line cut to 500 characters)."""
    return ProcessInfo(pid=os.getpid(), host=socket.gethostname(), started=_start_time(os.getpid()) or time.time(),
                       command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:500] if sys.argv else "python")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except OSError:
        return False
    return True


def process_gone(pid: int | None, host: str | None, started: float | None) -> bool:
    """True when the recorded process has certainly ended.

    It ran on this host and its pid is free, or the pid now belongs to a process started later (pid reuse).
    False when it may still run (unknown pid, another host).
    """
    if pid is None or host != socket.gethostname():
        return False
    if not pid_alive(pid):
        return True
    now_started = _start_time(pid)
    return started is not None and now_started is not None and now_started > started + 1.0
